"""GPU3xx: values accumulated across the iterations of a training loop.

Summing a loss the wrong way either keeps every step's autograd graph alive (memory grows until the job dies)
or pulls every step's value to the host (a sync per step). The right way keeps a detached sum on the device and
reads it when the program prints or returns it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from gpulint.analysis import Kind, ModuleAnalysis
from gpulint.analysis.tree import child_nodes
from gpulint.rule import GpuRule, Rule
from gpulint.syntax import method_call

_MAX_DEPTH = 6
_NOT_TENSOR = (Kind.NUMPY, Kind.NUMBER, Kind.OTHER, Kind.MODULE, Kind.MODULE_CLASS, Kind.LOADER,
               Kind.OPTIMIZER, Kind.DEVICE)

# Tensor methods whose result has no autograd history (integer/boolean results, host values, detached copies).
_CUTS_GRAPH = {"detach", "item", "tolist", "numpy", "argmax", "argmin", "eq", "ne", "lt", "le", "gt", "ge",
               "long", "int", "bool", "short", "isnan", "isinf", "isfinite", "size", "dim", "numel",
               "count_nonzero", "nonzero", "sign", "data_ptr", "requires_grad_"}
_NO_GRAD = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"}
_FLOAT_METHODS = {"mean", "float", "double", "half", "bfloat16", "softmax", "log_softmax", "sigmoid", "exp",
                  "log", "sqrt", "norm", "var", "std"}
_INT_METHODS = {"long", "int", "argmax", "argmin", "numel", "count_nonzero", "eq", "ne", "lt", "le", "gt", "ge",
                "bool", "isnan", "isinf", "isfinite"}
_SAME_DTYPE = {"sum", "detach", "clone", "cpu", "squeeze", "flatten", "view", "reshape", "contiguous", "abs",
               "cuda", "to"}
_METRIC_METHODS = {"eq", "ne", "lt", "le", "gt", "ge", "argmax", "argmin"}
_LOSS_NAME = ("loss", "criterion", "crit")


def _bindings(analysis: ModuleAnalysis, name: cst.Name):
    return analysis.index.visible_bindings(name)


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(reversed(child_nodes(current)))  # not `.children`: that rebuilds every node


def _base_name(target: cst.BaseExpression) -> Optional[cst.Name]:
    while isinstance(target, cst.Subscript):
        target = target.value
    return target if isinstance(target, cst.Name) else None


def _parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _method(expr: cst.BaseExpression, name: str) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=_parenthesized(expr), attr=cst.Name(name)))


# -- dtypes: what a synced value was, so a device sum can be turned back into the same Python type ---------------
def dtype_class(analysis: ModuleAnalysis, expr: cst.CSTNode, depth: int = 0) -> Optional[str]:
    """'float', 'int' (integers and booleans), or None when unknown."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Comparison):
        return "int"
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Divide):
            return "float"
        sides = {dtype_class(analysis, expr.left, depth + 1), dtype_class(analysis, expr.right, depth + 1)}
        if "float" in sides:
            return "float"
        return "int" if sides == {"int"} else None
    if isinstance(expr, cst.Integer):
        return "int"
    if isinstance(expr, cst.Float):
        return "float"
    if isinstance(expr, cst.Call):
        func = expr.func
        q = analysis.qualified(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if q is not None and q.startswith("torch.nn.functional."):
            return "float"
        if q in ("torch.sum", "torch.abs"):
            return dtype_class(analysis, expr.args[0].value, depth + 1) if expr.args else None
        if q in ("torch.mean",):
            return "float"
        if q in ("torch.eq", "torch.ne", "torch.argmax", "torch.count_nonzero", "torch.isnan"):
            return "int"
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name in _FLOAT_METHODS:
                return "float"
            if name in _INT_METHODS:
                return "int"
            if name in _SAME_DTYPE:
                return dtype_class(analysis, func.value, depth + 1)
        if analysis.kind(func) is Kind.MODULE:
            return "float"  # a model's or criterion's output
        callee = func.value if isinstance(func, cst.Name) else (func.attr.value if isinstance(func, cst.Attribute)
                                                                 else "")
        if "loss" in callee.lower():
            return "float"  # `loss_function(recon, x, mu, logvar)`: losses are floating point
        return None
    if isinstance(expr, (cst.Subscript, cst.Attribute)):
        if isinstance(expr, cst.Attribute) and expr.attr.value not in ("data",):
            base = analysis.kind(expr.value)
            return "float" if base is Kind.TENSOR and _from_module(analysis, expr.value) else None
        return dtype_class(analysis, expr.value, depth + 1)
    if isinstance(expr, cst.Name):
        values = [b.value for b in _bindings(analysis, expr) if b.kind in ("assign", "walrus") and b.index is None]
        kinds = {dtype_class(analysis, v, depth + 1) for v in values if v is not None}
        if len(kinds) == 1 and None not in kinds:
            return kinds.pop()
        if _backpropagated(analysis, expr):
            return "float"  # only floating-point tensors have gradients
        return None
    return None


def _backpropagated(analysis: ModuleAnalysis, name: cst.Name) -> bool:
    """`name.backward()` is called in the scope that reads `name`."""
    scope = analysis.index.enclosing_scope(name)
    return any(isinstance(n, cst.Call) and method_call(n, "backward") and isinstance(n.func.value, cst.Name)
               and n.func.value.value == name.value for n in _walk(scope))


def _from_module(analysis: ModuleAnalysis, expr: cst.CSTNode) -> bool:
    if isinstance(expr, cst.Call):
        return analysis.kind(expr.func) is Kind.MODULE
    if isinstance(expr, cst.Name):
        values = [b.value for b in _bindings(analysis, expr) if b.kind == "assign"]
        return bool(values) and all(v is not None and _from_module(analysis, v) for v in values)
    return False


def is_metric(analysis: ModuleAnalysis, expr: cst.CSTNode, depth: int = 0) -> bool:
    """A value computed from comparisons or arg-max: an accuracy counter, not a loss."""
    if depth > _MAX_DEPTH:
        return False
    for node in _walk(expr):
        if isinstance(node, cst.Comparison):
            return True
        if isinstance(node, cst.Call):
            if method_call(node, tuple(_METRIC_METHODS)):
                return True
            if analysis.qualified(node.func) in ("torch.eq", "torch.ne", "torch.argmax"):
                return True
        if isinstance(node, cst.Name) and node is not expr or isinstance(expr, cst.Name) and node is expr:
            values = [b.value for b in _bindings(analysis, node) if b.kind == "assign" and b.index is None]
            if len(values) == 1 and values[0] is not None and is_metric(analysis, values[0], depth + 1):
                return True
    return False


# -- synced accumulation: the shared matcher (GPU101/GPU104/GPU105 defer to GPU302/GPU303 through it) ----------
@dataclass(frozen=True)
class SyncedAccumulation:
    statement: cst.AugAssign  # `total += <value>`
    sync: cst.Call  # `x.item()`, `float(x)`, `int(x)` or `x.cpu()`
    tensor: cst.BaseExpression  # `x`, with any `.cpu()` before the sync stripped
    metric: bool  # an accuracy-style counter (GPU303) rather than a loss (GPU302)


def synced_accumulation(analysis: ModuleAnalysis, call: cst.CSTNode) -> Optional[SyncedAccumulation]:
    """`total += x.item()` (or `float(x)`, `int(x)`, `x.cpu()`, times or divided by a plain number)."""
    if not isinstance(call, cst.Call):
        return None
    tensor = None
    attr = method_call(call, ("item", "cpu"))
    if attr is not None and not call.args and analysis.kind(attr.value) not in _NOT_TENSOR:
        tensor = attr.value
        if attr.attr.value == "cpu" and isinstance(analysis.parent(analysis.parent(call)), cst.Call):
            return None  # `x.cpu().item()`: the outer call is the match
    elif isinstance(call.func, cst.Name) and call.func.value in ("float", "int") and len(call.args) == 1 \
            and call.args[0].keyword is None and analysis.is_tensor(call.args[0].value):
        tensor = call.args[0].value
    if tensor is None:
        return None
    inner = method_call(tensor, "cpu")
    if inner is not None and not tensor.args:  # type: ignore[union-attr]
        tensor = inner.value
    value: cst.CSTNode = call
    parent = analysis.parent(call)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.Multiply, cst.Divide)):
        other = parent.right if parent.left is call else parent.left
        if analysis.kind(other) is Kind.TENSOR:
            return None
        value, parent = parent, analysis.parent(parent)
    if not isinstance(parent, cst.AugAssign) or parent.value is not value or \
            not isinstance(parent.operator, (cst.AddAssign, cst.SubtractAssign)):
        return None
    return SyncedAccumulation(parent, call, tensor, is_metric(analysis, tensor))


