"""GPU1xx: host-device synchronisations inside training and evaluation loops.

Each of these makes the Python thread wait until the GPU has finished every kernel queued so far. Inside a loop
that is a stall per step: the GPU drains its queue, then idles while Python prepares the next step.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import Kind
from gpulint.rule import GpuRule, Rule
from gpulint.fixes import fresh_name
from gpulint.syntax import argument, flat_statements, is_true, method_call, positional, string_value

# Receivers that certainly are not tensors: a sync method on them is someone else's API.
_NOT_TENSOR = (Kind.NUMPY, Kind.NUMBER, Kind.OTHER, Kind.MODULE, Kind.MODULE_CLASS, Kind.LOADER,
               Kind.OPTIMIZER, Kind.DEVICE)


_MODULE_ONLY_METHODS = {"parameters", "named_parameters", "state_dict", "modules", "named_modules", "children",
                        "buffers", "eval", "train", "load_state_dict", "apply", "zero_grad"}


def _to_host_call(rule: Rule, node: cst.CSTNode) -> bool:
    """`.cpu()` or `.to("cpu")` (blocking) on something that may be a tensor."""
    attr = method_call(node, ("cpu", "to"))
    if attr is None or rule.analysis.kind(attr.value) in _NOT_TENSOR:
        return False
    user = rule.analysis.parent(node)
    if isinstance(user, cst.Attribute) and user.attr.value in _MODULE_ONLY_METHODS:
        return False  # `m.cpu().parameters()`: m is a model
    if attr.attr.value == "cpu":
        return True
    if is_true(getattr(argument(node, "non_blocking"), "value", None)):
        return False
    target = argument(node, "device", 0)
    if target is None:
        return False
    value = target.value
    if string_value(value) == "cpu":
        return True
    if isinstance(value, cst.Call) and rule.analysis.qualified(value.func) == "torch.device":
        return string_value(positional(value)[0] if positional(value) else None) == "cpu"
    return False


def _on_host_already(rule: Rule, receiver: cst.BaseExpression) -> bool:
    """`x.cpu().numpy()`: the copy (and the sync) happened at `.cpu()`, which is reported there."""
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        if _to_host_call(rule, receiver):
            return True
        if receiver.func.attr.value not in ("detach", "float", "double", "half", "long", "int", "contiguous",
                                            "squeeze", "flatten", "view", "reshape", "clone"):
            return False
        receiver = receiver.func.value
    return False


def nan_check(analysis, test: cst.BaseExpression) -> Optional[tuple[str, cst.BaseExpression]]:
    """Recognise `torch.isnan(x).any()`-style tests.

    Returns (flag expression to accumulate on the device, the tested tensor) or None. The flag is the test's own
    tensor expression without `.item()`/`bool()`, negated where the test was `not ...all()`.
    """
    negated = False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        negated, test = True, test.expression
    inner = test
    if method_call(inner, "item") and not inner.args:
        inner = inner.func.value
    if isinstance(inner, cst.Call) and analysis.qualified(inner.func) in ("bool",) and len(inner.args) == 1:
        inner = inner.args[0].value
    reducer = None
    if method_call(inner, ("any", "all")) and not inner.args:
        reducer, core = inner.func.attr.value, inner.func.value
    elif isinstance(inner, cst.Call) and analysis.qualified(inner.func) in ("torch.any", "torch.all") \
            and len(inner.args) == 1:
        reducer, core = analysis.qualified(inner.func).split(".")[1], inner.args[0].value
    else:
        core = inner
    check = None
    if isinstance(core, cst.Call):
        q = analysis.qualified(core.func)
        if q in ("torch.isnan", "torch.isinf", "torch.isfinite", "torch.isneginf", "torch.isposinf") \
                and len(core.args) == 1:
            check, tensor = q.split(".")[1], core.args[0].value
        elif method_call(core, ("isnan", "isinf", "isfinite")) and not core.args:
            check, tensor = core.func.attr.value, core.func.value
    if check is None:
        return None
    if check == "isfinite":
        # `if not torch.isfinite(x).all():` fires when something is not finite.
        if not negated or reducer == "any":
            return None
        return cst.UnaryOperation(operator=cst.BitInvert(), expression=inner), tensor
    # `if torch.isnan(x).any():` fires when something is NaN.
    if negated or reducer == "all":
        return None
    return inner, tensor


def inside_nan_check(rule: Rule, node: cst.CSTNode) -> bool:
    """`node` is part of a NaN/Inf test that GPU108 reports; the other rules stay quiet about it."""
    for ancestor in rule.analysis.index.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.While)):
            return nan_check(rule.analysis, ancestor.test) is not None and \
                rule.analysis.index.is_ancestor_or_self(ancestor.test, node)
        if isinstance(ancestor, cst.BaseStatement):
            return False
    return False


_FLAG_NAMES = {"isnan": "found_nan", "isinf": "found_inf"}


def check_kind(code: str) -> str:
    for name in ("isnan", "isinf"):
        if name in code and "isfinite" not in code:
            return name
    return "isfinite"


def _before(new: cst.BaseStatement, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
    """`new` inserted before `stmt`, taking over the comments and blank lines above it."""
    return [new.with_changes(leading_lines=stmt.leading_lines), stmt.with_changes(leading_lines=())]


class ItemInLoop(GpuRule):
    """`.item()` on a tensor every iteration of a training/eval loop.

    ## What it does
    Flags `tensor.item()` where it runs on every iteration of a training or evaluation loop (a loop over a
    DataLoader, or one whose body runs a forward pass, `backward()` or an optimizer step), including helper
    functions of the same module that such a loop calls.

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
    name = "item-in-loop"
    message = "`.item()` every iteration blocks the CPU until the GPU catches up; keep the value on the device"

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "item")
        if attr is None or node.args or self.analysis.kind(attr.value) in _NOT_TENSOR:
            return
        if _on_host_already(self, attr.value) or inside_nan_check(self, node):
            return
        if self.analysis.is_synced_accumulation(node):
            return  # GPU302 reports it, with a fix
        where = self.where(node)
        if where:
            self.report(node, where=where)


