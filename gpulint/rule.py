"""The shape of a rule: a small class with a code, a name, its documentation, and visit_<Node> methods.

Like Fixit: one rule is one class; it reports with `self.report(node, message, fix)`, which is the only way a
finding or a fix leaves a rule.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import re
from dataclasses import dataclass
from typing import ClassVar, Optional, Sequence

import libcst as cst

from gpulint.analysis import GPU_HINT, Execution, ModuleAnalysis
from gpulint.analysis.project import display_path
from gpulint.diagnostics import Applicability, Diagnostic, Fix, Related, Replacement, rule_url  # noqa: F401


REGISTRY: dict[str, type["Rule"]] = {}


# -- metadata: data on each rule class, read by `gpulint rule`, the SARIF writer, the docs and the checker ---------
class Family(str, enum.Enum):
    SYNTAX = "syntax"
    HOST_SYNC = "host-sync"
    TRANSFERS = "transfers"
    ACCUMULATION = "accumulation"
    THROUGHPUT = "throughput"
    ADVISORY = "advisory"  # GPU5xx: opt-in suggestions whose pay-off depends on the run (preview, `--select GPU5`)


class FixAvailability(str, enum.Enum):
    ALWAYS = "always"  # every finding carries a fix
    SOMETIMES = "sometimes"  # some findings do (the docstring's `## Fix` says when not)
    NEVER = "never"


class Safety(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class FixSafety:
    level: Safety
    reason: str  # one line: why the fix keeps (or may change) what the program does


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Example:
    """A small program for a rule's own test (tests/test_rule_examples.py runs every one).

    VALID examples (plain strings) must produce no finding of the rule. An INVALID one must produce `count`
    findings of it whose message contains `message`, and `--fix --unsafe-fixes` with only that rule enabled must
    turn `code` into `fixed` (None: the rule offers no fix there, the code stays as it is).
    """

    code: str
    message: str = ""
    fixed: Optional[str] = None
    count: int = 1
    periodic: bool = False  # linted as with `--report-periodic`


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    # Text every file this rule can report in contains (checked before any parse; see runner.could_have_findings).
    # None: the rule may report anywhere, so no file is skipped. Declare it only if it is certainly true.
    needs_text: ClassVar[Optional[re.Pattern]] = None
    # The rule also reads modules that name no device (GPU_HINT absent: GPU112's script calling another module's
    # GPU helper). A module that only such rules admit past the prefilter is linted with those rules alone, so
    # the other rules see exactly the files they saw before (runner.lint_source).
    reads_device_free_modules: ClassVar[bool] = False
    # Conditions of the code, one of which every file this rule can report in meets (gpulint/prefilter.py:
    # HOT_LOOP for a rule that reports only through `where`). None: none declared. tests/test_prefilter.py
    # checks every INVALID example against it. Declare it only if it is certainly true.
    reports_in: ClassVar[Optional[tuple[str, ...]]] = None
    # A code the runner reports itself (GPU001 syntax-error): documented like a rule, no visitors.
    pseudo: ClassVar[bool] = False

    # -- metadata (see the enums above); `gpulint rule --all --output-format json` prints it ----------------
    family: ClassVar[Family]
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NEVER
    fix_safety: ClassVar[Optional[FixSafety]] = None  # None exactly when fix_availability is NEVER
    severity: ClassVar[Severity] = Severity.WARNING
    needs_gpu: ClassVar[bool] = False  # silent in modules that never touch an accelerator (GpuRule sets it)
    added_in: ClassVar[str] = "0.1.0"
    # Off unless selected by a pattern narrower than "GPU" (`--select GPU4`, `select = ["GPU402"]`): new rules
    # whose findings the existing examples and tests do not yet expect.
    preview: ClassVar[bool] = False
    # Codes whose finding on the same node makes this rule's finding moot (the checker drops it).
    defers_to: ClassVar[tuple[str, ...]] = ()
    # Codes whose finding anywhere in the module makes this rule's findings there moot (GPU404's TF32 line where
    # GPU403 puts the step under bf16 autocast): the checker drops them.
    defers_in_module_to: ClassVar[tuple[str, ...]] = ()
    # Whether the rule reports in a network's `forward` that no loop was seen to call, assumed per batch
    # (analysis/trained_modules.py). Syncs and copies cost the same wherever the network is called; advice whose
    # worth depends on how often a call runs is given only where a call was seen.
    at_assumed_forwards: ClassVar[bool] = True
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[Example]] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "reports_in" not in cls.__dict__:
            cls.reports_in = None  # never inherited: a subclass may report where its base cannot
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
               where: Optional[Execution] = None, related: tuple = ()) -> None:
        text = message or self.message
        if where is not None and where.periodic:
            text = f"{text} (runs periodically: {where.reason}; fine if intended)"
        site = where.via if where is not None else None
        if site is not None and getattr(site, "assumed", False):  # no loop seen: a network's forward, per batch
            if not self.at_assumed_forwards:
                return
            text = f"{text} (in `{site.runs}`, which runs on every forward pass)"
        elif site is not None:  # model code that a loop in another place runs every step (analysis/forward.py)
            shown = display_path(site.path)
            text = f"{text} (in `{site.runs}`, which `{site.code}` runs every step)"
            related = (*related, Related(shown, site.line, f"`{site.code}` runs `{site.runs}` every step"))
        self.diagnostics.append(Diagnostic(self.code, self.name, text, node=node, fix=fix, related=related))

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

    @classmethod
    def fix_label(cls) -> str:
        """`safe`, `unsafe` or `-`: the Fix column of `gpulint rule --all` and the README table."""
        return cls.fix_safety.level.value if cls.fix_safety is not None else "-"

    @classmethod
    def metadata(cls) -> dict:
        """The rule's metadata as JSON-ready data."""
        return {
            "code": cls.code, "name": cls.name, "summary": cls.summary(), "family": cls.family.value,
            "fix_availability": cls.fix_availability.value,
            "fix_safety": None if cls.fix_safety is None else {"level": cls.fix_safety.level.value,
                                                               "reason": cls.fix_safety.reason},
            "severity": cls.severity.value, "needs_gpu": cls.needs_gpu, "added_in": cls.added_in,
            "defers_to": list(cls.defers_to), "defers_in_module_to": list(cls.defers_in_module_to), "pseudo": cls.pseudo, "preview": cls.preview,
            "url": rule_url(cls.code),
        }



def all_rules() -> dict[str, type[Rule]]:
    """Every rule, by code. The one place that imports `gpulint.rules`: each module under it is imported (found
    by walking the package), which registers its rule classes. Adding a rule is adding its file."""
    if not _LOADED:
        import pkgutil

        import gpulint.rules as package

        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
        _LOADED.append(True)
    return dict(sorted(REGISTRY.items()))


_LOADED: list[bool] = []


class GpuRule(Rule):
    """A rule about a GPU cost: silent in modules that never touch a GPU.

    `where` reports nothing unless `targets_gpu`, which is `GPU_HINT` found in the module's text; so the same
    pattern is the text every finding needs, and files without it are skipped before any parse.
    """

    needs_text = GPU_HINT
    needs_gpu = True

    def where(self, node: cst.CSTNode) -> Optional[Execution]:
        if not self.analysis.targets_gpu:
            return None
        return super().where(node)
