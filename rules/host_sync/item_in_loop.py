"""GPU101 `item-in-loop`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.syntax import method_call
from gpulint.analysis.host_reads import _NOT_TENSOR, _on_host_already, inside_nan_check


class ItemInLoop(GpuRule):
    """`.item()` on a tensor every iteration of a training/eval loop.

    ## What it does
    Flags `tensor.item()` where it runs on every iteration of a training or evaluation loop (a loop over a
    DataLoader, or one whose body runs a forward pass, `backward()` or an optimizer step), including helper
    functions of the same module that such a loop calls.

    Also `loss.data[0]` of the tensor the loop calls `.backward()` on: the `.item()` of PyTorch before 0.4,
    where a loss was a 1-element tensor and indexing it returned a Python number (old training scripts,
    `losses.update(loss.data[0], n)`); a 0-dim loss raises there in current releases, so the fix is `.item()`
    read periodically or a value kept on the device.

    ## Why it is slow
    `.item()` copies one number to the host, so the CPU must wait until the GPU has finished every kernel queued
    before it. The GPU then runs dry while Python builds the next step. On an H100, a tutorial MLP loop made
    406 blocking syncs per 100 steps this way; keeping the values on the device cut that to 10.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward(); opt.step(); opt.zero_grad()
        losses.append(loss.item())
    ```
    Keep the value on the device and read it when you print:
    ```python
        losses.append(loss.detach())
    ...
    print(torch.stack(losses).mean().item())
    ```

    ## Fix
    None in general: what replaces `.item()` depends on where the number goes. Accumulations such as
    `running_loss += loss.item()` are rewritten by GPU302 (`synced-accumulation`).

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging (`if step % 100 == 0:`), once-per-epoch metrics after the inner loop, `.item()` on numpy
    values, code outside loops, and modules that never use a GPU. Suppress a deliberate one with
    `# noqa: GPU101`.
    """

    code = "GPU101"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "item-in-loop"
    message = "`.item()` every iteration blocks the CPU until the GPU catches up; keep the value on the device"
    legacy_message = ("`{name}.data[0]` reads the one-number loss as a Python value every iteration (the `.item()` "
                      "of PyTorch before 0.4; an error for a 0-dim loss since): the CPU waits for the GPU")
    family = Family.HOST_SYNC
    defers_to = ("GPU302", "GPU303")  # `total += loss.item()`: their finding carries the fix
    VALID = [TRAIN_STEP + "print(loss.item())\n",
             # the first row of an output, not a one-number loss
             TRAIN_STEP + "    out = model(x)\n    first = out.data[0]\n",
             # a warm-up written out as one or two runs is not a loop over batches
             "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nx = torch.randn(8, 4, device='cuda')\n"
             "for _ in range(2 if compiled else 1):\n    print(model(x).sum().item())\n",
             # logging every N steps through a divisibility helper
             "import torch\n\n\ndef divisible_by(numer, denom):\n    return (numer % denom) == 0\n\n\n"
             "model = torch.nn.Linear(2, 2).cuda()\nfor step, x in enumerate(loader):\n    loss = model(x).sum()\n"
             "    loss.backward()\n    if divisible_by(step, 100):\n        print(loss.item())\n",
             # logging every few seconds
             "import time\nimport torch\nmodel = torch.nn.Linear(2, 2).cuda()\nlast = time.time()\n"
             "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    now = time.time()\n"
             "    if now - last > 30:\n        print(loss.item())\n        last = now\n",
             # a first-batch check: the loop ends after one pass
             TRAIN_STEP + "    print('first batch loss', loss.item())\n    break\n",
             # once per tick: the rest of the body is skipped until the counter passes a mark the loop moves on,
             # and a snapshot every N ticks or at the end of the run
             "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\ncur_nimg = tick_start_nimg = cur_tick = 0\n"
             "done = False\nwhile True:\n    x = next(batches)\n    loss = model(x).sum()\n    loss.backward()\n"
             "    cur_nimg += x.shape[0]\n    done = cur_nimg >= total_kimg * 1000\n"
             "    if (not done) and (cur_tick != 0) and (cur_nimg < tick_start_nimg + kimg_per_tick * 1000):\n"
             "        continue\n    print(f'tick {cur_tick} loss {loss.item()}')\n"
             "    if done or cur_tick % snapshot_ticks == 0:\n        print(model(x).sum().item())\n"
             "    cur_tick += 1\n    tick_start_nimg = cur_nimg\n    if done:\n        break\n"]
    INVALID = [
        # the `.item()` of PyTorch before 0.4: indexing the one-number loss
        Example(TRAIN_STEP + "    losses.update(loss.data[0], x.size(0))\n", message="`loss.data[0]` reads the"),
        Example(TRAIN_STEP + "    print(loss.item())\n",
                message="`.item()` every iteration blocks the CPU until the GPU catch"),
        # a guard that skips the iterations past a limit leaves every other iteration reading the loss
        Example("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nfor i, x in enumerate(loader):\n"
                "    step = i // update_freq\n    if step >= steps_per_epoch:\n        continue\n"
                "    loss = model(x).sum()\n    loss.backward()\n    print(loss.item())\n"),
        # an evaluation loop over a name bound to `enumerate(loader)`, the model reached through a callable
        Example("def validate(infer_fn, val_loader, log_fn):\n    data_iter = enumerate(val_loader)\n"
                "    for i, (images, target) in data_iter:\n"
                "        loss, output = infer_fn(images.cuda(non_blocking=True), target.cuda(non_blocking=True))\n"
                "        log_fn(loss.detach().item())\n"),
    ]

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`loss.data[0]`: the `.item()` of PyTorch before 0.4, where a loss was a 1-element tensor and indexing
        it returned a Python number (a 0-dim loss raises there since). Only the tensor that the same function
        calls `.backward()` on with no argument (a one-number loss), on the device."""
        value = node.value
        if not (type(value) is cst.Attribute and value.attr.value == "data" and type(value.value) in (cst.Name, cst.Call)
                and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index
                and type(node.slice[0].slice.value) is cst.Integer and node.slice[0].slice.value.value == "0"):
            return
        parent = self.analysis.parent(node)
        if type(parent) is cst.AssignTarget or type(parent) is cst.AugAssign and parent.target is node:
            return  # written to, not read (`total += loss.data[0]` reads it)
        tensor = value.value
        if type(tensor) is cst.Call:
            self._criterion_call_read(node, tensor)
            return
        if not self.analysis.is_device_tensor(tensor) or \
                tensor.value not in self._backward_names(node) and not self._a_criterions_value(tensor):
            return
        if any(type(a) is cst.If and "version" in self.analysis.code(a.test)
               for a in self.analysis.index.ancestors(node)):
            return  # `if int(version[0]) > 0: loss.item() else: loss.data[0]`: the old release's branch
        where = self.where(node)
        if where:
            self.report(node, self.legacy_message.format(name=tensor.value), where=where)

    def _criterion_call_read(self, node: cst.Subscript, call: cst.Call) -> None:
        """`criterion(outputs, gts).data[0]`: the loss of a criterion call on device tensors, read at once
        (ZijunDeng's validation: `val_loss.update(criterion(outputs, gts).data[0] / N, N)`)."""
        from gpulint.analysis.loops import _names_a_loss

        if not _names_a_loss(call.func) or not any(
                type(a.value) is cst.Name and self.analysis.is_device_tensor(a.value) for a in call.args):
            return
        where = self.where(node)
        if where:
            self.report(node, self.legacy_message.format(name=self.analysis.code(call.func) + "(...)"), where=where)

    def _a_criterions_value(self, name: cst.Name) -> bool:
        """Every binding of `name` is the value of a call of a loss or criterion (`loss = criterion(outputs,
        targets)` in an evaluation loop that runs no backward pass): a one-number loss."""
        from gpulint.analysis.data_facts import data_facts
        from gpulint.analysis.loops import _names_a_loss

        bindings = data_facts(self.analysis).bindings(name)
        return bool(bindings) and all(b.kind == "assign" and b.index is None and type(b.value) is cst.Call and
                                      _names_a_loss(b.value.func) for b in bindings)

    def _backward_names(self, node: cst.CSTNode) -> frozenset:
        """The names the function holding `node` calls `.backward()` on with no argument."""
        fn = self.analysis.index.enclosing_function(node)
        return self.analysis.fact(_backward_receivers).get(id(fn) if fn is not None else 0, frozenset())

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "item")
        if attr is None or node.args or self.analysis.kind(attr.value) in _NOT_TENSOR:
            return
        if _on_host_already(self, attr.value) or inside_nan_check(self, node):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)


def _backward_receivers(analysis) -> dict:
    """id of a function (0 for the module's top level) -> the names it calls `.backward()` on with no argument
    (`loss.backward()`); one pass over the module's calls."""
    from gpulint.analysis.node_types import of_types

    found: dict = {}
    for call in of_types(analysis.index, cst.Call):
        func = call.func  # type: ignore[attr-defined]
        if type(func) is cst.Attribute and func.attr.value == "backward" and not call.args \
                and type(func.value) is cst.Name:  # type: ignore[attr-defined]
            fn = analysis.index.enclosing_function(call)
            key = id(fn) if fn is not None else 0  # 0: the module's own statements (a script's loop)
            found[key] = found.get(key, frozenset()) | {func.value.value}
    return found