class TolistInLoop(GpuRule):
    """`.tolist()` on a tensor every iteration.

    ## What it does
    Flags `tensor.tolist()` running on every iteration of a training/eval loop.

    ## Why it is slow
    It copies the whole tensor to the host and waits for the GPU first, like `.item()`, and builds Python
    objects for every element on top.

    ## Example
    ```python
    for x, y in loader:
        preds.extend(model(x).argmax(1).tolist())
    ```
    Collect on the device, convert once:
    ```python
        preds.append(model(x).argmax(1))
    preds = torch.cat(preds).tolist()
    ```

    ## Fix
    None: the list goes wherever the code sends it.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging, end-of-epoch conversions, numpy arrays' `.tolist()`, code outside loops.
    """

    code = "GPU102"
    name = "tolist-in-loop"
    message = "`.tolist()` every iteration copies the tensor to the host and waits for the GPU; collect on the " \
              "device and convert once"

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "tolist")
        if attr is None or node.args or _on_host_already(self, attr.value):
            return
        if not self.analysis.is_tensor(attr.value):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)


class NumpyInLoop(GpuRule):
    """`.numpy()` on a tensor every iteration.

    ## What it does
    Flags `tensor.numpy()` (usually `tensor.detach().numpy()` or `.numpy(force=True)`) on every iteration of a
    training/eval loop. `x.cpu().numpy()` is reported once, at `.cpu()` (GPU104).

    ## Why it is slow
    The array lives in host memory, so the tensor must be copied there: the CPU waits for the GPU to finish
    every queued kernel.

    ## Example
    ```python
    for x, y in loader:
        scores.append(model(x).detach().numpy(force=True))
    ```
    Stack on the device and convert once after the loop:
    ```python
        scores.append(model(x).detach())
    scores = torch.cat(scores).cpu().numpy()
    ```

    ## Fix
    None.

    ## Fix safety
    No fix.

    ## When it is fine
    CPU-only code (no GPU anywhere in the module), periodic logging, code outside loops.
    """

    code = "GPU103"
    name = "numpy-in-loop"
    message = "`.numpy()` every iteration copies the tensor to the host and waits for the GPU"

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "numpy")
        if attr is None or self.analysis.kind(attr.value) in _NOT_TENSOR or _on_host_already(self, attr.value):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)


