"""A top-level function that another module's per-step model code calls: per-step code too.

`from pointnet_utils import feature_transform_reguliarzer`, then `loss += feature_transform_reguliarzer(t)` in
the `forward` of a loss module a training loop calls every step: the helper runs every step, though no training
file names it. `forward.member_site` finds only the helpers a hot loop calls itself; this finds the call in the
`forward` of a project module class (or in a top-level function) of another module, whose own call is per-step
(`forward.per_step_site`, `forward.member_site`), and answers with that call.

Decided on `ast` trees alone (the callers are not parsed with LibCST), bounded like the other searches: the files
whose text names the helper, at most `_CALLERS` of them, two modules deep. A call under an `if` that tests a
step counter (`if step % 100 == 0:`) or a flag parameter of the caller is left out: it may not run every step.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

_CALLERS = 8
_DEPTH = 2


def imported_helper_site(project, path: Path, name: str, depth: int = 0):
    """The per-step call, in another module, of the top-level function `name` defined in `path`; None when none
    is found."""
    from gpulint.analysis.forward import _remembered

    path = path.resolve()
    return _remembered(project, ("imported helper", path, name),
                       lambda: _find(project, path, name, depth))


def _find(project, path: Path, name: str, depth: int):
    from gpulint.analysis.forward import CallSite, member_site, per_step_site
    from gpulint.analysis.project import FunctionSummary

    looked_at = 0
    for file in project.files_naming(name):
        if project.is_test(file) or project._resolved(file) == path:
            continue
        info = project.module(file)
        if info is None or not _imports_name(info, name):
            continue
        found = project.lookup(info.path, name)
        if not (isinstance(found, FunctionSummary) and found.qualname == name and found.path.resolve() == path):
            continue
        if looked_at == _CALLERS:
            break
        looked_at += 1
        for cls in info.classes.values():
            forward = cls.methods.get("forward")
            line = _called_in(forward, name) if forward is not None else None
            if line is None or not project.is_module_class(cls):
                continue
            site = per_step_site(project, cls.path, cls.name)
            if site is not None:
                return CallSite(info.path.resolve(), line, f"{name}(...)", name, cls.name)
        if depth + 1 >= _DEPTH:
            continue
        for fname, fn in info.functions.items():
            line = _called_in(fn, name)
            if line is None:
                continue
            site = member_site(project, info.path, None, fname) or \
                imported_helper_site(project, info.path, fname, depth + 1)
            if site is not None:
                return CallSite(info.path.resolve(), line, f"{name}(...)", name)
    return None


def _imports_name(info, name: str) -> bool:
    """`from module import name` (not `import module`, whose calls are spelt `module.name`)."""
    found = info.imports.get(name)
    return found is not None and found[1] is not None


def _called_in(fn: ast.FunctionDef, name: str) -> Optional[int]:
    """The line of a call `name(...)` in `fn` that is not under a periodic or flag test, else None."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    return _search(fn.body, name, params)


def _search(body: list, name: str, params: set) -> Optional[int]:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.If):
            line = _in_expr(stmt.test, name)
            if line is not None:
                return line
            if not _conditional(stmt.test, params):
                line = _search(stmt.body, name, params)
                if line is not None:
                    return line
            line = _search(stmt.orelse, name, params)  # an `else:` of a flag is the default path
            if line is not None:
                return line
            continue
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                continue
            line = _in_expr(child, name)
            if line is not None:
                return line
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner:
                stmts = [s for h in inner for s in (h.body if isinstance(h, ast.ExceptHandler) else [h])]
                line = _search(stmts, name, params)
                if line is not None:
                    return line
    return None


def _in_expr(expr: ast.AST, name: str) -> Optional[int]:
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            return node.lineno
    return None


def _conditional(test: ast.expr, params: set) -> bool:
    """A test that may be false on most steps: a modulo, an equality with a counter, or a parameter used as a
    flag (`if collect_stats:`); a test of the module's own configuration (`if self.feature_transform:`) is not."""
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq) for op in node.ops):
            return True
        if isinstance(node, ast.Name) and node.id in params:
            return True
    return False


def helpers_feed_a_gpu(analysis, project, path: Path) -> bool:
    """A module that names no device whose top-level helper a training loop calls every step (`eval_metrics(
    output, target)` in the trainer's loop), or that another module's per-step `forward` imports and calls,
    from a file that names one: the tensors it is given are on that device."""
    import libcst as cst

    from gpulint.analysis import GPU_HINT
    from gpulint.analysis.forward import called_in_a_hot_loop, member_site
    from gpulint.textsearch import found_in

    for stmt in analysis.module.body:
        if type(stmt) is not cst.FunctionDef:
            continue
        name = stmt.name.value
        site = member_site(project, path, None, name) if called_in_a_hot_loop(project, name) else None
        if site is None:
            site = imported_helper_site(project, path, name)
        if site is None:
            continue
        try:
            text = Path(site.path).read_text(errors="replace")
        except OSError:
            continue
        if found_in(GPU_HINT, text):
            return True
    return False
