"""After LibCST's parse, before the rules: the rules that can only report around a hot loop are not run on a
module that has none.

The prefilter (gpulint/prefilter.py) decides on CPython's `ast`, before the parse, whether a module *may* hold
a hot loop, over-approximating `LoopAnalysis`: a `range` loop in a model's helper that does arithmetic is let
through there, because whether its body computes a tensor takes the kind inference to tell. Once the module is
parsed, the loop analysis itself answers. A rule whose only declared condition is `hot-loop`
(`Rule.reports_in`) reports only through code that runs every step or periodically, and such code is inside a
hot loop, in an epoch loop around one, in a function a hot loop calls, or in the `forward` of a model a loop
elsewhere in the project runs every step (analysis/forward.py). So where no loop of the module is
`LoopRole.HOT` and no model class of the module is run every step, those rules are skipped: the same findings,
without their visits (on timm, 50 of the 72 files the prefilter passes have no hot loop; most of their rule time
was where-does-this-run walks that end nowhere).

tests/test_rule_gate.py checks that every INVALID example of a gated rule has a hot loop, and that findings with
and without the gate are the same on every fixture and rule example.
"""

from __future__ import annotations

import functools
import libcst as cst

from gpulint.prefilter import HOT_LOOP
from gpulint.rule import all_rules


@functools.lru_cache(maxsize=64)
def gated_codes(codes: frozenset[str]) -> frozenset[str]:
    """The enabled rules whose findings all need a hot loop in the module (`reports_in == ("hot-loop",)`)."""
    registry = all_rules()
    return frozenset(c for c in codes if c in registry and tuple(registry[c].reports_in or ()) == (HOT_LOOP,))


def has_hot_loop(analysis) -> bool:
    """Some `for`/`while` loop of the module is a training or evaluation loop (`LoopRole.HOT`), or an engine
    library runs a function of the module once per batch (analysis/engine_steps.py)."""
    from gpulint.analysis.loops import LoopRole
    from gpulint.analysis.node_types import of_types

    loops = analysis.loops
    return any(loops.role(node) is LoopRole.HOT for node in of_types(analysis.index, cst.For, cst.While)) or \
        bool(loops.engine_functions())  # `Engine(update)`: the library's loop runs it


class Gate:
    """The gate for one lint of one file: its path and CPython tree (for `forward.may_run_every_step`), held
    only until `codes` has decided."""

    def __init__(self, path, tree) -> None:
        self.path, self.tree = path, tree

    def codes(self, analysis, codes: frozenset[str]) -> frozenset[str]:
        """`codes`, less the gated rules when the module has no hot loop and no model class of it is run every
        step (asked only then)."""
        tree, self.tree = self.tree, None  # not held through the analysis
        gated = gated_codes(codes)
        if not gated or has_hot_loop(analysis):
            return codes
        from gpulint.analysis.forward import may_run_every_step

        return codes if may_run_every_step(self.path, tree) else codes - gated