class CpuInLoop(GpuRule):
    """`.cpu()` or `.to("cpu")` of a tensor every iteration.

    ## What it does
    Flags blocking device-to-host copies, `.cpu()` and `.to("cpu")`, on every iteration of a training/eval loop.

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
    Periodic logging, end-of-epoch metrics, `.to("cpu", non_blocking=True)` followed by an explicit event or
    stream sync, models moved with `model.cpu()`.
    """

    code = "GPU104"
    name = "cpu-in-loop"
    message = "blocking copy to the host every iteration waits for the GPU; keep the tensor on the device and " \
              "copy once"

    def visit_Call(self, node: cst.Call) -> None:
        if not _to_host_call(self, node):
            return
        if self.analysis.is_synced_accumulation(node):
            return  # `correct += (p == y).sum().cpu()`: GPU303 reports it, with a fix
        where = self.where(node)
        if where:
            self.report(node, where=where)


class TensorToPythonScalar(GpuRule):
    """`float()`, `int()` or `bool()` of a tensor every iteration.

    ## What it does
    Flags `float(t)`, `int(t)` and `bool(t)` where `t` is a tensor, on every iteration of a training/eval loop.

    ## Why it is slow
    Converting a tensor to a Python number reads its value on the host: the same blocking sync as `.item()`.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        history.append(float(loss))
    ```
    Keep the tensor (`history.append(loss.detach())`) and convert once when you report.

    ## Fix
    None in general; `running += float(loss)` is rewritten by GPU302.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging, end-of-epoch metrics, numbers that are not tensors (only names known to be tensors are
    flagged).
    """

    code = "GPU105"
    name = "tensor-to-python-scalar"
    message = "`{fn}()` of a tensor every iteration blocks the CPU until the GPU catches up"

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Name) or node.func.value not in ("float", "int", "bool"):
            return
        if len(node.args) != 1 or node.args[0].keyword is not None:
            return
        if not self.analysis.is_tensor(node.args[0].value) or inside_nan_check(self, node):
            return
        if self.analysis.is_synced_accumulation(node):
            return
        where = self.where(node)
        if where:
            self.report(node, self.message.format(fn=node.func.value), where=where)


class TensorInControlFlow(GpuRule):
    """Python control flow on a tensor's value (`if loss > x:`, `while t.any():`, `assert t`).

    ## What it does
    Flags `if`, `elif`, `while`, `assert`, conditional expressions and `and`/`or`/`not` whose condition is a
    tensor, on every iteration of a training/eval loop.

    ## Why it is slow
    Python must know the value to pick a branch, so it calls `bool()` on the tensor: a blocking copy to the host
    that waits for the GPU to finish all queued work.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        if loss > best:
            best = loss
    ```
    Keep the decision on the device: `best = torch.minimum(best, loss.detach())`, or decide periodically.

    ## Fix
    None: the branch needs a host value; restructure with `torch.where`, `torch.minimum`, or a periodic check.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic checks, early-stopping decisions once per epoch, conditions on Python numbers.
    NaN/Inf checks have their own rule with a fix (GPU108).
    """

    code = "GPU106"
    name = "tensor-in-control-flow"
    message = "branching on a tensor's value calls `bool()` on it every iteration: the CPU waits for the GPU"

    def _check(self, test: cst.BaseExpression) -> None:
        if not self.analysis.is_tensor(test) and not self._truthiness_of_tensor(test):
            return
        if nan_check(self.analysis, test) is not None:
            return
        where = self.where(test)
        if where:
            self.report(test, where=where)

    def _truthiness_of_tensor(self, test: cst.BaseExpression) -> bool:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.analysis.is_tensor(test.expression)
        if isinstance(test, cst.BooleanOperation):
            return self.analysis.is_tensor(test.left) or self._truthiness_of_tensor(test.left)
        return False

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node.test)


