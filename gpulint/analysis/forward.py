"""Model code that runs every step: the `forward` of a project `nn.Module` that a training or evaluation loop
calls on every iteration, and the methods (and functions of its module) that `forward` reaches.

MoCo's `forward` calls `self._dequeue_and_enqueue(k)`, which reads `int(self.queue_ptr)` from the GPU; the
training loop in another file calls `model(im_q=..., im_k=...)` once per batch. The read is paid every step,
although no loop is in sight of it. gpulint reports it where it is written, with the loop's call as related
location (`via main_moco.py:426`).

Precision first. A class counts only when some project file builds an instance of it (`Cls(...)`, through the
project's imports; a project factory returning it; wrappers that keep its `forward`: DDP, DataParallel,
`torch.compile`, `.cuda()`/`.to()`) and calls that instance (or its `.forward`) every iteration of a hot loop,
as that file's own loop analysis decides (a call under `if step % N == 0:` is not every step). A model built by
name from a registry (`timm.create_model("resnet50")`) is not followed. Loops inside `forward` (over blocks,
heads) are not hot loops by themselves: what they run is per-step because `forward` is.

Import paths of code exported from a monorepo (`import deeplearning.project.moco.builder` for the file
`moco/builder.py` of the project) do not resolve as Python would resolve them; a constructor named through such
a path counts when the path ends with the module's own path inside the project and the class name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.test_code import is_test_path
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.project import ClassSummary, FunctionSummary, Project, project_for, text_dependency

# Calls that hand back (a wrapper of) the module they are given, whose call still runs its `forward`.
_WRAPPERS = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
             "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.compile",
             "torch.distributed.fsdp.FullyShardedDataParallel", "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
             "torch.nn.parallel.DistributedDataParallelCPU"}
_SELF_METHODS = {"to", "cuda", "cpu", "train", "eval", "half", "float", "bfloat16", "double", "to_empty",
                 "requires_grad_"}
_MAX_DEPTH = 4
_CALLER_ANALYSES = 8  # LibCST analyses of caller files kept per project (the training scripts)
_CALLER_PARSES = 8  # caller files parsed with LibCST per project and run, at most


@dataclass(frozen=True)
class CallSite:
    """Where a loop calls a model every step: the file, the line, the call as written, what it runs."""

    path: Path
    line: int
    code: str
    runs: str  # `MoCo.forward`


# -- the linted module's side: which functions are per-step model code ---------------------------------------------
def per_step_caller(analysis, fn: cst.FunctionDef) -> Optional[CallSite]:
    """The hot call site that runs `fn` every step, when `fn` is the `forward` of a top-level project module
    class (or a method/function of this module that `forward` reaches), else None."""
    if analysis.path is None:
        return None
    owner = analysis.fact(_reached_from_forward).get(id(fn))
    if owner is None:
        return None
    return per_step_site(project_for(Path(analysis.path)), Path(analysis.path), owner)


def _reached_from_forward(analysis) -> dict[int, str]:
    """Fact provider: id(function) -> name of the class whose `forward` reaches it (top-level classes)."""
    index = analysis.index
    module_functions = {s.name.value: s for s in analysis.module.body if isinstance(s, cst.FunctionDef)}
    reached: dict[int, str] = {}
    for stmt in analysis.module.body:
        if not isinstance(stmt, cst.ClassDef) or not isinstance(stmt.body, cst.IndentedBlock):
            continue
        methods = {s.name.value: s for s in stmt.body.body if isinstance(s, cst.FunctionDef)}
        if "forward" not in methods:
            continue
        stack = [methods["forward"]]
        while stack:
            fn = stack.pop()
            if id(fn) in reached:
                continue
            reached[id(fn)] = stmt.name.value
            for node in _own_nodes(fn):
                if not isinstance(node, cst.Call):
                    continue
                func = node.func
                if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                        and func.value.value == "self" and func.attr.value in methods:
                    stack.append(methods[func.attr.value])
                elif isinstance(func, cst.Name) and func.value in module_functions \
                        and len(index.functions.get(func.value, [])) == 1:
                    stack.append(module_functions[func.value])
    return reached


def _own_nodes(fn: cst.FunctionDef):
    stack: list[cst.CSTNode] = [fn.body]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(node.children)


def may_run_every_step(path: Optional[Path], tree: Optional[ast.AST]) -> bool:
    """For the prefilter: some top-level class of the module (its `ast` tree) has a `forward` that a project
    loop calls every step. Only then is a file with no loop of its own worth LibCST's parse."""
    if path is None or not isinstance(tree, ast.Module):
        return False
    names = [s.name for s in tree.body if isinstance(s, ast.ClassDef) and any(
        isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "forward" for m in s.body)]
    if not names:
        return False
    project = project_for(path)
    return any(per_step_site(project, path, name) is not None for name in names)


