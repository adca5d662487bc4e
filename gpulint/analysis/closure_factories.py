"""Closures a project factory hands back run where the caller calls them (branch recall70).

`train_step_fn = losses.get_step_fn(sde, train=True, ...)` returns the `step_fn(state, batch)` the factory
defines; a loop calling `train_step_fn(state, batch)` every iteration runs that closure's body every step, and
what the closure calls through names of its factory (`loss_fn = get_loss_fn(...)`, itself a closure of another
factory) runs as often. Three questions, each answered from what the project model already records
(`FunctionSummary.returns_function`, `ProjectCalls._returned_function`):

- the loop's role (`steps_through_closure`): a loop whose body calls such a closure, on every iteration, is a
  step loop when one call of the closure is one step (`step_callables`: a backward pass or an optimizer step
  outside loops of its own, through the callables it calls);
- where the closure's body runs (`closure_site`, asked by `forward.per_step_caller` for a function defined
  directly in a top-level function that returns it by name): at the hot call of a name bound to the factory's
  call, in the hot loops of other project files (at most `_CALLERS_PER_QUESTION` of them, the files naming the
  factory) or in the factory's own module (`local_closure_site`), where the call itself runs every iteration;
- the prefilter (`forward.may_run_every_step`): a loop-free module of such factories is worth linting when one
  of its closures runs every step.

A closure the caller calls under `if step % N == 0:` runs periodically; one nobody calls in a hot loop is not
per-step code. A factory returning one of several closures (`returns_function` is None) is not followed.
"""
from __future__ import annotations

import ast

from gpulint import ast_walk
from pathlib import Path
from typing import Optional

import libcst as cst


def returning_factory(analysis, fn: cst.FunctionDef) -> Optional[cst.FunctionDef]:
    """The top-level function `fn` is defined in (directly in its body) when every `return` of that function
    hands back `fn` by name; else None."""
    block = analysis.index.up.get(id(fn))
    factory = analysis.index.up.get(id(block)) if type(block) is cst.IndentedBlock else None
    if type(factory) is not cst.FunctionDef or not isinstance(analysis.index.up.get(id(factory)), cst.Module):
        return None
    returns = _own_returns(factory)
    if not returns or any(type(r.value) is not cst.Name or r.value.value != fn.name.value for r in returns):
        return None
    return factory


def _own_returns(fn: cst.FunctionDef) -> list:
    found, stack = [], list(fn.body.body) if type(fn.body) is cst.IndentedBlock else []
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(node) is cst.Return:
            found.append(node)
            continue
        stack.extend(node.children)
    return found


def steps_through_closure(analysis, call: cst.Call) -> bool:
    """`train_step_fn(state, batch)` of a name bound to a project factory's call whose returned closure is one
    training step (analysis/step_callables.py: a backward pass or an optimizer step, outside loops of its own)."""
    if type(call.func) is not cst.Name:
        return False
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    if calls is None:
        return False
    closure = calls._returned_function(call.func)
    if closure is None:
        return False
    from gpulint.analysis.project import text_dependency
    from gpulint.analysis.step_callables import STEP, step_callables

    with text_dependency():
        return step_callables(calls.project).function(closure) == STEP


def closure_site(analysis, fn: cst.FunctionDef):
    """The hot call site that runs the closure `fn` every step (see the module's docstring), else None."""
    factory = returning_factory(analysis, fn)
    if factory is None:
        return None
    from gpulint.analysis.forward import _project_of, _remembered

    project, path = analysis.fact(_project_of)
    path = project._resolved(path)
    name = factory.name.value
    site = local_closure_site(analysis, name, fn.name.value)
    if site is not None:
        return site
    return _remembered(project, (path, None, name, "closure"),
                       lambda: _caller_site(project, path, name, fn.name.value))


def _binds_factory_call(value: cst.BaseExpression, calls, path: Path, name: str) -> bool:
    if type(value) is not cst.Call:
        return False
    from gpulint.analysis.project import FunctionSummary

    found = calls._lookup(value.func)
    return isinstance(found, FunctionSummary) and found.qualname == name and Path(found.path).resolve() == path