class TensorFormatted(GpuRule):
    """Printing or formatting a tensor every iteration.

    ## What it does
    Flags `print(t)`, f-strings `f"{t}"`/`f"{t:.3f}"`, `str(t)`, `repr(t)`, `format(t)`, `"...".format(t)` and
    `"%f" % t` where `t` is a tensor, on every iteration of a training/eval loop.

    ## Why it is slow
    Formatting reads the tensor's values on the host: a blocking copy that waits for the GPU.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = train_step(x, y)
        print(f"step {step} loss {loss:.4f}")
    ```
    Print periodically: `if step % 100 == 0: print(...)`.

    ## Fix
    None: how often to log is the author's choice.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging (`if step % log_every == 0:`), end-of-epoch summaries, printing shapes or dtypes.
    """

    code = "GPU107"
    name = "tensor-formatted"
    message = "formatting a tensor every iteration copies it to the host and waits for the GPU; log periodically"

    def _flag(self, expr: cst.BaseExpression) -> None:
        if self.analysis.is_tensor(expr):
            where = self.where(expr)
            if where:
                self.report(expr, where=where)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in ("print", "str", "repr", "format"):
            args = positional(node)
            for arg in args if func.value == "print" else args[:1]:
                self._flag(arg)
        elif method_call(node, "format") and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString)):
            for arg in node.args:
                self._flag(arg.value)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        self._flag(node.expression)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString,
                                                                            cst.ConcatenatedString)):
            right = node.right
            for expr in [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]:
                self._flag(expr)


class NanCheckInLoop(GpuRule):
    """`torch.isnan(x).any()` (or `isinf`, `not isfinite(...).all()`) checked in an `if` every iteration.

    ## What it does
    Flags NaN/Inf guards such as `if torch.isnan(loss).any(): break` that run on every iteration of a
    training loop.

    ## Why it is slow
    The `if` needs the answer on the host, so every step ends with a blocking sync just to learn that nothing
    went wrong.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        if torch.isnan(loss).any():
            raise RuntimeError("loss is NaN")
        ...
        if step % 100 == 0:
            print(step, loss.item())
    ```
    After the fix the flag is accumulated on the device and checked where the loop already syncs:
    ```python
    found_nan = False
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        found_nan |= torch.isnan(loss).any()
        ...
        if step % 100 == 0:
            if found_nan:
                raise RuntimeError("loss is NaN")
            print(step, loss.item())
    ```

    ## Fix
    Initialises a flag before the loop, replaces the check with `flag |= <check>` (no sync), and moves the
    original `if` body to the start of the loop's periodic block (one every process reaches: not
    `if step % N == 0 and rank == 0:`); with no such block, after the loop.

    ## Fix safety
    Unsafe: the reaction happens later. Steps between the NaN and the check still run (and may update weights
    with NaN gradients); a `break` or `raise` fires at the next periodic check, or after the loop; a message
    that prints the current loss shows a later step's value. No fix is offered when the `if` body `continue`s
    (skipping the bad step cannot be delayed), has an `else`, or `break`s with no periodic block to host it.

    ## When it is fine
    Checks under a periodic guard, once per epoch, or outside the loop. With AMP, `GradScaler` already skips
    steps with inf/NaN gradients without a sync.
    """

    code = "GPU108"
    name = "nan-check-in-loop"
    message = "NaN/Inf check every iteration blocks the CPU until the GPU catches up; accumulate a device-side " \
              "flag and check it periodically"

    def visit_If(self, node: cst.If) -> None:
        found = nan_check(self.analysis, node.test)
        if found is None:
            return
        where = self.where(node.test)
        if where:
            self.report(node.test, fix=self._fix(node, found[0], where), where=where)

    def _fix(self, node: cst.If, flag_expr: cst.BaseExpression, where):
        """Accumulate the check into a device flag; react to it where the loop already syncs."""
        if node.orelse is not None or where.loop is None or not where.every_iteration:
            return None
        body = flat_statements(node.body)
        if any(isinstance(s, cst.Continue) for s in body) or not body:
            return None
        loop = where.loop
        if self.analysis.parent(self.analysis.parent(node)) is not loop:
            return None  # only checks at the top level of the loop's body
        host = self._periodic_block(loop, node)
        ends_loop = any(isinstance(s, cst.Break) for s in body)
        if host is None and ends_loop:
            return None
        check = self.analysis.code(flag_expr)
        flag = fresh_name(self.analysis, _FLAG_NAMES.get(check_kind(check), "found_nonfinite"))
        accumulate = cst.parse_statement(f"{flag} |= {check}\n")
        accumulate = accumulate.with_changes(leading_lines=node.leading_lines)
        reaction = cst.If(test=cst.Name(flag), body=node.body)
        changes = {node: accumulate}
        init = cst.parse_statement(f"{flag} = False\n")
        if host is not None:
            first = host.body.body[0]
            changes[host] = lambda updated: updated.with_changes(
                body=updated.body.with_changes(body=[reaction, *updated.body.body]))
            changes[loop] = lambda updated: cst.FlattenSentinel(_before(init, updated))
            where_text = "at the periodic check"
            del first
        else:
            changes[loop] = lambda updated: cst.FlattenSentinel([*_before(init, updated), reaction])
            where_text = "after the loop"
        return self.fix(f"Accumulate `{check}` on the device in `{flag}` and check it {where_text}",
                        changes, safe=False)

    def _every_process_reaches(self, test: cst.BaseExpression) -> bool:
        """A purely periodic test: `step % N == 0`, not `step % N == 0 and rank == 0`.

        The check moves into this block, so every process (every DDP rank) must run it, or a rank would never
        see its own NaN.
        """
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self._every_process_reaches(test.left) and self._every_process_reaches(test.right)
        return self.analysis.loops.periodic_test(test) is not None

    def _periodic_block(self, loop, check: cst.If) -> Optional[cst.If]:
        """An `if step % N == 0:` at the top level of the loop body, preferably after the check."""
        candidates = [s for s in loop.body.body if isinstance(s, cst.If) and s is not check
                      and isinstance(s.body, cst.IndentedBlock) and self._every_process_reaches(s.test)]
        statements = list(loop.body.body)
        after = [c for c in candidates if statements.index(c) > statements.index(check)]
        return (after or candidates or [None])[0]


