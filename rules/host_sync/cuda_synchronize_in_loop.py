"""GPU109 `cuda-synchronize-in-loop`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP


class CudaSynchronizeInLoop(GpuRule):
    """`torch.cuda.synchronize()` every iteration.

    ## What it does
    Flags `torch.cuda.synchronize()` (and `torch.accelerator.synchronize()`, `torch.cuda.current_stream()
    .synchronize()`) on every iteration of a training/eval loop.

    ## Why it is slow
    It waits for the whole device to go idle, throwing away the overlap between Python and the GPU that makes
    asynchronous execution fast.

    ## Example
    ```python
    for x, y in loader:
        loss = step(x, y)
        torch.cuda.synchronize()
    ```
    Remove it, or time with CUDA events (`torch.cuda.Event(enable_timing=True)`) and read them periodically.

    ## Fix
    None: a synchronize is often there for a reason (timing, a race with host code).

    ## Fix safety
    No fix.

    ## When it is fine
    Benchmark code that times a step with a host clock right beside it (`torch.cuda.synchronize()` next to
    `time.perf_counter()`), periodic checks, code outside loops.
    """

    code = "GPU109"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "cuda-synchronize-in-loop"
    message = "`{call}` every iteration stalls the CPU until the GPU is idle; time with CUDA events instead"
    _CALLS = {"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize",
              "torch.mps.synchronize", "torch.cuda.current_stream.synchronize"}
    family = Family.HOST_SYNC
    VALID = [TRAIN_STEP + "torch.cuda.synchronize()\n",
             # a loop over several loaders (one evaluation each), not over batches
             "import torch\nresults = {}\nfor name, data_loader in zip(names, data_loaders_val):\n"
             "    torch.cuda.synchronize()\n    results[name] = evaluate(data_loader)\n"]
    INVALID = [
        Example(TRAIN_STEP + "    torch.cuda.synchronize()\n",
                message="`torch.cuda.synchronize()` every iteration stalls the CPU un"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = self._qualified(node)
        if q not in self._CALLS or self._beside_a_timer(node):
            return
        where = self.where(node)
        if where:
            self.report(node, self.message.format(call=f"{q}()"), where=where)

    def _qualified(self, node: cst.Call) -> Optional[str]:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            inner = self.analysis.qualified(func.value.func)
            return f"{inner}.{func.attr.value}" if inner else None
        return self.analysis.qualified(func)

    def _beside_a_timer(self, node: cst.Call) -> bool:
        from gpulint.syntax import statement_of

        stmt = statement_of(node, self.analysis.parent)
        block = self.analysis.parent(stmt) if stmt is not None else None
        if not isinstance(block, cst.IndentedBlock):
            return False
        body = list(block.body)
        i = next((k for k, s in enumerate(body) if s is stmt), None)
        if i is None:
            return False
        for neighbour in body[max(0, i - 1):i + 2]:
            if neighbour is not stmt and "time" in self.analysis.code(neighbour) and any(
                    t in self.analysis.code(neighbour) for t in ("perf_counter", "time()", "monotonic", "timer")):
                return True
        return False
