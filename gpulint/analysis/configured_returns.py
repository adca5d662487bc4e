"""Parts of what a project module's call hands back that are cut from autograd (issue 11, precision).

Recipes build their loss from a configuration file and unpack what it returns:

    self._loss_fn = config.instantiate(cfg.loss)          # configs/dpo.yaml: loss: _component_: ...DPOLoss
    ...
    loss, chosen_rewards, rejected_rewards = self._loss_fn(policy_out, reference_out)
    running_metrics["rewards/chosen"] += scaling * chosen_rewards.mean()

The module cannot see the class, so a value unpacked from a module's output is taken to carry autograd history
(GPU301). `unpacked_detached` reads the candidates instead: the project classes the receiver may hold (built by a
constructor the project calls, or named by the configuration files' `_component_:`/`_target_:` under the key the
`instantiate` argument reads: analysis/config_targets.py). A candidate whose `forward` does not return tuples of
the unpacked length cannot be what this call unpacks and drops out; every remaining one (one at least) must put,
at the unpacked position, a value cut from the graph in all its `return`s: `.detach()`ed (`.item()`, `.tolist()`),
math of such values with numbers and plain attributes (`self.beta * (a - b).detach()`, `self.beta` set in
`__init__` from a parameter or a constant), or a local name bound only to such values. Anything else (a
parameter, a call into the class, an attribute set elsewhere) keeps the finding.
"""

from __future__ import annotations

import ast

from gpulint import ast_walk
from typing import Optional

import libcst as cst

_CUTS = frozenset({"detach", "item", "tolist"})
_MAX_DEPTH = 6


def unpacked_detached(analysis, call: cst.Call, index: int, arity: int) -> bool:
    """`a, b, c = module(...)` (`arity` 3) binds at `index` a value every candidate class of the called module
    returns cut from autograd (see the module docstring)."""
    func = call.func
    if type(func) not in (cst.Name, cst.Attribute) or arity < 2 or not 0 <= index < arity:
        return False
    from gpulint.analysis import _method_node, _receiver_classes
    from gpulint.analysis.project import text_dependency

    found = _receiver_classes(analysis, func)
    if not found:
        return False
    project, classes = found
    verdicts = []
    with text_dependency():  # the candidates' bodies are read: a lint cached on it depends on their text
        for cls in classes:
            method = project.method(cls, "forward")
            node = _method_node(project, method) if method is not None else None
            if node is None:
                return False  # a candidate that cannot be read may hand back anything
            verdict = _returns_cut(project, cls, node, index, arity, _method_node)
            if verdict is not None:
                verdicts.append(verdict)
    return bool(verdicts) and all(verdicts)


def _returns_cut(project, cls, fn: ast.FunctionDef, index: int, arity: int, method_node) -> Optional[bool]:
    """None when `fn` does not return `arity`-tuples (not what the call unpacks); else whether every `return`
    puts a value cut from autograd at `index`."""
    returns = [n for n in _own_nodes(fn) if isinstance(n, ast.Return)]
    if not returns or any(not isinstance(r.value, ast.Tuple) or len(r.value.elts) != arity or
                          any(isinstance(e, ast.Starred) for e in r.value.elts) for r in returns):
        return None
    plain = _plain_attributes(project, cls, method_node)
    return all(_cut(fn, r.value.elts[index], plain, 0) for r in returns)  # type: ignore[union-attr]


def _cut(fn: ast.FunctionDef, expr: ast.expr, plain: frozenset, depth: int) -> bool:
    """`expr` holds no autograd history: see the module docstring."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id == "self" and expr.attr in plain
    if isinstance(expr, ast.BinOp):
        return _cut(fn, expr.left, plain, depth + 1) and _cut(fn, expr.right, plain, depth + 1)
    if isinstance(expr, ast.UnaryOp):
        return _cut(fn, expr.operand, plain, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        if expr.func.attr in _CUTS and not expr.args and not expr.keywords:
            return True
        # `rewards.detach().mean()`: a method of a value off the graph, with arguments off it too
        return _tensor_valued(expr.func.value) and _cut(fn, expr.func.value, plain, depth + 1) and all(
            _cut(fn, a, plain, depth + 1) for a in expr.args) and all(
            k.value is not None and _cut(fn, k.value, plain, depth + 1) for k in expr.keywords)
    if isinstance(expr, ast.Name):
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        if expr.id in params:
            return False
        values = []
        for node in _own_nodes(fn):
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) and \
                    node.target.id == expr.id:
                return False
            if isinstance(node, (ast.For, ast.With, ast.comprehension, ast.NamedExpr)) and any(
                    isinstance(t, ast.Name) and t.id == expr.id for t in ast_walk.walk(_bound_by(node))):
                return False
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == expr.id:
                        values.append(node.value)
                    elif any(isinstance(t, ast.Name) and t.id == expr.id for t in ast_walk.walk(target)):
                        return False  # unpacked or stored through: not followed
        return bool(values) and all(_cut(fn, v, plain, depth + 1) for v in values)
    return False


def _tensor_valued(expr: ast.expr) -> bool:
    """Not a module or a library namespace (`torch.cat(...)`, `F.relu(...)` are calls, not methods of a value)."""
    return isinstance(expr, (ast.Call, ast.BinOp, ast.UnaryOp, ast.Subscript)) or \
        isinstance(expr, ast.Name) and expr.id not in ("torch", "F", "np", "nn", "self")


def _bound_by(node: ast.AST) -> ast.AST:
    if isinstance(node, (ast.For, ast.comprehension)):
        return node.target
    if isinstance(node, ast.NamedExpr):
        return node.target
    if isinstance(node, ast.With):
        return ast.Tuple(elts=[i.optional_vars for i in node.items if i.optional_vars is not None], ctx=ast.Store())
    return node


def _plain_attributes(project, cls, method_node) -> frozenset:
    """`self.X` that the class's `__init__` sets only from a parameter or a constant (`self.beta = beta`), and
    no other method of the class assigns: a configured number, not a learned tensor."""
    init = project.method(cls, "__init__")
    node = method_node(project, init) if init is not None else None
    if node is None:
        return frozenset()
    params = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)} - {"self"}
    plain: set[str] = set()
    spoiled: set[str] = set()
    for stmt in _own_nodes(node):
        for target, value in _self_stores(stmt):
            if isinstance(value, ast.Constant) and not isinstance(value.value, str) or \
                    isinstance(value, ast.Name) and value.id in params:
                plain.add(target)
            else:
                spoiled.add(target)
    for name, method in cls.methods.items():
        if name == "__init__":
            continue
        for stmt in ast_walk.walk(method):
            for target, _ in _self_stores(stmt):
                spoiled.add(target)
    return frozenset(plain - spoiled)


def _self_stores(stmt: ast.AST):
    """(attribute, value) of `self.X = value` (value None for an augmented or unpacked store)."""
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                yield target.attr, stmt.value
            else:
                for t in ast_walk.walk(target):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        yield t.attr, None
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        t = stmt.target
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
            yield t.attr, getattr(stmt, "value", None) if isinstance(stmt, ast.AnnAssign) else None


def _own_nodes(fn: ast.FunctionDef):
    """The nodes of `fn`'s body, not those of nested functions, classes or lambdas."""
    stack = [s for s in fn.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast_walk.iter_child_nodes(node)
                     if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)))
