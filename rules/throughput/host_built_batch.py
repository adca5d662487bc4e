"""GPU410 `host-built-batch`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data_facts import ACCELERATOR, data_facts, keyword
from gpulint.analysis.data import _SAME_ON_DEVICE
from gpulint.analysis.calls import project_calls
from gpulint.analysis.data_path import data_path_facts
from gpulint.analysis.project import display_path
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Related, Rule, Safety
from gpulint.syntax import is_true, positional

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
    array), and this runs every iteration of a training loop, directly or in a helper the loop calls. The
    build may also sit in a project function or method whose every `return` hands back tensors it built on the
    host (`x, y = train_loader.next_batch()` then `x.to(device)` in the loop): the copy is reported in the loop,
    naming the helper, with the line that builds the batch as related location. Also
    flags `torch.from_numpy(frame).to(device)` written in one expression (an inference loop over frames), and
    `torch.cat(crops).cuda(non_blocking=True)`: the pieces may be pinned, but what `torch.cat`/`torch.stack`
    return is a new tensor in pageable memory, and from pageable memory `non_blocking=True` still waits (on an
    H100: 21.4 ms behind 21 ms of queued GPU work, where a pinned tensor's copy returned in 0.07 ms).

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

    For a small tensor (one 640x640 image) the copy itself is not faster pinned: on an H100 with the GPU idle,
    `torch.from_numpy(img).to(device)` took 0.125 ms and `.pin_memory().to(device, non_blocking=True)` 0.100 ms.
    The difference is the wait: with 21 ms of GPU work queued, the pageable copy returned after 21.4 ms (it
    waits for that work) and the pinned one after 0.5 ms (`benchmarks/host_copies.py`,
    `benchmarks/results/host_copies_h100.txt`). A loop that reads results back every iteration anyway (an
    inference loop that draws each frame's boxes) gains little until those reads go too.

    ## Fix
    Pins the batch and copies it with `non_blocking=True`: `x.cuda()` becomes
    `x.pin_memory().cuda(non_blocking=True)`; `x.to(device)` becomes `(x.pin_memory() if
    torch.cuda.is_available() else x).to(device, non_blocking=True)` (pinning raises on a machine without an
    accelerator). No fix for `.to()` with other arguments, when the module does not `import torch`, or for
    `torch.from_numpy(...).to(device)` in one expression (report only: whether pinning pays depends on what
    else the loop waits for, see above), nor for `torch.cat(...).cuda(non_blocking=True)` (pinning raises if
    the pieces are on the device after all).

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
    fresh = "`{builder}` makes a new tensor in pageable memory, so `non_blocking=True` does not apply: the copy " \
            "still waits for the GPU every step; pin it (`.pin_memory()`) or build it on the device"
    returned = "`{helper}` returns a batch it built on the host, and it is copied here from pageable memory " \
               "every step: the copy blocks; pin it and copy with `non_blocking=True` (or build it on the device)"
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
        built = self._built_inline(receiver)
        if built == "torch.from_numpy" or (built and is_true(getattr(keyword(node, "non_blocking"), "value", None))):
            # `torch.from_numpy(frame).float().to(device)`, `torch.cat(crops).cuda(non_blocking=True)`: report
            # only (a fix would pin, which raises if the pieces were on the device after all)
            where = self.where(node)
            if where:
                self.report(node, None if built == "torch.from_numpy" else self.fresh.format(builder=built),
                            where=where)
            return
        if not isinstance(receiver, cst.Name) or facts.batch_loop(receiver) is not None:
            return  # direct factories are GPU203's; loader batches GPU201/GPU202's
        builder = self._host_builder(receiver, node)
        if builder is None:
            returned = self._returned_by_helper(receiver, node)
            where = self.where(node) if returned is not None else None
            if where:
                helper, sink = returned
                self.report(node, self.returned.format(helper=helper), where=where,
                            fix=self._fix(node, receiver),
                            related=(Related(display_path(sink.path), sink.line,
                                             f"{sink.what} builds it on the host"),))
            return
        where = self.where(node)
        if where:
            self.report(node, where=where, fix=self._fix(node, receiver))

    def _returned_by_helper(self, name: cst.Name, copy: cst.Call):
        """(helper, where it builds) when every binding of `name` takes what a project function or method
        returns, and every tensor that returns is built on the host there (`x, y = loader.next_batch()`)."""
        calls = project_calls(self.analysis)
        where = self.where(copy)
        if calls is None or where is None or not where.every_iteration or where.loop is None:
            return None
        index = self.analysis.index
        before = [b for b in data_facts(self.analysis).bindings(name)
                  if index.is_ancestor_or_self(where.loop.body, b.source) and index.order(b.source) < index.order(copy)
                  and not index.is_ancestor_or_self(b.source, copy)]
        if not before:
            return None
        last = max(before, key=lambda b: index.order(b.source))  # the binding this step's copy reads
        node = self.analysis.parent(last.source)
        while node is not None and node is not where.loop.body:
            if isinstance(node, (cst.If, cst.Try, cst.For, cst.While, cst.With)):
                return None  # bound only on some iterations (or several times): not told here
            node = self.analysis.parent(node)
        if last.kind != "assign" or not isinstance(last.value, cst.Call):
            return None
        target = calls.callee(last.value, own_module=True)
        if target is None or target[1].returns_host_batch is None:
            return None
        return target[0], target[1].returns_host_batch

    def _built_inline(self, expr: cst.BaseExpression) -> Optional[str]:
        """`torch.from_numpy(a)` (host memory the numpy array owns), `torch.cat(...)` or `torch.stack(...)` (a
        new tensor), possibly converted on the way (`.float()`, `.unsqueeze(0)`, ...): which one, else None."""
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                expr.func.attr.value in _SAME_ON_DEVICE:
            expr = expr.func.value
        q = self.analysis.qualified(expr.func) if isinstance(expr, cst.Call) else None
        return q if q in ("torch.from_numpy", "torch.cat", "torch.stack") else None

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
