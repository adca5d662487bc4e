"""GPU2xx: host-to-device transfers that cost more than they must.

A training step's input has to cross PCIe. From pageable memory that copy is staged and blocks the Python
thread; from pinned memory it runs asynchronously beside compute. Tensors that could be born on the device
should not cross at all.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT, Kind, LoopRole
from gpulint.rule import Rule
from gpulint.rules._data import (ACCELERATOR, TENSOR_DATASETS, append_keyword, data_facts, has_star_args,
                                 is_dataloader, is_false, keyword)
from gpulint.syntax import argument, positional


def _true() -> cst.Name:
    return cst.Name("True")


def _dataset(call: cst.Call) -> Optional[cst.BaseExpression]:
    arg = argument(call, "dataset", 0)
    return arg.value if arg is not None else None


def would_pin(rule: Rule, loader: cst.Call) -> bool:
    """GPU201 asks for `pin_memory=True` on this `DataLoader(...)`: its batches go to an accelerator."""
    facts = data_facts(rule.analysis)
    if keyword(loader, "pin_memory") is not None or has_star_args(loader):
        return False
    if facts.on_device(_dataset(loader)):
        return False  # pinning a CUDA tensor raises: the data is on the device already
    loops = facts.loops_over(loader)
    if any(facts.moves_batches(loop) for loop in loops):
        return True
    # No copy in sight (a step helper or a trainer does it): trust a module that plainly targets CUDA, unless
    # every loop over this loader is visibly CPU work (it neither copies anything nor trains).
    if not facts.clearly_cuda():
        return False
    return not loops or any(_feeds_a_step(rule, loop) for loop in loops)


def _feeds_a_step(rule: Rule, loop: cst.For) -> bool:
    """A hot loop whose own body trains or hands its batch to one of the module's functions."""
    if rule.analysis.loops.role(loop) is not LoopRole.HOT:
        return False
    for node in data_facts(rule.analysis).body_calls(loop):
        if rule.analysis.loops.is_training_call(node, follow_helpers=True) or \
                rule.analysis.loops.local_function(node) is not None:
            return True
    return False


def pinned(rule: Rule, loader: cst.Call) -> bool:
    """The loader pins its batches, or will once GPU201's fix is applied (same `--fix` run)."""
    pin = keyword(loader, "pin_memory")
    if pin is not None:
        return not is_false(pin.value)
    return would_pin(rule, loader)


