"""Project classes that wrap a `DataLoader` and hand on its batches: loaders themselves.

    class InfiniteLoader:                                   # data.py
        def __init__(self, dataset, batch_size):
            self._it = iter(DataLoader(dataset, batch_size=batch_size, sampler=Forever(...)))
        def __iter__(self):
            while True:
                yield next(self._it)

    loaders = [InfiniteLoader(env, 32) for env in envs]     # train.py
    batches = zip(*loaders)
    for step in range(n_steps):
        device_batches = [(x.to(device), y.to(device)) for x, y in next(batches)]
        algorithm.update(device_batches)

A call of such a class is a loader (`Kind.LOADER`, and a loader fact of `DataFacts.factory`: where its `DataLoader`
is built and whether it pins), so the loop drawing `next(batches)` is a step loop, its copies are copies of an
unpinned loader's batches, and GPU201 reports the wrapped `DataLoader(...)` in the class (the fix goes there).

A loader class (`loader_fact`): its `__iter__` hands on the items of one attribute (`yield next(self._it)`,
`yield from self.loader`, `for b in self.loader: yield b`, `return iter(self.loader)`), and `__init__` binds that
attribute, once, to a `DataLoader(...)` or `iter(DataLoader(...))` (directly or through a local name). The answer
is read from Python's `ast` of the class's own module and kept on its summary (cached per file content).
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.project import _dotted

_KEY = "_gpulint_loader_fact"
_NONE = object()


def loader_fact(project, summary):
    """The LoaderFact of the `DataLoader` a project loader class wraps (see the module docstring), else None."""
    cached = summary.__dict__.get(_KEY)
    if cached is None:
        found = _compute(project, summary)
        summary.__dict__[_KEY] = cached = _NONE if found is None else found
    return None if cached is _NONE else cached


def _compute(project, summary):
    from gpulint.analysis.project import LOADER_CLASSES, LoaderFact

    iter_method = summary.methods.get("__iter__")
    init = summary.methods.get("__init__")
    if iter_method is None or init is None:
        return None
    attr = _iterated_attribute(iter_method)
    if attr is None:
        return None
    info = project.module(summary.path)
    if info is None:
        return None
    locals_: dict[str, list[ast.expr]] = {}
    values: list[ast.expr] = []
    for node in ast_walk.walk(init):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    locals_.setdefault(target.id, []).append(node.value)
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                        target.value.id == "self" and target.attr == attr:
                    values.append(node.value)
    if len(values) != 1:
        return None
    value = values[0]
    for _ in range(3):  # `iter(DataLoader(...))`, `iter(loader)` with `loader = DataLoader(...)`
        if isinstance(value, ast.Call) and _dotted(value.func) == "iter" and len(value.args) == 1 \
                and not value.keywords:
            value = value.args[0]
        elif isinstance(value, ast.Name) and len(locals_.get(value.id, ())) == 1:
            value = locals_[value.id][0]
        else:
            break
    if not isinstance(value, ast.Call):
        return None
    qualified = info.qualify(_dotted(value.func) or "")
    if not (qualified in LOADER_CLASSES or qualified.endswith(".DataLoader")):
        return None
    made = project.loader_at(info, value, {})
    return made if isinstance(made, LoaderFact) else None


def _iterated_attribute(method: ast.FunctionDef) -> Optional[str]:
    """The `self.<attr>` whose items `__iter__` hands on, when it hands on nothing else."""
    found: set[str] = set()
    loop_names: dict[str, str] = {}  # `for b in self.loader:` -> b: loader
    for node in ast_walk.walk(method):
        if isinstance(node, ast.For):
            attr = _self_attr(node.iter)
            if attr is not None and isinstance(node.target, ast.Name):
                loop_names[node.target.id] = attr
    yielded = False
    for node in ast_walk.walk(method):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Return)):
            value = node.value
            if value is None:
                if isinstance(node, ast.Yield):
                    return None
                continue  # a bare `return` ends the generator
            yielded = True
            if isinstance(node, ast.Return) and not _is_generator(method):
                # `return iter(self.loader)`
                if isinstance(value, ast.Call) and _dotted(value.func) == "iter" and len(value.args) == 1:
                    value = value.args[0]
                attr = _self_attr(value)
            elif isinstance(node, ast.YieldFrom):
                attr = _self_attr(value)
            elif isinstance(node, ast.Yield):
                if isinstance(value, ast.Call) and _dotted(value.func) == "next" and len(value.args) == 1:
                    attr = _self_attr(value.args[0])
                elif isinstance(value, ast.Name):
                    attr = loop_names.get(value.id)
                else:
                    attr = None
            else:
                continue  # a `return value` in a generator: not an item
            if attr is None:
                return None
            found.add(attr)
    return next(iter(found)) if yielded and len(found) == 1 else None


def _is_generator(method: ast.FunctionDef) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast_walk.walk(method))


def _self_attr(expr: ast.expr) -> Optional[str]:
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return expr.attr
    return None


def _class_like(func: cst.BaseExpression) -> bool:
    last = func.attr.value if type(func) is cst.Attribute else (func.value if type(func) is cst.Name else "")
    return last[:1].isupper()


def loader_class_call(analysis, call: cst.Call):
    """The LoaderFact of `call` when it builds an instance of a project loader class (another module's or this
    module's), else None. One project lookup per dotted name and module."""
    return _class_answer(analysis, call, "found", loader_fact, None)


def _class_answer(analysis, call: cst.Call, table: str, answer, default):
    """`answer(project, summary)` for the project class `call` instantiates (by a capitalised name, not through
    `self`), else `default`: one project lookup per dotted name and module, kept in `_Memo.<table>`."""
    func = call.func
    if type(func) not in (cst.Name, cst.Attribute) or not _class_like(func):
        return default
    dotted = dotted_name(func)
    if dotted is None or dotted.split(".")[0] == "self":
        return default
    memo = getattr(analysis.fact(_Memo), table)
    if dotted not in memo:
        memo[dotted] = default
        from gpulint.analysis.calls import project_calls
        from gpulint.analysis.project import ClassSummary

        calls = analysis.fact(project_calls)
        if calls is not None:
            summary = calls.project.lookup(calls.path, dotted)
            if isinstance(summary, ClassSummary):
                memo[dotted] = answer(calls.project, summary)
    return memo[dotted]


class _Memo:
    def __init__(self, analysis) -> None:
        self.found: dict = {}
        self.subclasses: dict[str, bool] = {}
        self.fetchers: dict = {}


# A project subclass of torch's `DataLoader` (`class DataLoaderMasking(DataLoader)` that only sets a `collate_fn`,
# `class DataLoaderX(DataLoader)` whose `__iter__` wraps `super().__iter__()` in a background thread): a call of it
# is a DataLoader call, and `pin_memory=True` added to it reaches torch's loader through the `**kwargs` its
# `__init__` passes on. It counts only when no method of the class (or of its project bases) mentions
# `pin_memory` (a class that decides pinning itself) or moves anything (`.to(`, `.cuda(`: batches that may be device
# tensors), its `__init__` (if any) hands its `**kwargs` on to the base (so the added keyword is accepted), it
# defines no `__next__`, and an `__iter__` of its own draws from `super().__iter__()` (the same batches).
_TORCH_LOADER_BASES = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}