# -- the project's side: is the class called every step anywhere? -------------------------------------------------
def per_step_site(project: Project, path: Path, class_name: str) -> Optional[CallSite]:
    """A call, in a hot loop of some project file, of an instance of `class_name` (defined in `path`)."""
    from gpulint.analysis.project import _record, recording

    path = path.resolve()
    key = (path, class_name)
    sites = project.per_step_sites
    with project._lock:
        if key not in sites:
            sites[key] = (None, frozenset())  # recursion guard: a caller file's analysis may ask about its classes
            with recording() as used, text_dependency():  # the callers' code, not only their summaries
                found = _find_site(project, path, class_name)
            sites[key] = (found, frozenset(used))
        found, used = sites[key]
        with text_dependency():
            for dependency in used:
                _record(dependency)
        return found


def _find_site(project: Project, path: Path, class_name: str) -> Optional[CallSite]:
    callers = [info for info in map(project.module, (f for f in project.files_naming(class_name, training=True)
                                                     if not is_test_path(f, project.root)))
               if info is not None and _may_call_in_hot_loop(project, info, class_name)]
    if not callers:  # the common case, decided from text and `ast` alone
        return None
    info = project.module(path)
    cls = info.classes.get(class_name) if info is not None else None
    if cls is None or not project.is_module_class(cls):
        return None
    for caller_info in callers:
        hot_calls = _hot_calls(project, caller_info.path)
        if not hot_calls:
            continue
        analysis = hot_calls[0][0]
        from gpulint.analysis.calls import project_calls

        calls = analysis.fact(project_calls)
        resolver = _Instances(calls, project, cls) if calls is not None else None
        for _, node, target in hot_calls:
            if resolver is not None and resolver.may_be(target):
                return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)",
                                f"{cls.name}.forward")
    return None


def _may_call_in_hot_loop(project: Project, info, class_name: str) -> bool:
    """On the caller's `ast` tree (cached per content), before any LibCST parse: it calls something named
    `class_name` (a constructor, `pkg.mod.Cls(...)`), and the prefilter's over-approximation of a hot loop
    holds in it."""
    from gpulint.prefilter import HOT_LOOP, FileFacts

    cached = project.hot_loop_files.get(info.path)
    if cached is None or cached[0] != info.digest:
        called = frozenset(_last_name(n.func) for n in ast.walk(info.tree) if isinstance(n, ast.Call))
        hot = FileFacts("", info.tree).holds(HOT_LOOP)
        cached = project.hot_loop_files[info.path] = (info.digest, hot, called)
    return cached[1] and class_name in cached[2]


def _last_name(func: ast.expr) -> Optional[str]:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _hot_calls(project: Project, path: Path) -> list:
    """(analysis, call, what is called) for every call of a name or `self.x` (or its `.forward`) that runs every
    iteration of a hot loop of `path`, from one LibCST parse of it (at most `_CALLER_PARSES` callers are
    parsed per project and run: past that, a model is not followed, to bound the cost)."""
    from gpulint.analysis import ModuleAnalysis
    from gpulint.files import FileError, read_regular
    from gpulint.incremental import parse_module  # the script's own lint may have parsed it a moment ago

    cache = project.caller_analyses
    if path in cache:
        cache.move_to_end(path)
        return cache[path]
    if project.caller_parses >= _CALLER_PARSES:
        return []
    project.caller_parses += 1
    found: list = []
    try:
        text = read_regular(path)[0].decode("utf-8")  # never a FIFO or a device: they would block the read
        analysis = ModuleAnalysis(parse_module(text), text, path)
        # Only the caller's own loops: a model that another model's forward calls is not followed (bounded cost).
        analysis.loops.per_step_caller = None
    except (OSError, FileError, UnicodeDecodeError, ValueError, RecursionError, cst.ParserSyntaxError):
        analysis = None
    for node in analysis.index.nodes if analysis is not None else ():
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        target = func.value if isinstance(func, cst.Attribute) and func.attr.value == "forward" else func
        if not (isinstance(target, cst.Name) or isinstance(target, cst.Attribute) and isinstance(
                target.value, cst.Name) and target.value.value == "self"):
            continue
        if analysis.execution(node).every_iteration:
            found.append((analysis, node, target))
    cache[path] = found
    while len(cache) > _CALLER_ANALYSES:
        cache.popitem(last=False)
    return found


