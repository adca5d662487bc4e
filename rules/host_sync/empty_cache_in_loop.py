"""GPU110 `empty-cache-in-loop`."""

from __future__ import annotations

import libcst as cst

from gpulint.fixes import statement_removal
from gpulint.rule import GpuRule, Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules._examples import TRAIN_STEP


class EmptyCacheInLoop(GpuRule):
    """`torch.cuda.empty_cache()` every iteration.

    ## What it does
    Flags `torch.cuda.empty_cache()` on every iteration of a training/eval loop.

    ## Why it is slow
    It synchronises to return cached blocks to the driver, and the next step must then ask the driver for
    memory again with `cudaMalloc`, itself a synchronising call. The caching allocator exists to avoid both.

    ## Example
    ```python
    for x, y in loader:
        train_step(x, y)
        torch.cuda.empty_cache()
    ```
    Delete the call; if memory is tight, fix the fragmentation instead
    (`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`).

    ## Fix
    Removes the call (a `pass` takes its place if the block would be empty).

    ## Fix safety
    Unsafe: memory another process on the same GPU relied on being released stays in PyTorch's cache, and
    `nvidia-smi` shows more memory in use.

    ## When it is fine
    Periodic calls (every N steps or once per epoch), code outside loops, calls between distinct phases of a job.
    """

    code = "GPU110"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "empty-cache-in-loop"
    message = "`torch.cuda.empty_cache()` every iteration syncs and forces fresh cudaMalloc calls; remove it"
    family = Family.HOST_SYNC
    fix_availability = FixAvailability.ALWAYS
    fix_safety = FixSafety(
        Safety.UNSAFE, "memory stays in PyTorch's cache instead of being released to other processes")
    VALID = [TRAIN_STEP + "torch.cuda.empty_cache()\n"]
    INVALID = [
        Example(TRAIN_STEP + "    torch.cuda.empty_cache()\n",
                message="`torch.cuda.empty_cache()` every iteration syncs and forces ",
                fixed=TRAIN_STEP + ""),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.analysis.qualified(node.func) not in ("torch.cuda.empty_cache", "torch.accelerator.empty_cache"):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where, fix=self._fix(node))

    def _fix(self, node: cst.Call):
        changes = statement_removal(self.analysis, node)
        return self.fix("Remove `torch.cuda.empty_cache()`", changes, safe=False) if changes else None
