"""The base class the synced-accumulation rules (GPU302, GPU303) share."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule
from gpulint.syntax import method_call
from gpulint.analysis.accumulators import SyncedAccumulation, _method, _uses, dtype_class, synced_accumulation


class _SyncedAccumulationRule(GpuRule):
    metric: bool

    def visit_Call(self, node: cst.Call) -> None:
        match = synced_accumulation(self.analysis, node)
        if match is None or match.metric is not self.metric:
            return
        where = self.where(match.statement)
        if where:
            self.report(node, where=where, fix=self._fix(match))

    def _fix(self, match: SyncedAccumulation):
        """Sum on the device; turn the sum back into a Python number where it leaves the loop."""
        target = match.statement.target
        if type(target) is not cst.Name:
            return None  # an attribute or a dict entry: other code may read it where we cannot see
        converter = "int" if type(match.sync.func) is cst.Name and match.sync.func.value == "int" else \
            dtype_class(self.analysis, match.tensor)
        if converter is None and type(match.sync.func) is cst.Name:
            converter = match.sync.func.value
        if method_call(match.sync, "cpu"):
            converter = None  # the sum was a CPU tensor, not a Python number: nothing to convert back to
        uses = _uses(self.analysis, match.statement, target.value)
        if uses is None:
            return None
        changes: dict = {}
        for use, leaves in uses:
            if self.analysis.execution(use).every_iteration:
                return None  # read every step anyway: summing on the device would only move the sync
            if leaves:
                if converter is None:
                    return None  # unknown dtype: float() or int() could change the value's type
                changes[use] = cst.Call(func=cst.Name(converter), args=[cst.Arg(cst.Name(target.value))])
        detached = _method(match.tensor, "detach")
        changes[match.sync] = detached.with_changes(lpar=match.sync.lpar, rpar=match.sync.rpar)
        where_text = f" and convert with `{converter}()` where it is read" if len(changes) > 1 else ""
        return self.fix(f"Sum on the device with `.detach()`{where_text}", changes, safe=False)
