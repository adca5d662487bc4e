"""GPU203 `host-tensor-moved-each-step`."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis import GPU_HINT, Kind
from gpulint.rule import Rule, Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules._examples import CPU_ONLY_SCRIPTS, DATASET_HEAD, TRAIN_STEP
from gpulint.analysis.data_facts import ACCELERATOR, append_keyword, data_facts, has_star_args, keyword
from gpulint.syntax import argument, positional
from gpulint.analysis.data import _FACTORIES, _RANDOM, _SAME_ON_DEVICE


class HostTensorMovedEachStep(Rule):
    """A tensor built on the host and copied to the GPU every iteration.

    ## What it does
    Flags `torch.zeros(...).to(device)`, `torch.tensor(x).cuda()`, `torch.arange(n).to(x.device)` and other
    torch factories followed by a copy to an accelerator, where this runs every iteration of a training loop.
    Also flags `torch.tensor(values, device=device)` and `torch.as_tensor(values, device=device)` of Python
    numbers, lists or numpy arrays every iteration: `device=` does not move where the values are.

    ## Why it is slow
    The tensor is allocated and filled by the CPU, then crosses PCIe with a blocking copy from pageable memory,
    every step: PyTorch copies from pageable memory synchronously, so the CPU also waits for the GPU work queued
    before the copy. Created on the device, `zeros`/`ones`/`arange`/... cost one kernel launch and no copy.
    `torch.tensor(values, device=device)` is no way out: the values are Python objects on the host, so PyTorch
    builds the tensor on the host and copies it, the same blocking copy (only an intermediate call is saved).
    On an H100, `torch.tensor((w, h, w, h), device="cuda")` took 0.02 ms with the GPU idle and 21.4 ms with
    21 ms of GPU work queued: it waits for all of it, like `.item()` (`benchmarks/host_copies.py`).

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

    For values known only on the host (`torch.tensor((w, h, w, h), device=device)` from a batch's shape), build
    the tensor once before the loop when the values do not change, or use the Python numbers directly
    (`boxes[:, 0::2] *= w`): a Python scalar is passed to the kernel as an argument, with no copy.

    ## Fix
    Moves the target device into the factory as `device=`; a dtype given to `.to()` stays, as `.to(dtype)`
    on the device (so values are cast exactly as before); `non_blocking` is dropped (nothing is copied).
    No fix for `torch.tensor(values)` of Python numbers, lists or numpy arrays (with `device=` or followed by
    `.to(device)`): moving `device=` into it would copy the same host values; what replaces it depends on
    where the values come from.

    ## Fix safety
    Safe for deterministic factories (`zeros`, `ones`, `full`, `arange`, `tensor`, ...). Unsafe for random
    ones (`rand`, `randn`, `randint`, `randperm`, ...): the device's generator draws different numbers than the
    CPU's, so seeded runs are no longer reproducible against earlier ones. No fix when the factory already has
    `device=`, `requires_grad=` (the result would become a leaf tensor), `out=`, `pin_memory=` or `generator=`
    (a CPU generator cannot drive a CUDA factory), or when the copy's target is another tensor (`.to(other)`
    also changes the dtype).

    ## When it is fine
    Constants built once before the loop, `torch.from_numpy(batch).to(device)` (real data has to cross; GPU410
    is about how it crosses), `torch.as_tensor(t, device=device)` of a tensor, and copies outside training
    loops.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text.
    needs_text = GPU_HINT
    code = "GPU203"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "host-tensor-moved-each-step"
    message = "`torch.{factory}` builds a tensor on the host and copies it to the GPU every step; create it on " \
              "the device with `device=`"
    from_values = "`torch.{factory}` of host values builds the tensor on the host and copies it from pageable " \
                  "memory every step, waiting for the GPU (`device=` does not change that); build it once " \
                  "before the loop, or keep the values as Python scalars"
    family = Family.TRANSFERS
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(
        Safety.SAFE, "deterministic factories compute the same values on the device (random ones are offered as "
                     "unsafe fixes)")
    VALID = [TRAIN_STEP + "noise = torch.zeros(2).cuda()\n", *CPU_ONLY_SCRIPTS]
    _CAST = ("loader = DataLoader(dataset, pin_memory=True)\nfor x, y in loader:\n    t = {}\n"
             "    model(x.to(device, non_blocking=True) * t[0]).sum().backward()\n")
    INVALID = [
        Example(TRAIN_STEP + "    noise = torch.zeros(2).cuda()\n",
                message="`torch.zeros` builds a tensor on the host and copies it to t",
                fixed=TRAIN_STEP + '    noise = torch.zeros(2, device="cuda")\n'),
        # the dtype conversion stays a cast after creation: full(..., dtype=float64) would not round via float32
        Example(DATASET_HEAD + _CAST.format("torch.full((2,), 0.1).to(device, torch.float64, non_blocking=True)"),
                fixed=DATASET_HEAD + _CAST.format("torch.full((2,), 0.1, device=device).to(torch.float64)")),
        # values that live on the host are copied whichever way the tensor is spelt: reported, no fix
        Example(DATASET_HEAD + _CAST.format("torch.tensor([0.1, 0.2]).to(device, non_blocking=True)"),
                message="of host values builds the tensor on the host"),
        Example(DATASET_HEAD + _CAST.format("torch.tensor([0.1, 0.2], device=device)"),
                message="`device=` does not change that"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if data_facts(self.analysis).copy_target(node) != ACCELERATOR:
            self._from_host_values(node)
            return
        factory, chain = self._factory(node.func.value)  # type: ignore[union-attr]
        if factory is None:
            return
        name = self.analysis.qualified(factory.func).split(".")[-1]  # type: ignore[union-attr]
        if keyword(factory, "device") is not None:
            return  # built on a device on purpose (often "cpu", then moved): not a host-built tensor by accident
        where = self.where(node)
        if where and self._of_host_values(factory):
            # `device=` would copy the same host values: no fix that removes the copy
            self.report(node, self.from_values.format(factory=name), where=where)
        elif where:
            self.report(node, self.message.format(factory=name), where=where, fix=self._fix(node, factory, name))

    def _of_host_values(self, factory: cst.Call) -> bool:
        """`torch.tensor(values)`/`torch.as_tensor(values)` of Python numbers, lists or numpy arrays."""
        q = self.analysis.qualified(factory.func)
        data = positional(factory)
        return q in ("torch.tensor", "torch.as_tensor") and bool(data) and \
            self.analysis.kind(data[0]) in (Kind.NUMBER, Kind.OTHER, Kind.NUMPY)

    def _from_host_values(self, node: cst.Call) -> None:
        """`torch.tensor((w, h), device=device)`: the values are on the host, so the tensor is built there and
        copied, although the call names the device."""
        device = keyword(node, "device")
        if device is None or not self._of_host_values(node) or \
                data_facts(self.analysis).device_of(device.value) != ACCELERATOR:
            return  # a tensor, or unknown data, may already be on the device
        where = self.where(node)
        if where:
            name = self.analysis.qualified(node.func).split(".")[1]  # type: ignore[union-attr]
            self.report(node, self.from_values.format(factory=name), where=where)

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
