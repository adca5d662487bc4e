"""Methods and functions the project calls only periodically: their own small loops are no per-step loops.

    # nerf/utils.py, the training loop
    for data in loader:
        if self.global_step % self.opt.update_extra_interval == 0:     # every 16 steps
            self.model.update_extra_state()
        ...
    # nerf/renderer.py
    def update_extra_state(self, decay=0.95, S=128):
        for cas in range(self.cascade):                                 # a loop over a few cascades
            occ_indices = torch.nonzero(self.density_grid[cas] > 0)     # synchronises, every 16 steps

A loop that is hot only because it iterates tensor math (no batches, no training) runs as often as its function
is called. `only_called_periodically(analysis, fn)` is a reason when every call of `fn`'s name in the project is
either under a periodic test (`if step % N == 0:`, alone or in an `and`) or in script code that runs once (a
module's top-level statements outside every loop and function: `model.compose(other)` in a script whose method
calls `fn` in `for _ in range(3):`), so the loop's work is paid periodically, not every step. `LoopAnalysis` asks
through its `periodic_only` hook before calling such a loop hot.

Precision first, everything else keeps the loop hot:
- `fn` is a method of a top-level class or a top-level function, no dunder and no hook a framework calls by
  name (`forward`, `*_step`, `on_*`, `step`, `update`, `__call__`...);
- its name is read in at most `_FILES` project files, only as a call (`x.fn(...)`, `fn(...)`) or its `def`: a
  name handed on (`hooks.append(self.fn)`), a string (`getattr(m, "fn")`) or a call anywhere else (in a loop,
  in a function) keeps it hot;
- a call in a method `g` that is itself called only from top-level script code counts as once (one level).
"""

from __future__ import annotations

import ast

from gpulint import ast_walk
from pathlib import Path
from typing import Optional

import libcst as cst

_FILES = 12
_HOOKS = frozenset({"forward", "step", "update", "run", "call", "main", "train", "evaluate", "validate", "test",
                    "predict", "backward", "compute", "apply", "process", "fit", "sample", "generate"})
_HOOK_PREFIXES = ("on_", "training_", "validation_", "test_", "predict_", "_")
_HOOK_SUFFIXES = ("_step", "_epoch", "_batch", "_hook", "_callback")


def _hook_name(name: str) -> bool:
    return name in _HOOKS or name.startswith(_HOOK_PREFIXES) or name.endswith(_HOOK_SUFFIXES)


def _periodic(test: ast.expr) -> bool:
    """`step % N == 0` (either side), alone or in an `and` (`self.model.cuda_ray and step % N == 0`)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_periodic(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.BinOp) and isinstance(test.operand.op, ast.Mod)
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = (test.left, test.comparators[0])
    return any(isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mod) for s in sides) and \
        any(isinstance(s, ast.Constant) and s.value == 0 for s in sides)


_SITES: dict = {}  # (path, digest) of a project module -> (its parent map, name -> the places it is read)


def _module_sites(info, tree: ast.AST) -> tuple[dict, dict]:
    """One walk of a module, kept per module text: each node's parent, and for each name the places it is read
    (the node, whether it is the callee of a call; None for a `def` of that name)."""
    key = (info.path, info.digest)
    found = _SITES.get(key)
    if found is None:
        if len(_SITES) > 256:
            _SITES.clear()
        up: dict = {}
        calls = set()
        sites: dict = {}
        for node in ast_walk.walk(tree):
            for child in ast_walk.iter_child_nodes(node):
                up[id(child)] = node
            if isinstance(node, ast.Call):
                calls.add(id(node.func))
        for node in ast_walk.walk(tree):
            if isinstance(node, ast.Name):
                sites.setdefault(node.id, []).append((node, id(node) in calls))
            elif isinstance(node, ast.Attribute):
                sites.setdefault(node.attr, []).append((node, id(node) in calls))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                sites.setdefault(node.value, []).append((node, False))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                sites.setdefault(node.name, []).append((node, None))
        found = _SITES[key] = (up, sites)
    return found


def _place(node: ast.AST, up: dict) -> tuple[str, Optional[ast.AST]]:
    """Where a call runs: ("periodic", None) under a periodic test; ("once", None) in a module's top-level code
    outside loops; ("in", fn) in the function `fn` (in a loop of it or not: how often `fn` runs decides);
    ("loop", None) in a loop of the module's top-level code or in a class body."""
    child, parent = node, up.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.If) and child in parent.body and _periodic(parent.test):
            return "periodic", None
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return "in", parent
        if isinstance(parent, (ast.For, ast.While, ast.AsyncFor, ast.ClassDef)):
            while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                parent = up.get(id(parent))
            return ("in", parent) if parent is not None else ("loop", None)
        child, parent = parent, up.get(id(parent))
    return "once", None


