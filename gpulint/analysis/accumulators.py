"""Facts about values accumulated across a loop: dtype class, metric or loss, whether a value still carries an
autograd graph, `no_grad` regions, and the synced-accumulation matcher (GPU3xx; GPU101/104/105 defer to it).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from gpulint.analysis import Kind, ModuleAnalysis
from gpulint.analysis.node_types import of_types
from gpulint.analysis.tree import child_nodes
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


def _reaching_in_loop(analysis: ModuleAnalysis, name: cst.Name, bindings):
    """The bindings inside the innermost loop around `name`, when there are some: those are what a read in the
    loop body sees (`outputs = model(x)` of the evaluation loop under no_grad, not the training loop's), else
    all of them."""
    loop = next((a for a in analysis.index.ancestors(name) if type(a) in (cst.For, cst.While)), None)
    if loop is None or len(bindings) < 2:
        return bindings
    local = [b for b in bindings if b.source is not None and analysis.index.is_ancestor_or_self(loop, b.source)]
    return local or bindings


# Exact types, not isinstance: LibCST's node classes are ABCs, whose isinstance costs a Python-level call, and
# these walks visit every node of every scope with accumulations (a parsed tree holds only these classes).
_NESTED_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and type(current) in _NESTED_SCOPES:
            continue
        stack.extend(reversed(child_nodes(current)))  # not `.children`: that rebuilds every node


def _names(node: cst.CSTNode) -> set[str]:
    """The identifiers of the `Name` nodes in `node` (nested scopes left out)."""
    return {n.value for n in _walk(node) if type(n) is cst.Name}  # type: ignore[attr-defined]


def _base_name(target: cst.BaseExpression) -> Optional[cst.Name]:
    while type(target) is cst.Subscript:
        target = target.value
    return target if type(target) is cst.Name else None


def _parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    if type(expr) in (cst.Name, cst.Attribute, cst.Call, cst.Subscript) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _method(expr: cst.BaseExpression, name: str) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=_parenthesized(expr), attr=cst.Name(name)))


# -- dtypes: what a synced value was, so a device sum can be turned back into the same Python type ---------------
def dtype_class(analysis: ModuleAnalysis, expr: cst.CSTNode, depth: int = 0) -> Optional[str]:
    """'float', 'int' (integers and booleans), or None when unknown."""
    if depth > _MAX_DEPTH:
        return None
    if type(expr) is cst.Comparison:
        return "int"
    if type(expr) is cst.BinaryOperation:
        if type(expr.operator) is cst.Divide:
            return "float"
        sides = {dtype_class(analysis, expr.left, depth + 1), dtype_class(analysis, expr.right, depth + 1)}
        if "float" in sides:
            return "float"
        return "int" if sides == {"int"} else None
    if type(expr) is cst.Integer:
        return "int"
    if type(expr) is cst.Float:
        return "float"
    if type(expr) is cst.Call:
        func = expr.func
        q = analysis.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None
        if q is not None and q.startswith("torch.nn.functional."):
            return "float"
        if q in ("torch.sum", "torch.abs"):
            return dtype_class(analysis, expr.args[0].value, depth + 1) if expr.args else None
        if q in ("torch.mean",):
            return "float"
        if q in ("torch.eq", "torch.ne", "torch.argmax", "torch.count_nonzero", "torch.isnan"):
            return "int"
        if type(func) is cst.Attribute:
            name = func.attr.value
            if name in _FLOAT_METHODS:
                return "float"
            if name in _INT_METHODS:
                return "int"
            if name in _SAME_DTYPE:
                return dtype_class(analysis, func.value, depth + 1)
        if analysis.kind(func) is Kind.MODULE:
            return "float"  # a model's or criterion's output
        callee = func.value if type(func) is cst.Name else (func.attr.value if type(func) is cst.Attribute
                                                                 else "")
        if "loss" in callee.lower():
            return "float"  # `loss_function(recon, x, mu, logvar)`: losses are floating point
        return None
    if type(expr) in (cst.Subscript, cst.Attribute):
        if type(expr) is cst.Attribute and expr.attr.value not in ("data",):
            base = analysis.kind(expr.value)
            return "float" if base is Kind.TENSOR and _from_module(analysis, expr.value) else None
        return dtype_class(analysis, expr.value, depth + 1)
    if type(expr) is cst.Name:
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
    return any(type(n) is cst.Call and method_call(n, "backward") and type(n.func.value) is cst.Name
               and n.func.value.value == name.value for n in _walk(scope))


def _from_module(analysis: ModuleAnalysis, expr: cst.CSTNode) -> bool:
    if type(expr) is cst.Call:
        return analysis.kind(expr.func) is Kind.MODULE
    if type(expr) is cst.Name:
        values = [b.value for b in _bindings(analysis, expr) if b.kind == "assign"]
        return bool(values) and all(v is not None and _from_module(analysis, v) for v in values)
    return False


def is_metric(analysis: ModuleAnalysis, expr: cst.CSTNode, depth: int = 0) -> bool:
    """A value computed from comparisons or arg-max: an accuracy counter, not a loss."""
    if depth > _MAX_DEPTH:
        return False
    for node in _walk(expr):
        if type(node) is cst.Comparison:
            return True
        if type(node) is cst.Call:
            if method_call(node, tuple(_METRIC_METHODS)):
                return True
            if analysis.qualified(node.func) in ("torch.eq", "torch.ne", "torch.argmax"):
                return True
        if type(node) is cst.Name and node is not expr or type(expr) is cst.Name and node is expr:
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
    """`total += x.item()` (or `float(x)`, `int(x)`, `x.cpu()`, times or divided by a plain number).

    Once per call node: GPU302 and GPU303 both ask about every call."""
    known = analysis.fact(_matches)
    if call not in known:
        known[call] = _synced_accumulation(analysis, call)
    return known[call]


def _matches(analysis: ModuleAnalysis) -> dict:
    return {}


def _synced_accumulation(analysis: ModuleAnalysis, call: cst.CSTNode) -> Optional[SyncedAccumulation]:
    if type(call) is not cst.Call:
        return None
    tensor = None
    attr = method_call(call, ("item", "cpu"))
    if attr is not None and not call.args and analysis.kind(attr.value) not in _NOT_TENSOR:
        tensor = attr.value
        if attr.attr.value == "cpu" and isinstance(analysis.parent(analysis.parent(call)), cst.Call):
            return None  # `x.cpu().item()`: the outer call is the match
    elif type(call.func) is cst.Name and call.func.value in ("float", "int") and len(call.args) == 1 \
            and call.args[0].keyword is None and analysis.is_tensor(call.args[0].value):
        tensor = call.args[0].value
    if tensor is None:
        return None
    inner = method_call(tensor, "cpu")
    if inner is not None and not tensor.args:  # type: ignore[union-attr]
        tensor = inner.value
    if analysis.kinds.on_host(tensor):
        return None  # `(predicted == y).sum().item()` of a prediction copied to the host already: no wait
    value: cst.CSTNode = call
    parent = analysis.parent(call)
    if type(parent) is cst.BinaryOperation and type(parent.operator) in (cst.Multiply, cst.Divide):
        other = parent.right if parent.left is call else parent.left
        if analysis.kind(other) is Kind.TENSOR:
            return None
        value, parent = parent, analysis.parent(parent)
    if type(parent) is not cst.AugAssign or parent.value is not value or \
            type(parent.operator) not in (cst.AddAssign, cst.SubtractAssign):
        return None
    return SyncedAccumulation(parent, call, tensor, is_metric(analysis, tensor))


def _uses(analysis: ModuleAnalysis, statement: cst.AugAssign, name: str):
    """Each read of accumulator `name` in its scope, with whether it leaves as a Python value.

    None when some read cannot be rewritten: the name is global/nonlocal, or read by a nested function.
    """
    index = analysis.index
    scope = index.enclosing_scope(statement)
    for node in of_types(index, cst.Global, cst.Nonlocal):
        if any(n.name.value == name for n in node.names) and index.is_ancestor_or_self(scope, node):
            return None
    found = []
    inside = index.subtree(scope)  # the scope's nodes: a range of document order (cheaper than a walk up per read)
    names = index.names(name)  # in document order
    if inside is not None:  # the reads in that range, found by bisection (not one test per read in the module)
        places = index.name_places(name)
        names = names[bisect_left(places, inside[0]):bisect_right(places, inside[1])]
    for node in names:
        if inside is None and not index.is_ancestor_or_self(scope, node):
            continue
        inner = analysis.index.enclosing_scope(node)
        if inner is not scope:
            if not analysis.index.lookup(name, inner):
                return None  # read by a nested function: its reads cannot be rewritten one by one
            continue
        parent = analysis.parent(node)
        if type(parent) is cst.AssignTarget or type(parent) in (cst.AugAssign, cst.AnnAssign) and \
                parent.target is node:
            continue  # a reset or another accumulation: tensors and numbers mix
        if type(parent) in (cst.Del, cst.Param, cst.ImportAlias) or type(parent) is cst.Element and \
                isinstance(analysis.parent(parent), cst.Tuple) and _is_target(analysis, parent):
            continue
        if type(parent) is cst.Arg and isinstance(analysis.parent(parent), cst.Call):
            call = analysis.parent(parent)
            if type(call.func) is cst.Name and call.func.value in ("float", "int") and len(call.args) == 1:
                continue  # converted already
        found.append((node, not _formatted_as_number(analysis, node)))
    return found


def _is_target(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    for a in analysis.index.ancestors(node):
        if type(a) in (cst.AssignTarget, cst.For):
            return True
        if isinstance(a, cst.BaseSmallStatement):
            return False
    return False


def _formatted_as_number(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """`f"{total / n:.4f}"`: a 0-dim tensor formats exactly like its value when a format spec is given."""
    current = node
    parent = analysis.parent(current)
    while type(parent) in (cst.BinaryOperation, cst.UnaryOperation):
        current, parent = parent, analysis.parent(parent)
    return type(parent) is cst.FormattedStringExpression and parent.expression is current and \
        parent.conversion is None and parent.format_spec is not None and len(parent.format_spec) > 0


# -- GPU301: accumulating values that still carry autograd history ---------------------------------------------
def carries_graph(analysis: ModuleAnalysis, expr: cst.CSTNode, depth: int = 0) -> Optional[bool]:
    """True when `expr` still holds autograd history (a loss, a model output, math on them); False when it
    provably does not; None when unknown."""
    if depth > _MAX_DEPTH:
        return None
    if type(expr) in (cst.Integer, cst.Float, cst.SimpleString, cst.Comparison):
        return False
    if type(expr) is cst.Name:
        states = []
        no_grad_only: Optional[bool] = None
        for b in _reaching_in_loop(analysis, expr, _bindings(analysis, expr)):
            if b.kind in ("assign", "walrus") and b.value is not None:
                if type(b.value) in (cst.Integer, cst.Float) or (type(b.value) is cst.Name
                                                                   and b.value.value == "None"):
                    continue  # an initial value
                if b.source is not None and under_no_grad(analysis, b.source):
                    # `with torch.no_grad(): out = model(x)`: computed without history. Only when every binding
                    # is (the training loop's `loss` and the evaluation's `loss` under no_grad share a scope).
                    no_grad_only = True if no_grad_only is None else no_grad_only
                    continue
                state = carries_graph(analysis, b.value, depth + 1)
                if state and b.index is not None and type(b.value) is cst.Call and \
                        _unpacked_detached(analysis, b, b.value):
                    state = False  # `loss, rewards = self._loss_fn(...)`: the configured loss detaches `rewards`
                states.append(True if state and b.index is not None else state)
            elif b.kind == "augassign":
                continue
            else:
                states.append(False if b.kind == "for" else None)
        if no_grad_only and not states:
            return False
        return True if states and all(s is True for s in states) else (False if False in states else None)
    if type(expr) is cst.Call:
        func = expr.func
        if type(func) is cst.Name and func.value in ("float", "int", "bool", "len", "str"):
            return False
        if type(func) is cst.Attribute:
            name = func.attr.value
            if name in _CUTS_GRAPH:
                return False
            if name in ("forward",) and analysis.kind(func.value) is Kind.MODULE:
                return True
            receiver = analysis.kind(func.value)
            if receiver is Kind.TENSOR:
                return carries_graph(analysis, func.value, depth + 1)
        q = analysis.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None
        if q is not None and (q.startswith("torch.nn.functional.") or q in ("torch.sum", "torch.mean", "torch.stack",
                                                                               "torch.cat", "torch.abs")):
            return True if any(carries_graph(analysis, a.value, depth + 1) for a in expr.args) else None
        if analysis.kind(func) is Kind.MODULE:
            return True
        return None
    if type(expr) is cst.BinaryOperation:
        sides = (carries_graph(analysis, expr.left, depth + 1), carries_graph(analysis, expr.right, depth + 1))
        return True if True in sides else (False if sides == (False, False) else None)
    if type(expr) is cst.UnaryOperation:
        return carries_graph(analysis, expr.expression, depth + 1)
    if type(expr) is cst.Subscript:
        return carries_graph(analysis, expr.value, depth + 1)
    if type(expr) is cst.Attribute:
        if expr.attr.value in ("data", "grad", "shape", "dtype", "device"):
            return False
        if analysis.kind(expr.value) is Kind.TENSOR:
            return carries_graph(analysis, expr.value, depth + 1)
    return None


def _unpacked_detached(analysis: ModuleAnalysis, binding, call: cst.Call) -> bool:
    """The binding unpacks `call`'s result (`a, b, c = call`) at a position every candidate class of the called
    module returns cut from autograd (analysis/configured_returns.py)."""
    source = binding.source
    if type(source) is not cst.Assign or len(source.targets) != 1 or \
            type(source.targets[0].target) not in (cst.Tuple, cst.List):
        return False
    elements = source.targets[0].target.elements  # type: ignore[attr-defined]
    if any(type(e) is cst.StarredElement for e in elements):
        return False
    from gpulint.analysis.configured_returns import unpacked_detached

    return unpacked_detached(analysis, call, binding.index, len(elements))


def certainly_tensor(analysis: ModuleAnalysis, expr: cst.CSTNode, depth: int = 0) -> bool:
    """`.detach()` exists on it: a loss, a reduction, tensor math; not a bare model output (maybe a tuple)."""
    if depth > _MAX_DEPTH:
        return False
    if type(expr) is cst.Name:
        values = [b.value for b in _bindings(analysis, expr) if b.kind == "assign" and b.index is None
                  and type(b.value) not in (cst.Integer, cst.Float)]
        return bool(values) and all(v is not None and certainly_tensor(analysis, v, depth + 1) for v in values)
    if type(expr) is cst.BinaryOperation:
        return certainly_tensor(analysis, expr.left, depth + 1) or certainly_tensor(analysis, expr.right, depth + 1)
    if type(expr) is cst.UnaryOperation:
        return certainly_tensor(analysis, expr.expression, depth + 1)
    if type(expr) is cst.Call:
        func = expr.func
        q = analysis.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None
        if q is not None and (q.startswith("torch.nn.functional.") or q in ("torch.sum", "torch.mean",
                                                                               "torch.stack", "torch.cat")):
            return True
        if type(func) is cst.Attribute and analysis.kind(func.value) is Kind.TENSOR and \
                func.attr.value in ("sum", "mean", "float", "abs", "pow", "exp", "log", "clone", "squeeze",
                                    "norm", "view", "reshape", "flatten"):
            return True
        if analysis.kind(func) is Kind.MODULE:
            return _module_returns_tensor(analysis, func)
    return False


def _module_returns_tensor(analysis: ModuleAnalysis, func: cst.BaseExpression) -> bool:
    """A criterion (`criterion`, `loss_fn`, a `torch.nn.*Loss`) or a built-in `torch.nn` layer."""
    name = func.value if type(func) is cst.Name else (func.attr.value if type(func) is cst.Attribute else "")
    if any(part in name.lower() for part in _LOSS_NAME):
        return True
    if type(func) is cst.Name:
        values = [b.value for b in _bindings(analysis, func) if b.kind == "assign"]
        for v in values:
            while type(v) is cst.Call and type(v.func) is cst.Attribute and v.func.attr.value in ("to",
                                                                                                         "cuda"):
                v = v.func.value
            if not (type(v) is cst.Call and (analysis.qualified(v.func) or "").startswith("torch.nn.")):
                return False
        return bool(values)
    return False


def under_no_grad(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """`node` runs under `torch.no_grad()`/`inference_mode()` (a with-block or a decorated function)."""
    for a in analysis.index.ancestors(node):
        if type(a) is cst.With:
            for item in a.items:
                call = item.item
                q = _called(analysis, call)
                if q in _NO_GRAD:
                    return True
                if q == "torch.set_grad_enabled" and type(call) is cst.Call and call.args and \
                        isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False":
                    return True
        if type(a) is cst.FunctionDef:
            if any(_called(analysis, dec.decorator) in _NO_GRAD for dec in a.decorators):
                return True
    return False


def _called(analysis: ModuleAnalysis, expr: cst.BaseExpression) -> Optional[str]:
    """The qualified name of what a `with` item or a decorator names, called (`torch.no_grad()`) or not
    (`torch.no_grad`); None for another expression."""
    func = expr.func if type(expr) is cst.Call else expr
    return analysis.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None


def _backwarded_names(analysis: ModuleAnalysis, scope: cst.CSTNode) -> set[str]:
    """Names that feed a `.backward()` (or are returned) in `scope`: accumulated on purpose, for gradients.

    Computed once per scope: a module-level scope asked once per finding would make a big file quadratic."""
    return _scopes_names(analysis, scope)[0]


def _returned_names(analysis: ModuleAnalysis, scope: cst.CSTNode) -> set[str]:
    """Names whose value the function returns (directly or through the names they are computed from)."""
    return _scopes_names(analysis, scope)[1]


def _scopes_names(analysis: ModuleAnalysis, scope: cst.CSTNode) -> tuple[set[str], set[str]]:
    known = analysis.fact(_backwarded_by_scope)
    if scope not in known:
        known[scope] = _scan_backwarded_names(analysis, scope)
    return known[scope]


def backwarded_in(analysis: ModuleAnalysis, block: cst.CSTNode, value: cst.CSTNode) -> bool:
    """A `.backward()` in `block` runs through a name `value` is made of: each step's graph is used (and freed)
    there, so whatever keeps the value afterwards only keeps a dead graph alive."""
    names = _names(value)
    for node in _walk(block):
        if type(node) is cst.Call and method_call(node, "backward"):
            if names & _names(node.func):  # type: ignore[attr-defined]
                return True
    return False


def _backwarded_by_scope(analysis: ModuleAnalysis) -> dict:
    """Fact provider: scope -> names fed to backward, filled in as scopes are asked about."""
    return {}


def _scan_backwarded_names(analysis: ModuleAnalysis, scope: cst.CSTNode) -> tuple[set[str], set[str]]:
    names: set[str] = set()
    returned: set[str] = set()
    assigns: list[tuple[set[str], set[str]]] = []
    for node in _walk(scope):
        kind = type(node)
        if kind is cst.Call:
            q = analysis.qualified(node.func) if type(node.func) in (cst.Name, cst.Attribute) else None
            if method_call(node, "backward") or q in ("torch.autograd.backward", "torch.autograd.grad"):
                names |= _names(node)
        elif kind is cst.Return and node.value is not None:
            returned |= _names(node.value)
        elif kind is cst.Assign:
            targets = {name for t in node.targets for name in _names(t.target)}
            assigns.append((targets, _names(node.value)))
    for found in (names, returned):
        changed = True
        while changed:
            changed = False
            for targets, sources in assigns:
                if targets & found and not sources <= found:
                    found |= sources
                    changed = True
    return names, returned


def _self_referencing(analysis: ModuleAnalysis, assign: cst.Assign, name: str) -> bool:
    """`total = total + x`: an accumulation, not a reset."""
    return any(type(n) is cst.Name and n.value == name for n in _walk(assign.value))