def dataloader_subclass_call(analysis, call: cst.Call) -> bool:
    """`call` builds an instance of a project subclass of torch's DataLoader (see `_TORCH_LOADER_BASES`), in this
    module or another. One project lookup per dotted name and module."""
    return _class_answer(analysis, call, "subclasses", dataloader_subclass, False)


def dataloader_subclass(project, cls) -> bool:
    """`cls` (a project ClassSummary) derives from torch's DataLoader and passes `pin_memory` on unchanged."""
    from gpulint.analysis.hierarchy import project_bases
    from gpulint.analysis.project import ClassSummary

    chain = [cls, *project_bases(project, cls)]
    torch_base = False
    for current in chain:
        for base in current.bases:
            if base and not isinstance(project.lookup(current.path, base), ClassSummary) and \
                    project.external_name(current.path, base) in _TORCH_LOADER_BASES:
                torch_base = True
        if any(not _passes_batches_on(name, method) for name, method in current.methods.items()):
            return False
    if not torch_base:
        return False
    init = next((c.methods["__init__"] for c in chain if "__init__" in c.methods), None)
    return init is None or _hands_on_kwargs(init)


def _passes_batches_on(name: str, method: ast.FunctionDef) -> bool:
    if name == "__next__":
        return False
    for node in ast_walk.walk(method):
        if isinstance(node, ast.Name) and node.id == "pin_memory" or isinstance(node, ast.arg) and \
                node.arg == "pin_memory" or isinstance(node, ast.keyword) and node.arg == "pin_memory" or \
                isinstance(node, ast.Constant) and node.value == "pin_memory":
            return False
        if isinstance(node, ast.Attribute) and node.attr in ("to", "cuda", "pin_memory"):
            return False
    if name == "__iter__":
        return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__iter__"
                   and isinstance(node.func.value, ast.Call) and _dotted(node.func.value.func) == "super"
                   for node in ast_walk.walk(method))
    return True


def _hands_on_kwargs(init: ast.FunctionDef) -> bool:
    """`__init__(self, ..., **kwargs)` calling `super().__init__(..., **kwargs)` (or `Base.__init__(self, ...)`)."""
    kwarg = init.args.kwarg
    if kwarg is None:
        return False
    for node in ast_walk.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__" and \
                any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwarg.arg for k in node.keywords):
            return True
    return False