class CudaSynchronizeInLoop(GpuRule):
    """`torch.cuda.synchronize()` every iteration.

    ## What it does
    Flags `torch.cuda.synchronize()` (and `torch.accelerator.synchronize()`, `torch.cuda.current_stream()
    .synchronize()`) on every iteration of a training/eval loop.

    ## Why it is slow
    It waits for the whole device to go idle, throwing away the overlap between Python and the GPU that makes
    asynchronous execution fast.

    ## Example
    ```python
    for x, y in loader:
        loss = step(x, y)
        torch.cuda.synchronize()
    ```
    Remove it, or time with CUDA events (`torch.cuda.Event(enable_timing=True)`) and read them periodically.

    ## Fix
    None: a synchronize is often there for a reason (timing, a race with host code).

    ## Fix safety
    No fix.

    ## When it is fine
    Benchmark code that times a step with a host clock right beside it (`torch.cuda.synchronize()` next to
    `time.perf_counter()`), periodic checks, code outside loops.
    """

    code = "GPU109"
    name = "cuda-synchronize-in-loop"
    message = "`{call}` every iteration stalls the CPU until the GPU is idle; time with CUDA events instead"
    _CALLS = {"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize",
              "torch.mps.synchronize", "torch.cuda.current_stream.synchronize"}

    def visit_Call(self, node: cst.Call) -> None:
        q = self._qualified(node)
        if q not in self._CALLS or self._beside_a_timer(node):
            return
        where = self.where(node)
        if where:
            self.report(node, self.message.format(call=f"{q}()"), where=where)

    def _qualified(self, node: cst.Call) -> Optional[str]:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            inner = self.analysis.qualified(func.value.func)
            return f"{inner}.{func.attr.value}" if inner else None
        return self.analysis.qualified(func)

    def _beside_a_timer(self, node: cst.Call) -> bool:
        from gpulint.syntax import statement_of

        stmt = statement_of(node, self.analysis.parent)
        block = self.analysis.parent(stmt) if stmt is not None else None
        if not isinstance(block, cst.IndentedBlock):
            return False
        body = list(block.body)
        i = next((k for k, s in enumerate(body) if s is stmt), None)
        if i is None:
            return False
        for neighbour in body[max(0, i - 1):i + 2]:
            if neighbour is not stmt and "time" in self.analysis.code(neighbour) and any(
                    t in self.analysis.code(neighbour) for t in ("perf_counter", "time()", "monotonic", "timer")):
                return True
        return False


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
    name = "empty-cache-in-loop"
    message = "`torch.cuda.empty_cache()` every iteration syncs and forces fresh cudaMalloc calls; remove it"

    def visit_Call(self, node: cst.Call) -> None:
        if self.analysis.qualified(node.func) not in ("torch.cuda.empty_cache", "torch.accelerator.empty_cache"):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where, fix=self._fix(node))

    def _fix(self, node: cst.Call):
        expr = self.analysis.parent(node)
        line = self.analysis.parent(expr)
        if not isinstance(expr, cst.Expr) or not isinstance(line, cst.SimpleStatementLine):
            return None
        block = self.analysis.parent(line)
        if len(line.body) > 1:
            rest = [s for s in line.body if s is not expr]
            rest[-1] = rest[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return self.fix("Remove `torch.cuda.empty_cache()`", {line: line.with_changes(body=rest)}, safe=False)
        others = [s for s in getattr(block, "body", ()) if s is not line]
        replacement = cst.RemoveFromParent() if others else line.with_changes(body=[cst.Pass()])
        return self.fix("Remove `torch.cuda.empty_cache()`", {line: replacement}, safe=False)


class DataDependentShape(GpuRule):
    """An operation whose output size depends on the data, every iteration.

    ## What it does
    Flags `nonzero()`, boolean-mask indexing `x[mask]`, `masked_select`, `unique`, one-argument `torch.where`,
    `argwhere` and `repeat_interleave` without `output_size` on every iteration of a training/eval loop.

    ## Why it is slow
    PyTorch must know how many elements the result has before it can allocate it, so it copies a count from the
    GPU to the host and waits for it: a hidden sync per call.

    ## Example
    ```python
    for x, y in loader:
        valid = y != IGNORE
        loss = criterion(model(x)[valid], y[valid])
    ```
    Keep shapes static: weight or mask instead of selecting, `criterion(..., ignore_index=IGNORE)`,
    `torch.where(mask, x, 0)`, `masked_fill`, or pass `output_size=` to `repeat_interleave`.

    ## Fix
    None: the static-shape version changes what the code computes downstream.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic code, code outside loops, assignments through a mask with a scalar (`x[mask] = 0` runs as
    `masked_fill_`, without a sync).
    """

    code = "GPU111"
    name = "data-dependent-shape"
    message = "`{op}` has a data-dependent output shape: PyTorch syncs every iteration to size the result"
    _FUNCTIONS = {"torch.nonzero": "nonzero", "torch.masked_select": "masked_select", "torch.unique": "unique",
                  "torch.argwhere": "argwhere", "torch.unique_consecutive": "unique_consecutive"}
    _METHODS = {"nonzero", "masked_select", "unique", "argwhere", "unique_consecutive"}

    def visit_Call(self, node: cst.Call) -> None:
        op = None
        q = self.analysis.qualified(node.func)
        if q in self._FUNCTIONS:
            op = self._FUNCTIONS[q]
        elif q == "torch.where" and len(node.args) == 1:
            op = "torch.where(cond)"
        elif q == "torch.repeat_interleave" and argument(node, "output_size") is None and \
                len(node.args) >= 2 and self.analysis.is_tensor(node.args[1].value):
            op = "repeat_interleave without output_size"
        else:
            attr = method_call(node, tuple(self._METHODS) + ("repeat_interleave",))
            if attr is not None and self.analysis.is_tensor(attr.value):
                if attr.attr.value != "repeat_interleave":
                    op = attr.attr.value
                elif argument(node, "output_size") is None and node.args and \
                        self.analysis.is_tensor(node.args[0].value):
                    op = "repeat_interleave without output_size"
        if op is None:
            return
        where = self.where(node)
        if where:
            self.report(node, self.message.format(op=op), where=where)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.analysis.is_tensor(node.value) or len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if not isinstance(index, cst.Index) or not self.analysis.is_bool_tensor(index.value):
            return
        parent = self.analysis.parent(node)
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.AugAssign) and parent.target is node):
            return  # x[mask] = v goes through masked_fill_/index_put_ without reading a count
        where = self.where(node)
        if where:
            self.report(node, self.message.format(op="x[mask]"), where=where)
