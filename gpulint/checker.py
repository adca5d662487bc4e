"""Run the enabled rules over one analysed module: one pass over the nodes, deference resolved from the rules'
metadata, and each rule's crash returned as data instead of being raised or swallowed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import libcst as cst

from gpulint.analysis import ModuleAnalysis
from gpulint.diagnostics import Diagnostic
from gpulint import incremental
from gpulint.incremental import checkpoint
from gpulint.rule import Rule, all_rules


@dataclass(frozen=True)
class RuleError:
    """A rule that stopped on this module: it visits no further node there (what it found before is kept)."""

    code: str
    node: Optional[cst.CSTNode]  # the node the rule was visiting, None if it failed elsewhere
    reason: str  # `TypeError: ...`, or why the analysis gave up

    def describe(self) -> str:
        return f"internal error in {self.code}: {self.reason}"


def run_rules(analysis: ModuleAnalysis, codes: Iterable[str],
              report_periodic: bool = False) -> tuple[list[Diagnostic], list[RuleError]]:
    """The findings of the rules in `codes` (pseudo-rules excluded) and the errors of rules that crashed.

    A rule's finding is dropped when a rule it `defers_to` reported on the same node: that rule's finding says
    the same thing better (usually with a fix). Rules deferred to run even when not enabled, so that enabling
    fewer rules never adds findings; their own findings are reported only if enabled. All of a rule's findings in
    the module are dropped when an enabled rule it `defers_in_module_to` reported anywhere in it: that rule's fix
    is the better lever, and a user who turned it off asked for the other one.

    In an editor (gpulint.incremental on), a re-lint after an edit that changed no code visits only the
    statements parsed again (gpulint.rule_reuse).
    """
    if _unit_test_module(analysis):
        # a test suite's module: its loops are a test's iterations over toy inputs, not training steps
        codes = [code for code in codes if code.startswith("GPU0")]
    run = Run(analysis, codes, report_periodic)
    if incremental.enabled():
        from gpulint import rule_reuse

        rule_reuse.run(run)
    else:
        run.visit(analysis.index.nodes)
    return run.finish()


def _unit_test_module(analysis: ModuleAnalysis) -> bool:
    """`test_code.is_unit_test_module` of the analysed file, below the root of its project."""
    path = analysis.path
    if path is None:
        return False
    name = Path(path).name
    if not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"):
        return False
    from gpulint.analysis.forward import _project_of
    from gpulint.analysis.test_code import is_unit_test_module, runs_as_a_script

    project, _ = analysis.fact(_project_of)
    return project is not None and is_unit_test_module(path, project.root) and \
        not runs_as_a_script(analysis.module)


class Run:
    """The enabled rules' pass over (some of) a module's nodes, in document order."""

    def __init__(self, analysis: ModuleAnalysis, codes: Iterable[str], report_periodic: bool) -> None:
        registry = all_rules()
        self.analysis = analysis
        self.codes = frozenset(codes)
        self.report_periodic = report_periodic
        self.enabled = {c for c in self.codes if c in registry and not registry[c].pseudo}
        wanted = set(self.enabled)
        for code in self.enabled:
            wanted.update(c for c in registry[code].defers_to if c in registry)
        self.rules: list[Rule] = [registry[c](analysis, report_periodic) for c in sorted(wanted)]
        self.handlers: dict[str, list] = {}
        for rule in self.rules:
            for node_type, method in rule._visitors.items():
                self.handlers.setdefault(node_type, []).append(getattr(rule, method))
        self.errors: dict[str, RuleError] = {}
        self.count = 0
        # node type -> (handler, its rule's code, its rule's findings) for each rule visiting that type
        self._by_type: dict[type, tuple] = {}

    def visit(self, nodes: Iterable[cst.CSTNode], per_node: Optional[dict] = None) -> None:
        """Run the rules over `nodes`; with `per_node`, record there the findings made at each node
        (id of the node -> {rule code: findings}: gpulint.rule_reuse)."""
        errors, by_type = self.errors, self._by_type
        count = self.count
        try:
            for node in nodes:
                if not count & 511:
                    checkpoint()  # an editor's lint of an outdated buffer stops here (gpulint.incremental)
                count += 1
                kind = type(node)
                entries = by_type.get(kind)
                if entries is None:
                    entries = by_type[kind] = tuple((handler, handler.__self__.code, handler.__self__.diagnostics)
                                                    for handler in self.handlers.get(kind.__name__, ()))
                for handler, code, diagnostics in entries:
                    if errors and code in errors:
                        continue
                    before = len(diagnostics)
                    try:
                        handler(node)
                    except RecursionError:  # an expression nested deeper than the rule's recursion can follow
                        errors[code] = RuleError(code, node, "too deeply nested for its analysis; not checked")
                    except Exception as exc:  # one broken rule must not stop the others
                        errors[code] = RuleError(code, node, f"{type(exc).__name__}: {exc}")
                    if per_node is not None and len(diagnostics) > before:
                        per_node.setdefault(id(node), {}).setdefault(code, []).extend(diagnostics[before:])
        finally:
            self.count = count

    def add(self, found: dict[str, list[Diagnostic]]) -> None:
        """Findings `visit` gave before, for the same nodes (gpulint.rule_reuse), taken as they are."""
        for rule in self.rules:
            rule.diagnostics.extend(found.get(rule.code, ()))

    def finish(self) -> tuple[list[Diagnostic], list[RuleError]]:
        rules, enabled, errors = self.rules, self.enabled, self.errors
        reported: dict[str, set[int]] = {r.code: {id(d.node) for d in r.diagnostics} for r in rules}
        found: list[Diagnostic] = []
        for rule in rules:
            if rule.code not in enabled or any(reported.get(other) for other in rule.defers_in_module_to
                                               if other in enabled):
                continue
            for d in rule.diagnostics:
                if not any(id(d.node) in reported.get(other, ()) for other in rule.defers_to):
                    found.append(d)
        return found, [errors[c] for c in sorted(errors) if c in enabled]
