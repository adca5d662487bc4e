"""Runner functions: a loop over an object parameter that calls one of its methods every iteration.

Reinforcement-learning projects drive their agents from a small runner that knows nothing of the agent's class:

    def run_steps(agent):                      # utils/misc.py
        while True:
            if config.max_steps and agent.total_steps >= config.max_steps:
                break
            agent.step()                       # one rollout and update of whichever agent it is handed

    class PPOAgent(BaseAgent):                 # agent/PPO_agent.py
        def step(self):
            ...
            storage.feed({'reward': tensor(rewards), ...})   # a host-to-device copy per environment step
            ...
            loss.backward(); self.opt.step()

The agents are built by a script (`run_steps(PPOAgent(config))`) that the project model may not read at all (a
script written for an older Python, a notebook, a launcher choosing the agent by name). The runner's loop alone says
that `agent.step()` runs every iteration; which `step` it runs is not known from the runner.

The stance (precision first): a method `m` of a project class is per-step code when some non-test project function
has a loop (`while` or `for`) whose body calls `p.m(...)` unconditionally (in the loop's own body, not under an
`if`), where `p` is a parameter of that function that the function never rebinds, the call passes arguments that
`m` accepts, `p` is annotated with a project class that the method's class is or derives from, or has no
annotation naming a project class, and one call of `m` does training work (`step_callables`: a backward pass, an
optimizer step or a network's forward, `STEP`), or runs it in a rollout/update loop of its own (`EPOCH`) that
iterates no loader or dataset (a trainer's `train_epoch` driven by `for epoch in range(n)` runs its once-per-epoch
code once per epoch: never called per-step here).
A method that does no such work (an environment's `step`, a scheduler's `step`, a logger's `update`, a buffer's
`add`) is never reached through a runner, annotated or not: the runner's loop is not known to be a step loop (a
warm-up that fills a buffer with random actions loops too), so only the method's own training work makes it one. The call site in the runner is the finding's related location.
Searched per method name in the files naming it (the identifier index), each module's runner loops indexed once
(`ModuleInfo.indexed`), the answer remembered per project state (`forward._remembered`).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint.ast_walk import walk

_LOADER_WORDS = ("loader", "dataset", "data_iter", "batches")


def driver_site(project, path: Path, owner: str, member: str):
    """The runner call that runs `owner.member` (a method of the top-level class `owner` of `path`) every
    iteration of its loop, as a `forward.CallSite`; None when no runner drives it."""
    from gpulint.analysis.forward import _entry_method, _remembered, _resolved

    if not _entry_method(member) or member in ("__call__", "forward"):
        return None
    path = _resolved(project, path)
    return _remembered(project, ("runner driven", path, owner, member), lambda: _find(project, path, owner, member))


def _find(project, path: Path, owner: str, member: str):
    from gpulint.analysis.forward import CallSite

    info = project.module(path)
    cls = info.classes.get(owner) if info is not None else None
    if cls is None or member not in cls.methods or project.is_test(path):
        return None
    method = project.method(cls, member)
    node = _method_node(project, method)
    if node is None:
        return None
    trains: Optional[bool] = None  # asked once, only when some runner's receiver is unknown
    for file in project.files_naming(member):
        if project.is_test(file):
            continue
        caller = project.module(file)
        if caller is None:
            continue
        for fn, param, call, annotation in caller.indexed(_runner_calls).get(member, ()):
            if not _accepts(node, call):
                continue
            declared = project.lookup(caller.path, annotation) if annotation else None
            from gpulint.analysis.project import ClassSummary

            if isinstance(declared, ClassSummary):
                from gpulint.analysis.hierarchy import derives, same_class

                if not (same_class(cls, declared) or derives(project, cls, declared)):
                    continue
            if trains is None:
                trains = _trains(project, cls, member, node)
            if not trains:
                return None
            code = f"{param}.{member}(...)"
            return CallSite(caller.path, call.lineno, code, f"{cls.name}.{member}")
    return None


def _method_node(project, summary) -> Optional[ast.FunctionDef]:
    if summary is None:
        return None
    from gpulint.analysis import _method_node as node_of

    return node_of(project, summary)


def _trains(project, cls, member: str, node: ast.FunctionDef) -> bool:
    from gpulint.analysis.step_callables import EPOCH, STEP, step_callables

    found = step_callables(project).method(cls, member)
    if found == STEP:
        return True
    if found != EPOCH:
        return False
    # its own loops run rollouts and minibatches of what it gathered, not a pass over a loader
    for sub in walk(node):
        if isinstance(sub, (ast.For, ast.AsyncFor)):
            text = ast.unparse(sub.iter).lower()
            if any(word in text for word in _LOADER_WORDS):
                return False
    return True


def _accepts(node: ast.FunctionDef, call: ast.Call) -> bool:
    """The method (with `self`) takes the call's arguments: no starred ones, at most as many positionals as it
    has (unless `*args`), every required parameter given."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    args = node.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][1:]  # without `self`
    given = len(call.args)
    if given > len(positional) and args.vararg is None:
        return False
    named = {k.arg for k in call.keywords}
    required = positional[:len(positional) - len(args.defaults)]
    if any(name not in named for name in required[given:]):
        return False
    kw_required = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    return all(name in named for name in kw_required)


def _runner_calls(tree: ast.Module) -> dict:
    """method name -> [(function, parameter, call, the parameter's annotation as a dotted name or None)] for each
    function of the module (top-level, or a method) with a loop whose own body calls a method of one of the
    function's parameters (not `self`/`cls`) that the function never rebinds."""
    found: dict = {}
    functions = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            functions.append(stmt)
        elif isinstance(stmt, ast.ClassDef):
            functions.extend(m for m in stmt.body if isinstance(m, ast.FunctionDef))
    for fn in functions:
        params = {a.arg: a.annotation for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
                  if a.arg not in ("self", "cls")}
        if not params:
            continue
        rebound = _rebound(fn)
        for sub in walk(fn):
            if not isinstance(sub, (ast.While, ast.For)) or sub is fn:
                continue
            for call in _every_iteration_calls(sub.body):
                func = call.func
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                        func.value.id in params and func.value.id not in rebound and not func.attr.startswith("__"):
                    if isinstance(sub, ast.For) and _binds(sub.target, func.value.id):
                        continue
                    annotation = params[func.value.id]
                    dotted = _dotted(annotation) if annotation is not None else None
                    found.setdefault(func.attr, []).append((fn, func.value.id, call, dotted))
    return found


def _every_iteration_calls(body: list) -> list:
    """The calls that are whole statements (or an assignment's value) of a loop body, also inside `with`/`try`
    bodies there: run on every iteration that gets that far (an earlier `break` under a test ends the loop)."""
    calls = []
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            calls.append(stmt.value)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.value, ast.Call):
            calls.append(stmt.value)
        elif isinstance(stmt, ast.With):
            calls.extend(_every_iteration_calls(stmt.body))
        elif isinstance(stmt, ast.Try):
            calls.extend(_every_iteration_calls(stmt.body))
    return calls


def _rebound(fn: ast.FunctionDef) -> set:
    names = set()
    for sub in walk(fn):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
    return names


def _binds(target: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(target))


def _dotted(expr: ast.expr) -> Optional[str]:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        head = _dotted(expr.value)
        return f"{head}.{expr.attr}" if head else None
    return None