class _SyncedAccumulationRule(GpuRule):
    metric: bool

    def visit_Call(self, node: cst.Call) -> None:
        match = synced_accumulation(self.analysis, node)
        if match is None or match.metric is not self.metric:
            return
        where = self.where(match.statement)
        if where:
            self.report(node, where=where, fix=self._fix(match))

    def _fix(self, match: SyncedAccumulation):
        """Sum on the device; turn the sum back into a Python number where it leaves the loop."""
        target = match.statement.target
        if not isinstance(target, cst.Name):
            return None  # an attribute or a dict entry: other code may read it where we cannot see
        converter = "int" if isinstance(match.sync.func, cst.Name) and match.sync.func.value == "int" else \
            dtype_class(self.analysis, match.tensor)
        if converter is None and isinstance(match.sync.func, cst.Name):
            converter = match.sync.func.value
        if method_call(match.sync, "cpu"):
            converter = None  # the sum was a CPU tensor, not a Python number: nothing to convert back to
        uses = _uses(self.analysis, match.statement, target.value)
        if uses is None:
            return None
        changes: dict = {}
        for use, leaves in uses:
            if self.analysis.execution(use).every_iteration:
                return None  # read every step anyway: summing on the device would only move the sync
            if leaves:
                if converter is None:
                    return None  # unknown dtype: float() or int() could change the value's type
                changes[use] = cst.Call(func=cst.Name(converter), args=[cst.Arg(cst.Name(target.value))])
        detached = _method(match.tensor, "detach")
        changes[match.sync] = detached.with_changes(lpar=match.sync.lpar, rpar=match.sync.rpar)
        where_text = f" and convert with `{converter}()` where it is read" if len(changes) > 1 else ""
        return self.fix(f"Sum on the device with `.detach()`{where_text}", changes, safe=False)


