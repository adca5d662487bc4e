"""GPU112 `sync-in-call`."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.calls import HelperCost, module_calls, project_calls
from gpulint.analysis.project import display_path
from gpulint.diagnostics import Related
from gpulint.analysis import GPU_HINT
from gpulint.rule import Example, Family, GpuRule, Rule

# A script that names no device may still run a project helper that uses the GPU on every call (its environment
# loop calling `policy.select_action(state)` of an agent module that copies to `device`): a module with a
# `__main__` guard is read too (the hot-loop prefilter still applies; library modules naming no device are not).
_TEXT = re.compile(GPU_HINT.pattern + r"|__name__\s*==\s*[\"']__main__[\"']", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _names_a_device(path: Path) -> bool:
    try:
        return GPU_HINT.search(path.read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False


# A loop logging its loss to TensorBoard; `{log}` is how.
_BOARD = ("import torch\n"
          "from torch.utils.tensorboard import SummaryWriter\n"
          "writer = SummaryWriter()\n"
          "model = torch.nn.Linear(2, 1).cuda()\n"
          "for step, x in enumerate(loader):\n"
          "    loss = model(x.cuda()).sum()\n"
          "    loss.backward()\n"
          "{log}")


class SyncInCall(GpuRule):
    """A call every step into a helper or library that reads a tensor back to the host.

    ## What it does
    Follows the calls a training or evaluation loop makes every step into the project's own modules (a metric
    logger's `update(**kwargs)`, an `all_reduce_mean(x)` helper, a timer used as `with dt[1]:`, a method of a
    trainer class, a criterion module's `forward`, a gradient-clipping helper looping over a model's
    parameters) and into well-known libraries (`scaler.get_scale()`, `scaler.step(optimizer)` unless the optimizer
    is fused, TensorBoard's `add_scalar`, `wandb.log`,
    tqdm's `set_postfix`, an `evaluate` metric's `add_batch`, Accelerate's `check_trigger()` and
    `wait_for_everyone()`, Lightning Fabric's `clip_gradients(..., max_norm=...)` (a NaN/inf test of the
    norm unless `error_if_nonfinite=False`), `torch.distributed.barrier()`, an `ema_pytorch` EMA's `update()`,
    torch's `AveragedModel.update_parameters()` on a copy built with a GPU `device=` or moved there (its step counter
    is tested in Python), a torchnet meter's `add()` given tensors (`ClassErrorMeter`, `ConfusionMeter`, ...: they become numpy arrays),
    a torchmetrics aggregation metric's `update()` given a tensor (`MeanMetric`, `RunningMean`, ...: a NaN test read on the host
    unless `nan_strategy="disable"`), torchvision's `nms`/`batched_nms` on tensors, a
    `torch.distributions.Categorical` built from a tensor while argument validation is on, as it is by default),
    and flags the
    call when what it reaches reads a device tensor back to the host: `.item()`, `.cpu()`, `.tolist()`,
    `float(t)`, boolean-mask indexing, `.nonzero()`, a branch on the value of a tensor computed from an argument
    (`if torch.min(y) < -1.:`, `while torch.isnan(y).any():`), a buffer or `nn.Parameter` of the module read back
    (`self.step.data.item()`), a method a project class inherits from a library class of the table (a
    `SummaryWriter` subclass calling `self.add_scalar(tag, value)`), or `torch.cuda.synchronize()`. A
    `@property` is a call too: reading `self.r` where `r` returns `self.decoder.r.item()` syncs on every read.
    So are a helper's uses of its argument's value as a size or a slice bound (`torch.arange(lengths.max())` in
    a `length_to_mask(lengths)`, `x[i, :, start:end]` with `start = starts[i]`: converted with `__index__`;
    not a bound the helper computes only when the caller leaves it out, `if max_len is None: max_len =
    lengths.max()`), a boolean mask
    the helper makes on the device (`sim[~mask]` with `mask = torch.eye(n, dtype=torch.bool).to(device)`), and
    a helper's reads of its argument's elements one by one (a greedy decoder's `if t[i] != 0` over
    `t = indices[k, :]`, or `names[i] for i in indices[k, :]`: one `bool()` or `__index__()` per element), and a
    method called on a parameter that holds one of several project classes (`converter.decode(...)` with a
    CTC or an attention converter passed in), reported when every candidate's method pays. A module handed to a
    helper that runs it and reads what it returns (`test_net(net, image)` doing `y = net(x)`, then
    `y.cpu().numpy()`) is reported at the call too: the read waits for the module's forward pass; the helper's
    reads of the module's Python attributes (`int(net.num_classes)`, `if net.training:`) are none.
    A helper of another module that builds a tensor from host data and copies it to the GPU on every call
    (`torch.from_numpy(indices).long().to(device)` in a timestep sampler's `sample(n, device)`, directly or
    through the helpers it calls, `super().method(...)` included) is reported at its per-step call too: the
    pageable copy blocks the CPU until it is done (GPU410/GPU203 report the copy itself where it is written).
    A helper that synchronises only `if device.type == "cuda":` costs nothing where the loop passes a CPU
    device (`sync(loss_device)` with `loss_device = torch.device("cpu")`). The finding sits at the call
    in the loop, where the cost is paid every step; the helper's line is its related location. A script that
    names no device itself (an environment loop calling `policy.select_action(np.array(state))`) is read for
    such calls too: a helper of another module that names a device and copies host data to the GPU, or
    synchronises, on every call whatever it is given is reported at the script's per-step call. A helper of the
    same module (`accuracy(output, target)`, `self.train_step(batch)`) is reported the same way at its call,
    and its read keeps its own finding where it is written.

    An object whose class is chosen is followed too. Classes picked from a registry (`Detector =
    detector_factory[opt.task]`, then `Detector(opt).run(...)`) or built on either branch of an `if` are one of
    several candidates: the call is reported when every candidate's method pays. Where a conditional expression
    on a command-line option of known default chooses (`crit = MSELoss() if opt.mse_loss else FocalLoss()`, with
    `--mse_loss` a `store_true` flag), the class the default run builds decides, and the message says the cost
    depends on that choice; a class built only when an option is turned on never makes a finding on its own. A
    module stored on `self` (`self.crit = FocalLoss()`) and called (`self.crit(out, y)`) runs its `forward`.

    What an argument holds follows the project: `grad_norm = loss_scaler(...)` is a tensor when the scaler's
    `__call__` returns one, `{k: v * w for k, v in utils.reduce_dict(losses).items()}` is a dict of tensors, and
    a parameter such as `log_writer` has the class that every call site of its function passes.

    ## Why it is slow
    The read inside the helper is a host-device synchronisation like any other (see GPU101): the CPU waits for
    every queued kernel, the GPU then idles while Python prepares the next step. Real projects keep these reads
    one call away from the loop (`metric_logger.update(loss=loss)` in DeiT-style engines, timers that
    synchronise around every forward pass), where a file-by-file linter cannot see them.

    ## Example
    ```python
    # utils.py
    class MetricLogger:
        def update(self, **kwargs):
            for k, v in kwargs.items():
                if isinstance(v, torch.Tensor):
                    v = v.item()
                self.meters[k].update(v)

    # train.py
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        ...
        metric_logger.update(loss=loss)   # one sync per step, inside utils.py
    ```
    Hand the helper device tensors and let it convert only when it prints (keep a device-side sum and read it
    every `print_freq` steps), or call the helper under the loop's logging condition.

    ## Fix
    None: the change belongs in the helper, which other code may rely on.

    ## Fix safety
    No fix.

    ## When it is fine
    Calls under a periodic condition (`if step % 100 == 0:`), helpers whose read is itself periodic, helpers fed
    host numbers (`meter.update(loss.item())`: GPU101 reports the `.item()` there), a `GradScaler` built disabled
    (`enabled=False`, or `enabled=(dtype == 'float16')` where the script picks bfloat16 on GPUs that support it),
    library calls that only
    store the tensor (Lightning's `self.log`), and modules that never use a GPU. Imports that cannot be resolved
    inside the project are unknown and never reported.
    """

    code = "GPU112"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "sync-in-call"
    message = "a call every step reaches a host read of a tensor inside the helper or library it calls"
    family = Family.HOST_SYNC
    added_in = "0.2.0"
    VALID = (
        # Periodic logging: the read happens every 100 steps only.
        _BOARD.format(log="    if step % 100 == 0:\n        writer.add_scalar('loss', loss, step)\n"),
        # A host number: no read inside (GPU101 reports the `.item()` in the loop instead).
        _BOARD.format(log="    writer.add_scalar('loss', loss.item(), step)\n"),
    )
    INVALID = (
        Example(_BOARD.format(log="    writer.add_scalar('loss', loss, step)\n"), message="SummaryWriter.add_scalar"),
        # gradient accumulation: the block that steps the optimizer runs on every optimizer step (hot, not
        # periodic logging), whether its guard is a modulo or a counter that moves on (`ni - last_opt_step`)
        Example("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nscaler = torch.cuda.amp.GradScaler()\n"
                "for step, x in enumerate(loader):\n    scaler.scale(model(x).sum()).backward()\n"
                "    if (step + 1) % accum == 0:\n        scaler.step(optimizer)\n        scaler.update()\n"
                "        optimizer.zero_grad()\n", message="GradScaler.step"),
        Example("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nscaler = torch.cuda.amp.GradScaler()\n"
                "last_opt_step = -1\nfor ni, x in enumerate(loader):\n    scaler.scale(model(x).sum()).backward()\n"
                "    if ni - last_opt_step >= accumulate:\n        scaler.step(optimizer)\n        scaler.update()\n"
                "        optimizer.zero_grad()\n        last_opt_step = ni\n", message="GradScaler.step"),
        # a scaler handed in by the caller is known by its use: `loss_scaler.scale(loss).backward()`
        Example("import torch\n\n\ndef train_one_epoch(model, loader, optimizer, loss_scaler):\n"
                "    for x in loader:\n        with torch.autocast('cuda', dtype=torch.float16):\n"
                "            loss = model(x.cuda(non_blocking=True)).sum()\n"
                "        loss_scaler.scale(loss).backward()\n        loss_scaler.step(optimizer)\n"
                "        loss_scaler.update()\n", message="GradScaler.step"),
        Example("import torch\n"
                "scaler = torch.cuda.amp.GradScaler()\n"
                "model = torch.nn.Linear(2, 1).cuda()\n"
                "for x in loader:\n"
                "    loss = model(x.cuda()).sum()\n"
                "    scaler.scale(loss).backward()\n"
                "    print(scaler.get_scale())\n", message="GradScaler.get_scale"),
    )

    def _facts(self):
        return self.analysis.fact(project_calls)

    needs_text = _TEXT
    reads_device_free_modules = True  # a script naming no device, alone with this rule (runner._device_free_codes)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.analysis.targets_gpu:
            self._device_free_caller(node)
            return
        where = self.where(node)
        if not where:
            return
        calls = self._facts()
        cost: Optional[HelperCost] = calls.call_cost(node) if calls is not None else None
        if cost is not None:
            self._report(node, cost, where)
            return
        found = self._library(node)
        if found is not None:
            fact, argument = found
            callee = ".".join(fact.target.split(".")[-2:]) if "." in fact.target else fact.target
            self._report(node, HelperCost(callee, None, argument, library=fact), where)

    def _device_free_caller(self, node: cst.Call) -> None:
        """A module that names no device (a script's loop over environment steps) calling, every step, a helper
        of another project module that does (an agent whose `select_action` copies the state to `device` and the
        action back): the helper's GPU work is paid at this call whatever the script passes, when the helper
        copies host data to the GPU or synchronises on every call (not through an argument, whose device this
        module cannot tell) and its own module names a device."""
        where = Rule.where(self, node)
        if not where:
            return
        calls = self._facts()
        cost: Optional[HelperCost] = calls.call_cost(node) if calls is not None else None
        if cost is None or cost.library is not None or cost.argument is not None or cost.sink is None:
            return
        path = self.analysis.path
        sink_path = cost.sink.path.resolve()
        if path is not None and sink_path == Path(path).resolve() or not _names_a_device(sink_path):
            return
        self._report(node, cost, where)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if type(node.value) is not cst.Name or node.value.value != "self":
            return
        calls = self._facts()
        cost = calls.property_cost(node) if calls is not None else None
        if cost is not None:
            where = self.where(node)
            if where:
                self._report(node, cost, where, text=self.analysis.code(node))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        calls = self._facts()
        if calls is None:
            return
        where = self.where(node)
        if not where:
            return
        cost = calls.with_cost(node)
        if cost is not None:
            self._report(node, cost, where, text=f"with {self.analysis.code(node.item)}")

    def _library(self, node: cst.Call):
        return (self._facts() or self.analysis.fact(module_calls)).library_cost(node)

    def _report(self, node: cst.CSTNode, cost: HelperCost, where, text: Optional[str] = None) -> None:
        if cost.library is not None:  # a library: its documented behaviour, no place in the user's files
            self.report(node, f"`{text or self._call_text(node)}` syncs every step: `{cost.callee}`: "
                              f"{cost.library.reason} ({cost.library.source})", where=where)
            return
        sink = cost.sink
        if sink.through == "copy":  # analysis/host_copies.py: a pageable host-to-device copy on every call
            self.report(node, f"`{text or self._call_text(node)}` copies host data to the GPU every step: "
                              f"`{cost.callee}` builds a tensor in pageable memory and copies it with "
                              f"{sink.what}, which blocks the CPU until the copy is done; build it on the "
                              f"device (or once, before the loop)", where=where,
                        related=(Related(display_path(sink.path), sink.line, f"{sink.what} here"),))
            return
        given = " on the parameters of the module it is given" if sink.through == "parameters" else \
            " on the output of the module it is given" if sink.through == "output" else " on what it is given"
        what = (f"calls `{sink.what}`" if sink.what.endswith(")") else f"does {sink.what}") + (
            given if cost.argument is not None else "")
        message = f"`{text or self._call_text(node)}` syncs every step: `{cost.callee}` {what}"
        if sink.candidate:  # one of several implementations runs; each pays (analysis/candidate_methods.py)
            message += f" (in `{sink.candidate}`, one of the implementations it may run, each of which reads)"
        if cost.choice is not None:  # chosen by an option: the default run's class pays, another may not
            message += f" ({cost.choice}; it depends on that choice)"
        self.report(node, message, where=where,
                    related=(Related(display_path(sink.path), sink.line, f"`{sink.what}` here"),))

    def _call_text(self, node: cst.Call) -> str:
        """`logger.update(loss=...)`: the callee with its arguments elided, short enough for a message."""
        func = self.analysis.code(node.func)
        return f"{func}(...)" if node.args else f"{func}()"
