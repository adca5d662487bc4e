"""Host tensors a project function hands back, element by element (GPU203 at the caller's per-step copies).

A data loader of a research project (`load_data(name)`, `load_citation(...)`) reads its arrays with numpy or
pickle and turns them into tensors on the host (`torch.FloatTensor(features)`, `torch.from_numpy(labels)`,
`torch.LongTensor(idx_train)`), returning them as a tuple the script unpacks (`adj, features, labels, idx_train =
load_data(...)`); a model helper hands back masks it built with numpy (`return torch.from_numpy(mask),
torch.from_numpy(start)`). What the caller does with each element decides the cost: a copy to the GPU once before
the epoch loop is fine, but `labels[idx_train].to(device)` in the per-step function, or `mask.type_as(query)` in a
`forward`, copies the same host data from pageable memory every step.

`returned_host_elements(project, path, qualname)` reads the function's `ast` and answers, for a top-level
function whose every `return` is a tuple of one length (or one plain value), a tuple with one entry per element:
`"tensor"` where the element is a tensor built in the function on the host, `"list"` where it is a list the
function fills only with such tensors (`adj_list.append(torch.FloatTensor(a))`), else None. A host tensor is a
torch constructor or factory called without `device=` (the legacy `torch.FloatTensor(...)`,
`torch.sparse.FloatTensor(...)`, `torch.from_numpy`, `torch.tensor`, `torch.zeros`, ...), a torch function of one
(`torch.max(labels, dim=1)[1]`), a method keeping it where it is (`.float()`, `.unsqueeze(0)`), a subscript of one,
or what another project function of the module returns when that is one (`sparse_mx_to_torch_sparse_tensor(adj)`).
A name is followed through its plain assignments in the function; one bound any other way (a loop target, a
parameter, a copy `x = x.cuda()`) is not a host tensor. Cached per function on the module's `ModuleInfo` (one per content).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint.ast_walk import scope_nodes, walk

_KEEPS = frozenset(("float", "double", "half", "long", "int", "bool", "byte", "view", "reshape", "unsqueeze",
                    "squeeze", "flatten", "t", "permute", "transpose", "contiguous", "clone", "repeat", "expand",
                    "detach", "coalesce", "to_dense", "fill_", "zero_", "squeeze_", "unsqueeze_"))
# torch callables that do not build on the host however they are called
_NOT_HOST = frozenset(("torch.load", "torch.device", "torch.Size", "torch.no_grad", "torch.empty_like"))
_DEPTH = 8
_CACHE_KEY = "_host_tuple_returns"


def returned_host_elements(project, path: Path, qualname: str) -> Optional[tuple]:
    """One entry per returned element ("tensor", "list" or None), or None when the returns are not readable."""
    if "." in qualname:
        return None
    info = project.module(path)
    if info is None:
        return None
    cache = info.__dict__.setdefault(_CACHE_KEY, {})  # per module content: an edited module is a new info
    if qualname not in cache:
        cache[qualname] = None  # a recursion through the module's own helpers reads as unknown
        cache[qualname] = _compute(project, path, info, qualname)
    return cache[qualname]


def _compute(project, path: Path, info, qualname: str) -> Optional[tuple]:
    fn = _function(info, qualname)
    if fn is None:
        return None
    reader = _Reader(project, path, info, fn)
    returns = [n for n in reader.nodes if isinstance(n, ast.Return)]
    if not returns or any(r.value is None for r in returns):
        return None
    shapes = []
    for r in returns:
        elements = r.value.elts if isinstance(r.value, ast.Tuple) else [r.value]
        if any(isinstance(e, ast.Starred) for e in elements):
            return None
        shapes.append(tuple(reader.element(e) for e in elements))
    if len({len(s) for s in shapes}) != 1:
        return None
    merged = tuple(column[0] if len(set(column)) == 1 else None for column in zip(*shapes))
    return merged if any(merged) else None


def _function(info, name: str) -> Optional[ast.FunctionDef]:
    from gpulint.analysis.lazy_module import LazyModuleInfo

    if isinstance(info, LazyModuleInfo):
        fn = info.functions.get(name)
    else:
        found = [s for s in info.tree.body if isinstance(s, ast.FunctionDef) and s.name == name]
        fn = found[0] if len(found) == 1 else None
    if not isinstance(fn, ast.FunctionDef):
        return None
    # `@lru_cache` keeps the built tensors on the host: each caller's copy still crosses; other decorators may
    # change what is returned
    if any(not _cache_decorator(d) for d in fn.decorator_list):
        return None
    return fn


def _cache_decorator(d: ast.expr) -> bool:
    target = d.func if isinstance(d, ast.Call) else d
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
    return name in ("lru_cache", "cache")


class _Reader:
    def __init__(self, project, path: Path, info, fn: ast.FunctionDef) -> None:
        self.project, self.path, self.info, self.fn = project, path, info, fn
        self.nodes = list(scope_nodes(fn))  # its own nodes, not those of nested definitions
        self.params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        if fn.args.vararg:
            self.params.add(fn.args.vararg.arg)
        if fn.args.kwarg:
            self.params.add(fn.args.kwarg.arg)
        self.bindings: dict[str, list] = {}
        self.opaque: set = set()
        self.appended: dict[str, list] = {}
        self.other_uses: set = set()  # names a method other than `append` is called on
        self.last_top: dict[str, ast.expr] = {}  # a name's last assignment, when that is a statement of the body
        for stmt in fn.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self.last_top[stmt.targets[0].id] = stmt
        for node in self.nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.bindings.setdefault(target.id, []).append(node.value)
                    elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
                        for sub in walk(target):
                            if isinstance(sub, ast.Name):
                                self.opaque.add(sub.id)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                for sub in walk(node.target):
                    if isinstance(sub, ast.Name):
                        self.opaque.add(sub.id)
            elif isinstance(node, (ast.For, ast.AsyncFor)):  # (a comprehension binds in its own scope)
                for sub in walk(node.target):
                    if isinstance(sub, ast.Name):
                        self.opaque.add(sub.id)
            elif isinstance(node, ast.NamedExpr):
                self.opaque.add(node.target.id)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        self.opaque.update(n.id for n in walk(item.optional_vars) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.opaque.update(node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name):
                if node.func.attr == "append" and len(node.args) == 1 and not node.keywords:
                    self.appended.setdefault(node.func.value.id, []).append(node.args[0])
                else:
                    self.other_uses.add(node.func.value.id)

    def element(self, expr: ast.expr) -> Optional[str]:
        if self.host(expr, 0):
            return "tensor"
        if isinstance(expr, ast.Name) and self._host_list(expr.id):
            return "list"
        return None

    def _host_list(self, name: str) -> bool:
        values = self.bindings.get(name, [])
        if name in self.opaque or name in self.params or len(values) != 1 or name in self.other_uses:
            return False
        if not (isinstance(values[0], ast.List) and not values[0].elts):
            return False
        appended = self.appended.get(name, [])
        return bool(appended) and all(self.host(a, 0) for a in appended)

    def host(self, value: ast.expr, depth: int, seen: frozenset = frozenset()) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(value, ast.Subscript):
            return self.host(value.value, depth + 1, seen)
        if isinstance(value, ast.Name):
            return self._name(value.id, depth, seen)
        if not isinstance(value, ast.Call) or any(k.arg is None for k in value.keywords) or \
                any(isinstance(a, ast.Starred) for a in value.args):
            return False
        if any(k.arg == "device" for k in value.keywords):
            return False
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in _KEEPS and (
                isinstance(func.value, (ast.Call, ast.Subscript)) or
                isinstance(func.value, ast.Name) and func.value.id in self.bindings or
                not (self.info.qualified(func) or "").startswith("torch.")):
            return self.host(func.value, depth + 1, seen)  # `torch.from_numpy(m).unsqueeze(0)`
        q = self.info.qualified(func) or ""
        if q.startswith("torch.cuda") or q in _NOT_HOST:
            return False
        if q.startswith("torch."):
            last = q.rsplit(".", 1)[1]
            if last.endswith("Tensor") or q in ("torch.from_numpy", "torch.tensor", "torch.as_tensor") or \
                    last in _BUILDERS:
                return True  # built from host data (or sizes) on the host
            # a torch function of a host tensor (`torch.max(labels, dim=1)`, `torch.cat([a, b])`)
            args = list(value.args)
            if args and isinstance(args[0], (ast.List, ast.Tuple)):
                return bool(args[0].elts) and all(self.host(a, depth + 1, seen) for a in args[0].elts)
            return bool(args) and self.host(args[0], depth + 1, seen)
        if isinstance(func, ast.Name) and func.id not in self.params and func.id not in self.bindings:
            # another function of this module returning one host tensor
            if any(isinstance(s, ast.FunctionDef) and s.name == func.id for s in _top_functions(self.info)):
                shape = returned_host_elements(self.project, self.path, func.id)
                return shape is not None and len(shape) == 1 and shape[0] == "tensor"
        return False

    def _reaches_every_return(self, stmt: ast.Assign, name: str) -> bool:
        """`stmt` is the last binding of `name` in the function and every `return` comes after it."""
        line = stmt.lineno
        for n in self.nodes:
            if getattr(n, "lineno", 0) <= line:
                continue
            if isinstance(n, ast.Assign):
                targets = [t for target in n.targets for t in walk(target)]
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
                targets = list(walk(n.target))
            elif isinstance(n, (ast.With, ast.AsyncWith)):
                targets = [t for item in n.items if item.optional_vars is not None for t in walk(item.optional_vars)]
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                return False
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == name and isinstance(t.ctx, ast.Store) for t in targets):
                return False
        return all(r.lineno > line for r in self.nodes if isinstance(r, ast.Return))

    def _name(self, name: str, depth: int, seen: frozenset) -> bool:
        if name in seen:
            return True  # `labels = labels[perm]`: as host as the name's other bindings
        last = self.last_top.get(name)
        if last is not None and self._reaches_every_return(last, name):
            # `labels = np.load(f)`, then `labels = torch.LongTensor(labels)`: only the last one is returned
            return self.host(last.value, depth + 1, seen | {name})
        if name in self.opaque or name in self.params:
            return False
        values = self.bindings.get(name)
        if not values:
            return False
        return all(self.host(v, depth + 1, seen | {name}) for v in values)


_BUILDERS = frozenset(("zeros", "ones", "full", "empty", "arange", "linspace", "logspace", "eye", "rand", "randn",
                       "randint", "randperm", "tril_indices", "triu_indices"))


def _top_functions(info) -> list:
    from gpulint.analysis.lazy_module import LazyModuleInfo

    if isinstance(info, LazyModuleInfo):
        return list(info.functions.values())
    return [s for s in info.tree.body if isinstance(s, ast.FunctionDef)]