def _uses(analysis: ModuleAnalysis, statement: cst.AugAssign, name: str):
    """Each read of accumulator `name` in its scope, with whether it leaves as a Python value.

    None when some read cannot be rewritten: the name is global/nonlocal, or read by a nested function.
    """
    scope = analysis.index.enclosing_scope(statement)
    found = []
    for node in analysis.index.nodes:
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in node.names) and \
                analysis.index.is_ancestor_or_self(scope, node):
            return None
        if not isinstance(node, cst.Name) or node.value != name or \
                not analysis.index.is_ancestor_or_self(scope, node):
            continue
        inner = analysis.index.enclosing_scope(node)
        if inner is not scope:
            if not analysis.index.lookup(name, inner):
                return None  # read by a nested function: its reads cannot be rewritten one by one
            continue
        parent = analysis.parent(node)
        if isinstance(parent, cst.AssignTarget) or isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and \
                parent.target is node:
            continue  # a reset or another accumulation: tensors and numbers mix
        if isinstance(parent, (cst.Del, cst.Param, cst.ImportAlias)) or isinstance(parent, cst.Element) and \
                isinstance(analysis.parent(parent), cst.Tuple) and _is_target(analysis, parent):
            continue
        if isinstance(parent, cst.Arg) and isinstance(analysis.parent(parent), cst.Call):
            call = analysis.parent(parent)
            if isinstance(call.func, cst.Name) and call.func.value in ("float", "int") and len(call.args) == 1:
                continue  # converted already
        found.append((node, not _formatted_as_number(analysis, node)))
    return found


