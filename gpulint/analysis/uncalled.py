"""Functions of a script that nothing calls: their loops are not training or evaluation steps.

    def train(model, loader, optimizer):
        for batch in loader: ...                    # called below: per-step code
    def eval(model, loader):
        for batch in loader:
            y_pred.append(model(batch).cpu())       # nothing calls eval(): dead code, never run
    def main():
        ...
        train(model, loader, optimizer)
    if __name__ == "__main__":
        main()

`uncalled(analysis, fn)` is True only when all of these hold, each one a way the function could still run:

- the module is a Python script (a `.py` file with a top-level `if __name__ == "__main__":`), not a notebook and
  not a library module that only defines things for others to import;
- `fn` is a top-level function without decorators (a decorator registers it: `@hydra.main`, `@app.command()`,
  `@register`);
- the module never reads its name (a call, a function passed on, `__all__`, a registry dict, `getattr(m, "eval")`:
  any name or string equal to it), and does not hand all of its functions to a command-line builder (`fire.Fire()`,
  `CLI()`) or look names up in `globals()`/`locals()`/`vars()`;
- no other Python file of the project names both the function and the module (an import of it), and the
  project's `pyproject.toml`/`setup.cfg` do not name it (a console-script entry point `pkg.mod:fn`).

Methods are never dead by this test (frameworks call hooks by name: Lightning's `training_step`, callbacks).
`LoopAnalysis` asks through its `uncalled` hook: a loop inside such a function is cold.
"""

from __future__ import annotations

import ast

from gpulint import ast_walk
from pathlib import Path
from typing import Optional

import libcst as cst

# calls that expose every function of a module, or look functions up by a computed name
_EXPOSES_ALL = {"Fire", "CLI", "globals", "locals", "vars"}


def _script_names(analysis) -> Optional[tuple[set, bool]]:
    """Fact provider: (the names and strings the module reads, whether it is a script that does not expose all
    of its functions), or None when the module cannot be read with `ast`."""
    from gpulint.analysis.forward import _project_of

    project, path = analysis.fact(_project_of)
    info = project.module(path)  # the project model's parse of the file (shared with its other facts)
    if info is None:
        return None
    streamed = getattr(info, "statements", None)  # a big module: no whole tree (lazy_module.py)
    if streamed is None and info.tree is None:
        return None
    script = False
    read: set = set()
    for stmt in (streamed() if streamed is not None else info.tree.body):
        script = script or isinstance(stmt, ast.If) and _main_guard(stmt.test)
        read.update(_names_read(stmt))
    return read - {_EXPOSED}, script and _EXPOSED not in read


_EXPOSED = object()  # marks, among the names read, a call exposing every function (`_EXPOSES_ALL`)


def _names_read(stmt: ast.stmt) -> set:
    read: set = set()
    for node in ast_walk.walk(stmt):
        if isinstance(node, ast.Name):
            read.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            read.add(node.value)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in _EXPOSES_ALL:
                read.add(_EXPOSED)
    return read


def _main_guard(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either side)."""
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = (test.left, test.comparators[0])
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
        any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def uncalled(analysis, fn: cst.FunctionDef) -> bool:
    """`fn` is a top-level function of a script that nothing in the project calls (see the module docstring)."""
    if analysis.path is None or not str(analysis.path).endswith(".py") or fn.decorators:
        return False
    if type(analysis.index.up.get(id(fn))) is not cst.Module:
        return False
    facts = analysis.fact(_script_names)
    if facts is None or not facts[1]:
        return False
    name = fn.name.value
    if name in facts[0]:
        return False
    from gpulint.analysis.forward import _project_of

    project, path = analysis.fact(_project_of)
    here = project._resolved(path)
    stem = Path(path).stem
    others = {project._resolved(f) for f in project.files_naming(name)} & \
        {project._resolved(f) for f in project.files_naming(stem)}
    others.discard(here)
    if others:
        return False
    for config in ("pyproject.toml", "setup.cfg"):
        try:
            text = (Path(project.root) / config).read_text(errors="replace")
        except OSError:
            continue
        if f":{name}" in text.replace(" ", ""):
            return False
    return True
