"""GPU104 `cpu-in-loop`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.analysis import Kind
from gpulint.analysis.data import _FACTORIES
from gpulint.analysis.data_facts import ACCELERATOR, data_facts
from gpulint.analysis.default_device import cuda_default
from gpulint.analysis.host_reads import _to_host_call
from gpulint.analysis.training import training_facts

_SAME_DEVICE = frozenset(("detach", "float", "half", "view", "reshape", "squeeze", "unsqueeze", "flatten", "mean",
                          "sum", "clone", "contiguous", "exp", "log", "sqrt", "div", "mul", "add", "sub", "abs",
                          "clamp", "sigmoid", "tanh"))
# Host allocations: factories without `device=`, and the legacy typed constructors (`torch.FloatTensor(n, d)`)
_HOST_FACTORIES = frozenset(f"torch.{f}" for f in ("zeros", "ones", "empty", "full", "Tensor", "FloatTensor",
                                                    "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor"))


class CpuInLoop(GpuRule):
    """`.cpu()` or `.to("cpu")` of a tensor every iteration.

    ## What it does
    Flags blocking device-to-host copies, `.cpu()` and `.to("cpu")`, on every iteration of a training/eval loop,
    and the implicit one of writing a GPU tensor into a CPU tensor allocated before the loop (`losses =
    torch.zeros(n)` then `losses[k] = loss` every batch). `.to(loss_device)` with every binding of
    `loss_device` a CPU device (`torch.device("cpu")`) counts, in a loop over batches, for a tensor built from
    copies to the accelerator; so does `x.detach().cpu()` of a name also bound to a numpy array on another path
    (numpy has no `.detach()`), where a binding of it comes from the accelerator. `torch.save(model.state_dict(),
    path)` of a model this module moves to CUDA, unconditionally every iteration of a step loop, copies every weight
    to the host each step (a checkpoint per full-batch step).

    ## Why it is slow
    A blocking copy to pageable host memory waits for every queued kernel to finish; the GPU then idles until
    Python enqueues the next step.

    ## Example
    ```python
    for x, y in loader:
        out = model(x.cuda())
        all_preds.append(out.argmax(1).cpu())
    ```
    Keep the tensors on the device and copy once after the loop:
    ```python
        all_preds.append(out.argmax(1))
    all_preds = torch.cat(all_preds).cpu()
    ```

    ## Fix
    None. (`non_blocking=True` on a device-to-host copy is not a fix: the host may read the buffer before the
    copy lands.)

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging, end-of-epoch metrics, checkpoints under `if epoch % N == 0:` or any other condition (a
    best-so-far save), after the loop, or once per epoch of an epoch loop; `.to("cpu", non_blocking=True)` followed by an explicit event or
    stream sync, models moved with `model.cpu()`.
    """

    code = "GPU104"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "cpu-in-loop"
    message = "blocking copy to the host every iteration waits for the GPU; keep the tensor on the device and " \
              "copy once"
    host_write = "writing a GPU tensor into `{name}`, a CPU tensor (a torch factory without `device=`), copies " \
                 "it to the host and waits for the GPU every iteration; allocate `{name}` on the device"
    save_message = "`torch.save` of a CUDA model's `state_dict()` every iteration copies every weight to the host " \
                   "and waits for the GPU each step; save every N steps or once, after the loop"
    family = Family.HOST_SYNC
    defers_to = ("GPU302", "GPU303")  # `total += loss.item()`: their finding carries the fix
    VALID = [TRAIN_STEP + "host = loss.cpu()\n"]
    INVALID = [
        Example(TRAIN_STEP + "    host = loss.cpu()\n",
                message="blocking copy to the host every iteration waits for the GPU"),
        Example("import torch\nmodel = torch.nn.Linear(8, 1).cuda()\nlosses = torch.zeros(100)\n"
                "for k, x in enumerate(loader):\n    loss = model(x.cuda()).sum()\n    loss.backward()\n"
                "    losses[k] = loss.detach()\n",
                message="writing a GPU tensor into `losses`, a CPU tensor"),
        Example("import torch\nmodel = torch.nn.Linear(8, 1)\nmodel.cuda()\nx = torch.randn(64, 8, device='cuda')\n"
                "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(100):\n"
                "    loss = model(x).sum()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
                "    torch.save(model.state_dict(), f'{epoch}.pkl')\n",
                message="`torch.save` of a CUDA model's `state_dict()` every iteration"),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        """`losses[k] = loss` where `losses = torch.zeros(n)` was allocated on the host before the loop: writing a
        GPU tensor into a CPU tensor copies it to the host, a blocking copy every iteration (litgpt's `validate`)."""
        if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Subscript:
            return
        target = node.targets[0].target
        holder = target.value
        if type(holder) is not cst.Name or not self._host_allocation(holder):
            return
        value = node.value
        if self._built_on_host(value) or self.analysis.kinds.on_host(value) or not self._on_device(value):
            return
        where = self.where(node)
        if where:
            self.report(target, self.host_write.format(name=holder.value), where=where)

    def _host_allocation(self, name: cst.Name) -> bool:
        """`name` is bound once, outside the loop around it (or in it, on one iteration only), to a torch factory
        with no `device=` or a legacy typed constructor (a CPU tensor), in a program without a CUDA default
        tensor type."""
        bindings = self.analysis.index.visible_bindings(name)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None:
            return False
        value = bindings[0].value
        if type(value) is not cst.Call or \
                self.analysis.qualified(value.func) not in _HOST_FACTORIES or \
                any(a.keyword is not None and a.keyword.value in ("device", "out") or a.star for a in value.args):
            return False
        loop = self.analysis.execution(name).loop
        if loop is None:
            return False
        if self.analysis.index.is_ancestor_or_self(loop, value) and self.analysis.execution(value).every_iteration:
            return False  # built in the loop itself: a fresh host buffer each step (another cost, not this one)
        # (a buffer the loop allocates on its first iteration only, `if i == 0: feats = torch.FloatTensor(n, d)`,
        # is written every step like one allocated before the loop)
        return self.analysis.fact(cuda_default) is None

    def _built_on_host(self, value: cst.BaseExpression) -> bool:
        """`torch.tensor(row)`, `torch.zeros(...)`, `torch.as_tensor([...])` without `device=`: a CPU tensor."""
        if type(value) is not cst.Call:
            return False
        name = self.analysis.qualified(value.func) or ""
        return name.startswith("torch.") and name.count(".") == 1 and not any(
            a.keyword is not None and a.keyword.value == "device" for a in value.args) and \
            name.split(".")[1] in _FACTORIES | {"tensor", "as_tensor", "Tensor", "from_numpy"}

    def _on_device(self, value: cst.BaseExpression, depth: int = 0) -> bool:
        """Certainly a GPU tensor: a copy to the accelerator, a model's output, what a project helper returns from
        one (`chunked_cross_entropy(logits, y)`), a view or reduction of such a value, or a name bound only to
        these. (A tensor built on the host and indexed, `memory_mask[i]`, is not.)"""
        if depth > 6:
            return False
        if type(value) is cst.Subscript:
            return self._on_device(value.value, depth + 1)
        if type(value) is cst.Name:
            # (`ff += outputs` adds in place, `ff = ff.div(norm)` computes where `ff` is: the tensor stays where
            # its other assignments put it)
            bindings = [b for b in self.analysis.index.visible_bindings(value) if b.kind != "augassign" and not (
                type(b.value) is cst.Call and type(b.value.func) is cst.Attribute and
                b.value.func.attr.value in _SAME_DEVICE and type(b.value.func.value) is cst.Name and
                b.value.func.value.value == value.value)]
            return bool(bindings) and len(bindings) <= 6 and all(
                b.kind == "assign" and b.index is None and b.value is not None and
                self._on_device(b.value, depth + 1) for b in bindings)
        if type(value) is not cst.Call:
            return False
        if data_facts(self.analysis).copy_target(value) == ACCELERATOR:
            return True
        func = value.func
        if self.analysis.kind(func) is Kind.MODULE:
            return True  # `model(x)`
        if type(func) is cst.Attribute and func.attr.value in _SAME_DEVICE and self._on_device(func.value, depth + 1):
            return True
        return self._returns_tensor(value) and any(
            self._on_device(a.value, depth + 1) for a in value.args if not a.star)

    def _returns_tensor(self, value: cst.BaseExpression) -> bool:
        hook = self.analysis.kinds.returns_tensor_hook
        return type(value) is cst.Call and hook is not None and hook(value)

    def visit_Call(self, node: cst.Call) -> None:
        if self._saves_cuda_weights(node):
            where = self.where(node)
            if where:
                self.report(node, self.save_message, where=where)
            return
        if not _to_host_call(self, node):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)

    def _saves_cuda_weights(self, node: cst.Call) -> bool:
        """`torch.save(model.state_dict(), path)` with `model` a name this module moves to CUDA (every move it
        makes goes there), not under any `if` inside the loop around it (a periodic or best-so-far checkpoint is
        deliberate): serialising the weights copies each to the host."""
        if not node.args or node.args[0].keyword is not None or node.args[0].star or \
                self.analysis.qualified(node.func) != "torch.save":
            return False
        saved = node.args[0].value
        if type(saved) is not cst.Call or saved.args or type(saved.func) is not cst.Attribute or \
                saved.func.attr.value != "state_dict" or type(saved.func.value) is not cst.Name:
            return False
        loop = self.analysis.execution(node).loop
        if loop is None:
            return False
        for ancestor in self.analysis.index.ancestors(node):
            if ancestor is loop:
                break
            if type(ancestor) in (cst.If, cst.Else, cst.Try, cst.FunctionDef):
                return False  # a condition decides (`if epoch % 10 == 0:`, `if loss < best:`)
        else:
            return False
        return training_facts(self.analysis).module_on_cuda(saved.func.value)