def _line_of(analysis, node: cst.CSTNode) -> int:
    from gpulint.runner import _positions, first_lines  # the runner's cheap per-statement positions

    try:  # where statements start, so only the statement holding the call is printed (unit_positions.py)
        firsts = first_lines(ast.parse(analysis.source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        firsts = None
    position = _positions(analysis, analysis.source, [node], firsts).get(node)
    return position.start.line if position is not None else 1


class _Instances:
    """Whether an expression of a caller module may hold an instance of `cls` (and nothing else)."""

    def __init__(self, calls, project: Project, cls: ClassSummary) -> None:
        self.calls = calls
        self.index = calls.index
        self.project = project
        self.cls = cls
        self._suffix = _module_dotted(project.root, cls.path)
        self._memo: dict[int, bool] = {}

    def may_be(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH:
            return False
        key = id(expr)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # cycles: `model = DDP(model)`
        found = self._memo[key] = self._compute(expr, depth)
        return found

    def _compute(self, expr: cst.BaseExpression, depth: int) -> bool:
        if isinstance(expr, cst.Call):
            wrapped = self._wrapped(expr)
            if wrapped is not None:
                return self.may_be(wrapped, depth + 1)
            return self._constructs(expr)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            values = self.calls.self_attributes(expr)
            return bool(values) and all(self.may_be(v, depth + 1) for v in values)
        if not isinstance(expr, cst.Name):
            return False
        bindings = self.index.visible_bindings(expr)
        if not bindings or len(bindings) > 16:
            return False
        found = False
        for b in bindings:
            if b.kind == "param":
                if not self._parameter(b, depth):
                    return False
            elif b.kind in ("assign", "annassign") and b.index is None and b.value is not None:
                if self._rewraps(b.value, expr.value):
                    continue  # `model = DDP(model)`: the same model
                if not self.may_be(b.value, depth + 1):
                    return False
            else:
                return False
            found = True
        return found

    def _wrapped(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SELF_METHODS:
            return func.value
        if self.calls.analysis.qualified(func) in _WRAPPERS and call.args and call.args[0].keyword is None \
                and not call.args[0].star:
            return call.args[0].value
        return None

    def _rewraps(self, value: cst.BaseExpression, name: str) -> bool:
        while isinstance(value, cst.Call):
            inner = self._wrapped(value)
            if inner is None:
                return False
            value = inner
        return isinstance(value, cst.Name) and value.value == name

    def _constructs(self, call: cst.Call) -> bool:
        found = self.calls._lookup(call.func)
        if isinstance(found, ClassSummary):
            return _same(found, self.cls)
        if isinstance(found, FunctionSummary):
            return bool(found.returns_classes) and all(c is not None and _same(c, self.cls)
                                                       for c in found.returns_classes[:1])
        dotted = dotted_name(call.func) or ""
        qualified = self.calls.analysis.qualified(call.func) or dotted
        return bool(self._suffix) and any(
            name.endswith(f".{self._suffix}.{self.cls.name}") for name in (dotted, qualified))

    def _parameter(self, binding, depth: int) -> bool:
        """A parameter of a function: every call site in this module passes an instance (or, for a top-level
        function called elsewhere, the project's call sites agree on the class)."""
        fn = binding.source
        if not isinstance(fn, cst.FunctionDef):
            return False
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        position = params.index(binding.name) if binding.name in params else None
        found = False
        for node in self.index.nodes:
            if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Name) \
                    or node.func.value != fn.name.value or self.calls.analysis.loops.local_function(node) is not fn:
                continue
            argument = _argument(node, position, binding.name)
            if argument is None or not self.may_be(argument, depth + 1):
                return False
            found = True
        if not found:  # no call site in this module: the project's call sites (a top-level function)
            cross = self.calls._parameter_class(binding)
            return cross is not None and _same(cross, self.cls)
        return found


def _argument(call: cst.Call, position: Optional[int], name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional):
        return None
    if position is not None and position < len(positional):
        return positional[position].value
    return None


def _same(a: ClassSummary, b: ClassSummary) -> bool:
    return a is b or (a.name == b.name and a.path.resolve() == b.path.resolve())


def _module_dotted(root: Path, path: Path) -> str:
    """`moco.builder` for `<root>/moco/builder.py`; "" for a module at the root (too short to match safely)."""
    try:
        parts = list(path.resolve().relative_to(root).with_suffix("").parts)
    except ValueError:
        return ""
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if len(parts) >= 2 else ""
