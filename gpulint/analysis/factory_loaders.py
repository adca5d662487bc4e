"""A loader factory's own `DataLoader(...)`, seen from the scripts that call it (GPU201 at the factory).

GPU201 reports a factory's unpinned loader at the call in the training script (`loaders = make_loaders(args)`,
"returns a `DataLoader` without `pin_memory=True`", naming the factory). The fix belongs at the factory, and a
user reading the factory module (an editor, a pre-commit run that names only `data.py`) sees nothing there:

    # data.py                                        # train.py
    def make_loaders(args):                          train_loader, test_loader = data.make_loaders(args)
        train = DataLoader(ds, pin_memory=False)     for x, y in train_loader:
        test = DataLoader(ds2, pin_memory=False)         x = x.to(device)
        return train, test

`factory_caller` answers, for a `DataLoader(...)` that a top-level function of the linted module returns (by
itself, or in a tuple, through a name it is bound to), whether a project script calling that function gets the
call-site finding (the script's own GPU201 decision: its loops move the batches to the GPU, or it plainly targets
CUDA and trains with them): the call, as the related location. The callers are looked for like the per-step
callers of a model (`forward._hot_calls`: files naming the function, tests skipped, at most a few, in the
project's file order), and their text is a dependency of the factory's cached result.

A factory may be called by another function that hands its loaders on (a factory of factories):

    # dataset/__init__.py                               # train.py
    def get_dataset(cfg):                               train_loader, val_loader, n, k = get_dataset(cfg)
        if cfg.TYPE == "cifar100":
            train_loader, val_loader, n = get_cifar_loaders(...)
        ...
        return train_loader, val_loader, n, classes

A caller module that gets no finding itself (it builds no loop and targets no GPU) is followed one step further
when the call sits in a top-level function that returns what the call gave (the call itself, a name bound to
it, or every name of the tuple it is unpacked into): that function's callers are asked the same question
(`would_pin` of their call of it), up to `_FORWARDS` functions deep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.loader_classes import wrapping_class
from gpulint.analysis.tree import child_nodes

_CALLERS = 4  # caller files looked at per factory function
_FORWARDS = 2  # functions handing a factory's loaders on, followed one after the other


class _Asker:
    """What `analysis.data.would_pin` needs of a rule: the analysis it asks about."""

    def __init__(self, analysis) -> None:
        self.analysis = analysis


def _returned_by(analysis, loader: cst.Call) -> Optional[cst.FunctionDef]:
    """The top-level function that returns `loader` (`return DataLoader(...)`, or a name bound to it returned
    alone or in a tuple, or handed on batch by batch: `yield from loader`), else None."""
    index = analysis.index
    fn = next((a for a in index.ancestors(loader) if type(a) in (cst.FunctionDef, cst.Lambda, cst.ClassDef)), None)
    if type(fn) is not cst.FunctionDef or type(index.enclosing_scope(fn)) is not cst.Module:
        return None
    parent = analysis.parent(loader)
    names: set[str] = set()
    if type(parent) is cst.Return or _in_container(analysis, loader):
        return fn
    if type(parent) is cst.Assign and len(parent.targets) == 1 and type(parent.targets[0].target) is cst.Name:
        names.add(parent.targets[0].target.value)
    if not names:
        return None
    # `return loader` (alone or in a tuple), or `while True: yield from loader` (a generator handing on the
    # loader's batches)
    return fn if any(names & handed for handed in _returned_names(fn, yielded_from=True)) else None


def _in_container(analysis, loader: cst.Call) -> bool:
    """`loader` is handed on inside something its callers take apart, not by itself: yielded by a generator of
    loaders (`yield DataLoader(test_set, ...)`, one per test set: `for test_loader in get_test_loaders(cfg)`), or a
    value of a dict the function returns (`return {"train": DataLoader(...), "val": DataLoader(...)}`). The
    project's function summaries know no loader there (their callers do not iterate the call's result as batches),
    so its calls are recognised by what they name (`_call_site`)."""
    parent = analysis.parent(loader)
    if type(parent) is cst.Yield:
        return type(analysis.parent(parent)) is cst.Expr
    if type(parent) is cst.DictElement and parent.value is loader:
        held = analysis.parent(parent)
        return type(held) is cst.Dict and type(analysis.parent(held)) is cst.Return
    return False


def factory_caller(analysis, loader: cst.Call) -> Optional[tuple[Path, int, str]]:
    """(caller file, line, the call's text) of a project call of the function returning `loader` where GPU201
    reports the factory's loader at the call; else None."""
    fn = _returned_by(analysis, loader)
    name = fn.name.value if fn is not None else wrapping_class(analysis, loader)
    if name is None or analysis.path is None:
        return None
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.forward import _remembered

    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    project, path = calls.project, Path(analysis.path).resolve()
    if fn is not None:  # a script's own factory (`train_loader, ... = prepare_dataloaders(hparams)` in `train`)
        here = _call_site(analysis, name, path, _in_container(analysis, loader))
        if here is not None:
            return here
    # a loader class's callers draw its batches in ways the training-file text index may not see (`next(zip(
    # *loaders))` in a step loop whose backward pass is inside `algorithm.update(...)`): every file naming it
    contained = fn is not None and _in_container(analysis, loader)
    return _remembered(project, ("factory-loader", path, name, contained),
                       lambda: _find(project, path, name, training=fn is not None, contained=contained))


def _find(project, path: Path, name: str, training: bool = True, contained: bool = False,
          depth: int = 0) -> Optional[tuple[Path, int, str]]:
    from gpulint.analysis.forward import caller_analysis
    from gpulint.analysis.project import _record

    # a script whose loops are in a helper module (`train_loader, val_loader = get_loaders(...)`, then
    # `train(epoch, train_loader, model)` imported from `helper/loops.py`) has no loop text of its own: the files
    # that look like training come first, then the others naming the factory
    named = project.files_naming(name)
    if training:
        trains = set(project.files_naming(name, training=True))
        named = sorted(named, key=lambda f: f not in trains)
    callers = [f for f in named if not project.is_test(f) and project._resolved(f) != path][:_CALLERS]
    for caller in callers:
        _record(project._resolved(caller))
        other = caller_analysis(project, project._resolved(caller))
        if other is None:
            continue
        found = _call_site(other, name, path, contained) if depth == 0 else \
            _forwarded_call_site(other, name, path)
        if found is not None:
            return found
        if depth >= _FORWARDS or not training:
            continue
        for forwarder in _forwarders(other, name, path, contained or depth > 0):
            found = _find(project, Path(other.path).resolve(), forwarder, depth=depth + 1)
            if found is not None:
                return found
    return None


def _resolves_here(other, call: cst.Call, path: Path, loose: bool) -> bool:
    """`call` in the module `other` builds the loaders of the factory module `path`: the project says the call
    returns a loader made there, or (`loose`: a factory that hands its loaders on in a container, or a function
    forwarding another factory's) it names a top-level function of `path`."""
    from gpulint.analysis.data_facts import data_facts

    made = data_facts(other).factory(call)
    if made is not None and Path(made.path).resolve() == path:
        return True
    return loose and _calls_function(other, call, path)


def _forwarded_call_site(other, name: str, path: Path) -> Optional[tuple[Path, int, str]]:
    """The first call of `name`, a top-level function of the module `path` that forwards a factory's loaders
    (`_forwarders`), in the module `other` that gets GPU201's call-site decision (`would_pin`)."""
    from gpulint.analysis.data import would_pin
    from gpulint.analysis.data_facts import data_facts
    from gpulint.analysis.forward import _line_of

    if not data_facts(other).feeds_an_accelerator():
        return None
    asker = _Asker(other)
    for node in other.index.nodes:
        if type(node) is cst.Call and _last_name(node.func) == name and _calls_function(other, node, path) and \
                would_pin(asker, node):  # type: ignore[arg-type]
            return other.path, _line_of(other, node), f"{other.code(node.func)}(...)"
    return None


def _forwarders(other, name: str, path: Path, loose: bool) -> list[str]:
    """The top-level functions of the module `other` that return what a call of the factory `name` (of the module
    `path`) gave them: `return make(...)`, or `loader = make(...)` / `a, b, n = make(...)` then a `return` that
    holds that name, or every name of that tuple."""
    found: list[str] = []
    for node in other.index.nodes:
        if type(node) is not cst.Call or _last_name(node.func) != name or \
                not _resolves_here(other, node, path, loose):
            continue
        fn = next((a for a in other.index.ancestors(node) if type(a) in (cst.FunctionDef, cst.Lambda,
                                                                            cst.ClassDef)), None)
        if type(fn) is not cst.FunctionDef or type(other.index.enclosing_scope(fn)) is not cst.Module or \
                fn.name.value in found:
            continue
        parent = other.parent(node)
        if type(parent) is cst.Return:
            found.append(fn.name.value)
            continue
        if type(parent) is not cst.Assign or len(parent.targets) != 1:
            continue
        target = parent.targets[0].target
        names = [target.value] if type(target) is cst.Name else (
            [e.value.value for e in target.elements if type(e.value) is cst.Name]  # type: ignore[union-attr]
            if type(target) in (cst.Tuple, cst.List) and all(type(e.value) is cst.Name for e in target.elements)
            else [])
        if names and any(set(names) <= returned for returned in _returned_names(fn)):
            found.append(fn.name.value)
    return found


def _returned_names(fn: cst.FunctionDef, yielded_from: bool = False):
    """The names each `return` of `fn` (not of a nested function) hands back, alone or in a tuple; with
    `yielded_from`, also the name of each `yield from name`."""
    stack = list(child_nodes(fn.body))
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(node) is cst.Return and node.value is not None:
            value = node.value
            values = [e.value for e in value.elements] if type(value) in (cst.Tuple, cst.List) else [value]
            yield {v.value for v in values if type(v) is cst.Name}
        if yielded_from and type(node) is cst.Yield and type(node.value) is cst.From and \
                type(node.value.item) is cst.Name:
            yield {node.value.item.value}
        stack.extend(child_nodes(node))


def _last_name(func: cst.BaseExpression) -> Optional[str]:
    return func.attr.value if type(func) is cst.Attribute else (func.value if type(func) is cst.Name else None)


def _call_site(other, name: str, path: Path, contained: bool = False) -> Optional[tuple[Path, int, str]]:
    """The first call of `name` in the module `other` that builds the loader of the factory module `path` and
    gets GPU201's call-site finding there (`would_pin`). `contained`: the factory hands its loaders on in a
    generator or a dict (`_in_container`): a call of that function of `path` counts, and its batches go to a GPU
    when the calling module plainly targets CUDA and copies batches to it (`would_pin` of a call no loop of the
    module iterates)."""
    from gpulint.analysis.data import would_pin
    from gpulint.analysis.data_facts import data_facts
    from gpulint.analysis.forward import _line_of

    facts = data_facts(other)
    if not facts.feeds_an_accelerator():
        return None
    asker = _Asker(other)
    for node in other.index.nodes:
        if type(node) is not cst.Call:
            continue
        func = node.func
        last = func.attr.value if type(func) is cst.Attribute else (func.value if type(func) is cst.Name else None)
        if last != name:
            continue
        made = facts.factory(node)
        if made is None and contained:
            if not _calls_function(other, node, path) or not facts.clearly_cuda():
                continue
        elif made is None or Path(made.path).resolve() != path:
            continue
        if would_pin(asker, node):  # type: ignore[arg-type]
            return other.path, _line_of(other, node), f"{other.code(node.func)}(...)"
    return None


def _calls_function(other, call: cst.Call, path: Path) -> bool:
    """`call` names a top-level function of the module `path` (as the project resolves the name where it is
    written)."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.project import FunctionSummary
    from gpulint.analysis.imports import dotted_name

    dotted = dotted_name(call.func)
    calls = other.fact(project_calls)
    if dotted is None or calls is None:
        return False
    found = calls.project.lookup(calls.path, dotted)
    return isinstance(found, FunctionSummary) and "." not in found.qualname and Path(found.path).resolve() == path
