"""GPU410 `host-built-batch`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data_facts import ACCELERATOR, data_facts
from gpulint.analysis.data_path import data_path_facts
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety
from gpulint.syntax import positional

# Calls that assemble a batch in host memory from numpy arrays or Python lists.
_HOST_BUILDERS = {"torch.stack", "torch.cat", "torch.from_numpy", "torch.tensor", "torch.as_tensor"}

_GET_BATCH = """import numpy as np
import torch

data = np.arange(10_000, dtype=np.int64)
device = "cuda" if torch.cuda.is_available() else "cpu"


def get_batch():
    ix = torch.randint(len(data) - 8, (4,))
    x = torch.stack([torch.from_numpy(data[i:i + 8]) for i in ix])
    {copy}
    return x


for step in range(100):
    loss = model(get_batch())
    loss.backward()
"""


class HostBuiltBatch(Rule):
    """A batch assembled on the host every step and copied to the GPU from pageable memory.

    ## What it does
    Flags `x.to(device)` / `x.cuda()` where `x` was just built on the host with `torch.stack`, `torch.cat`,
    `torch.from_numpy`, `torch.tensor` or `torch.as_tensor` (typically a `get_batch()` helper slicing a numpy
    array), and this runs every iteration of a training loop, directly or in a helper the loop calls.

    ## Why it is slow
    A copy from pageable memory is staged through a driver bounce buffer and blocks the Python thread until it
    has finished, so the CPU cannot queue the next kernels while the batch crosses PCIe. nanoGPT pins the batch
    and copies it asynchronously for exactly this reason (`x.pin_memory().to(device, non_blocking=True)`).
    On an H100 a nanoGPT-shaped 6-layer GPT fed this way ran 26.2 ms a step; with the data on the device and
    batches indexed there, 17.9 ms (with the other fixes of the hand-optimised twin; /work/shared/facts.md).

    ## Example
    ```python
    def get_batch():
        ix = torch.randint(len(data) - block, (batch,))
        x = torch.stack([torch.from_numpy(data[i:i + block]) for i in ix])
        return x.to(device)
    ```
    Use instead:
    ```python
        return (x.pin_memory() if torch.cuda.is_available() else x).to(device, non_blocking=True)
    ```
    Faster still when the corpus fits in GPU memory: move it once (`data = torch.from_numpy(data).to(device)`)
    and build the batch there (`ix = torch.randint(..., device=device)`, `x = data[ix[:, None] +
    torch.arange(block, device=device)]`): nothing crosses PCIe per step.

    ## Fix
    Pins the batch and copies it with `non_blocking=True`: `x.cuda()` becomes
    `x.pin_memory().cuda(non_blocking=True)`; `x.to(device)` becomes `(x.pin_memory() if
    torch.cuda.is_available() else x).to(device, non_blocking=True)` (pinning raises on a machine without an
    accelerator). No fix for `.to()` with other arguments, or when the module does not `import torch`.

    ## Fix safety
    Safe: the batch holds the same values. The pinned host tensor is freshly built each call and PyTorch's
    pinned-memory allocator keeps it alive until the asynchronous copy has finished; kernels that use the batch
    run on the same stream, after the copy.

    ## When it is fine
    Batches already pinned (`.pin_memory()`), batches from a `DataLoader` (GPU201/GPU202 cover those), tensors
    built once before the loop, and CPU-only modules.
    """

    needs_text = GPU_HINT
    code = "GPU410"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "host-built-batch"
    message = "batch built on the host every step and copied from pageable memory: the copy blocks; pin it and " \
              "copy with `non_blocking=True` (or keep the data on the device)"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.SAFE, "the batch holds the same values; the copy runs on the stream that uses it")
    added_in = "0.2.0"
    VALID = (
        _GET_BATCH.format(copy="x = x.pin_memory().to(device, non_blocking=True)"),
        _GET_BATCH.format(copy="pass").replace("for step in range(100):\n    loss = model(get_batch())\n"
                                               "    loss.backward()\n", "x = get_batch().to(device)\n"),
    )
    INVALID = (
        Example(_GET_BATCH.format(copy="x = x.to(device)"), message="pageable",
                fixed=_GET_BATCH.format(copy="x = (x.pin_memory() if torch.cuda.is_available() else x)"
                                             ".to(device, non_blocking=True)")),
    )

    def visit_Call(self, node: cst.Call) -> None:
        facts = data_facts(self.analysis)
        if facts.copy_target(node) != ACCELERATOR:
            return
        receiver = node.func.value  # type: ignore[union-attr]
        if not isinstance(receiver, cst.Name) or facts.batch_loop(receiver) is not None:
            return  # direct factories are GPU203's; loader batches GPU201/GPU202's
        builder = self._host_builder(receiver, node)
        if builder is None:
            return
        where = self.where(node)
        if where:
            self.report(node, where=where, fix=self._fix(node, receiver))

    def _host_builder(self, name: cst.Name, copy: cst.Call) -> Optional[str]:
        bindings = [b for b in data_facts(self.analysis).bindings(name) if b.value is not copy]
        values = [b.value for b in bindings if b.kind == "assign" and b.index is None]
        if not values or len(values) != len(bindings):
            return None
        found = [self.analysis.qualified(v.func) for v in values if isinstance(v, cst.Call)]
        if len(found) == len(values) and all(q in _HOST_BUILDERS for q in found):
            return found[0]
        return None

    def _fix(self, copy: cst.Call, receiver: cst.Name):
        method = copy.func.attr.value  # type: ignore[union-attr]
        if not data_path_facts(self.analysis).imports("torch"):
            return None
        args = positional(copy)
        if len(args) != len(copy.args) or len(args) != (0 if method == "cuda" else 1):
            return None
        pinned = f"{receiver.value}.pin_memory()"
        if method == "cuda":
            text = f"{pinned}.cuda(non_blocking=True)"
        else:
            text = f"({pinned} if torch.cuda.is_available() else {receiver.value})" \
                   f".to({self.analysis.code(args[0])}, non_blocking=True)"
        replacement = cst.parse_expression(text).with_changes(lpar=copy.lpar, rpar=copy.rpar)
        return self.fix("Pin the batch and copy it with `non_blocking=True`", {copy: replacement}, safe=True)