def _calls_closure(analysis, calls, call: cst.Call, path: Path, name: str) -> bool:
    """`call` calls a name bound to calls only, one of them of the factory `name` of `path`: on one branch
    `loss_fn = get_sde_loss_fn(...)`, on another `loss_fn = get_ddpm_loss_fn(...)`; in the configuration that
    builds this factory's closure, the call runs it (the stance of tests/test_class_choices.py)."""
    if type(call.func) is not cst.Name:
        return False
    bindings = analysis.index.visible_bindings(call.func)
    return bool(bindings) and len(bindings) <= 4 and all(
        b.kind == "assign" and b.index is None and type(b.value) is cst.Call for b in bindings) and any(
        _binds_factory_call(b.value, calls, path, name) for b in bindings)


def local_closure_site(analysis, name: str, closure: str):
    """In the factory's own module: a call, run every iteration of a hot loop (or by per-step code of the
    module), of a name bound to the factory's call (`loss_fn = get_loss_fn(...)` in another factory whose
    per-step closure calls `loss_fn(model, batch)`)."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.forward import CallSite, _line_of

    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    path = Path(analysis.path).resolve()
    key = ("closure calls", name)
    memo = analysis.fact(_local_memo)
    if key in memo:
        return memo[key]
    memo[key] = None  # recursion guard: a closure calling its own factory's closure
    site = None
    for node in analysis.index.nodes:
        if type(node) is not cst.Call or type(node.func) is not cst.Name:
            continue
        if not _calls_closure(analysis, calls, node, path, name):
            continue
        execution = analysis.execution(node)
        if execution.every_iteration:
            via = getattr(execution, "via", None)
            site = via if via is not None else CallSite(Path(analysis.path), _line_of(analysis, node),
                                                        f"{analysis.code(node.func)}(...)", f"{name}.{closure}")
            break
    memo[key] = site
    return site


def _local_memo(analysis) -> dict:
    return {}


def _caller_site(project, path: Path, name: str, closure: str):
    """A hot call, in another project file, of a name bound to the factory `name`'s call."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.forward import CallSite, _CALLERS_PER_QUESTION, _hot_calls, _hot_file, _line_of

    looked_at = 0
    for caller in project.files_naming(name, training=True):
        if project.is_test(caller) or project._resolved(caller) == path:
            continue
        info = project.module(caller)
        if info is None:
            continue
        hot, called = _hot_file(project, info)
        if not hot or name not in called:
            continue
        streamed = getattr(info, "statements", None)  # a big module: no whole tree (lazy_module.py)
        if called.isdisjoint(_bound_to(streamed() if streamed is not None else info.tree.body, name)):
            continue  # no name bound to the factory's call is called in the file: from `ast` alone
        if looked_at == _CALLERS_PER_QUESTION:
            return None
        looked_at += 1
        hot_calls = _hot_calls(project, info.path)
        if not hot_calls:
            continue
        analysis = hot_calls[0][0]
        calls = analysis.fact(project_calls)
        if calls is None:
            continue
        for _, node, func in hot_calls:
            if type(func) is cst.Name and _calls_closure(analysis, calls, node, path, name):
                return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)",
                                f"{name}.{closure}")
    return None


def _bound_to(statements, name: str) -> frozenset:
    """The names a module's top-level statements bind to a call of something named `name` (`f = mod.name(...)`)."""
    found = set()
    for node in (n for stmt in statements for n in ast_walk.walk(stmt)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if last == name:
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(found)


def module_closures_run(project, path: Path, tree: ast.Module) -> bool:
    """For the prefilter: a top-level function of the module returns a closure it defines, and a hot loop of
    another project file calls what a call of it returned."""
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        nested = {s.name for s in stmt.body if isinstance(s, ast.FunctionDef)}
        if not nested:
            continue
        returns = [n for n in _ast_own(stmt) if isinstance(n, ast.Return)]
        if not returns or not all(isinstance(r.value, ast.Name) and r.value.id in nested for r in returns):
            continue
        from gpulint.analysis.forward import _remembered

        resolved = project._resolved(path)
        if _remembered(project, (resolved, None, stmt.name, "closure"),
                       lambda: _caller_site(project, resolved, stmt.name, returns[0].value.id)) is not None:
            return True
    return False


def _ast_own(fn: ast.FunctionDef):
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast_walk.iter_child_nodes(node))