def _tested(node: ast.AST, up: dict) -> bool:
    """`node` is (part of) the test of an `if`/`while` or an operand of `and`/`or`/`not`: a flag's value."""
    parent = up.get(id(node))
    if isinstance(parent, (ast.BoolOp, ast.UnaryOp)) and (not isinstance(parent, ast.UnaryOp) or
                                                         isinstance(parent.op, ast.Not)):
        return True
    return isinstance(parent, (ast.If, ast.While, ast.IfExp)) and parent.test is node


def _names_a_member(node: ast.AST, up: dict) -> bool:
    """A string that may name the function for a lookup: an argument of `getattr`/`hasattr`/`setattr`/`vars`
    or anything that is no plain call (a list or dict of names, a subscript, an assignment)."""
    parent = up.get(id(node))
    if isinstance(parent, ast.Call) and node in parent.args:
        func = parent.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in ("getattr", "hasattr", "setattr", "attrgetter", "methodcaller")
    return not isinstance(parent, (ast.keyword, ast.JoinedStr, ast.FormattedValue))


def _calls(analysis, name: str) -> Optional[list[tuple[str, Optional[ast.AST]]]]:
    """The places of every call of `name` in the project, or None when the name is read other than by a call
    or by its `def`, or in too many files."""
    from gpulint.analysis.forward import _project_of
    from gpulint.analysis.project import text_dependency

    project, _ = analysis.fact(_project_of)
    files = project.files_naming(name)
    if not files or len(files) > _FILES:
        return None
    places = []
    for file in files:
        with text_dependency():
            info = project.module(Path(file))
        tree = getattr(info, "tree", None) if info is not None else None
        if tree is None:
            return None
        up, sites = _module_sites(info, tree)
        for node, called in sites.get(name, ()):
            if called is None:
                continue
            if not called and isinstance(node, ast.Attribute) and _tested(node, up):
                continue  # `if opt.compose:`: an option of the same name, tested, not a method handed on
            if isinstance(node, ast.Constant) and not _names_a_member(node, up):
                continue  # `os.path.join(opt.workspace, 'compose')`: text, no lookup of the function
            if not called:
                return None
            places.append(_place(node, up))
    return places


_PLAIN_DECORATORS = ("no_grad", "inference_mode", "enable_grad")


def _plain_decorator(node: cst.BaseExpression) -> bool:
    """`@torch.no_grad()`: a decorator that registers nothing and keeps the function called by its name."""
    if type(node) is cst.Call:
        node = node.func
    last = node.attr.value if type(node) is cst.Attribute else node.value if type(node) is cst.Name else None
    return last in _PLAIN_DECORATORS


def _plain_ast_decorator(node: ast.expr) -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    last = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    return last in _PLAIN_DECORATORS


def only_called_periodically(analysis, fn: cst.FunctionDef) -> Optional[str]:
    """A reason when every call of `fn` in the project runs periodically or once (module docstring)."""
    if analysis.path is None:
        return None
    name = fn.name.value
    if name.startswith("__") or _hook_name(name) or not all(_plain_decorator(d.decorator) for d in fn.decorators):
        return None
    parent = analysis.index.up.get(id(fn))
    if type(parent) is cst.IndentedBlock:
        cls = analysis.index.up.get(id(parent))
        if type(cls) is not cst.ClassDef or type(analysis.index.up.get(id(cls))) is not cst.Module:
            return None
    elif type(parent) is not cst.Module:
        return None
    cache = analysis.fact(_answers)
    if name in cache:
        return cache[name]
    cache[name] = None
    if _called_here_every_time(analysis, name):
        return None  # a call of this module outside any `%` test: no search of the project
    places = _calls(analysis, name)
    answer = None
    if places and any(kind == "periodic" for kind, _ in places):
        answer = f"`{name}` is called only periodically"
        for kind, caller in places:
            if kind in ("periodic", "once"):
                continue
            if kind == "in" and isinstance(caller, ast.FunctionDef) and not caller.name.startswith("__") and \
                    not _hook_name(caller.name) and all(_plain_ast_decorator(d) for d in caller.decorator_list):
                outer = _calls(analysis, caller.name)
                if outer and all(k == "once" for k, _ in outer):
                    continue  # `compose()`, called once by a script, calls it in `for _ in range(3):`
            answer = None
            break
    cache[name] = answer
    return answer


