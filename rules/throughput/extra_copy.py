"""GPU412 `extra-copy`."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data_facts import ACCELERATOR, data_facts, keyword
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules.transfers.host_tensor_moved_each_step import HostTensorMovedEachStep

_HEAD = 'import torch\n\ndevice = torch.device("cuda")\n'


class ExtraCopy(HostTensorMovedEachStep):
    """A tensor built on the host only to be copied to the GPU, or copied to the device it is already on.

    ## What it does
    Flags `torch.zeros(n).to(device)`, `torch.tensor(data).cuda()`, `torch.randn(...).cuda()` and other torch
    factories followed by a copy to an accelerator, anywhere in a module (GPU203 reports the same shape inside
    training loops, and this rule defers to it there). Also flags `x.to(device)` where `x` was created on that
    very device (`torch.zeros(n, device=device)`): a copy that does nothing but cost a call.

    ## Why it is slow
    The tensor is allocated and filled by the CPU, then crosses PCIe with a blocking copy from pageable memory,
    and a second allocation is made on the device. With `device=` the factory fills the tensor on the device in
    one kernel (PyTorch's performance tuning guide: "Create tensors directly on the target device").

    ## Example
    ```python
    weights = torch.ones(num_classes).to(device)
    noise = torch.randn(64, 100).cuda()
    ```
    Use instead:
    ```python
    weights = torch.ones(num_classes, device=device)
    noise = torch.randn(64, 100, device="cuda")
    ```

    ## Fix
    Moves the target device into the factory as `device=` (as GPU203 does): a dtype given to `.to()` stays, as
    `.to(dtype)` on the device; `non_blocking` is dropped. No fix for a copy to the device a tensor is already
    on (remove it by hand: it may be there on purpose when the device can vary).

    ## Fix safety
    Safe for deterministic factories (`zeros`, `ones`, `full`, `arange`, `tensor`, ...). Unsafe for random
    ones (`rand`, `randn`, `randint`, `randperm`, ...): the device's generator draws different numbers than the
    CPU's. No fix when the factory has `requires_grad=`, `out=`, `pin_memory=` or `generator=`.

    ## When it is fine
    A factory with an explicit `device=` (often "cpu", then moved on purpose), `torch.from_numpy(a).to(device)`
    (real data has to cross), and CPU-only modules. A one-off copy at start-up costs little: the rule is about
    tidiness as much as speed there.
    """

    code = "GPU412"
    name = "extra-copy"
    message = "`torch.{factory}` builds a tensor on the host and then copies it to the GPU; create it on the " \
              "device with `device=`"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.SAFE, "deterministic factories compute the same values on the device (random "
                                        "ones are offered as unsafe fixes)")
    defers_to = ("GPU203",)
    added_in = "0.2.0"
    # Outside loops the copy is paid once (GPU203 owns the per-step case): on labelled real code most findings
    # were one-off setup, so it is a preview rule, off unless selected.
    preview = True
    needs_text = GPU_HINT
    same_device = "`.to()` copies a tensor to the device it was created on: the call does nothing; remove it"
    VALID = (
        _HEAD + "weights = torch.ones(10, device=device)\n",
        _HEAD + "import numpy as np\nbatch = torch.from_numpy(np.zeros(3)).to(device)\n",
        _HEAD + "w = torch.zeros(3, device=\"cpu\")\nw = w.to(device)\n",
    )
    INVALID = (
        Example(_HEAD + "weights = torch.ones(10).to(device)\n", message="`torch.ones`",
                fixed=_HEAD + "weights = torch.ones(10, device=device)\n"),
        Example(_HEAD + "w = torch.zeros(3, device=device)\nw2 = w.to(device)\n", message="does nothing"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        facts = data_facts(self.analysis)
        if facts.copy_target(node) != ACCELERATOR or not self.analysis.targets_gpu:
            return
        factory, _ = self._factory(node.func.value)  # type: ignore[union-attr]
        if factory is not None:
            if keyword(factory, "device") is None:
                name = self.analysis.qualified(factory.func).split(".")[-1]  # type: ignore[union-attr]
                self.report(node, self.message.format(factory=name), fix=self._fix(node, factory, name))
            return
        if self._already_there(node):
            self.report(node, self.same_device)

    def _already_there(self, copy: cst.Call) -> bool:
        """`x.to(D)` where every assignment of `x` is a torch factory called with `device=D` (same text)."""
        receiver = copy.func.value  # type: ignore[union-attr]
        if type(receiver) is not cst.Name or copy.func.attr.value != "to" or len(copy.args) != 1 or \
                copy.args[0].keyword is not None:  # type: ignore[union-attr]
            return False
        target = self.analysis.code(copy.args[0].value)
        bindings = [b for b in data_facts(self.analysis).bindings(receiver) if b.value is not copy]
        values = [b.value for b in bindings if b.kind == "assign" and b.index is None]
        if not values or len(values) != len(bindings):
            return False
        for value in values:
            factory, chain = self._factory(value) if type(value) is cst.Call else (None, [])
            device = keyword(factory, "device") if factory is not None and not chain else None
            if device is None or self.analysis.code(device.value) != target:
                return False
        return True