class DataLoaderWithoutPinMemory(Rule):
    """`DataLoader(...)` without `pin_memory=True` whose batches go to a GPU.

    ## What it does
    Flags a `torch.utils.data.DataLoader(...)` call that does not pass `pin_memory` when a training or
    evaluation loop of the same module copies its batches to an accelerator (`.to(device)`, `.cuda()`), or the
    module plainly targets CUDA and the loader is iterated in a training loop (or handed elsewhere).

    ## Why it is slow
    A copy from pageable host memory is staged through a pinned bounce buffer by the driver and blocks the
    Python thread until it is done, so it cannot overlap with the GPU's work. With `pin_memory=True` the
    loader's workers (or its pin thread) place each batch in page-locked memory, and `.to(device,
    non_blocking=True)` (GPU202) becomes a true asynchronous DMA.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```
    Use instead:
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix
    Adds `pin_memory=True` to the call.

    ## Fix safety
    Safe: batches hold the same values; only the host memory they live in changes. On a machine without an
    accelerator PyTorch warns once and does not pin.

    ## When it is fine
    `pin_memory` given explicitly (even `pin_memory=False`: that is a decision), `**kwargs` that may carry it,
    datasets already on the GPU (pinning CUDA tensors raises), loaders whose batches stay on the CPU, and
    modules that never use a GPU. Pinning has a cost of its own (a pin-memory thread copies every batch once
    more): with tiny batches and no workers it can make a step slower, as `gpulint verify` showed on an eval
    loop of 64x784 batches on an H100 (1.09 -> 1.70 ms/step, docs/benchmarks.md). Measure with
    `gpulint verify` and pass `pin_memory=False` to keep the loader as it is.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text.
    needs_text = GPU_HINT
    code = "GPU201"
    name = "dataloader-without-pin-memory"
    message = "`DataLoader` without `pin_memory=True` feeds a GPU: host-to-device copies block and cannot overlap"

    def visit_Call(self, node: cst.Call) -> None:
        if not is_dataloader(self.analysis, node) or not would_pin(self, node):
            return
        fix = self.fix("Add `pin_memory=True`", {node: lambda updated: append_keyword(updated, "pin_memory",
                                                                                      _true())}, safe=True)
        self.report(node, fix=fix)


class CopyWithoutNonBlocking(Rule):
    """A batch from a pinned DataLoader copied to the GPU without `non_blocking=True`.

    ## What it does
    Flags `.to(device)` and `.cuda()` of a batch (or part of one: unpacked, indexed, or rebuilt in a
    comprehension such as `[t.to(device) for t in batch]`) inside a loop over a `DataLoader` that pins memory,
    or that GPU201 will make pin memory, every iteration.

    ## Why it is slow
    Without `non_blocking=True` the copy blocks the Python thread until it completes, even from pinned memory,
    so the CPU cannot queue the forward pass while the batch is in flight. With it, the copy is queued on the
    current stream and the kernels that use the batch are ordered after it: same results, no stall.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```
    Use instead:
    ```python
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix
    Adds `non_blocking=True` to the call.

    ## Fix safety
    Safe: a host-to-device copy is ordered before every kernel queued after it on the same stream. This rule
    never touches device-to-host copies (`.cpu()`, `.to("cpu")`): there `non_blocking=True` lets the host
    read the buffer before the copy has landed, a race that silently produces wrong numbers.

    ## When it is fine
    Loaders with `pin_memory=False` (from pageable memory the copy is synchronous anyway), copies that already
    pass `non_blocking`, copies to the CPU, and whole custom batch objects of loaders with a `collate_fn`
    (their `.to()` may not accept `non_blocking`).
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text.
    needs_text = GPU_HINT
    code = "GPU202"
    name = "copy-without-non-blocking"
    message = "copy of a pinned batch to the GPU without `non_blocking=True` blocks the CPU every step"

    def visit_Call(self, node: cst.Call) -> None:
        facts = data_facts(self.analysis)
        if facts.copy_target(node) != ACCELERATOR:
            return
        method = node.func.attr.value  # type: ignore[union-attr]
        if keyword(node, "non_blocking") is not None or argument(node, "non_blocking",
                                                                  1 if method == "cuda" else 2) is not None:
            return
        receiver = node.func.value  # type: ignore[union-attr]
        loop = facts.batch_loop(receiver)
        if loop is None or not self.analysis.index.is_ancestor_or_self(loop.body, node):
            return
        loaders = facts.loaders(loop.iter)
        if not loaders or not all(pinned(self, c) for c in loaders):
            return
        whole_batch = isinstance(receiver, cst.Name) and any(
            b.kind == "for" and b.source is loop and b.index is None for b in facts.bindings(receiver))
        if whole_batch and any(keyword(c, "collate_fn") is not None for c in loaders):
            return
        where = self.where(node)
        if where:
            fix = self.fix("Add `non_blocking=True`", {node: lambda updated: append_keyword(
                updated, "non_blocking", _true())}, safe=True)
            self.report(node, where=where, fix=fix)


_FACTORIES = {"zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor", "as_tensor",
              "zeros_like", "ones_like", "empty_like", "full_like", "rand", "randn", "randint", "randperm",
              "rand_like", "randn_like", "randint_like"}
_RANDOM = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like"}
# Methods between the factory and the copy that compute the same values on either device.
_SAME_ON_DEVICE = {"float", "double", "half", "bfloat16", "long", "int", "short", "bool", "unsqueeze", "view",
                   "reshape", "expand", "repeat", "t", "flatten", "squeeze", "contiguous", "clone"}