def wrapping_class(analysis, loader: cst.Call) -> Optional[str]:
    """The name of the top-level class of this module whose `__init__` builds `loader` and that is a loader
    class (its instances hand on the batches): where a caller's GPU201 finding about it belongs."""
    index = analysis.index
    scopes = [a for a in index.ancestors(loader) if type(a) in (cst.FunctionDef, cst.Lambda, cst.ClassDef)]
    if len(scopes) < 2 or type(scopes[0]) is not cst.FunctionDef or scopes[0].name.value != "__init__" or \
            type(scopes[1]) is not cst.ClassDef or type(index.enclosing_scope(scopes[1])) is not cst.Module:
        return None
    cls = scopes[1]
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.project import ClassSummary

    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    info = calls.project.module(calls.path)
    summary = info.classes.get(cls.name.value) if info is not None else None
    if not isinstance(summary, ClassSummary):
        return None
    made = loader_fact(calls.project, summary)
    if made is None or made.line != _line(analysis, loader):
        return None
    return cls.name.value


def _line(analysis, node: cst.CSTNode) -> int:
    from gpulint.analysis.forward import _line_of

    return _line_of(analysis, node)


# A fetcher class: its `__next__` hands on what it draws from an iterator over a loader it was given (stargan-style
# `InputFetcher`, the many `DataPrefetcher`s):
#
#     class Fetcher:
#         def __init__(self, loader, device):
#             self.loader = loader
#         def _fetch(self):
#             try:
#                 x, y = next(self.iter)
#             except (AttributeError, StopIteration):
#                 self.iter = iter(self.loader)
#                 x, y = next(self.iter)
#             return x, y
#         def __next__(self):
#             x, y = self._fetch()
#             return x.to(self.device), y.to(self.device)
#
# A call of it is a loader (`Kind.LOADER`: `next(fetcher)` draws one batch, so the loop around it is a step loop)
# when it passes a loader for that parameter, or the parameter is named for one (`loader`, `data_loader`).
def fetcher_class_call(analysis, call: cst.Call) -> bool:
    """`call` builds an instance of a project fetcher class (above) and passes it a loader to draw from."""
    answer = _class_answer(analysis, call, "fetchers", fetched_parameters, ())
    if not answer:
        return False
    from gpulint.analysis.kinds import Kind, _kind_from_name
    from gpulint.syntax import argument_for

    positional, drawn = answer
    for name in drawn:
        arg = argument_for(call, list(positional), name)
        if arg is None:
            continue
        if _kind_from_name(name) is Kind.LOADER or analysis.kinds.of(arg.value) is Kind.LOADER:
            return True
    return False


def fetched_parameters(project, cls) -> tuple:
    """For a fetcher class (see `fetcher_class_call`): (the positional parameters of `__init__` after `self`,
    the parameters whose iterator `__next__` draws from, directly or in a method it calls on `self`); else ()."""
    methods = cls.methods
    init, nxt = methods.get("__init__"), methods.get("__next__")
    if init is None or nxt is None:
        return ()
    positional = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
    stored: dict[str, str] = {}  # self.<attr> = <parameter> in __init__
    for node in ast_walk.walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Name) and \
                node.value.id in positional:
            attr = _self_attr(node.targets[0])
            if attr is not None:
                stored[attr] = node.value.id
    iterators: dict[str, set] = {}  # self.<it> = iter(self.<attr>) or iter(<parameter>) anywhere in the class
    for method in methods.values():
        for node in ast_walk.walk(method):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call) and \
                    _dotted(node.value.func) == "iter" and len(node.value.args) == 1:
                attr = _self_attr(node.targets[0])
                source = node.value.args[0]
                param = stored.get(_self_attr(source) or "")
                if param is None and method is init and isinstance(source, ast.Name) and source.id in positional:
                    param = source.id  # `self.it = iter(loader)` in `__init__`
                if attr is not None and param is not None:
                    iterators.setdefault(attr, set()).add(param)
    if not iterators:
        return ()
    drawing = [nxt] + [methods[n] for n in _self_calls(nxt) if n in methods and n not in ("__init__", "__next__")]
    found: list[str] = []
    for method in drawing:
        for node in ast_walk.walk(method):
            if isinstance(node, ast.Call) and _dotted(node.func) == "next" and len(node.args) == 1:
                for param in sorted(iterators.get(_self_attr(node.args[0]) or "", ())):
                    if param not in found:
                        found.append(param)
    return (tuple(positional), tuple(found)) if found else ()


def _self_calls(method: ast.FunctionDef) -> list[str]:
    return [n.func.attr for n in ast_walk.walk(method) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"]
