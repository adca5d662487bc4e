"""The shape of a rule: a small class with a code, a name, its documentation, and visit_<Node> methods.

Like Fixit: one rule is one class; it reports with `self.report(node, message, fix)`, which is the only way a
finding or a fix leaves a rule.
"""

from __future__ import annotations

import inspect
import re
from typing import ClassVar, Optional

import libcst as cst

from gpulint.analysis import GPU_HINT, Execution, ModuleAnalysis
from gpulint.diagnostics import DOCS_URL, Applicability, Diagnostic, Fix, Replacement  # noqa: F401


REGISTRY: dict[str, type["Rule"]] = {}


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    # Text every file this rule can report in contains (checked before any parse; see runner.could_have_findings).
    # None: the rule may report anywhere, so no file is skipped. Declare it only if it is certainly true.
    needs_text: ClassVar[Optional[re.Pattern]] = None
    # A code the runner reports itself (GPU001 syntax-error): documented like a rule, no visitors.
    pseudo: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if getattr(cls, "code", None):
            if cls.code in REGISTRY and REGISTRY[cls.code] is not cls:
                raise RuntimeError(f"two rules claim {cls.code}")
            REGISTRY[cls.code] = cls
            cls._visitors = {
                attr[len("visit_"):]: attr for attr in dir(cls) if attr.startswith("visit_")
            }

    def __init__(self, analysis: ModuleAnalysis, report_periodic: bool = False) -> None:
        self.analysis = analysis
        self.report_periodic = report_periodic
        self.diagnostics: list[Diagnostic] = []

    # -- reporting ---------------------------------------------------------------------------------------------
    def report(self, node: cst.CSTNode, message: Optional[str] = None, *, fix: Optional[Fix] = None,
               where: Optional[Execution] = None) -> None:
        text = message or self.message
        if where is not None and where.periodic:
            text = f"{text} (runs periodically: {where.reason}; fine if intended)"
        self.diagnostics.append(Diagnostic(self.code, self.name, text, node=node, fix=fix))

    def where(self, node: cst.CSTNode) -> Optional[Execution]:
        """The execution context if a per-step finding at `node` should be reported, else None."""
        where = self.analysis.execution(node)
        if where.every_iteration or (where.periodic and self.report_periodic):
            return where
        return None

    def fix(self, message: str, changes: dict[cst.CSTNode, Replacement], *, safe: bool) -> Fix:
        return Fix(message, Applicability.SAFE if safe else Applicability.UNSAFE, changes)

    # -- documentation -----------------------------------------------------------------------------------------
    @classmethod
    def documentation(cls) -> str:
        doc = inspect.cleandoc(cls.__doc__ or "")
        return f"{cls.code} `{cls.name}`\n\n{doc}\n"

    @classmethod
    def summary(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "").splitlines()[0] if cls.__doc__ else cls.name



def all_rules() -> dict[str, type[Rule]]:
    import gpulint.rules  # noqa: F401  (registers)

    return dict(sorted(REGISTRY.items()))


class GpuRule(Rule):
    """A rule about a GPU cost: silent in modules that never touch a GPU.

    `where` reports nothing unless `targets_gpu`, which is `GPU_HINT` found in the module's text; so the same
    pattern is the text every finding needs, and files without it are skipped before any parse.
    """

    needs_text = GPU_HINT

    def where(self, node: cst.CSTNode) -> Optional[Execution]:
        if not self.analysis.targets_gpu:
            return None
        return super().where(node)