class HostTensorMovedEachStep(Rule):
    """A tensor built on the host and copied to the GPU every iteration.

    ## What it does
    Flags `torch.zeros(...).to(device)`, `torch.tensor(x).cuda()`, `torch.arange(n).to(x.device)` and other
    torch factories followed by a copy to an accelerator, where this runs every iteration of a training loop.

    ## Why it is slow
    The tensor is allocated and filled by the CPU, then crosses PCIe with a blocking copy from pageable memory,
    every step. Created on the device it costs one kernel launch (or, for `torch.tensor(data)`, one copy with
    no intermediate host tensor).

    ## Example
    ```python
    for x, y in loader:
        mask = torch.ones(x.shape[0]).to(device)
        pos = torch.arange(x.shape[1]).to(x.device, torch.float32)
    ```
    Use instead:
    ```python
        mask = torch.ones(x.shape[0], device=device)
        pos = torch.arange(x.shape[1], device=x.device).to(torch.float32)
    ```

    ## Fix
    Moves the target device into the factory as `device=`; a dtype given to `.to()` stays, as `.to(dtype)`
    on the device (so values are cast exactly as before); `non_blocking` is dropped (nothing is copied).

    ## Fix safety
    Safe for deterministic factories (`zeros`, `ones`, `full`, `arange`, `tensor`, ...). Unsafe for random
    ones (`rand`, `randn`, `randint`, `randperm`, ...): the device's generator draws different numbers than the
    CPU's, so seeded runs are no longer reproducible against earlier ones. No fix when the factory already has
    `device=`, `requires_grad=` (the result would become a leaf tensor), `out=`, `pin_memory=` or `generator=`
    (a CPU generator cannot drive a CUDA factory), or when the copy's target is another tensor (`.to(other)`
    also changes the dtype).

    ## When it is fine
    Constants built once before the loop, `torch.from_numpy(batch).to(device)` (real data has to cross), and
    copies outside training loops.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text.
    needs_text = GPU_HINT
    code = "GPU203"
    name = "host-tensor-moved-each-step"
    message = "`torch.{factory}` builds a tensor on the host and copies it to the GPU every step; create it on " \
              "the device with `device=`"

    def visit_Call(self, node: cst.Call) -> None:
        if data_facts(self.analysis).copy_target(node) != ACCELERATOR:
            return
        factory, chain = self._factory(node.func.value)  # type: ignore[union-attr]
        if factory is None:
            return
        name = self.analysis.qualified(factory.func).split(".")[-1]  # type: ignore[union-attr]
        if keyword(factory, "device") is not None:
            return  # built on a device on purpose (often "cpu", then moved): not a host-built tensor by accident
        where = self.where(node)
        if where:
            self.report(node, self.message.format(factory=name), where=where, fix=self._fix(node, factory, name))

    def _factory(self, expr: cst.BaseExpression):
        chain = []
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                expr.func.attr.value in _SAME_ON_DEVICE and self.analysis.is_tensor(expr.func.value):
            chain.append(expr)
            expr = expr.func.value
        if isinstance(expr, cst.Call):
            q = self.analysis.qualified(expr.func)
            if q is not None and q.startswith("torch.") and q.count(".") == 1 and q.split(".")[1] in _FACTORIES:
                return expr, chain
        return None, chain

    def _fix(self, copy: cst.Call, factory: cst.Call, name: str):
        unfixable = ("requires_grad", "out", "pin_memory", "generator")
        if has_star_args(factory) or any(keyword(factory, k) for k in unfixable):
            return None
        method = copy.func.attr.value  # type: ignore[union-attr]
        allowed = {"device", "non_blocking"} | ({"dtype"} if method == "to" else set())
        if any(a.keyword is not None and a.keyword.value not in allowed for a in copy.args):
            return None
        args = positional(copy)
        if method == "cuda":
            device_arg = argument(copy, "device", 0)
            device = device_arg.value if device_arg is not None else cst.SimpleString('"cuda"')
            if len(args) > 1:
                return None
            rest = None
        else:
            device_arg = argument(copy, "device", 0)
            if device_arg is None or len(args) > 2:
                return None
            dtype = argument(copy, "dtype", 1)
            device = device_arg.value
            rest = dtype
        built = append_keyword(factory, "device", device.deep_clone())
        receiver = copy.func.value  # type: ignore[union-attr]
        replacement = receiver.deep_replace(factory, built) if receiver is not factory else built
        if rest is not None:
            rest_arg = rest.with_changes(comma=cst.MaybeSentinel.DEFAULT)
            replacement = cst.Call(func=cst.Attribute(value=replacement, attr=cst.Name("to")), args=[rest_arg])
        replacement = replacement.with_changes(lpar=copy.lpar, rpar=copy.rpar)
        random = name in _RANDOM
        note = " (random numbers come from the device's generator)" if random else ""
        return self.fix(f"Create the tensor on the device with `device=`{note}", {copy: replacement},
                        safe=not random)


class TensorDatasetLoaderOnGpu(Rule):
    """A `DataLoader` over an in-memory `TensorDataset` feeding a GPU training loop.

    ## What it does
    Flags `DataLoader(TensorDataset(x, y), ...)` when a training or evaluation loop iterates the loader and the
    batches go to an accelerator.

    ## Why it is slow
    The tensors are already in memory, yet the loader fetches every sample with its own `__getitem__` call and
    stacks them with `default_collate` on the CPU, one Python call per sample, then copies the batch across
    PCIe. On an H100 (torch 2.11, 3-layer MLP, batch 256, 400 steps) the tutorial loop took 1.48 s; pinning and
    removing its syncs, 1.21 s; the same training with the tensors on the GPU and batches indexed by a device
    `torch.randperm`, 0.40 s (docs/measurements-gpu204.md).

    ## Example
    ```python
    loader = DataLoader(TensorDataset(X, Y), batch_size=256, shuffle=True)
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            ...
    ```
    If the data fits in GPU memory, move it once and index batches on the device:
    ```python
    X, Y = X.to(device), Y.to(device)
    for epoch in range(epochs):
        perm = torch.randperm(len(X), device=device)
        for i in range(0, len(X), 256):
            idx = perm[i:i + 256]
            x, y = X[idx], Y[idx]
            ...
    ```
    If it does not, index whole batches on the host: `DataLoader(ds, sampler=BatchSampler(RandomSampler(ds),
    256, drop_last=False), batch_size=None, pin_memory=True)` (0.64 s in the same measurement).

    ## Fix
    None: the rewrite changes the loop's structure, and only the author knows whether the data fits on the GPU.

    ## Fix safety
    No fix.

    ## When it is fine
    Datasets too large for GPU memory, loaders that already fetch whole batches (`batch_size=None` with a
    batch sampler), datasets other than `TensorDataset` (files, augmentation), and CPU-only modules.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text.
    needs_text = GPU_HINT
    code = "GPU204"
    name = "tensordataset-loader-on-gpu"
    message = "`DataLoader` over an in-memory `TensorDataset` collates every batch sample by sample on the CPU; " \
              "keep the tensors on the GPU and index batches with a device `torch.randperm`"

    def visit_Call(self, node: cst.Call) -> None:
        if not is_dataloader(self.analysis, node):
            return
        facts = data_facts(self.analysis)
        dataset = self._tensor_dataset(_dataset(node))
        if dataset is None or facts.on_device(dataset):
            return
        batch_size = keyword(node, "batch_size")
        if batch_size is not None and isinstance(batch_size.value, cst.Name) and batch_size.value.value == "None":
            return  # a batch sampler feeds whole batches: no per-sample indexing
        loops = [loop for loop in facts.loops_over(node) if self.analysis.loops.role(loop) is LoopRole.HOT]
        if any(facts.moves_batches(loop) for loop in loops) or \
                facts.clearly_cuda() and any(_feeds_a_step(self, loop) for loop in loops):
            self.report(node)

    def _tensor_dataset(self, expr: Optional[cst.BaseExpression], depth: int = 0) -> Optional[cst.Call]:
        if expr is None or depth > 4:
            return None
        if isinstance(expr, cst.Call) and self.analysis.qualified(expr.func) in TENSOR_DATASETS:
            if all(self.analysis.kind(a.value) in (Kind.TENSOR, Kind.UNKNOWN) for a in expr.args):
                return expr
            return None
        if isinstance(expr, cst.Name):
            values = [b.value for b in data_facts(self.analysis).bindings(expr)]
            found = [self._tensor_dataset(v, depth + 1) for v in values]
            if found and all(found):
                return found[0]
        return None