def _called_here_every_time(analysis, name: str) -> bool:
    """The module itself calls `name` (`fn(...)`, `x.fn(...)`) outside every `if` whose test has a `%`: the
    answer is no, without reading the project (the common case: a helper the module's own loop calls)."""
    index = analysis.index
    for node in index.names(name):
        parent = index.up.get(id(node))
        callee = parent if type(parent) is cst.Attribute and parent.attr is node else node
        call = index.up.get(id(callee))
        if type(call) is not cst.Call or call.func is not callee:
            continue
        if not any(type(a) is cst.If and "%" in analysis.code(a.test) for a in index.ancestors(call)):
            return True
    return False


def _answers(analysis) -> dict:
    """Fact provider: the answers of this module's lint, by function name."""
    return {}


def called_only_in_dead_branches(analysis, fn: cst.FunctionDef, never_runs) -> bool:
    """`fn` is a method of a top-level class that only its own module names, and every read of its name there is
    a call `self.<fn>(...)` inside the body of an `if` that never runs (`never_runs`: an option the class never
    turns on, `self.DBval = False`; a debug option off by default): its loops run in no shipped run."""
    name = fn.name.value
    if name.startswith("__") or _hook_name(name) or not all(_plain_decorator(d.decorator) for d in fn.decorators):
        return False
    parent = analysis.index.up.get(id(fn))
    cls = analysis.index.up.get(id(parent)) if type(parent) is cst.IndentedBlock else None
    if type(cls) is not cst.ClassDef or type(analysis.index.up.get(id(cls))) is not cst.Module:
        return False
    cache = analysis.fact(_dead_answers)
    if name not in cache:
        cache[name] = _dead_only(analysis, name, never_runs)
    return cache[name]


def _dead_only(analysis, name: str, never_runs) -> bool:
    reads = analysis.fact(_attribute_reads).get(name, [])
    if not reads or any(type(n) is cst.Name and n.value == name for n in _names(analysis, name)):
        return False  # no call at all (a framework's hook), or read as a bare name
    for attr in reads:
        call = analysis.index.up.get(id(attr))
        if type(call) is not cst.Call or call.func is not attr or type(attr.value) is not cst.Name or \
                attr.value.value != "self":
            return False
        child, dead = attr, False
        for up in analysis.index.ancestors(attr):
            if type(up) is cst.If and child is up.body and never_runs(up):
                dead = True
                break
            if type(up) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                break
            child = up
        if not dead:
            return False
    from gpulint.analysis.forward import _project_of

    # the module's own reads decide first; the project's identifier index only for a method they leave dead
    project, path = analysis.fact(_project_of)
    here = project._resolved(path)
    return all(project._resolved(f) == here for f in project.files_naming(name))


def _names(analysis, name: str):
    """Bare names `name` read in the module (not attributes, not the `def`)."""
    return [n for n in analysis.index.names(name) if type(analysis.index.up.get(id(n))) not in (
        cst.Attribute, cst.FunctionDef)]


def _attribute_reads(analysis) -> dict:
    """Fact provider: attribute name -> the `x.<name>` nodes of the module."""
    from gpulint.analysis.node_types import of_types

    found: dict = {}
    for node in of_types(analysis.index, cst.Attribute):
        found.setdefault(node.attr.value, []).append(node)  # type: ignore[attr-defined]
    return found


def _dead_answers(analysis) -> dict:
    return {}

