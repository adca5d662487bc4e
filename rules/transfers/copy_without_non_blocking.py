"""GPU202 `copy-without-non-blocking`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT, LoopRole
from gpulint.analysis.forward import _line_of as _line
from gpulint.analysis.project import display_path
from gpulint.rule import Related, Rule, Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules._examples import CPU_ONLY_SCRIPTS, DATASET_HEAD, LOADER_TO_GPU, UNPINNED_LOADER
from gpulint.analysis.data_facts import ACCELERATOR, CONVERSIONS, append_keyword, data_facts, keyword
from gpulint.analysis.tree import descendants
from gpulint.syntax import argument, is_true
from gpulint.analysis.data import _true, pin_memory_of, pinned, pinning_unknown
from gpulint.analysis.helper_copies import handed_batch, passed_batch_loops
from gpulint.analysis.loader_params import cuda_type_copy, pinned_passed_loader


class CopyWithoutNonBlocking(Rule):
    """A batch from a pinned DataLoader copied to the GPU without `non_blocking=True`.

    ## What it does
    Flags `.to(device)` and `.cuda()` of a batch (or part of one: unpacked, indexed, or rebuilt in a
    comprehension such as `[t.to(device) for t in batch]`) inside a loop over a `DataLoader` that pins memory,
    or that GPU201 will make pin memory, every iteration (`pin_memory=True` passed as a keyword or in a
    `**kwargs` dict the module builds: `train_kwargs.update({"pin_memory": True, ...})`). The loop may take its batches with `next()`
    (`it = iter(loader)` ... `while True: batch = next(it)`). Where the loader is built out of sight (a factory
    whose `pin_memory=` is a setting, or a loader reached only through a progress bar), a copy of the same
    batch that passes `non_blocking=True` is taken as the author's word that the batches are pinned on GPU
    runs: `imgs.to(device, non_blocking=True)` beside `labels.to(device)` flags the second. A loop over a
    function's parameter counts when every call of the function in the project passes a pinned loader (also from
    another module, `DataLoader(ds, **loader_args)` with `loader_args = dict(..., pin_memory=True)`), as does a
    loop over `self.train_ds` that a class stores from its `__init__` parameter when every construction of the
    class passes one (a name unpacked from a loader factory's tuple included: `train_ds, test_ds =
    load_data(...)`, `Trainer(train_ds, test_ds, rank)`), as does a loop over a method's parameter when every call
    of the method by name in the project's other files passes pinned loaders (`model.train_loop(epoch, loader,
    opt)`, the loader maybe built by a project class's method: `loader = datamgr.get_data_loader(...)`), and a
    factory that pins under its CUDA flag (`**({"pin_memory": True} if cuda else {})`) pins for a caller passing
    its own (`cuda=cuda`, `torch.cuda.is_available()`); a `pin_memory=args.pin_memory` option pins by its
    parser's default. The batch may reach the copy through two functions of the module (`self.forward_loss(x,
    y)` -> `self.forward(x)`), and
    `imgs.type(torch.cuda.FloatTensor)` (or a name bound to that type) is a copy to the GPU like `.cuda()`.
    A factory's `pin_memory=cfg.DATA_LOADER.PIN_MEMORY` pins when the project's yacs configuration declares that
    setting `True` (`_C.DATA_LOADER.PIN_MEMORY = True` beside `_C = CN()`) and no YAML file of the project sets
    the key (analysis/config_defaults.py).
    A tensor pinned in the same expression and copied without it every step
    (`torch.from_numpy(labels).pin_memory().to(device)`) is flagged too: the copy blocks, so the pinning is wasted.
    So is the copy of a batch joined on the host (`torch.cat(input, 1).to(device)` of an image pair, `torch.stack`
    of its parts), pinned loader or not: the join is a new pageable tensor (no fix: copy the parts, then join).

    The batch may be split by a function of the module (`x, offsets, y = split_batch(batch)`, whose tuple
    `return`s hold subscripts of its parameter) and copied inside a function of the module that the loop hands
    it to (`def wrap(x, device): return net(x.to(device))`), when every call of that function passes a loop's
    batch there: the copy in the function is reported, and so is its per-step call, naming the copy. The
    function may copy the batch field by field (`for key, ipt in inputs.items(): inputs[key] = ipt.to(device)`,
    or a loop over `inputs.values()`). A helper of another module that copies its parameter without
    `non_blocking=True` (`def to_var(x): if torch.cuda.is_available(): x = x.cuda(); return x`), handed the batch
    of such a loop, is reported at the per-step call, with the copy as the related location.

    A loader's `collate_fn` (a function of the module, or `functools.partial` of one binding its device to an
    accelerator) that returns its batch copied to the GPU is flagged at that copy, with the loader as the related
    location: every batch is built in pageable memory and copied blocking in the loader's own process, and the
    loader cannot pin CUDA tensors (GPU201 leaves such a loader alone). Loops over a parameter of a function of
    another module count when every call found in the project passes loaders that agree on pinning (the function
    imported under another name inside a function, or handed the training, validation and test loaders in turn).
    The loop may iterate a project generator that hands on the items of the parameter
    (`metric_logger.log_every(data_loader, 10, header)`); an explicit `pin_memory=True` beside `**loader_kwargs`
    pins whatever the options hold (they cannot pass it twice); a name bound to None and, under an option, to a
    pinned loader passes that loader; and a function called only in its own module (an evaluation at the end of
    `train(...)`, handed its caller's loader) takes what those calls pass.

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
    Adds `non_blocking=True` to the call. A batch converted on the host just before its copy
    (`x.float().to(device)`) is copied first and converted on the device instead:
    `x.to(device, non_blocking=True).float()`. No fix for a copy in a collate function: the copy moves out of
    it (return host tensors, pin them with `pin_memory=True`, copy in the loop).

    ## Fix safety
    Safe: a host-to-device copy is ordered before every kernel queued after it on the same stream. This rule
    never touches device-to-host copies (`.cpu()`, `.to("cpu")`): there `non_blocking=True` lets the host
    read the buffer before the copy has landed, a race that silently produces wrong numbers. Moving a
    conversion after the copy is unsafe (`--unsafe-fixes`): the values are the same, but the copy carries the
    batch's own dtype, which can be wider (a float64 batch copies twice the bytes of its float32 conversion).

    ## When it is fine
    Loaders with `pin_memory=False` (from pageable memory the copy is synchronous anyway), copies that already
    pass `non_blocking`, copies to the CPU, a batch copied again after the loop already moved it
    (`y = y.to(device)` ... `y[:, -n:].to(device)` copies nothing), and whole custom batch objects of loaders
    with a `collate_fn` (their `.to()` may not accept `non_blocking`). A loader built by a project factory that
    does not pin (GPU201 reports the factory's call) counts as one to pin: the copies are reported with it.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text.
    needs_text = GPU_HINT
    code = "GPU202"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "copy-without-non-blocking"
    message = "copy of a pinned batch to the GPU without `non_blocking=True` blocks the CPU every step"
    once_pinned = "copy of a batch to the GPU without `non_blocking=True` blocks the CPU every step; with the " \
                  "loader pinned (GPU201) it can overlap"
    pinned_here = "copy of a tensor pinned with `.pin_memory()` to the GPU without `non_blocking=True` blocks the " \
                  "CPU every step: the pinning buys no overlap"
    in_collate = "collate function copies every batch to the GPU from pageable memory, blocking the CPU, in the " \
                 "loader's own process; return host tensors, set `pin_memory=True` and copy in the loop with " \
                 "`non_blocking=True`"
    beside = "copy of a batch to the GPU without `non_blocking=True`, where another copy of the same batch has " \
             "it: this one blocks the CPU every step"
    converted = "copy of a batch converted on the host (`.{conversion}()`) to the GPU blocks the CPU every step: " \
                "where the dtype changes the conversion makes a new pageable tensor, pinned loader or not; copy " \
                "first with `non_blocking=True`, then convert on the device"
    joined = "copy of a batch joined on the host (`torch.{join}`) to the GPU blocks the CPU every step: the " \
             "joined tensor is new pageable memory, pinned loader or not; copy the parts with " \
             "`non_blocking=True` and join them on the device"
    family = Family.TRANSFERS
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(
        Safety.SAFE, "a host-to-device copy is ordered before every kernel queued after it on the same stream")
    VALID = [LOADER_TO_GPU.format(pin=", pin_memory=True", non_blocking="non_blocking=True"), UNPINNED_LOADER,
             *CPU_ONLY_SCRIPTS]
    _THROUGH_ARGUMENT = ("def run(model, *, data):\n    for batch in data:\n"
                         "        batch = {{k: v.to(device{}) for k, v in batch.items()}}\n"
                         "        model(batch[\"x\"]).sum().backward()\n"
                         "run(model, data=DataLoader(dataset, pin_memory=True))\n")
    _SAME_NAME = ("plain = DataLoader(dataset, pin_memory=False)\npinned = DataLoader(dataset, pin_memory=True)\n"
                  "for batch in plain:\n    model(batch[0].to(device)).sum().backward()\n"
                  "for batch in pinned:\n    model(batch[0].to(device{})).sum().backward()\n")
    _BUFFER = ("loader = DataLoader(dataset, pin_memory=True)\nim_data = torch.FloatTensor(1)\n"
               "if torch.cuda.is_available():\n    im_data = im_data.cuda()\nfor data in loader:\n"
               "    im_data.resize_(data[0].size()).copy_(data[0]{})\n    model(im_data).sum().backward()\n")
    INVALID = [
        Example(LOADER_TO_GPU.format(pin=", pin_memory=True", non_blocking=""),
                message="copy of a pinned batch to the GPU without `non_blocking=True",
                fixed=LOADER_TO_GPU.format(pin=", pin_memory=True", non_blocking="non_blocking=True")),
        # the loader reaches the loop through a function's keyword argument
        Example(DATASET_HEAD + _THROUGH_ARGUMENT.format(""),
                fixed=DATASET_HEAD + _THROUGH_ARGUMENT.format(", non_blocking=True")),
        # one loop variable name over two loaders: each copy resolves to its own loop's loader
        Example(DATASET_HEAD + _SAME_NAME.format(""), fixed=DATASET_HEAD + _SAME_NAME.format(", non_blocking=True")),
        # a batch copied with `copy_` into a buffer the script moved onto the GPU before the loop
        Example(DATASET_HEAD + _BUFFER.format(""), message="copy of a pinned batch to the GPU without",
                fixed=DATASET_HEAD + _BUFFER.format(", non_blocking=True")),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        facts = data_facts(self.analysis)
        if facts.copy_target(node) != ACCELERATOR and not cuda_type_copy(self.analysis, node):
            if not self._copy_into_device_buffer(node):
                self._helper_call(node)
            return
        method = node.func.attr.value  # type: ignore[union-attr]
        if keyword(node, "non_blocking") is not None or argument(
                node, "non_blocking", 1 if method in ("cuda", "type") else 2) is not None:
            return
        receiver = node.func.value  # type: ignore[union-attr]
        if self._pinned_by_chain(node, receiver):
            return
        converted = _conversion(receiver)
        if converted is not None:
            receiver = converted.func.value  # type: ignore[union-attr]  # `x.float().to(device)`: the batch is `x`
        joined = self._joined_parts(receiver)
        if joined is not None:
            self._report_joined(node, *joined)
            return
        loop = facts.batch_loop(receiver)
        if loop is None:
            if not self._in_collate(node):
                self._in_helper(node, receiver, converted, method)
            return
        self._report_batch_copy(node, receiver, loop, converted, method)

    def _joined_parts(self, receiver: cst.BaseExpression):
        """`torch.cat(input, 1)` / `torch.stack([a, b])` of a loop's batch (or of its parts): (the call, the
        batch loop), else None."""
        if type(receiver) is not cst.Call or not receiver.args or receiver.args[0].keyword is not None or \
                self.analysis.qualified(receiver.func) not in _JOINS:
            return None
        parts = receiver.args[0].value
        items = [e.value for e in parts.elements] if type(parts) in (cst.List, cst.Tuple) else [parts]
        if not items or any(type(i) not in (cst.Name, cst.Subscript) for i in items):
            return None
        facts = data_facts(self.analysis)
        loops = {id(loop): loop for loop in (facts.batch_loop(i) for i in items)}
        if len(loops) != 1 or None in loops.values():
            return None
        return receiver, next(iter(loops.values()))

    def _report_joined(self, node: cst.Call, joined: cst.Call, loop) -> None:
        """The joined batch is a new tensor in pageable memory whatever the loader pins: every copy of it blocks
        the CPU. No fix (`non_blocking=True` from pageable memory does not overlap)."""
        if not self.analysis.index.is_ancestor_or_self(loop.body, node):
            return
        where = self.where(node)
        if where:
            name = self.analysis.qualified(joined.func) or "torch.cat"
            self.report(node, self.joined.format(join=name.rsplit(".", 1)[-1]), where=where)

    def _copy_into_device_buffer(self, node: cst.Call) -> bool:
        """`im_data.data.resize_(data[0].size()).copy_(data[0])`: a batch copied into a tensor the script put on
        the GPU before the loop (`im_data = torch.FloatTensor(1)`, `if args.cuda: im_data = im_data.cuda()`);
        `copy_` blocks like `.to()` unless given `non_blocking=True`. True when reported."""
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value != "copy_" or len(node.args) != 1 or \
                node.args[0].keyword is not None or node.args[0].star:
            return False
        buffer = func.value
        while True:  # `.data`, `.resize_(...)`, `.resize_as_(...)`: the same storage
            if type(buffer) is cst.Attribute and buffer.attr.value == "data":
                buffer = buffer.value
            elif type(buffer) is cst.Call and type(buffer.func) is cst.Attribute and \
                    buffer.func.attr.value in ("resize_", "resize_as_"):
                buffer = buffer.func.value
            else:
                break
        if type(buffer) is not cst.Name:
            return False
        source = node.args[0].value
        loop = data_facts(self.analysis).batch_loop(source)
        if loop is None or not self._moved_buffer(buffer, loop):
            return False
        self._report_batch_copy(node, source, loop, None, "copy_")
        return True

    def _moved_buffer(self, name: cst.Name, loop) -> bool:
        """`name` is moved onto the accelerator in place before `loop` (`x = x.cuda()`), and every other binding of
        it, also before the loop, builds it or wraps it (`x = Variable(x)`)."""
        facts = data_facts(self.analysis)
        index = self.analysis.index
        bindings = facts.bindings(name)
        loop_at = index.order(loop)
        moved = False
        for b in bindings:
            if b.kind != "assign" or b.index is not None or b.value is None or b.source is None:
                return False
            at = index.order(b.source)
            if at is None or loop_at is None or at >= loop_at:
                return False  # bound in (or after) the loop: not the buffer set up for it
            value = b.value
            if type(value) is cst.Call and type(value.func) is cst.Attribute and \
                    type(value.func.value) is cst.Name and value.func.value.value == name.value and \
                    facts.copy_target(value) == ACCELERATOR:
                moved = True
        return moved

    def _report_batch_copy(self, node: cst.Call, receiver, loop, converted, method: str) -> None:
        facts = data_facts(self.analysis)
        if not self.analysis.index.is_ancestor_or_self(loop.body, node):
            return
        if self._moved_earlier(receiver, node, loop):
            return  # `y = y.float().to(device)` ... `y[:, -n:].to(device)`: the second copy copies nothing
        loaders = facts.loop_loaders(loop)
        message = None
        whole_batch = type(receiver) is cst.Name and any(
            b.kind == "for" and b.source is loop and b.index is None for b in facts.bindings(receiver))
        passed = pinned_passed_loader(self.analysis, loop) if not loaders and not whole_batch else None
        if passed is True:
            pass  # every call of the function passes it a pinned loader (from another module: loader_params.py)
        elif passed is False:
            # every call found passes an unpinned loader built in another module (GPU201 reports it there)
            if method == "type":
                return
            message = self.once_pinned
        elif not loaders or not all(pinned(self, c) for c in loaders):
            # Pinning unknown (a loader built elsewhere): the author's own non-blocking copy of this loop's batch
            # says the batches are pinned on GPU runs; `non_blocking=True` is harmless where they are not.
            if not all(pinning_unknown(self, c) for c in loaders) or not self._beside_non_blocking(loop, node):
                return
            message = self.beside
        elif self._pinned_by_gpu201(loaders):
            if method == "type":
                return  # GPU201 does not count a `.type()` cast as a copy: it will not pin this loader
            message = self.once_pinned  # not pinned yet: GPU201 reports the loader, and its fix pins it
        if whole_batch and any(keyword(c, "collate_fn") is not None for c in loaders):
            return
        where = self.where(node)
        if where and converted is not None:
            conversion = converted.func.attr.value  # type: ignore[union-attr]
            fix = self.fix(f"Copy first with `non_blocking=True`, then `.{conversion}()` on the device",
                           {node: _copy_then_convert}, safe=False)
            self.report(node, self.converted.format(conversion=conversion), where=where, fix=fix)
        elif where:
            fix = self.fix("Add `non_blocking=True`", {node: lambda updated: append_keyword(
                updated, "non_blocking", _true())}, safe=True)
            self.report(node, message, where=where, fix=fix)

    def _in_collate(self, copy: cst.Call) -> bool:
        """A copy to the GPU in a loader's collate function (analysis/collate_moves.py), for a loader a hot loop
        of the module iterates or that a module targeting the GPU hands on: every batch is copied there, blocking,
        from pageable memory. Reported without a fix (the copy moves out of the collate function)."""
        from gpulint.analysis.collate_moves import collate_copies

        loaders = collate_copies(self.analysis).by_copy.get(id(copy))
        if not loaders:
            return False
        facts = data_facts(self.analysis)
        for loader in loaders:
            loops = facts.loops_over(loader)
            if any(self.analysis.loops.role(loop) is LoopRole.HOT for loop in loops) or \
                    not loops and self.analysis.targets_gpu:
                notebook = self.analysis.path is None or str(self.analysis.path).endswith(".ipynb")
                self.report(copy, self.in_collate, related=() if notebook else (Related(
                    display_path(self.analysis.path), _line(self.analysis, loader),
                    "the `DataLoader` whose collate_fn this is"),))
                return True
        return False

    def _pinned_by_chain(self, copy: cst.Call, receiver: cst.BaseExpression) -> bool:
        """`torch.from_numpy(a).pin_memory().to(device)` every step: pinned on purpose, then copied blocking, so the
        pinning buys no overlap. Reported (fixed with `non_blocking=True`); True when the receiver is such a chain."""
        if not (type(receiver) is cst.Call and type(receiver.func) is cst.Attribute and
                receiver.func.attr.value == "pin_memory" and not receiver.args):
            return False
        where = self.where(copy)
        if where:
            fix = self.fix("Add `non_blocking=True`", {copy: lambda updated: append_keyword(
                updated, "non_blocking", _true())}, safe=True)
            self.report(copy, self.pinned_here, where=where, fix=fix)
        return True

    def _in_helper(self, node: cst.Call, receiver: cst.BaseExpression, converted, method: str) -> None:
        """A copy of a parameter of a module function every call of which passes a loop's batch there
        (`def wrap(X, device): return model(X.to(device))`, `Z = wrap(X, device)` in the loop)."""
        message = self._helper_message(node, receiver, method)
        if message is None:
            return
        where = self.where(node)
        if where is None:
            return
        if converted is not None:
            conversion = converted.func.attr.value  # type: ignore[union-attr]
            fix = self.fix(f"Copy first with `non_blocking=True`, then `.{conversion}()` on the device",
                           {node: _copy_then_convert}, safe=False)
            self.report(node, self.converted.format(conversion=conversion), where=where, fix=fix)
            return
        fix = self.fix("Add `non_blocking=True`", {node: lambda updated: append_keyword(
            updated, "non_blocking", _true())}, safe=True)
        self.report(node, message, where=where, fix=fix)

    def _helper_message(self, node: cst.Call, receiver: cst.BaseExpression, method: str) -> Optional[str]:
        """The message for a copy in a helper handed the batches of pinned loaders (or of loaders GPU201 will
        pin), else None (analysis/helper_copies.py)."""
        facts = data_facts(self.analysis)
        loops, whole = passed_batch_loops(facts, receiver)
        if not loops and handed_batch(facts, receiver) is True:
            return self.message  # a method another module's loop hands a pinned loader's batch
        loaders = [c for loop in loops for c in facts.loop_loaders(loop)]
        if loops and not loaders and not whole:
            # loops over loaders built elsewhere (`for batch in self.train_ds:` of a loader the class is given):
            # what every construction or call passes (analysis/loader_params.py), as for a copy in the loop
            passed = {pinned_passed_loader(self.analysis, loop) for loop in loops}
            if passed == {True}:
                return self.message
            return None if passed != {False} or method == "type" else self.once_pinned
        if not loaders or not all(pinned(self, c) for c in loaders):
            return None
        if whole and any(keyword(c, "collate_fn") is not None for c in loaders):
            return None  # a custom batch object's `.to()` may not take `non_blocking`
        if any(pin_memory_of(self, c) is None and facts.factory(c) is None or
               getattr(facts.factory(c), "pinned", None) is False for c in loaders):
            return None if method == "type" else self.once_pinned
        return self.message

    def _helper_call(self, node: cst.Call) -> None:
        """The per-step call of such a helper (`Z = wrap(X, device)` in the loop): reported too, naming the copy,
        as GPU112 reports the call of a helper that syncs."""
        if not node.args:
            return
        if type(node.func) is not cst.Name or node.func.value not in self.analysis.index.functions:
            self._project_helper_call(node)
            return  # (a top-level function is called by its bare name: most calls end here, at a dict lookup)
        fn = self.analysis.loops.local_function(node)
        if type(fn) is not cst.FunctionDef or type(self.analysis.index.enclosing_scope(fn)) is not cst.Module:
            return
        copies = self.__dict__.setdefault("_helper_copies", {})
        if id(fn) not in copies:
            copies[id(fn)] = (fn, self._copies_in(fn))
        found = copies[id(fn)][1]
        if not found:
            return
        where = self.where(node)
        if where is None:
            return
        copy, message = found[0]
        pinned_later = "; with the loader pinned (GPU201) it can overlap" if message == self.once_pinned else ""
        self.report(node, f"`{self.analysis.code(node.func)}(...)` copies the batch it is given to the GPU without "
                          f"`non_blocking=True` (`{self.analysis.code(copy)}` in `{fn.name.value}`): the CPU blocks "
                          f"every step{pinned_later}", where=where)

    def _project_helper_call(self, node: cst.Call) -> None:
        """`batch[k] = to_var(v)` where `to_var` (another module's function) copies its parameter with a blocking
        `x.cuda()` / `x.to(device)` (`FunctionSummary.blocking_moves`), handed a batch of a loop over loaders whose
        pinning is known: the copy blocks every step; reported at the call, naming the copy."""
        facts = data_facts(self.analysis)
        batches = [(i, a, loop) for i, a in enumerate(node.args) if not a.star
                   for loop in (facts.batch_loop(a.value),) if loop is not None and not self._already_copied(a.value)]
        if not batches or self.analysis.path is None:
            return
        from gpulint.analysis.calls import project_calls

        calls = self.analysis.fact(project_calls)
        callee = calls.callee(node) if calls is not None else None
        if callee is None or not callee[1].blocking_moves:
            return
        name, summary, bound = callee
        params = summary.params[1:] if bound and summary.params else summary.params
        for position, arg, loop in batches:
            param = arg.keyword.value if arg.keyword is not None else (
                params[position] if position < len(params) else None)
            line = next((ln for p, ln in summary.blocking_moves if p == param), None)
            if line is None:
                continue
            loaders = facts.loop_loaders(loop)
            if not self.analysis.index.is_ancestor_or_self(loop.body, node) or not loaders or \
                    not all(pinned(self, c) for c in loaders):
                return  # pinning unknown, or a loader that decides not to pin (and GPU201 will not pin)
            where = self.where(node)
            if where is None:
                return
            pinned_later = "; with the loader pinned (GPU201) it can overlap" if self._pinned_by_gpu201(loaders) \
                else ""
            self.report(node, f"`{self.analysis.code(node.func)}(...)` copies the batch it is given to the GPU "
                              f"without `non_blocking=True` (`{name}`, {display_path(summary.path)}:{line}): the "
                              f"CPU blocks every step{pinned_later}", where=where,
                        related=(Related(display_path(summary.path), line, f"the blocking copy in `{name}`"),))
            return

    def _pinned_by_gpu201(self, loaders: list) -> bool:
        """Some loader pins only once GPU201's fix is applied: no `pin_memory` given (and built here), or a
        project factory that does not pin."""
        facts = data_facts(self.analysis)
        return any(pin_memory_of(self, c) is None and facts.factory(c) is None or
                   getattr(facts.factory(c), "pinned", None) is False for c in loaders)

    def _already_copied(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """`msk[:, 0]` with `msk = data['gt'][0].cuda()`: the value handed on was copied to the GPU already (the
        helper's `.cuda()` copies nothing)."""
        facts = data_facts(self.analysis)
        while type(expr) is cst.Subscript or type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
                facts.copy_target(expr) != ACCELERATOR and expr.func.attr.value in CONVERSIONS:
            expr = expr.value if type(expr) is cst.Subscript else expr.func.value
        if type(expr) is cst.Call:
            return facts.copy_target(expr) == ACCELERATOR
        if type(expr) is cst.Name and depth < 3:
            values = [b.value for b in facts.bindings(expr) if b.kind == "assign" and b.value is not None]
            return bool(values) and any(self._already_copied(v, depth + 1) for v in values)
        return False

    def _copies_in(self, fn: cst.FunctionDef) -> list:
        """The copies of `fn` that `_in_helper` reports, with their messages, in document order."""
        facts = data_facts(self.analysis)
        found = []
        for call in descendants(fn.body):
            if type(call) is not cst.Call or facts.copy_target(call) != ACCELERATOR or \
                    keyword(call, "non_blocking") is not None:
                continue
            method = call.func.attr.value  # type: ignore[union-attr]
            if argument(call, "non_blocking", 1 if method == "cuda" else 2) is not None:
                continue
            receiver = call.func.value  # type: ignore[union-attr]
            converted = _conversion(receiver)
            if converted is not None:
                receiver = converted.func.value  # type: ignore[union-attr]
            if facts.batch_loop(receiver) is not None:
                continue
            message = self._helper_message(call, receiver, method)
            if message is not None and self.where(call) is not None:
                found.append((call, message))
        order = self.analysis.index.order
        return sorted(found, key=lambda pair: order(pair[0]) or 0)

    def _moved_earlier(self, receiver: cst.BaseExpression, copy: cst.Call, loop) -> bool:
        """The name under `receiver` (`y`, `y[...]`) was rebound to a copy of itself on the accelerator earlier in
        this loop's body (`y = y.float().to(device)`): at `copy` it holds a device tensor."""
        while type(receiver) is cst.Subscript:
            receiver = receiver.value
        if type(receiver) is not cst.Name:
            return False
        facts = data_facts(self.analysis)
        index = self.analysis.index
        place = index.order(copy)
        for b in facts.bindings(receiver):
            if b.kind != "assign" or type(b.value) is not cst.Call or b.source is None or \
                    not index.is_ancestor_or_self(loop.body, b.source):
                continue
            started = index.order(b.source)
            if started is not None and place is not None and started < place and \
                    not index.is_ancestor_or_self(b.source, copy) and facts.copy_target(b.value) == ACCELERATOR \
                    and index.is_ancestor_or_self(self._block_of(b.source), copy):
                return True
        return False

    def _block_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The block (`IndentedBlock` or module) whose statements hold `node`: a rebinding there runs before every
        later statement of the block, not only on one branch of an `if` beside them."""
        for parent in self.analysis.index.ancestors(node):
            if type(parent) in (cst.IndentedBlock, cst.Module):
                return parent
        return node

    def _beside_non_blocking(self, loop, copy: cst.Call) -> bool:
        """Another copy of the same loop's batch to an accelerator passes `non_blocking=True`."""
        return any(call is not copy for call in self._non_blocking_copies(loop))

    def _non_blocking_copies(self, loop) -> list[cst.Call]:
        """The copies of `loop`'s batch to an accelerator with `non_blocking=True`: the loop's body is walked once
        for all its copies, not once per copy (quadratic in a loop dense with copies)."""
        known = self.__dict__.setdefault("_copies_by_loop", {})
        if id(loop) not in known:
            facts = data_facts(self.analysis)
            known[id(loop)] = (loop, [
                call for call in facts.body_calls(loop) if facts.copy_target(call) == ACCELERATOR and
                is_true(getattr(keyword(call, "non_blocking"), "value", None)) and
                facts.batch_loop(call.func.value) is loop])  # type: ignore[attr-defined]
        return known[id(loop)][1]


# Joins that build a new host tensor from a batch's parts (`torch.cat(input, 1)` of an image pair).
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack",
                    "torch.vstack", "torch.dstack"})


def _conversion(receiver: cst.BaseExpression) -> Optional[cst.Call]:
    """`x.float()` (one conversion without arguments, of a name or a subscript): the call; else None."""
    if type(receiver) is cst.Call and type(receiver.func) is cst.Attribute and not receiver.args and \
            receiver.func.attr.value in CONVERSIONS and type(receiver.func.value) in (cst.Name, cst.Subscript):
        return receiver
    return None


def _copy_then_convert(updated: cst.Call) -> cst.Call:
    """`x.float().to(device)` -> `x.to(device, non_blocking=True).float()`."""
    conversion = updated.func.value  # type: ignore[union-attr]
    moved = updated.with_changes(func=updated.func.with_changes(value=conversion.func.value))  # type: ignore
    moved = append_keyword(moved, "non_blocking", _true())
    return conversion.with_changes(func=conversion.func.with_changes(value=moved))