def _is_target(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    for a in analysis.index.ancestors(node):
        if isinstance(a, (cst.AssignTarget, cst.For)):
            return True
        if isinstance(a, cst.BaseSmallStatement):
            return False
    return False


def _formatted_as_number(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """`f"{total / n:.4f}"`: a 0-dim tensor formats exactly like its value when a format spec is given."""
    current = node
    parent = analysis.parent(current)
    while isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
        current, parent = parent, analysis.parent(parent)
    return isinstance(parent, cst.FormattedStringExpression) and parent.expression is current and \
        parent.conversion is None and parent.format_spec is not None and len(parent.format_spec) > 0


class SyncedLossAccumulation(_SyncedAccumulationRule):
    """`running_loss += loss.item()` (or `float(loss)`) every iteration.

    ## What it does
    Flags a running sum fed with `.item()`, `float()` or `.cpu()` of a tensor on every iteration of a training
    or evaluation loop, including `running_loss += loss.item() * inputs.size(0)`.

    ## Why it is slow
    Each `.item()` waits for the GPU to finish every kernel queued so far, once per step, only to add a number
    that nobody reads until the next log line.

    ## Example
    ```python
    running_loss = 0.0
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        ...
        running_loss += loss.item()
        if step % 100 == 99:
            print(f"loss {running_loss / 100:.3f}")
            running_loss = 0.0
    ```
    Use instead (`running_loss` becomes a 0-dim tensor on the device; the f-string reads it once per log line):
    ```python
        running_loss += loss.detach()
    ```

    ## Fix
    Replaces `loss.item()` with `loss.detach()`. Reads of the accumulator that format it with a format spec
    (`f"{running_loss / 100:.3f}"`) stay as they are: a 0-dim tensor formats like its value. Every other read,
    where the value leaves as a Python number (`print(running_loss)`, `history.append(running_loss)`,
    `json.dump`, `np.array`, comparisons, `return`), is converted once with `float()` (or `int()` for integer
    sums) so the sum stays on the device between them.

    ## Fix safety
    Unsafe: the sum is computed in the loss's dtype (float32, not Python's float64), so printed values can
    differ in the last digits; a half-precision loss would sum in half precision. No fix when the accumulator
    is an attribute or a dict entry, `global`/`nonlocal`, read by a nested function, read on every iteration
    (the sync would only move), or read where it leaves and its dtype is unknown (`float()` could turn an
    integer count into a float).

    ## When it is fine
    Periodic accumulation (`if step % 100 == 0:`), once-per-epoch sums, CPU-only modules.
    """

    code = "GPU302"
    name = "synced-accumulation"
    message = "summing `.item()` every step syncs with the GPU each time; sum the detached tensor on the device"
    metric = False


class MetricSyncedEachStep(_SyncedAccumulationRule):
    """`correct += (pred == y).sum().item()`: a metric pulled to the host every step only to be summed.

    ## What it does
    Flags accuracy-style counters (sums of comparisons, `argmax` matches, their means) accumulated with
    `.item()`, `float()`, `int()` or `.cpu()` on every iteration of a training or evaluation loop.

    ## Why it is slow
    The comparison is computed on the GPU in microseconds; copying its result to the host waits for every
    queued kernel, once per step.

    ## Example
    ```python
    correct = 0
    for x, y in loader:
        pred = model(x).argmax(1)
        correct += (pred == y).sum().item()
    print(f"accuracy {correct / len(dataset):.2%}")
    ```
    Use instead:
    ```python
        correct += (pred == y).sum()
    ```
    (`correct += (pred == y).sum().detach()` after the fix; the `.detach()` is harmless.)

    ## Fix
    As GPU302: `.item()`/`.cpu()` becomes `.detach()`, and reads where the count leaves as a Python value are
    converted once with `int()` (counts) or `float()` (means).

    ## Fix safety
    Unsafe: a count becomes an int64 tensor, so `correct / total` divides in float32 on the device; printed
    ratios can differ in the last digits. No fix in the cases listed for GPU302.

    ## When it is fine
    Periodic or per-epoch metrics, CPU-only modules.
    """

    code = "GPU303"
    name = "metric-synced-each-step"
    message = "a metric is copied to the host every step only to be summed; count on the device and read once"
    metric = True


# -- GPU301: accumulating values that still carry autograd history ---------------------------------------------
def carries_graph(analysis: ModuleAnalysis, expr: cst.CSTNode, depth: int = 0) -> Optional[bool]:
    """True when `expr` still holds autograd history (a loss, a model output, math on them); False when it
    provably does not; None when unknown."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.Comparison)):
        return False
    if isinstance(expr, cst.Name):
        states = []
        for b in _bindings(analysis, expr):
            if b.kind in ("assign", "walrus") and b.value is not None:
                if isinstance(b.value, (cst.Integer, cst.Float)) or (isinstance(b.value, cst.Name)
                                                                   and b.value.value == "None"):
                    continue  # an initial value
                state = carries_graph(analysis, b.value, depth + 1)
                states.append(True if state and b.index is not None else state)
            elif b.kind == "augassign":
                continue
            else:
                states.append(False if b.kind == "for" else None)
        return True if states and all(s is True for s in states) else (False if False in states else None)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Name) and func.value in ("float", "int", "bool", "len", "str"):
            return False
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name in _CUTS_GRAPH:
                return False
            if name in ("forward",) and analysis.kind(func.value) is Kind.MODULE:
                return True
            receiver = analysis.kind(func.value)
            if receiver is Kind.TENSOR:
                return carries_graph(analysis, func.value, depth + 1)
        q = analysis.qualified(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if q is not None and (q.startswith("torch.nn.functional.") or q in ("torch.sum", "torch.mean", "torch.stack",
                                                                               "torch.cat", "torch.abs")):
            return True if any(carries_graph(analysis, a.value, depth + 1) for a in expr.args) else None
        if analysis.kind(func) is Kind.MODULE:
            return True
        return None
    if isinstance(expr, cst.BinaryOperation):
        sides = (carries_graph(analysis, expr.left, depth + 1), carries_graph(analysis, expr.right, depth + 1))
        return True if True in sides else (False if sides == (False, False) else None)
    if isinstance(expr, cst.UnaryOperation):
        return carries_graph(analysis, expr.expression, depth + 1)
    if isinstance(expr, cst.Subscript):
        return carries_graph(analysis, expr.value, depth + 1)
    if isinstance(expr, cst.Attribute):
        if expr.attr.value in ("data", "grad", "shape", "dtype", "device"):
            return False
        if analysis.kind(expr.value) is Kind.TENSOR:
            return carries_graph(analysis, expr.value, depth + 1)
    return None


def certainly_tensor(analysis: ModuleAnalysis, expr: cst.CSTNode, depth: int = 0) -> bool:
    """`.detach()` exists on it: a loss, a reduction, tensor math; not a bare model output (maybe a tuple)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Name):
        values = [b.value for b in _bindings(analysis, expr) if b.kind == "assign" and b.index is None
                  and not isinstance(b.value, (cst.Integer, cst.Float))]
        return bool(values) and all(v is not None and certainly_tensor(analysis, v, depth + 1) for v in values)
    if isinstance(expr, cst.BinaryOperation):
        return certainly_tensor(analysis, expr.left, depth + 1) or certainly_tensor(analysis, expr.right, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return certainly_tensor(analysis, expr.expression, depth + 1)
    if isinstance(expr, cst.Call):
        func = expr.func
        q = analysis.qualified(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if q is not None and (q.startswith("torch.nn.functional.") or q in ("torch.sum", "torch.mean",
                                                                               "torch.stack", "torch.cat")):
            return True
        if isinstance(func, cst.Attribute) and analysis.kind(func.value) is Kind.TENSOR and \
                func.attr.value in ("sum", "mean", "float", "abs", "pow", "exp", "log", "clone", "squeeze",
                                    "norm", "view", "reshape", "flatten"):
            return True
        if analysis.kind(func) is Kind.MODULE:
            return _module_returns_tensor(analysis, func)
    return False


def _module_returns_tensor(analysis: ModuleAnalysis, func: cst.BaseExpression) -> bool:
    """A criterion (`criterion`, `loss_fn`, a `torch.nn.*Loss`) or a built-in `torch.nn` layer."""
    name = func.value if isinstance(func, cst.Name) else (func.attr.value if isinstance(func, cst.Attribute) else "")
    if any(part in name.lower() for part in _LOSS_NAME):
        return True
    if isinstance(func, cst.Name):
        values = [b.value for b in _bindings(analysis, func) if b.kind == "assign"]
        for v in values:
            while isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value in ("to",
                                                                                                         "cuda"):
                v = v.func.value
            if not (isinstance(v, cst.Call) and (analysis.qualified(v.func) or "").startswith("torch.nn.")):
                return False
        return bool(values)
    return False


def under_no_grad(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """`node` runs under `torch.no_grad()`/`inference_mode()` (a with-block or a decorated function)."""
    for a in analysis.index.ancestors(node):
        if isinstance(a, cst.With):
            for item in a.items:
                call = item.item
                func = call.func if isinstance(call, cst.Call) else call
                q = analysis.qualified(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
                if q in _NO_GRAD:
                    return True
                if q == "torch.set_grad_enabled" and isinstance(call, cst.Call) and call.args and \
                        isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False":
                    return True
        if isinstance(a, cst.FunctionDef):
            for dec in a.decorators:
                d = dec.decorator
                func = d.func if isinstance(d, cst.Call) else d
                q = analysis.qualified(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
                if q in _NO_GRAD:
                    return True
    return False


def _backwarded_names(analysis: ModuleAnalysis, scope: cst.CSTNode) -> set[str]:
    """Names that feed a `.backward()` (or are returned) in `scope`: accumulated on purpose, for gradients.

    Computed once per scope: a module-level scope asked once per finding would make a big file quadratic."""
    known = _BACKWARDED.setdefault(analysis, {})
    if scope not in known:
        known[scope] = _scan_backwarded_names(analysis, scope)
    return known[scope]


_BACKWARDED: "weakref.WeakKeyDictionary[ModuleAnalysis, dict]" = weakref.WeakKeyDictionary()


def _scan_backwarded_names(analysis: ModuleAnalysis, scope: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    assigns: list[tuple[set[str], set[str]]] = []
    for node in _walk(scope):
        if isinstance(node, cst.Call):
            q = analysis.qualified(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
            if method_call(node, "backward") or q in ("torch.autograd.backward", "torch.autograd.grad"):
                names |= {n.value for n in _walk(node) if isinstance(n, cst.Name)}
        elif isinstance(node, cst.Return) and node.value is not None:
            names |= {n.value for n in _walk(node.value) if isinstance(n, cst.Name)}
        elif isinstance(node, cst.Assign):
            targets = {n.value for t in node.targets for n in _walk(t.target) if isinstance(n, cst.Name)}
            assigns.append((targets, {n.value for n in _walk(node.value) if isinstance(n, cst.Name)}))
    changed = True
    while changed:
        changed = False
        for targets, sources in assigns:
            if targets & names and not sources <= names:
                names |= sources
                changed = True
    return names


class UndetachedAccumulation(GpuRule):
    """A loss or model output accumulated across iterations without `.detach()`.

    ## What it does
    Flags `total += loss`, `total = total + loss`, `losses.append(loss)` and `history[k] += out` every
    iteration of a training or evaluation loop, when the accumulator outlives the iteration and the value still
    carries autograd history (a loss, a model output, or math on them without `.detach()`, `.item()` or
    `torch.no_grad()`).

    ## Why it is slow
    The sum (or the list) holds a reference to each step's autograd graph, so the activations of every step
    stay in GPU memory until the accumulator is dropped: memory grows each step, and the graph is walked again
    when anything backpropagates through the sum. The PyTorch FAQ: "Don't accumulate history across your
    training loop".

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```
    Use instead:
    ```python
        total_loss += loss.detach()
    ```

    ## Fix
    Appends `.detach()` to the accumulated value (parenthesised where needed).

    ## Fix safety
    Safe: the values are the same; only the graph is dropped, and nothing backpropagates through the
    accumulator (the rule stays silent when it does). No fix when the value may not be a tensor (a bare model
    output can be a tuple or a dict): the finding is reported without one.

    ## When it is fine
    Deliberate gradient accumulation, where the accumulator (or a value built from it) is later `.backward()`-ed
    or returned for that; loops under `torch.no_grad()`/`torch.inference_mode()` (with-blocks or decorators);
    values that are already detached or Python numbers; sums reset inside the iteration (`loss += aux_loss`).
    """

    code = "GPU301"
    name = "undetached-accumulation"
    message = "accumulating a value that carries autograd history keeps every step's graph alive; add `.detach()`"

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign)):
            self._check(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, cst.BinaryOperation) or \
                not isinstance(value.operator, (cst.Add, cst.Subtract)):
            return
        target = node.targets[0].target
        code = self.analysis.code(target)
        if self.analysis.code(value.left) == code:
            self._check(node, target, value.right)
        elif self.analysis.code(value.right) == code and isinstance(value.operator, cst.Add):
            self._check(node, target, value.left)

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "append")
        if attr is not None and len(node.args) == 1 and node.args[0].keyword is None:
            self._check(node, attr.value, node.args[0].value)

    def _check(self, node: cst.CSTNode, accumulator: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if carries_graph(self.analysis, value) is not True:
            return
        where = self.where(node)
        if not where or where.loop is None:
            return
        if not self._outlives_iteration(accumulator, where.loop):
            return
        if under_no_grad(self.analysis, node) or under_no_grad(self.analysis, where.loop):
            return
        name = _base_name(accumulator)
        scope = self.analysis.index.enclosing_scope(node)
        if name is not None and name.value in _backwarded_names(self.analysis, scope):
            return
        fix = None
        if certainly_tensor(self.analysis, value):
            fix = self.fix("Append `.detach()`", {value: _method(value, "detach")}, safe=True)
        self.report(node, where=where, fix=fix)

    def _outlives_iteration(self, accumulator: cst.BaseExpression, loop) -> bool:
        """Bound before the loop and not rebound inside it: the value carries over from step to step."""
        name = _base_name(accumulator)
        if name is None:
            return False
        bindings = [b for b in _bindings(self.analysis, name) if b.kind != "augassign"]
        inside = [b for b in bindings if b.source is not None and
                  self.analysis.index.is_ancestor_or_self(loop.body, b.source)]
        outside = [b for b in bindings if b not in inside]
        # A reset under `if step % N == 0:` still lets N steps' graphs pile up; one every step does not.
        rebinds = [b for b in inside if not (isinstance(b.source, cst.Assign) and _self_referencing(
            self.analysis, b.source, name.value)) and self.analysis.execution(b.source).every_iteration]
        return bool(outside) and not rebinds


def _self_referencing(analysis: ModuleAnalysis, assign: cst.Assign, name: str) -> bool:
    """`total = total + x`: an accumulation, not a reset."""
    return any(isinstance(n, cst.Name) and n.value == name for n in _walk(assign.value))
