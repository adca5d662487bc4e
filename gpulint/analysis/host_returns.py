"""Project helpers that build the tensor they return on the host with torch factories (GPU203 at the caller).

A helper such as an optical-flow model's `coords_grid(b, h, w, device=None)` builds a pixel grid with
`torch.meshgrid(torch.arange(h), torch.arange(w))`, stacks and repeats it, and moves it to `device` only when one
is passed. A caller in per-step model code writes `coords_grid(b, h, w).to(flow.device)`: the grid is built on the
host and copied to the GPU on every forward, a blocking copy from pageable memory, where passing the device (or
building with `device=`) would make it there. The same holds for an index helper (`cycle_index(n, shift)`
returning `torch.arange(n) + shift`) whose result indexes a device tensor.

`host_factory_return(project, path, qualname, passed)` reads the function's `ast` and answers (path, line,
factory) when every `return` hands back a tensor built in the function by torch factories without `device=`
(`zeros`, `ones`, `arange`, `linspace`, `full`, `eye`, random draws, `meshgrid` of those), through names bound
only to such values, `torch.stack`/`torch.cat` of them, methods that keep a tensor where it is (`.float()`,
`.repeat(...)`, `[None]`) and arithmetic with numbers or the function's parameters. A copy of the value inside
the function (`grid = grid.to(device)`) is allowed only under `if device is not None:` (or `if device:`) for a
parameter whose default is `None` and that the call does not pass (`passed`: the parameter names the call gives,
or None when it passes `*args`/`**kwargs`); anything else in a binding of a returned name (a parameter's tensor,
a call of another function, a factory with `device=`) makes the answer None. Only top-level functions (and
`@staticmethod`-free module functions): a method's `self` state is not read.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.analysis.data import _FACTORIES

_KEEPS = frozenset(("float", "double", "half", "long", "int", "bool", "view", "reshape", "unsqueeze", "squeeze",
                    "flatten", "t", "permute", "transpose", "contiguous", "clone", "repeat", "expand", "detach",
                    "type",
                    # filled in place: the tensor stays where it was built (an index or mask on the device would
                    # raise there, so a host tensor's fill reads host values: a one-hot `zeros(...).scatter_(...)`)
                    "scatter_", "scatter", "fill_", "zero_", "masked_fill_", "masked_fill", "index_fill_"))
_JOINS = frozenset(("torch.stack", "torch.cat", "torch.meshgrid"))
_DEPTH = 12
_SELF = (0, "")  # a name read in one of its own bindings


def host_factory_return(project, path: Path, qualname: str, passed: Optional[set]) -> Optional[tuple]:
    """(path, line, factory) of the first host factory of the returned tensor, when every `return` of the
    top-level function `qualname` hands back such a tensor for a call passing the parameters `passed`."""
    if passed is None or "." in qualname:
        return None
    info = project.module(path)
    if info is None:
        return None
    from gpulint.analysis.lazy_module import LazyModuleInfo

    # a big module keeps no tree (`tree` would parse all of it for every call asked about)
    fn = info.functions.get(qualname) if isinstance(info, LazyModuleInfo) else _function(info.tree, qualname)
    if not isinstance(fn, ast.FunctionDef) or fn.decorator_list:
        return None
    unpassed = _unpassed_none_params(fn, passed)
    reader = _Reader(info, fn, unpassed)
    returns = [n for n in _own_nodes(fn) if isinstance(n, ast.Return)]
    if not returns or any(r.value is None for r in returns):
        return None
    found = []
    for r in returns:
        factory = reader.host(r.value, 0)
        if factory is None:
            return None
        found.append(factory)
    return path, found[0][0], found[0][1]


def _function(tree: ast.Module, name: str) -> Optional[ast.FunctionDef]:
    found = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name]
    return found[0] if len(found) == 1 and not found[0].decorator_list else None


def _unpassed_none_params(fn: ast.FunctionDef, passed: set) -> set:
    args = fn.args.posonlyargs + fn.args.args
    defaults = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
    pairs = list(zip(args, defaults)) + list(zip(fn.args.kwonlyargs, fn.args.kw_defaults))
    return {a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value is None and a.arg not in passed}


def _own_nodes(fn: ast.FunctionDef):
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast_walk.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)


class _Reader:
    def __init__(self, info, fn: ast.FunctionDef, unpassed: set) -> None:
        self.info, self.fn, self.unpassed = info, fn, unpassed
        self.params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        self.bindings: dict[str, list] = {}
        self.opaque: set = set()  # names bound by something other than a plain assignment (loops, with, ...)
        for node in _own_nodes(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value, node)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
                self.opaque.add(node.target.id)
            elif isinstance(node, (ast.For, ast.With, ast.NamedExpr)):
                for sub in ast_walk.walk(node.target if isinstance(node, (ast.For, ast.NamedExpr)) else node):
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and not isinstance(node, ast.With):
                        self.opaque.add(sub.id)
                if isinstance(node, ast.With):
                    for item in node.items:
                        if item.optional_vars is not None:
                            self.opaque.update(n.id for n in ast_walk.walk(item.optional_vars)
                                               if isinstance(n, ast.Name))
        self.parents = {id(c): p for p in ast_walk.walk(fn) for c in ast_walk.iter_child_nodes(p)}

    def _bind(self, target: ast.expr, value: ast.expr, stmt: ast.Assign) -> None:
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append((value, stmt, None))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Name):
                    self.bindings.setdefault(element.id, []).append((value, stmt, i))

    def host(self, value: ast.expr, depth: int, seen: frozenset = frozenset()) -> Optional[tuple]:
        """(line, factory) when `value` is a tensor built here on the host by torch factories."""
        if depth > _DEPTH:
            return None
        if isinstance(value, ast.Subscript):
            return self.host(value.value, depth + 1, seen)
        if isinstance(value, ast.BinOp):
            left, right = self.host(value.left, depth + 1, seen), self.host(value.right, depth + 1, seen)
            if left and right:
                return left
            if left and self._plain(value.right) or right and self._plain(value.left):
                return left or right
            return None
        if isinstance(value, ast.Name):
            return self._name(value.id, depth, seen)
        if not isinstance(value, ast.Call):
            return None
        if isinstance(value.func, ast.Attribute) and value.func.attr in _KEEPS and \
                not any(k.arg is None or k.arg == "device" for k in value.keywords):
            if value.func.attr == "type" and value.args:
                return None  # `.type(torch.cuda.FloatTensor)` copies: GPU203's cast
            return self.host(value.func.value, depth + 1, seen)
        q = self.info.qualified(value.func)
        if not q.startswith("torch.") or any(k.arg is None for k in value.keywords):
            return None
        device = next((k.value for k in value.keywords if k.arg == "device"), None)
        if device is not None and not (isinstance(device, ast.Name) and device.id in self.unpassed):
            return None
        name = q.split(".", 1)[1]
        if name in _FACTORIES and not name.endswith("_like"):
            return value.lineno, f"torch.{name}"
        if name in _FACTORIES and value.args and device is None:  # `torch.ones_like(x)` of a host `x`
            return self.host(value.args[0], depth + 1, seen)
        if q in _JOINS:
            parts = self._elements(value.args[0]) if len(value.args) >= 1 and q != "torch.meshgrid" else value.args
            found = [self.host(p, depth + 1, seen) for p in parts if not isinstance(p, ast.Starred)]
            if parts and len(found) == len(parts) and all(found):
                return found[0]
        return None

    def _elements(self, expr: ast.expr) -> list:
        """The tensors a `torch.stack`/`torch.cat` argument holds: a list literal's elements, or those of a name
        bound once to a list literal plus what the function appends to it (`stacks = [x, y]`, then
        `stacks.append(ones)`); [] when unknown."""
        if isinstance(expr, (ast.List, ast.Tuple)):
            return list(expr.elts)
        if not isinstance(expr, ast.Name) or expr.id in self.opaque:
            return []
        values = self.bindings.get(expr.id, [])
        if len(values) != 1 or values[0][2] is not None or not isinstance(values[0][0], (ast.List, ast.Tuple)):
            return []
        found = list(values[0][0].elts)
        for node in _own_nodes(self.fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == expr.id:
                if node.func.attr != "append" or len(node.args) != 1:
                    return []  # `extend`, `insert`, ...: not followed
                found.append(node.args[0])
        return found

    def _plain(self, expr: ast.expr) -> bool:
        """A Python number or a parameter (an int offset, a scale), not a tensor built elsewhere here."""
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, (int, float))
        if isinstance(expr, ast.UnaryOp):
            return self._plain(expr.operand)
        return isinstance(expr, ast.Name) and expr.id in self.params and expr.id not in self.bindings

    def _name(self, name: str, depth: int, seen: frozenset) -> Optional[tuple]:
        if name in seen:
            return _SELF  # `grid = grid[None].repeat(b, 1, 1, 1)`: as host as the name's other bindings
        if name in self.opaque or name in self.params and name not in self.bindings:
            return None
        values = self.bindings.get(name)
        if not values:
            return None
        found = None
        for value, stmt, index in values:
            if self._guarded_copy(value, stmt, name):
                continue  # `if device is not None: grid = grid.to(device)` with `device` not passed
            if index is not None:
                if not (isinstance(value, ast.Call) and self.info.qualified(value.func) == "torch.meshgrid"):
                    return None
                one = self.host(value, depth + 1, seen | {name})
            else:
                one = self.host(value, depth + 1, seen | {name})
            if one is None:
                return None
            if one is not _SELF:
                found = found or one
        return found

    def _guarded_copy(self, value: ast.expr, stmt: ast.Assign, name: str) -> bool:
        """`name = name.to(p)` / `name.cuda(p)` directly under `if p is not None:` / `if p:`, `p` unpassed."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr in ("to", "cuda") and isinstance(value.func.value, ast.Name)
                and value.func.value.id == name):
            return False
        parent = self.parents.get(id(stmt))
        if not isinstance(parent, ast.If) or stmt not in parent.body:
            return False
        test = parent.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) and \
                isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
            test = test.left
        return isinstance(test, ast.Name) and test.id in self.unpassed
