"""Loops that hand the model to a project function that runs it: a sampling or evaluation pass per iteration.

`for _ in range(n_batches): samples = diffusion.p_sample_loop(model.forward, shape, ...)` (or `while ...:
metrics = diffusion.calc_bpd_loop(model, batch, ...)`) runs the network many times in every iteration, through
the project's sampler: the sampler calls the callable it is given (`model(x, t, **kwargs)`), directly or by
handing it on to another project function or method that does (`p_sample_loop` -> `p_sample_loop_progressive`
-> `p_sample` -> `p_mean_variance` -> `model(...)`). Such a loop is a hot loop: what it reads back each
iteration (`samples.cpu().numpy()`, `bpd.item()`) is paid once per batch.

Not such a function (an epoch function, whose caller's loop runs once per epoch): one that trains on the way
(`.backward()`, an optimizer's `step()`), or runs the callable inside a loop over data (a loop over one of its
own parameters, over `next(<parameter>)`, or over a name or attribute that reads as data: `loader`, `data`,
`batch`, `dataset`).
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.analysis.progress_wrappers import is_progress_wrapper
from gpulint.analysis.project import _dotted

MAX_DEPTH = 6
_DATA_WORDS = ("loader", "data", "batch", "dataset", "iterator")
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "islice", "tqdm.tqdm", "itertools.islice"})


class ModelRunners:
    """Per project: which parameters of a project function it runs as a callable on every call (cached)."""

    def __init__(self, project) -> None:
        self.project = project
        self._cache: dict[tuple, bool] = {}

    def runs_parameter(self, summary, param: str, depth: int = 0) -> bool:
        info = self.project.module(Path(summary.path))
        key = (summary.path, summary.qualname, param, info.digest if info is not None else None)
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = False  # recursion guard
        found = self._compute(summary, param, depth)
        self._cache[key] = found
        return found

    def _function(self, summary) -> tuple[Optional[ast.FunctionDef], object]:
        info = self.project.module(Path(summary.path))
        if info is None:
            return None, None
        owner, _, name = summary.qualname.rpartition(".")
        if owner:
            cls = info.classes.get(owner)
            return (cls.methods.get(name) if cls is not None else None), cls
        return info.functions.get(name), None

    def _compute(self, summary, param: str, depth: int) -> bool:
        if depth > MAX_DEPTH:
            return False
        fn, cls = self._function(summary)
        if fn is None or isinstance(fn, ast.AsyncFunctionDef):
            return False
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        if param not in params:
            return False
        others = set(params) - {param, "self", "cls"}
        runs = False
        for node, loops in _calls(fn.body, ()):
            if _trains(node):
                return False  # an epoch or step function: it trains, its caller's loop is no sampling pass
            if runs:
                continue
            if any(_over_data(loop, others) for loop in loops):
                continue
            if isinstance(node.func, ast.Name) and node.func.id == param:
                runs = True
                continue
            runs = self._hands_on(node, param, summary, cls, depth)
        return runs

    def _hands_on(self, call: ast.Call, param: str, summary, cls, depth: int) -> bool:
        """`call` passes `param` on to a project function or method that runs it."""
        position = None
        keyword = None
        for i, arg in enumerate(call.args):
            if _holds(arg, param):
                position = i
        for kw in call.keywords:
            if kw.arg is not None and _holds(kw.value, param):
                keyword = kw.arg
        if position is None and keyword is None:
            return False
        callee, bound = self._callee(call, summary, cls)
        if callee is None:
            return False
        if keyword is None:
            params = callee.params[1:] if bound and callee.params else callee.params
            if position >= len(params):  # type: ignore[operator]
                return False
            keyword = params[position]  # type: ignore[index]
        return self.runs_parameter(callee, keyword, depth + 1)

    def _callee(self, call: ast.Call, summary, cls):
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            if cls is None:
                return None, False
            return self.project.method(cls, func.attr), True
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and \
                isinstance(func.value.func, ast.Name) and func.value.func.id == "super" and cls is not None:
            # `super().training_losses(self._wrap_model(model), ...)`: the method of a base class
            method = self.project.base_method(cls, func.attr)
            return (method, True) if method is not None else (None, False)
        dotted = _dotted(func)
        if dotted is None:
            return None, False
        from gpulint.analysis.project import FunctionSummary

        found = self.project.lookup(Path(summary.path), dotted)
        return (found, False) if isinstance(found, FunctionSummary) else (None, False)


def _holds(arg: ast.expr, param: str) -> bool:
    """The argument is the parameter, or a call wrapping it (`self._wrap_model(model)`, `DDP(model)`): a
    wrapper around the callable, which the callee runs in its place."""
    if isinstance(arg, ast.Name):
        return arg.id == param
    return isinstance(arg, ast.Call) and bool(arg.args) and isinstance(arg.args[0], ast.Name) and \
        arg.args[0].id == param


def _calls(body: list, loops: tuple):
    """Every call in `body` (not in nested functions or classes), with the loops around it."""
    for stmt in body:
        yield from _calls_in(stmt, loops)


def _calls_in(node: ast.AST, loops: tuple):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return
    if isinstance(node, (ast.For, ast.While)):
        if isinstance(node, ast.For):
            yield from _calls_in(node.iter, loops)
        else:
            yield from _calls_in(node.test, loops)
        inner = loops + (node,)
        for stmt in node.body + node.orelse:
            yield from _calls_in(stmt, inner)
        return
    if isinstance(node, ast.Call):
        yield node, loops
    for child in ast_walk.iter_child_nodes(node):
        yield from _calls_in(child, loops)


def _trains(call: ast.Call) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and (
        func.attr == "backward" or func.attr == "step" and not call.args and not call.keywords)


def _over_data(loop, params: set) -> bool:
    """A loop over data: over a parameter (or a wrapper of one: `enumerate(loader)`), over `next(<name>)`, or over
    a name or attribute that reads as data."""
    if isinstance(loop, ast.While):
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "next"
                   for stmt in loop.body for n in ast_walk.walk(stmt))
    iterable = loop.iter
    while isinstance(iterable, ast.Call) and (_dotted(iterable.func) in _WRAPPERS or
                                              is_progress_wrapper(_dotted(iterable.func))) and iterable.args:
        iterable = iterable.args[0]
    name = _dotted(iterable)
    if name is not None and name.split(".")[0] in params:
        return True
    # `for x, y in metric_logger.log_every(data_loader, ...)`: any name in the iterable that reads as data
    return any(isinstance(n, (ast.Name, ast.Attribute)) and any(
        word in (n.id if isinstance(n, ast.Name) else n.attr).lower() for word in _DATA_WORDS)
        for n in ast_walk.walk(loop.iter))


def model_runners(project) -> ModelRunners:
    runners = getattr(project, "_model_runners", None)
    if runners is None:
        runners = ModelRunners(project)
        project._model_runners = runners
    return runners
