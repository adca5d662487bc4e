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
name from a library's registry (`timm.create_model("resnet50")`) is not followed; one picked by name from the
project's own registries, module namespaces or dicts is (analysis/named_classes.py: any candidate counts). Loops inside `forward` (over blocks,
heads) are not hot loops by themselves: what they run is per-step because `forward` is.

Import paths of code exported from a monorepo (`import deeplearning.project.moco.builder` for the file
`moco/builder.py` of the project) do not resolve as Python would resolve them; a constructor named through such
a path counts when the path ends with the module's own path inside the project and the class name.
"""

from __future__ import annotations

import ast
import hashlib
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.import_aliases import local_names

from gpulint import ast_walk, incremental
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.isinstance_narrowing import narrowed_class
from gpulint.analysis.wrapped_calls import wrapper_call_site
from gpulint.analysis.once import once_per_object
from gpulint.analysis.unset_options import first_step_only, hasattr_self, unset_options
from gpulint.analysis.helper_sites import function_fed_by_a_gpu_file, helpers_feed_a_gpu, imported_helper_site, \
    passed_object_site
from gpulint.analysis.vec_env_wrappers import vec_env_site
from gpulint.analysis.stepping_functions import stepping_site
from gpulint.analysis.overrides import override_site
from gpulint.analysis.framework_steps import framework_site
from gpulint.analysis.inherited_calls import inherited_site
from gpulint.analysis.dispatched_calls import dispatched_site
from gpulint.analysis.event_hooks import event_site
from gpulint.analysis.trained_modules import assumed_site
from gpulint.analysis.tree import child_nodes
from gpulint.analysis.project import ClassSummary, FunctionSummary, Project, Registry, _dotted, \
    held_python_tree, project_for, text_dependency
from gpulint.syntax import argument_for, positional_names

# Calls that hand back (a wrapper of) the module they are given, whose call still runs its `forward`.
_WRAPPERS = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
             "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.compile",
             "torch.distributed.fsdp.FullyShardedDataParallel", "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
             "torch.nn.parallel.DistributedDataParallelCPU"}
# `nn.ModuleList`/`nn.ModuleDict`/`nn.Sequential` methods that add a module to the container
_CONTAINER_ADDS = {"append", "extend", "insert", "add_module", "update"}
_SELF_METHODS = {"to", "cuda", "cpu", "train", "eval", "half", "float", "bfloat16", "double", "to_empty",
                 "requires_grad_"}
_MAX_DEPTH = 4
_MAX_ENTRIES = 6  # entry points tried per function
_CALLER_ANALYSES = 64  # LibCST analyses of caller files kept per project (the training scripts)
# Caller files looked at per question (a class's or a function's hot call site), at most: the first ones in the
# project's file order that pass the `ast` filters, whether or not this process has analysed them before. The
# bound is per question, never per process: an answer must not depend on which files a worker linted before
# (a budget shared by all questions of a process made findings change with --jobs and from run to run).
_CALLERS_PER_QUESTION = 8


@dataclass(frozen=True)
class CallSite:
    """Where a loop calls a model every step: the file, the line, the call as written, what it runs."""

    path: Path
    line: int
    code: str
    runs: str  # `MoCo.forward`
    owner: Optional[str] = None  # for a submodule's call in another module's forward: that module's class
    # Parameters of what it runs that the call passes a periodic value (`collect_param_metrics=should_log`,
    # with `should_log = step % N == 0`) or `False`: a block under `if collect_param_metrics:` there is not
    # run every step.
    periodic_params: frozenset = frozenset()
    # For a top-level function: (how many positional arguments the call passes, the keywords it passes), or
    # None when not known (`*args`/`**kwargs`, a method): `if param is None:` blocks follow from it (loops.py).
    arguments: Optional[tuple] = None
    # For a submodule's call: the owner's method holding it (`act` of `Policy`, which a hot loop calls)
    owner_member: str = "forward"
    # No loop was seen to call it: the `forward` (or `__call__`) of a module class of a project that runs models
    # on a GPU, per-step because a network's forward runs once per batch (analysis/trained_modules.py). `path`
    # and `line` are the method's own; there is no call to show.
    assumed: bool = False


# -- the linted module's side: which functions are per-step model code ---------------------------------------------
def per_step_caller(analysis, fn: cst.FunctionDef) -> Optional[CallSite]:
    """The hot call site that runs `fn` every step, when `fn` is the `forward` of a top-level project module
    class, a method of a top-level class or a top-level function that a loop elsewhere calls every step (or a
    method/function of this module that one of them reaches), else None."""
    if analysis.path is None:
        return None
    entries = analysis.fact(_entries).get(id(fn))
    if not entries:
        # a closure a top-level factory returns (`step_fn` of `get_step_fn`): where its caller calls it
        from gpulint.analysis.closure_factories import closure_site
        return closure_site(analysis, fn)
    project, path = analysis.fact(_project_of)
    for owner, member in entries:
        if member == "forward" and owner is not None:
            site = per_step_site(project, path, owner) or framework_site(project, path, owner, member)
        elif member == "__init__" and owner is not None:
            # a plain class another module's per-step code builds (`attn_mask = ProbMask(B, H, L, ...)`)
            site = imported_helper_site(project, path, owner)
        elif member in _ITERATOR_METHODS and owner is not None:
            # `for x, y in train_iter:` of an instance elsewhere: its `__next__` runs once per iteration
            site = iterated_site(project, path, owner)
        elif member == "__call__" and owner is not None:
            site = call_site(project, path, owner)
            if site is None:  # `super().training_losses(self._wrap_model(model), ...)` in a per-step method
                cls = next((s for s in analysis.module.body if type(s) is cst.ClassDef and s.name.value == owner), None)
                site = wrapper_call_site(analysis, cls) if cls is not None else None
        else:
            site = member_site(project, path, owner, member)
            if site is None and owner is not None:  # a hook the base class's step calls through `self`
                site = override_site(project, path, owner, member)
            if site is None and owner is not None:  # a method a framework calls every step (framework_steps)
                site = framework_site(project, path, owner, member)
            if site is None and owner is not None:  # a subclass's per-step method calls it through `self`
                site = inherited_site(project, path, owner, member)
            if site is None and owner is not None:  # `envs.step(action)` of a vectorised-environment wrapper
                site = vec_env_site(project, path, owner, member)
            if site is None and owner is not None:  # a framework step calls it on an attribute declared as a base
                site = dispatched_site(project, path, owner, member)
            if site is None and owner is not None:  # another module's per-step method is handed the object
                site = passed_object_site(project, path, owner, member)
            if site is None and owner is not None:  # a callback run by its event's name (`self('after_batch')`)
                site = event_site(project, path, owner, member)
            if site is None and owner is not None:  # a runner's loop over an object parameter (`agent.step()`)
                from gpulint.analysis.driver_loops import driver_site
                site = driver_site(project, path, owner, member)
            elif site is None:  # a helper another module's per-step `forward` imports and calls
                site = imported_helper_site(project, path, member)
        if site is not None:
            return site
    return None


def _project_of(analysis) -> tuple[Project, Path]:
    """Fact provider: the module's project and path, found once per lint (the language server finds the root
    again for every lint, a walk up the folders: not for every function the loop analysis asks about)."""
    path = Path(analysis.path)
    return project_for(path), path


def _entries(analysis) -> dict[int, list[tuple[Optional[str], str]]]:
    """Fact provider: id(function) -> the entry points that reach it, as (class or None, method or function):
    the `forward` of top-level classes first, then their other methods (`__call__` included, other dunders
    not: construction and printing are not steps), then top-level functions. A function is reached from an
    entry through `self.method(...)` calls of its class and calls of the module's own functions."""
    index = analysis.index
    module_functions = {s.name.value: s for s in analysis.module.body if type(s) is cst.FunctionDef}
    reached: dict[int, list[tuple[Optional[str], str]]] = {}
    callees: dict[int, list[tuple[bool, str, Optional[str]]]] = {}  # id(function) -> its own calls `self.m(...)`

    def own_callees(fn: cst.FunctionDef) -> list[tuple[bool, str, Optional[str]]]:
        """(through `self`, name) of each call in `fn`'s own body: walked once per function, however many
        entries reach it (`_calls_of`)."""
        found = callees.get(id(fn))
        if found is None:
            found = callees[id(fn)] = _calls_of(fn)
        return found

    def reach(start: cst.FunctionDef, entry: tuple[Optional[str], str], owner: Optional[str]) -> None:
        stack, seen = [(start, owner)], set()
        while stack:
            fn, cls = stack.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            known = reached.setdefault(id(fn), [])
            if entry not in known and len(known) < _MAX_ENTRIES:
                known.append(entry)
            methods = methods_of.get(cls, {}) if cls is not None else {}
            for through_self, name, guard in own_callees(fn):
                if guard is not None and analysis.fact(unset_options).attribute_never_set(guard):
                    continue  # `if hasattr(self, "split_input_params"):` of an attribute no training sets
                if through_self == "read":  # `self.r` of a `@property r`: its body runs on every read
                    if name in methods and _is_property(methods[name]):
                        stack.append((methods[name], cls))
                elif through_self == "held":  # `self.grid.build(x)`: a method of a class this module defines
                    attribute, _, method = name.partition(".")
                    other = held.get(cls, {}).get(attribute) if cls is not None else None
                    if other is not None and method in methods_of[other]:
                        stack.append((methods_of[other][method], other))
                elif through_self:
                    if name in methods:
                        stack.append((methods[name], cls))
                elif name in module_functions and _one_plain_function(index, name):
                    stack.append((module_functions[name], cls))
                elif name in plain_inits:  # `ProbMask(B, L, device=x.device)`: building it runs its `__init__`
                    stack.append((plain_inits[name], name))

    classes = [(stmt, _methods(stmt)) for stmt in analysis.module.body
               if type(stmt) is cst.ClassDef and type(stmt.body) is cst.IndentedBlock]
    methods_of = {stmt.name.value: methods for stmt, methods in classes}
    held = {stmt.name.value: _held_instances(methods.get("__init__"), methods_of) for stmt, methods in classes}
    plain_inits = _plain_inits(classes, module_functions)
    for stmt, methods in classes:
        if "forward" in methods:
            reach(methods["forward"], (stmt.name.value, "forward"), stmt.name.value)
    for stmt, methods in classes:
        for name, method in methods.items():
            if name != "forward" and _entry_method(name):
                reach(method, (stmt.name.value, name), stmt.name.value)
    for stmt, methods in classes:  # an iterator class's `__next__`: a loop over an instance drives it
        for name in _iterator_methods(methods):
            reach(methods[name], (stmt.name.value, name), stmt.name.value)
    for name, fn in module_functions.items():
        reach(fn, (None, name), None)
    for name, init in plain_inits.items():  # `ProbMask(...)` built in another module's per-step code
        reach(init, (name, "__init__"), name)
    return reached


_ITERATOR_METHODS = ("__next__",)


def _iterator_methods(methods: dict) -> list[str]:
    """The methods of a class that a `for` over an instance (or `next(it)`) runs once per item: `__next__`. A
    generator `__iter__` is left out: what it runs before its loop runs once per pass, not per item, and an
    `__iter__` that returns an object (`return self`) computes nothing per item."""
    return ["__next__"] if "__next__" in methods else []


def _plain_inits(classes, module_functions) -> dict[str, cst.FunctionDef]:
    """Class name -> its `__init__`, for the module's top-level plain classes (no base but `object`, no `forward`):
    a per-step call `Mask(B, L, device=x.device)` runs that `__init__` every step, and what it builds there is
    built every step. A module class (any base, a `forward`) is left out: constructing one is GPU-free setup or
    another rule's matter (a layer built in a step)."""
    found: dict[str, cst.FunctionDef] = {}
    for stmt, methods in classes:
        name = stmt.name.value
        plain = all(type(b.value) is cst.Name and b.value.value == "object" and b.keyword is None
                    for b in stmt.bases)
        if plain and "__init__" in methods and "forward" not in methods and name not in module_functions:
            found[name] = methods["__init__"]
    return found


def _plain_class(stmt: ast.ClassDef) -> bool:
    """`_plain_inits`' classes on `ast`: no base but `object`, an `__init__`, no `forward`."""
    methods = {m.name for m in stmt.body if isinstance(m, ast.FunctionDef)}
    return all(isinstance(b, ast.Name) and b.id == "object" for b in stmt.bases) and not stmt.keywords and \
        "__init__" in methods and "forward" not in methods


def _one_plain_function(index, name: str) -> bool:
    """One function of the module by this name outside class bodies: a bare `zero_grad(...)` in a method names
    the module's function even where a class also has a method `zero_grad` (a method is reached only through
    `self.`); a nested function of the same name makes it ambiguous."""
    plain = 0
    for fn in index.functions.get(name, []):
        scope = next((a for a in index.ancestors(fn) if type(a) in (cst.ClassDef, cst.FunctionDef, cst.Module)),
                     None)
        if type(scope) is not cst.ClassDef:
            plain += 1
    return plain == 1


def _held_instances(init: Optional[cst.FunctionDef], methods_of: dict) -> dict[str, str]:
    """`self.grid = GridGenerator(...)` in `__init__`, for a class of this module: attribute -> class (an attribute
    assigned anything else as well is left out)."""
    found: dict[str, str] = {}
    other: set[str] = set()
    if init is None:
        return found
    for node in _own_nodes(init):
        if type(node) is not cst.Assign or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if type(target) is not cst.Attribute or type(target.value) is not cst.Name or target.value.value != "self":
            continue
        value = node.value
        name = value.func.value if type(value) is cst.Call and type(value.func) is cst.Name else None
        if name in methods_of and found.get(target.attr.value, name) == name:
            found[target.attr.value] = name
        else:
            other.add(target.attr.value)
    return {k: v for k, v in found.items() if k not in other}


def _methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """A class's methods by name; a property's getter, not its `@r.setter`."""
    methods: dict[str, cst.FunctionDef] = {}
    for s in cls.body.body:
        if type(s) is cst.FunctionDef and not (s.name.value in methods and any(
                type(d.decorator) is cst.Attribute and d.decorator.attr.value in ("setter", "deleter")
                for d in s.decorators)):
            methods[s.name.value] = s
    return methods


def _is_property(fn: cst.FunctionDef) -> bool:
    return any(type(d.decorator) is cst.Name and d.decorator.value == "property" for d in fn.decorators)


def _entry_method(name: str) -> bool:
    return name == "__call__" or not (name.startswith("__") and name.endswith("__"))


def _calls_of(fn: cst.FunctionDef) -> list[tuple[bool, str, Optional[str]]]:
    """(through `self`, name, guard) of each call in `fn`'s own body (`_guarded_nodes`: a call under
    `if hasattr(self, "X"):` has the guard "X", else None; one under a first-step test is left out). A function
    of nodes that never change: in an editor, kept by node (`incremental.by_node`) for the next lints, where the
    unchanged functions keep their nodes."""
    known = incremental.by_node(_calls_of, fn)
    if known is not None:
        return known
    found: list = []
    for node, guard in _guarded_nodes(fn):
        if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
            found.append(("read", node.attr.value, guard))  # a property read (callers keep only properties)
            continue
        if type(node) is cst.Dict:  # a dispatch table, `{'TransE': self.TransE, ...}[self.model_name](h, r, t)`
            found.extend((True, e.value.attr.value, guard) for e in node.elements if type(e) is cst.DictElement and
                         type(e.value) is cst.Attribute and type(e.value.value) is cst.Name and
                         e.value.value.value == "self")
            continue
        if type(node) is not cst.Call:
            continue
        func = node.func
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            found.append((True, func.attr.value, guard))
        elif type(func) is cst.Attribute and type(func.value) is cst.Attribute and \
                type(func.value.value) is cst.Name and func.value.value.value == "self":
            found.append(("held", f"{func.value.attr.value}.{func.attr.value}", guard))
        elif type(func) is cst.Name:
            found.append((False, func.value, guard))
    incremental.keep_by_node(_calls_of, fn, found)
    return found


def _own_nodes(fn: cst.FunctionDef):
    """The nodes of `fn`'s body, not those of functions, classes and lambdas nested in it (layout tokens left
    out: `child_nodes`, a fraction of the cost of LibCST's `children`, which rebuilds every node it passes)."""
    stack: list[cst.CSTNode] = [fn.body]
    while stack:
        node = stack.pop()
        yield node
        if type(node) is cst.If and once_per_object(node, fn):
            # `if self.first: ...; self.first = False`: its body runs on the first call only (analysis/once.py)
            stack.extend(n for n in (node.test, node.orelse) if n is not None)
        elif not isinstance(node, _NESTED):
            stack.extend(child_nodes(node))


_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _guarded_nodes(fn: cst.FunctionDef):
    """`_own_nodes` with, for each node, the attribute `X` of the innermost `if hasattr(self, "X"):` whose body
    holds it (else None); the bodies of first-step tests (`if self.global_step == 0 and batch_idx == 0:`, run on
    the first step only: analysis/unset_options.py) are left out, as `once_per_object` blocks are."""
    stack: list[tuple[cst.CSTNode, Optional[str]]] = [(fn.body, None)]
    while stack:
        node, guard = stack.pop()
        yield node, guard
        if type(node) is cst.If and once_per_object(node, fn):
            stack.extend((n, guard) for n in (node.test, node.orelse) if n is not None)
        elif type(node) is cst.If and first_step_only(node.test):
            stack.extend((n, guard) for n in (node.test, node.orelse) if n is not None)
        elif type(node) is cst.If and hasattr_self(node.test) is not None:
            stack.append((node.body, hasattr_self(node.test)))
            stack.extend((n, guard) for n in (node.test, node.orelse) if n is not None)
        elif not isinstance(node, _NESTED):
            stack.extend((n, guard) for n in child_nodes(node))


def may_run_every_step(path: Optional[Path], tree: Optional[ast.AST]) -> bool:
    """For the prefilter: some top-level class of the module (its `ast` tree) has a `forward`, a method or a
    function that a project loop calls every step. Only then is a file with no loop of its own worth LibCST's
    parse."""
    if path is None or not isinstance(tree, ast.Module):
        return False
    project = project_for(path)
    # One lint asks up to three times (the prefilter, the device-free rules, the rule gate), with the same tree:
    # the answer is kept for that tree, path and dependency recording (weakly: neither is held by the memo), and
    # a repeat inside the same recording has nothing to record that the first ask did not.
    from gpulint.analysis.project import _RECORDING

    outer = getattr(_RECORDING, "paths", None)
    text_mode = getattr(_RECORDING, "text_mode", False)
    with project._lock:
        kept = project.per_step_sites.get(_EVERY_STEP_KEY)
    if kept is not None and kept[0]() is tree and kept[1] == path and kept[3] == text_mode and \
            (kept[2]() if kept[2] is not None else None) is outer:
        return kept[4]
    answer = _may_run_every_step(project, path, tree)
    with project._lock:
        project.per_step_sites[_EVERY_STEP_KEY] = (
            weakref.ref(tree), path, weakref.ref(outer) if outer is not None else None, text_mode, answer)
    return answer


_EVERY_STEP_KEY = ("may run every step",)  # the last answer of `may_run_every_step` (one entry, per project state)


def _may_run_every_step(project: Project, path: Path, tree: ast.Module) -> bool:
    from gpulint.analysis.driver_loops import driver_site

    names = [s.name for s in tree.body if isinstance(s, ast.ClassDef) and any(
        isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "forward" for m in s.body)]
    if any(per_step_site(project, path, name) is not None for name in names):
        return True
    if trainer_built_by_a_gpu_file(project, path, tree):
        return True  # an agent class whose own minibatch loop trains, built by a file that names the device
    iterators = [s.name for s in tree.body if isinstance(s, ast.ClassDef) and any(
        isinstance(m, ast.FunctionDef) and m.name == "__next__" for m in s.body)]
    if any(iterated_site(project, path, name) is not None for name in iterators):
        return True  # an iterator class a step loop drives (`for x, y in train_iter:`)
    callables = [s.name for s in tree.body if isinstance(s, ast.ClassDef) and any(
        isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "__call__" for m in s.body)]
    if any(call_site(project, path, name) is not None for name in callables):
        return True
    from gpulint.analysis.trained_modules import stepped_optimizer

    if any(isinstance(s, ast.ClassDef) and any(_dotted_base(b).endswith("Optimizer") for b in s.bases)
           and stepped_optimizer(project, path, s.name) for s in tree.body):
        return True  # a hand-written optimizer's `step`, run every iteration (GPU411)
    from gpulint.analysis.closure_factories import module_closures_run
    if module_closures_run(project, path, tree):
        return True  # a closure a factory of it returns runs every step (`train_step_fn(state, batch)`)
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and (called_in_a_hot_loop(project, stmt.name) or
                                                  stored_by_partial(project, stmt.name)):
            if member_site(project, path, None, stmt.name) is not None:
                return True
        if isinstance(stmt, ast.FunctionDef) and imported_helper_site(project, path, stmt.name) is not None:
            return True
        if isinstance(stmt, ast.FunctionDef) and function_fed_by_a_gpu_file(project, path, stmt):
            return True  # its loop runs the network a file naming the device hands it (helper_sites)
        if isinstance(stmt, ast.ClassDef) and _plain_class(stmt) and \
                imported_helper_site(project, path, stmt.name) is not None:
            return True  # a plain class whose construction another module's per-step code runs
        elif isinstance(stmt, ast.ClassDef):
            # a model class's base helpers are left to its own searches: `inherited_site` only for other classes
            has_forward = any(isinstance(m, ast.FunctionDef) and m.name == "forward" for m in stmt.body)
            for m in stmt.body:
                if isinstance(m, ast.FunctionDef) and m.name != "forward" and _entry_method(m.name) and \
                        called_in_a_hot_loop(project, m.name) and \
                        member_site(project, path, stmt.name, m.name) is not None:
                    return True
                if stmt.bases and isinstance(m, ast.FunctionDef) and _entry_method(m.name) and \
                        override_site(project, path, stmt.name, m.name) is not None:
                    return True
                if stmt.bases and isinstance(m, ast.FunctionDef) and \
                        framework_site(project, path, stmt.name, m.name) is not None:
                    return True
                if isinstance(m, ast.FunctionDef) and m.name != "forward" and _entry_method(m.name) and \
                        not has_forward and inherited_site(project, path, stmt.name, m.name) is not None:
                    return True
                if stmt.bases and isinstance(m, ast.FunctionDef) and _entry_method(m.name) and \
                        dispatched_site(project, path, stmt.name, m.name) is not None:
                    return True
                if stmt.bases and isinstance(m, ast.FunctionDef) and \
                        vec_env_site(project, path, stmt.name, m.name) is not None:
                    return True
                if isinstance(m, ast.FunctionDef) and m.name != "forward" and _entry_method(m.name) and \
                        passed_object_site(project, path, stmt.name, m.name) is not None:
                    return True  # `replay_buffer.sample(...)` in another module's per-step method
                if isinstance(m, ast.FunctionDef) and _entry_method(m.name) and m.name != "__call__" and \
                        event_site(project, path, stmt.name, m.name) is not None:
                    return True  # a callback another module runs by its event's name every step
                if isinstance(m, ast.FunctionDef) and _entry_method(m.name) and m.name not in ("__call__", "forward") \
                        and driver_site(project, path, stmt.name, m.name) is not None:
                    return True  # a runner's loop over an object parameter calls it every iteration
    return False


# -- the project's side: is the class called every step anywhere? -------------------------------------------------
def per_step_site(project: Project, path: Path, class_name: str) -> Optional[CallSite]:
    """A call, in a hot loop of some project file, of an instance of `class_name` (defined in `path`)."""
    from gpulint.analysis.overrides import template_site

    path = _resolved(project, path)
    # or the model called as itself in a training loop it inherits (`BaseModel.fit`: `model = self.train()`)
    # or, when no route decides it, a module class of a GPU project: its forward runs every batch (trained_modules)
    return _remembered(project, (path, class_name), lambda: _find_site(project, path, class_name)
                       or template_site(project, path, class_name) or assumed_site(project, path, class_name))


def _resolved(project: Project, path: Path) -> Path:
    """`path.resolve()`, remembered by the project for an absolute path (`Project._resolved`: the same memo its
    modules are found by); a path.resolve() walks every folder of the path with a system call each."""
    return project._resolved(path) if path.is_absolute() else path.resolve()


def _remembered(project: Project, key: tuple, find) -> Optional[CallSite]:
    """`find()` once per project state and key, with the files it read recorded as the caller's dependencies
    (the callers' code, not only their summaries); a recursion guard while it runs (a caller file's analysis
    may ask about the same class), dropped if the lint is abandoned midway (incremental.Cancelled)."""
    from gpulint.analysis.project import _record_all, recording

    sites = project.per_step_sites
    with project._lock:
        if key not in sites:
            sites[key] = (None, frozenset())
            try:
                with recording() as used, text_dependency():
                    found = find()
            except BaseException:  # nothing learnt
                sites.pop(key, None)
                raise
            sites[key] = (found, frozenset(used))
        found, used = sites[key]
        with text_dependency():
            _record_all(used)  # each dependency, as `_record` of each would
        return found


def call_site(project: Project, path: Path, class_name: str) -> Optional[CallSite]:
    """A call, in a hot loop of some project file, of an instance of `class_name` (defined in `path`) that
    runs its `__call__` (`loss_scaler(loss, optimizer, ...)` every step)."""
    path = _resolved(project, path)
    return _remembered(project, (path, class_name, "__call__"),
                       lambda: _find_site(project, path, class_name, "__call__")
                       or assumed_site(project, path, class_name, "__call__"))


def iterated_site(project: Project, path: Path, class_name: str) -> Optional[CallSite]:
    """A step loop, in some project file, that iterates an instance of the iterator class `class_name` (defined in
    `path`): `for i, (x, y) in enumerate(train_iter):` or `batch = next(it)` every iteration, where the instance is
    built there, or built by the module that hands it to the loop's function (`train_iter =
    build_iterator(data, config)` then `train(config, model, train_iter)`, whose loop iterates its parameter).
    Each iteration runs the class's `__next__` once."""
    path = _resolved(project, path)
    return _remembered(project, (path, class_name, "__next__"), lambda: _find_iterated(project, path, class_name))


# Calls that hand on the items of the iterable they are given, one per item (`enumerate(it)`, `tqdm(it)`)
_ITEM_WRAPPERS = {"enumerate", "zip", "tqdm", "iter", "islice", "cycle", "chain"}


def _find_iterated(project: Project, path: Path, class_name: str) -> Optional[CallSite]:
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.loops import LoopRole

    info = project.module(path)
    cls = info.classes.get(class_name) if info is not None else None
    if cls is None or "__next__" not in cls.methods:
        return None
    # `for x in it:` runs `it.__next__` only when `iter(it)` is `it` itself (`def __iter__(self): return self`)
    own_iter = cls.methods.get("__iter__")
    returns = [n.value for n in ast_walk.walk(own_iter) if isinstance(n, ast.Return)] if own_iter is not None else []
    iterates_itself = bool(returns) and all(isinstance(r, ast.Name) and r.id == "self" for r in returns)
    # the instance may be built by a script with no loop, which hands it to another module's loop
    names = (class_name, *_factories_building(project, info, class_name, training=False),
             *_subclasses_in_module(info, class_name),
             *_chooser_names(project, info, class_name))
    callers: list = []
    handed: set = set()  # (module path, function, parameter) that a module building the instance hands it
    for name in names:
        for file in project.files_naming(name):
            if project.is_test(file):
                continue
            caller = project.module(file)
            if caller is None or caller in callers:
                continue
            callers.append(caller)
            for module, function, param in _handed_to(project, caller, set(names), path):
                handed.add((_resolved(project, module.path), function, param))
                if module not in callers:
                    callers.append(module)
    looked_at = 0
    handed_modules = {module for module, _, _ in handed}
    for caller in callers:
        hot, called = _hot_file(project, caller)
        if not hot or called.isdisjoint(names) and _resolved(project, caller.path) not in handed_modules:
            continue  # no hot loop, or it neither builds the instance nor is handed it: decided from `ast` alone
        if looked_at == _CALLERS_PER_QUESTION:
            break
        looked_at += 1
        analysis = caller_analysis(project, caller.path)
        calls = analysis.fact(project_calls) if analysis is not None else None
        if calls is None:
            continue
        resolver = _Instances(calls, project, cls, "__next__")
        for node in analysis.index.nodes:
            if type(node) is cst.For and iterates_itself and analysis.loops.role(node) is LoopRole.HOT:
                iterated = _iterated_value(node.iter)
                if iterated is not None and (_handed_parameter(analysis, iterated, handed)
                                             or resolver.may_be(iterated)):
                    return CallSite(analysis.path, _line_of(analysis, node), f"for ... in {analysis.code(node.iter)}",
                                    f"{cls.name}.__next__")
            elif type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "next" and \
                    node.args and analysis.execution(node).every_iteration and (
                        _handed_parameter(analysis, node.args[0].value, handed)
                        or resolver.may_be(node.args[0].value)):
                return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node)}",
                                f"{cls.name}.__next__")
    return None


def _handed_parameter(analysis, expr: cst.BaseExpression, handed: set) -> bool:
    """`expr` is a parameter of a top-level function of the module, and only that (never rebound), that a
    module building the instance hands it (`_handed_to`)."""
    if not handed or type(expr) is not cst.Name:
        return False
    bindings = analysis.index.visible_bindings(expr)
    if len(bindings) != 1 or bindings[0].kind != "param" or type(bindings[0].source) is not cst.FunctionDef:
        return False
    fn = bindings[0].source
    if type(analysis.index.up.get(id(fn))) is not cst.Module:
        return False
    return (Path(analysis.path).resolve(), fn.name.value, expr.value) in handed


def _iterated_value(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """What a `for` header iterates item by item: `x` of `x`, `enumerate(x)`, `tqdm(x)`, `zip(x, ...)` (the
    first argument), else None."""
    while type(expr) is cst.Call:
        func = expr.func
        last = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else None
        if last not in _ITEM_WRAPPERS or not expr.args or expr.args[0].keyword is not None or expr.args[0].star:
            return None
        expr = expr.args[0].value
    return expr if type(expr) in (cst.Name, cst.Attribute) else None


def _handed_to(project: Project, caller, names: set, class_path: Path) -> list:
    """(module, function, parameter) for each top-level function of another project module that the module
    `caller` hands a name it binds to a call of one of `names` (`train_iter = build_iterator(...)` then
    `train(config, model, train_iter)` of `from train_eval import train`), where that call names the class's own
    module's function or class (imported from it anywhere in `caller`, also under `if model == ...:`): that
    function's loops may iterate the instance through the parameter. Read from the `ast`, once per module
    content and set of names."""
    key = ("handed to", caller.path, caller.digest, frozenset(names), class_path)
    known = project.per_step_sites.get(key)
    if known is not None:
        return known
    if getattr(caller, "statements", None) is not None:
        return []  # a big module streamed in pieces: no whole tree to walk
    imported = set(names) if _resolved(project, caller.path) == class_path else set()
    for node in ast_walk.walk(caller.tree):
        if isinstance(node, ast.ImportFrom) and any(a.name in names for a in node.names) and \
                project.resolver.resolve(node.module or "", caller.path, node.level) == class_path:
            imported.update(a.asname or a.name for a in node.names if a.name in names)
    bound: set = set()
    for node in ast_walk.walk(caller.tree) if imported else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Subscript):  # `distiller_dict[cfg.TYPE](...)` of a dict of classes
                func = func.value
            if isinstance(func, ast.Name) and func.id in imported:
                bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
    found: list = []
    for node in ast_walk.walk(caller.tree) if bound else ():
        if not isinstance(node, ast.Call):
            continue
        passed = [(i, None) for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id in bound] + \
            [(None, k.arg) for k in node.keywords if isinstance(k.value, ast.Name) and k.value.id in bound]
        func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
        dotted = _dotted(func) if passed else None
        target = project.lookup(caller.path, dotted) if dotted else None
        if isinstance(target, Registry) and isinstance(node.func, ast.Subscript):
            # `trainer_dict[cfg.TRAINER](name, distiller, ...)`: each class of the dict may be built with it
            for entry in (project.lookup(target.path, value) for value in target.values):
                module = project.module(entry.path) if isinstance(entry, ClassSummary) else None
                if module is not None and _resolved(project, entry.path) != _resolved(project, caller.path) and \
                        all(module is not other for other, _, _ in found):
                    found.append((module, f"{entry.name}.__init__", None))
            continue
        if not isinstance(target, FunctionSummary) or "." in target.qualname or \
                _resolved(project, target.path) == _resolved(project, caller.path):
            continue
        module = project.module(target.path)
        for position, keyword in passed:
            param = keyword if keyword is not None else (
                target.params[position] if position < len(target.params) else None)
            if module is not None and param is not None and (module, target.qualname, param) not in found:
                found.append((module, target.qualname, param))
    project.per_step_sites[key] = found
    return found


_DICT_FILES = 24  # files read per name when looking for dicts of classes and the modules building from them


def _handed_by_dicts(project: Project, cls: ClassSummary) -> list:
    """The modules whose functions or classes a module hands an instance it builds from a module-level dict of
    project classes holding `cls` or a project subclass of it (`distiller = distiller_dict[cfg.TYPE](...)`, then
    `trainer_dict[cfg.TRAINER](name, distiller, ...)` or `train(distiller, ...)`): a loop there may call it.
    Whether it does is the caller's resolver's business (`_Instances`, through `named_classes.passed_candidates`).
    Read from text and `ast` alone; the family of the class is its project subclasses in the files naming it."""
    from gpulint.analysis.hierarchy import derives

    family = {cls.name}
    for file in project.files_naming(cls.name)[:_DICT_FILES]:
        other = None if project.is_test(file) else project.module(file)
        for sub in (other.classes.values() if other is not None else ()):
            if sub.name not in family and len(family) < _DICT_FILES and \
                    any(base.rsplit(".", 1)[-1] == cls.name for base in sub.bases) and derives(project, sub, cls):
                family.add(sub.name)
    registries: list = []
    for name in sorted(family):
        for file in project.files_naming(name)[:_DICT_FILES]:
            holder = None if project.is_test(file) else project.module(file)
            for registry in (holder.registries.values() if holder is not None else ()):
                if registry not in registries and any(v.rsplit(".", 1)[-1] in family for v in registry.values):
                    entries = [project.lookup(holder.path, v) for v in registry.values]
                    if any(isinstance(e, ClassSummary) and (_same(e, cls) or derives(project, e, cls))
                           for e in entries):
                        registries.append(registry)
    found: list = []
    for registry in registries:
        for file in project.files_naming(registry.name)[:_DICT_FILES]:
            builder = None if project.is_test(file) else project.module(file)
            for module, _, _ in (_handed_to(project, builder, {registry.name}, registry.path)
                                 if builder is not None else ()):
                if module not in found:
                    found.append(module)
    return found[:_CALLERS_PER_QUESTION]


def _handed_by_choosers(project: Project, cls: ClassSummary) -> list:
    """The modules whose functions a loop-free module hands an instance built by a project function that picks
    the class by a name (`model = build_detection_model(cfg)` over a dict or registry of classes, then
    `do_train(cfg, model, ...)`: analysis/named_classes.py): a loop there may call it. Whether it does is the
    caller's resolver's business (`_Instances`, through `named_classes.passed_candidates`)."""
    from gpulint.analysis.named_classes import chooser_functions

    found: list = []
    for chooser_path, name in chooser_functions(project, cls.path, cls.name):
        for file in project.files_naming(name)[:_DICT_FILES]:
            builder = None if project.is_test(file) else project.module(file)
            for module, _, _ in (_handed_to(project, builder, {name}, _resolved(project, chooser_path))
                                 if builder is not None else ()):
                if module not in found:
                    found.append(module)
    return found[:_CALLERS_PER_QUESTION]


def _find_site(project: Project, path: Path, class_name: str, member: str = "forward") -> Optional[CallSite]:
    info = project.module(path)
    callers: list = []
    # the class's name, and the registries of its module whose every entry builds it (`NETS[args.model](...)`)
    for name in (class_name, *_registries_building(project, info, class_name), *_dicts_holding(project, class_name),
                 *_factories_building(project, info, class_name), *_alternative_constructors(project, info, class_name),
                 *_subclasses_in_module(info, class_name), *_subclasses_elsewhere(project, info, class_name, member),
                 *_chooser_names(project, info, class_name), *_instantiating(project, info, class_name),
                 *_annotated_parameters(project, class_name), *_bound_class_aliases(project, class_name)):
        for caller in map(project.module, (f for f in project.files_naming(name, training=True)
                                           if not project.is_test(f))):
            if caller is not None and caller not in callers and _may_call_in_hot_loop(project, caller, name):
                callers.append(caller)
    cls = info.classes.get(class_name) if info is not None else None
    if not callers and cls is not None:  # an instance built from a dict of classes, handed to another module
        callers = _handed_by_dicts(project, cls) or _handed_by_choosers(project, cls)
    if not callers:  # the common case, decided from text and `ast` alone
        if member == "forward" and cls is not None and project.is_module_class(cls):
            return _submodule_site(project, path, cls) or stepping_site(project, path, cls)
        if member == "__call__" and cls is not None and member in cls.methods:
            return _submodule_site(project, path, cls, member)  # a postprocessor a model's forward calls
        return None
    del callers[_CALLERS_PER_QUESTION:]
    if cls is None or not (project.is_module_class(cls) if member == "forward" else member in cls.methods):
        return None
    for caller_info in callers:
        hot_calls = _hot_calls(project, caller_info.path)
        if not hot_calls:
            continue
        analysis = hot_calls[0][0]
        from gpulint.analysis.calls import project_calls

        calls = analysis.fact(project_calls)
        # an instance of a subclass that inherits `member` (or calls it through `super()`) runs it too
        resolver = _Instances(calls, project, cls, member) if calls is not None else None
        configured = "instantiate" in _instantiating(project, info, class_name)
        for _, node, func in hot_calls:
            target = func.value if type(func) is cst.Attribute and func.attr.value == member else func
            if configured and _configured_target(project, analysis, node, target, cls):
                return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)",
                                f"{cls.name}.{member}")
            if not (type(target) is cst.Name or type(target) is cst.Attribute and isinstance(
                    target.value, cst.Name) and target.value.value == "self"):
                continue
            if resolver is not None and resolver.receiver(target):
                # a flag of `forward` the call leaves at False (`is_report_accuracy=False`) keeps its block quiet
                return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)",
                                f"{cls.name}.{member}", periodic_params=_periodic_arguments(
                                    project, analysis, node, project.method(cls, member), True))
        if member == "forward" and resolver is not None:
            for _, node, _func in hot_calls:
                if _hands_instance_on(analysis, node, resolver):
                    # `diffusion.training_losses(model, x, t)`: a project function that runs the model it is given
                    return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)",
                                    f"{cls.name}.{member}")
    # no training file's hot loop calls it: it may still be a submodule of a per-step module (`self.encoder =
    # TabNetEncoder(...)` in a model file whose own `for step in range(self.n_steps):` made it a training file)
    return (_submodule_site(project, path, cls) or stepping_site(project, path, cls)) if member == "forward" else \
        _submodule_site(project, path, cls, member) if member == "__call__" and cls is not None else None


def _element_only_builds(project: Project, summary: FunctionSummary, index: int, cls: ClassSummary) -> bool:
    """Every `return` of the top-level function `summary` hands back a tuple whose element `index` is a call
    building `cls`, or a name every assignment of which in the function is one (`criterion = SetCriterion(...)`;
    `.to(...)`/`.cuda()` of one counts). A name another branch binds to something else (`optimizer =
    torch.optim.Adam(...)` or `optimizer = LARS(...)` by an option) may not be that class."""
    if "." in summary.qualname:
        return False
    info = project.module(summary.path)
    fn = info.functions.get(summary.qualname) if info is not None else None
    if fn is None:
        return False
    assigned: dict[str, list] = {}
    returns = []
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ([target] if isinstance(target, ast.Name) else
                             target.elts if isinstance(target, ast.Tuple) else ()):
                    if isinstance(name, ast.Name):
                        assigned.setdefault(name.id, []).append(node.value if isinstance(target, ast.Name) else None)
        elif isinstance(node, ast.Return) and node.value is not None:
            returns.append(node.value)

    def builds(value) -> bool:
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in ("to", "cuda", "train", "eval"):
            value = value.func.value
        if not isinstance(value, ast.Call):
            return False
        found = project.lookup(summary.path, _dotted(value.func) or "")
        return isinstance(found, ClassSummary) and found.name == cls.name and found.path == cls.path

    for value in returns:
        if not isinstance(value, ast.Tuple) or index >= len(value.elts):
            return False
        element = value.elts[index]
        if isinstance(element, ast.Name):
            values = assigned.get(element.id, [])
            if not values or not all(v is not None and builds(v) for v in values):
                return False
        elif not builds(element):
            return False
    return bool(returns)


def _hands_instance_on(analysis, call: cst.Call, resolver) -> bool:
    """`call` hands an instance of the class (a plain name: `model`) to a project function that runs it on every
    call (analysis/runs_model.py): its `forward` runs wherever the call does."""
    from gpulint.analysis import runs_passed_callable

    positions = [i for i, a in enumerate(call.args)
                 if not a.star and type(a.value) is cst.Name and resolver.may_be(a.value)]
    return bool(positions) and runs_passed_callable(analysis, call, positions)


def _submodule_site(project: Project, path: Path, cls: ClassSummary, member: str = "forward") -> Optional[CallSite]:
    """The call of an instance of `cls` inside the `forward` of another project module class whose own
    `forward` runs every step: `self.Prediction = Attention(...)` in `Model.__init__`, `self.Prediction(...)` in
    `Model.forward` (or in a method `forward` calls), or `self.blocks = nn.ModuleList([Block(...) ...])` and
    `for blk in self.blocks: x = blk(x)`. The submodule's `forward` runs as often as its owner's. The owner may
    build it through a project function that picks the class by a name (`self.box_head = build_box_head(cfg)`
    returning `registry.BOX_HEADS[cfg.NAME](cfg)`: analysis/named_classes.py), one candidate of which it is.
    With `member` `__call__`: a plain callable object the owner builds in `__init__` and calls in its per-step
    `forward` (`self.postprocessor = CTCPostProcessor(vocab)`, `self.postprocessor(logits)`): its `__call__`
    runs as often."""
    from gpulint.analysis.named_classes import chooser_names

    named = [cls.name, *(n for n in chooser_names(project, cls.path, cls.name) if n != cls.name)]
    # `self.loss_evaluator = make_loss_evaluator(cfg)` with `def make_loss_evaluator(cfg): ...; return
    # LossComputation(matcher, sampler)` in the class's module: a plain factory returning an instance of it (one
    # of the classes its branches return: `build_rpn` returning `RetinaNetModule(...)` or `RPNModule(...)`)
    named += [n for n in _plain_factories(project, project.module(cls.path), cls) if n not in named]
    seen: set = set()
    for name in named:
        for file in project.files_naming(name):
            if project.is_test(file) or file in seen:
                continue
            seen.add(file)
            site = _submodule_site_in(project, file, cls, named, member)
            if site is not None:
                return site
    if member == "__call__":
        # `sampler = Sampler(cfg); evaluator = LossComputation(matcher, sampler)` in a factory, and
        # `self.sampler = sampler` in `LossComputation.__init__`, whose per-step `__call__` calls `self.sampler(x)`
        for file in sorted(seen, key=str):
            site = _handed_in_site(project, file, cls)
            if site is not None:
                return site
    return None


def _handed_in_site(project: Project, file: Path, cls: ClassSummary) -> Optional[CallSite]:
    """The call of a callable object (`cls`, with a `__call__`) that another class of `file` stores from an
    `__init__` parameter every construction site fills with an instance of `cls` (`project.parameter_class`),
    in that owner's per-step entry: its `forward` when it is a module class run every step, its `__call__` when
    a per-step owner calls it (`call_site`)."""
    info = project.module(file)
    if info is None:
        return None
    for owner in info.classes.values():
        init = owner.methods.get("__init__")
        if init is None or _same(owner, cls):
            continue
        params = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)} - {"self"}
        stored = {n.targets[0].attr: n.value.id for n in ast_walk.walk(init)
                  if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Attribute)
                  and isinstance(n.targets[0].value, ast.Name) and n.targets[0].value.id == "self"
                  and isinstance(n.value, ast.Name) and n.value.id in params}
        if not stored:
            continue
        module = project.is_module_class(owner)
        entry = "forward" if module else "__call__"
        if entry not in owner.methods or _attribute_called(project, owner, set(stored), entry) is None:
            continue  # no stored parameter is called there: nothing to resolve (the common case)
        held = set()
        for attr, param in stored.items():
            passed = project.parameter_class(owner.path, f"{owner.name}.__init__", param)
            if passed is not None and _same(passed, cls):
                held.add(attr)
        line = _attribute_called(project, owner, held, entry) if held else None
        if line is None:
            continue
        site = per_step_site(project, owner.path, owner.name) if module else call_site(project, owner.path, owner.name)
        if site is not None:
            return CallSite(owner.path.resolve(), line[0], f"{line[1]}(...)", f"{cls.name}.__call__", owner.name,
                            owner_member=entry)
    return None


def _builds(project: Project, owner: ClassSummary, dotted: str, cls: ClassSummary) -> bool:
    """`dotted(...)` in the owner's `__init__` builds `cls`: the class itself, or a project function picking it
    by a name among others."""
    from gpulint.analysis.named_classes import function_choices

    found = project.lookup(owner.path, dotted)
    if isinstance(found, ClassSummary):
        return _same(found, cls)
    return isinstance(found, FunctionSummary) and (
        any(_same(c, cls) for c in function_choices(project, found)[1])
        or not found.qualname.count(".") and any(_same(c, cls) for c in project.returned_classes(found)))


def _plain_factories(project: Project, info, cls: ClassSummary) -> list[str]:
    """The top-level functions of the class's module that name it and hand back an instance of it among what
    their `return`s build (`project.returned_classes`): `def make_loss_evaluator(cfg): evaluator =
    LossComputation(...); return evaluator`, `def build_head(cfg): return Head(cfg)`. The functions naming each
    name are indexed once per module content (`_names_in_functions`), then only those naming the class are
    summarised."""
    if info is None:
        return []
    found = []
    for name in sorted(_names_in_functions(project, info).get(cls.name, ())):
        summary = project.function(info.path, name)
        if summary is not None and any(_same(c, cls) for c in project.returned_classes(summary)):
            found.append(name)
    return found


def _names_in_functions(project: Project, info) -> dict:
    """For each name read in a top-level function of the module, the functions reading it: one walk per module
    content, shared by every class asked about."""
    cached = project.hot_loop_files.get(("names in functions", info.path))
    if cached is None or cached[0] != info.digest:
        named: dict = {}
        for name, node in info.functions.items():
            for n in ast_walk.walk(node):
                if isinstance(n, ast.Name):
                    named.setdefault(n.id, set()).add(name)
        cached = project.hot_loop_files[("names in functions", info.path)] = (info.digest, named)
    return cached[1]


def _submodule_site_in(project: Project, file: Path, cls: ClassSummary, named: list,
                       member: str = "forward") -> Optional[CallSite]:
    info = project.module(file)
    if info is None:
        return None
    for owner in info.classes.values():
        built = [b for name in named for b in _built_in_init(project, owner).get(name, ())]
        if not built or _same(owner, cls) or not project.is_module_class(owner):
            continue
        held = {attr for attr, dotted in built if _builds(project, owner, dotted, cls)}
        if not held:
            continue
        for entry in ("forward", *sorted(m for m in owner.methods if _entry_method(m) and m != "forward")):
            if entry not in owner.methods:
                continue
            line = _attribute_called(project, owner, held, entry)
            if line is None:
                continue
            # `forward` when the owner runs every step; another method (`Policy.act`, `evaluate_actions`)
            # when a hot loop calls it on an instance of the owner (`member_site`)
            # (or a hook a per-step base `forward` of another module dispatches to: `self.forward_train(...)`)
            site = per_step_site(project, owner.path, owner.name) if entry == "forward" \
                else member_site(project, owner.path, owner.name, entry) or (
                    override_site(project, owner.path, owner.name, entry) if owner.bases else None)
            if site is not None:
                return CallSite(owner.path.resolve(), line[0], f"{line[1]}(...)", f"{cls.name}.{member}",
                                owner.name, owner_member=entry,
                                periodic_params=_flags_left_off(project, owner, held, entry, cls, member))
    return None


def _built_in_init(project: Project, owner: ClassSummary) -> dict[str, list[tuple[str, str]]]:
    """For `owner.__init__`: the last name of each constructor called in a `self.X = ...` assignment, with the
    (X, dotted name as written) pairs: `{"Block": [("blocks", "Block")]}` for
    `self.blocks = nn.ModuleList([Block(...) ...])` or `self.blocks.append(Block(...))`. Walked once per class and project state (kept beside the
    per-step sites, which are cleared together), then a dict lookup for every class asked about."""
    key = ("built-in-init", owner.path, owner.name, owner.line)
    with project._lock:
        known = project.per_step_sites.get(key)
    if known is not None:
        return known
    found: dict[str, list[tuple[str, str]]] = {}
    init = owner.methods.get("__init__")
    # `__init__` and the methods of the class it calls through `self` (`self.init_crd_modules(...)` building
    # the submodules), walked as one body
    helpers = {n.func.attr for n in ast_walk.walk(init) if isinstance(n, ast.Call) and isinstance(
        n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"} \
        if init is not None else set()
    init_nodes = [*ast_walk.walk(init)] if init is not None else []
    for name in sorted(helpers):
        helper = owner.methods.get(name)
        if helper is not None and helper is not init and not _is_property_ast(helper):
            init_nodes.extend(ast_walk.walk(helper))
    chosen: dict[str, list[str]] = {}  # a local of `__init__` -> the dotted names of the classes assigned to it
    # a local of `__init__` -> the dotted names of the callees whose results are assigned to it: `loss_evaluator =
    # make_loss_evaluator(cfg)` then `self.loss_evaluator = loss_evaluator`
    results: dict[str, list[str]] = {}
    for node in init_nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call):
            dotted = _dotted(node.value.func)
            if dotted:
                results.setdefault(node.targets[0].id, []).append(dotted)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            # `Attn = ProbAttention if attn == 'prob' else FullAttention`: either class
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            for value in values:
                dotted = _dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
                if dotted and dotted.rsplit(".", 1)[-1][:1].isupper():
                    chosen.setdefault(node.targets[0].id, []).append(dotted)
    for node in init_nodes:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Attribute) and node.value.func.attr in _CONTAINER_ADDS:
            # `self.gnns = nn.ModuleList()` then `self.gnns.append(GINConv(...))` on a branch of a layer loop
            held = node.value.func.value
            if isinstance(held, ast.Attribute) and isinstance(held.value, ast.Name) and held.value.id == "self":
                for call in (c for a in node.value.args for c in ast_walk.walk(a) if isinstance(c, ast.Call)):
                    dotted = _dotted(call.func)
                    if dotted:
                        found.setdefault(dotted.rsplit(".", 1)[-1], []).append((held.attr, dotted))
            continue
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
            continue
        if isinstance(node.value, ast.Name):
            for dotted in results.get(node.value.id, ()):
                found.setdefault(dotted.rsplit(".", 1)[-1], []).append((target.attr, dotted))
            continue
        for call in ast_walk.walk(node.value):
            if isinstance(call, ast.Call):
                dotted = _dotted(call.func)
                if not dotted:
                    continue
                found.setdefault(dotted.rsplit(".", 1)[-1], []).append((target.attr, dotted))
                # `base = CNNBase` / `base = MLPBase` on branches of `__init__`, then `self.base = base(...)`:
                # each class the local names is built in the configuration that picks it
                for picked in chosen.get(dotted, ()) if "." not in dotted else ():
                    found.setdefault(picked.rsplit(".", 1)[-1], []).append((target.attr, picked))
    with project._lock:
        project.per_step_sites[key] = found
    return found


def _is_property_ast(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def _attribute_called(project: Project, owner: ClassSummary, held: set[str],
                      entry: str = "forward") -> Optional[tuple[int, str]]:
    """(line, the callee as written) of the first call of a held submodule in `entry` (`forward`) or a method
    it calls through `self`: `self.X(...)`, `self.X[i](...)`, or a call of the loop variable of `for m in self.X:`.
    The calls are read once per class and entry (`_forward_calls`), then matched against each question's `held`."""
    for loops, calls in _forward_calls(project, owner, entry):
        loop_names: dict[str, str] = {}
        for target, attribute in loops:
            if attribute in held:
                loop_names[target] = attribute
        for line, attribute, written, _call in calls:
            if attribute is not None:
                if attribute in held:
                    return line, f"self.{attribute}" if written else f"self.{attribute}[...]"
            elif written in loop_names:
                return line, written  # `for gate in self.gates: x = gate(x)`
    return None


def _flags_left_off(project: Project, owner: ClassSummary, held: set[str], entry: str,
                    cls: ClassSummary, member: str = "forward") -> frozenset:
    """The parameters of `cls.forward` that every call of a held submodule in `entry` (and the methods it calls
    through `self`) passes the literal False or leaves at a default of False or None: VITS's `self.dp(x, x_mask,
    w, g=g)` leaves `reverse=False`, so the block of `forward` that runs only when `reverse` is set (the
    inference path, which `infer` selects) is not run every step."""
    from gpulint.analysis.project import _find_function

    target = project.method(cls, member)
    info = project.module(target.path) if target is not None else None
    node = _find_function(info, target.qualname)[0] if info is not None else None
    if not isinstance(node, ast.FunctionDef):
        return frozenset()
    found: Optional[set] = None
    for loops, calls in _forward_calls(project, owner, entry):
        loop_names = {name for name, attribute in loops if attribute in held}
        for _line, attribute, written, call in calls:
            if attribute in held or attribute is None and written in loop_names:
                off = _left_off(node, call, bound=True)
                found = off if found is None else found & off
    return frozenset(found or ())


def _left_off(fn: ast.FunctionDef, call: ast.Call, bound: bool) -> set:
    """The parameters of `fn` that `call` passes the literal False, or leaves at a default of False or None
    (nothing where it passes `*args`/`**kwargs`)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return set()
    args = fn.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    params = positional[1:] if bound and positional else positional
    given = {k.arg for k in call.keywords} | set(params[:len(call.args)])
    found = _defaults_left_off(fn, given)
    found.update(k.arg for k in call.keywords if isinstance(k.value, ast.Constant) and k.value.value is False)
    found.update(name for name, a in zip(params, call.args) if isinstance(a, ast.Constant) and a.value is False)
    return found


def _defaults_left_off(fn: ast.FunctionDef, given: set) -> set:
    """The parameters of `fn` with a default of False or None that are not among `given`."""
    args = fn.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return {name for name, default in defaults.items() if name not in given
            and isinstance(default, ast.Constant) and (default.value is False or default.value is None)}


def _forward_calls(project: Project, owner: ClassSummary, entry: str = "forward") -> tuple:
    """For `entry` (`forward`) and each method it calls through `self` (in `_attribute_called`'s order): the
    `for` loops over a `self.X` (loop variable, X) and the calls, in `ast.walk` order, each as (line, X, whether
    written `self.X(...)`, the call) for a call of `self.X` or `self.X[i]`, or (line, None, name, the call) for a
    call of a plain name. Read once per class, entry and project state (kept beside the per-step sites, cleared together)."""
    key = ("forward calls", owner.path, owner.name, owner.line, entry)
    with project._lock:
        known = project.per_step_sites.get(key)
    if known is not None:
        return known
    forward = owner.methods[entry]
    methods = [forward] + [owner.methods[name] for name in sorted({
        n.func.attr for n in ast_walk.walk(forward) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"} & set(owner.methods))
        if name not in ("__init__", "forward", entry)]
    found = []
    for method in methods:
        loops, calls = [], []
        for node in ast_walk.walk(method):
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                attribute = _self_attribute(node.iter)
                if attribute is not None:
                    loops.append((node.target.id, attribute))
            elif isinstance(node, ast.Call):
                attribute = _self_attribute(node.func)
                if attribute is not None:
                    calls.append((node.lineno, attribute, isinstance(node.func, ast.Attribute), node))
                elif isinstance(node.func, ast.Name):
                    calls.append((node.lineno, None, node.func.id, node))
        found.append((tuple(loops), tuple(calls)))
    known = tuple(found)
    with project._lock:
        project.per_step_sites[key] = known
    return known


def _self_attribute(expr: ast.expr) -> Optional[str]:
    """X for `self.X` or `self.X[i]` (or `enumerate(self.X)`, `zip(self.X, ...)`), else None."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("enumerate", "zip") \
            and expr.args:
        expr = expr.args[0]
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return expr.attr
    return None


def member_site(project: Project, path: Path, owner: Optional[str], member: str) -> Optional[CallSite]:
    """A call, every iteration of a hot loop of some project file, of the method `member` of an instance of
    the top-level class `owner` (or of a subclass that inherits it or calls it through `super()`), or of the
    top-level function `member` when `owner` is None, both defined in `path`. A class's `__init__` is never
    looked for: no loop calls `obj.__init__(...)`, while `super().__init__(...)` in every module class's
    constructor made the name look called in nearly every training file, and the search analysed them all
    (45 s for one small file of a big repository; building an instance per step is `imported_helper_site`'s)."""
    if member == "__init__" and owner is not None:
        return None
    if not called_in_a_hot_loop(project, member):  # the common case: no hot loop of the project calls that name
        if owner is None and stored_by_partial(project, member):  # `self.f = partial(f, ...)`, `self.f(x)` per step
            from gpulint.analysis.stored_callables import stored_callable_site
            path = _resolved(project, path)
            return _remembered(project, (path, None, member, "stored"),
                               lambda: stored_callable_site(project, path, member))
        return None
    path = _resolved(project, path)
    return _remembered(project, (path, owner, member), lambda: _find_member_site(project, path, owner, member))


def stored_by_partial(project: Project, name: str) -> bool:
    """Some non-test project file names both `name` and `partial`: it may keep `partial(name, ...)` on `self`
    (analysis/stored_callables.py), called through the attribute, a name no hot loop has. From the identifier
    index alone."""
    files = project.files_naming(name)
    if not files:
        return False
    key = ("files naming partial",)
    with project._lock:
        partials = project.per_step_sites.get(key)
    if partials is None:
        partials = frozenset(project._resolved(f) for f in project.files_naming("partial") if not project.is_test(f))
        with project._lock:
            project.per_step_sites[key] = partials
    return bool(partials) and any(project._resolved(f) in partials for f in files)


def _find_member_site(project: Project, path: Path, owner: Optional[str], member: str) -> Optional[CallSite]:
    info = project.module(path)
    if info is None:
        return None
    cls = info.classes.get(owner) if owner is not None else None
    if owner is not None and cls is None:
        return None
    if owner is None and member not in info.functions:
        return None
    # a class a configuration file names (`class:`/`_target_:`): `self.agent = instantiate(cfg.agent)`
    configured = cls is not None and "instantiate" in _instantiating(project, info, owner)
    # a top-level function may be imported under another name (analysis/import_aliases.py)
    for analysis, calls, hot_calls, names in hot_callers(project, path, member, aliases=owner is None):
        resolver = _Instances(calls, project, cls, member) if cls is not None else None
        for _, node, func in hot_calls:
            if resolver is not None:
                if not (type(func) is cst.Attribute and func.attr.value == member
                        and (resolver.receiver(func.value) or resolver.among(func.value)
                             or configured and _configured_target(project, analysis, node, func.value, cls))) \
                        and not _steps_the_argument(analysis, node, member, resolver):
                    continue
                runs = f"{cls.name}.{member}"
            else:
                last = func.attr.value if type(func) is cst.Attribute else (
                    func.value if type(func) is cst.Name else None)
                if last not in names:
                    continue
                found = calls._lookup(func)
                if not (isinstance(found, FunctionSummary) and found.qualname == member
                        and found.path.resolve() == path):
                    continue
                runs = member
            target = project.method(cls, member) if cls is not None else project.function(path, member)
            return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)", runs,
                            periodic_params=_periodic_arguments(project, analysis, node, target, cls is not None),
                            arguments=None if cls is not None else _arguments_of(node))
    if owner is None:  # `self.torch_stft = partial(stft, ...)` in a class, `self.torch_stft(x)` in its hot loop
        from gpulint.analysis.stored_callables import stored_callable_site
        return stored_callable_site(project, path, member)
    return None


def hot_callers(project: Project, path: Path, member: str, aliases: bool = False):
    """(analysis, its `project_calls`, its hot calls (`_hot_calls`), the names `member` goes by there) for each
    project file but `path` and the tests whose hot loops may call `member`, at most `_CALLERS_PER_QUESTION` of
    them read (the callers' LibCST analyses are the costly part). A file is passed over without its analysis when
    its `ast` has no hot loop calling the name (`_hot_file`) or no call run every iteration has it
    (`_hot_call_names`). With `aliases`, the names a top-level function `member` is imported under in the caller
    (`local_names`). The search for a per-step caller of a member (`member_site`) and of a vectorised
    environment's `step` (vec_env_wrappers.py) read callers this one way."""
    from gpulint.analysis.calls import project_calls

    looked_at = 0
    for caller in project.files_naming(member, training=True):
        if project.is_test(caller) or project._resolved(caller) == path:
            continue  # the module's own calls are its loop analysis's business
        caller_info = project.module(caller)
        if caller_info is None:
            continue
        hot, called = _hot_file(project, caller_info)
        names = local_names(caller_info, member) if aliases else frozenset((member,))
        if not (hot and not called.isdisjoint(names)):
            continue  # as `called_in_a_hot_loop` decides, from `ast` alone
        if _hot_call_names(project, caller_info.path).isdisjoint(names):
            continue  # no call run every iteration has that name: decided without the caller's analysis
        if looked_at == _CALLERS_PER_QUESTION:
            return
        looked_at += 1
        hot_calls = _hot_calls(project, caller_info.path)
        if not hot_calls:
            continue
        analysis = hot_calls[0][0]
        calls = analysis.fact(project_calls)
        if calls is None:
            continue
        yield analysis, calls, hot_calls, names


def _arguments_of(call: cst.Call) -> Optional[tuple]:
    """(positional count, keywords passed with a value other than a literal None) of a call; None with `*`/`**`."""
    if any(a.star for a in call.args):
        return None
    positional = [a for a in call.args if a.keyword is None]
    keywords = frozenset(a.keyword.value for a in call.args if a.keyword is not None and
                         not (type(a.value) is cst.Name and a.value.value == "None"))
    # arguments certainly not None (literals): a name passed on may itself be None (`dim_size=size`)
    literal = (cst.Integer, cst.Float, cst.SimpleString, cst.Tuple, cst.List, cst.Dict)
    definite = frozenset([a.keyword.value for a in call.args if a.keyword is not None and
                          (type(a.value) in literal or type(a.value) is cst.Name and a.value.value in ("True", "False"))]
                         + [i for i, a in enumerate(positional) if type(a.value) in literal])
    return len(positional), keywords, definite


def stepped_argument(analysis, call: cst.Call) -> Optional[cst.BaseExpression]:
    """The optimizer a library call steps: `scaler.step(optimizer)` of a `GradScaler` runs `optimizer.step()`
    (skipping it only on the steps whose gradients overflowed), so a project optimizer's `step` runs wherever
    the call runs. None for any other call."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value != "step" or not call.args or \
            call.args[0].keyword is not None or call.args[0].star:
        return None
    from gpulint.analysis.calls import module_calls

    fact = module_calls(analysis).library_fact(call)
    if fact is None or fact.target != "torch.amp.GradScaler.step":
        return None
    return call.args[0].value


def _steps_the_argument(analysis, call: cst.Call, member: str, resolver: "_Instances") -> bool:
    """`scaler.step(optimizer)` in a caller, where `optimizer` may be an instance of the class asked about and
    `member` is its `step` (`stepped_argument`)."""
    if member != "step":
        return False
    stepped = stepped_argument(analysis, call)
    return stepped is not None and (resolver.may_be(stepped) or resolver.among(stepped))


def _periodic_arguments(project: Project, analysis, call: cst.Call, target: Optional[FunctionSummary],
                        bound: bool) -> frozenset:
    """The parameters of `target` that `call` passes a value true only on some iterations, as the caller's
    own loop analysis reads its guards (`collect_param_metrics=should_log_this_step`), or the literal False, or
    leaves at a default of False or None."""
    if target is None:
        return frozenset()
    from gpulint.analysis.project import _find_function

    params = target.params[1:] if bound and target.params else target.params
    found = set()
    position = 0
    info = project.module(target.path)
    node = _find_function(info, target.qualname)[0] if info is not None else None
    if node is not None and not any(arg.star for arg in call.args):
        given = {arg.keyword.value for arg in call.args if arg.keyword is not None} | \
            set(params[:len([arg for arg in call.args if arg.keyword is None])])
        found = _defaults_left_off(node, given)
    for arg in call.args:
        if arg.star:
            break
        if arg.keyword is not None:
            name: Optional[str] = arg.keyword.value
        else:
            name = params[position] if position < len(params) else None
            position += 1
        if name is None:
            continue
        value = arg.value
        if type(value) is cst.Name and value.value == "False":
            found.add(name)
        elif analysis.loops.periodic_test(value) and not (node is not None and _steps_under(node, name)):
            found.add(name)  # not `update_grad=(i + 1) % accum == 0` guarding an optimizer step: that is hot
    return frozenset(found)


def _steps_under(fn: ast.FunctionDef, flag: str) -> bool:
    """`if <flag>:` in `fn` guards an optimizer step (`self._scaler.step(optimizer)`): gradient accumulation,
    whose block runs on every optimizer step."""
    for n in ast_walk.walk(fn):
        if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == flag and any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "step"
                for stmt in n.body for c in ast_walk.walk(stmt)):
            return True
    return False


def called_in_a_hot_loop(project: Project, name: str) -> bool:
    """Some project file (not a test) that may hold a hot loop calls something by the last name `name`, or
    hands a callable of that name to `functools.partial`: a function or method by another name is never
    called every step from elsewhere. Decided from `ast` trees alone, once per name and project state, over
    the training files whose text names it (the identifier index: a call of `name` names it), so a process
    reads only the callers of the names it asks about, not every training file of the project."""
    key = ("called in a hot loop", name)
    with project._lock:
        known = project.per_step_sites.get(key)
        if known is None:
            known = False
            for file in project.files_naming(name, training=True):
                if project.is_test(file):
                    continue
                info = project.module(file)
                if info is not None:
                    hot, called = _hot_file(project, info)
                    if hot and not called.isdisjoint(local_names(info, name)):  # an alias: import_aliases.py
                        known = True
                        break
            project.per_step_sites[key] = known
        return known


def _bound_class_aliases(project: Project, class_name: str) -> list[str]:
    """The top-level names the training files naming the class bind to it by a dotted name (`Detector =
    MODEL.VoteNet`, one per branch of an `if` choosing between the chosen module's classes: import_aliases.py),
    then call: `net = Detector(...)`. Whether the name is the class is the caller's lookup's to decide."""
    from gpulint.analysis.import_aliases import bound_aliases

    names: list[str] = []
    for file in project.files_naming(class_name, training=True):
        info = None if project.is_test(file) else project.module(file)
        if info is not None:
            names.extend(n for n in bound_aliases(info, class_name) if n not in names)
    return names


def _chooser_names(project: Project, info, class_name: str) -> list[str]:
    """The project functions that may build or hand back the class by a name (`build_model(cfg)` over a
    registry, `get_algorithm_class(name)` over `globals()`): analysis/named_classes.py."""
    from gpulint.analysis.named_classes import chooser_names

    return chooser_names(project, info.path, class_name) if info is not None else []


def _dicts_holding(project: Project, class_name: str) -> list[str]:
    """The names of dict literals, in the training files naming the class, that map keys to it
    (`model_dict = {'informer': Informer, ...}` in a method, then `model_dict[self.args.model](...)`): a caller
    calling one may build it. Read from the callers' `ast` trees."""
    names: list[str] = []
    for file in project.files_naming(class_name, training=True):
        info = None if project.is_test(file) else project.module(file)
        if info is None:
            continue
        for name, held in info.indexed(_dict_literals):
            if name not in names and class_name in held:
                names.append(name)
    return names


def _dict_literals(tree: ast.Module) -> list[tuple[str, frozenset]]:
    """(name, the last names of its values that are names or attributes) for each `name = {...}` of the module,
    in `ast_walk.walk` order: `_dicts_holding`'s index, built once per module (`ModuleInfo.indexed`)."""
    return [(node.targets[0].id, frozenset((_dotted(v) or "").rsplit(".", 1)[-1] for v in node.value.values
                                           if isinstance(v, (ast.Name, ast.Attribute))))
            for node in ast_walk.walk(tree)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Dict)]


def _configured_target(project: Project, analysis, node: cst.Call, target: cst.BaseExpression,
                       cls: ClassSummary) -> bool:
    """The per-step call's target is an attribute (or an element of one: `self.loss[key]`), or a method parameter
    the module's calls fill with one, that `instantiate(cfg.K)` fills with the class (analysis/config_targets.py)."""
    from gpulint.analysis.config_targets import held_by_attribute

    if not (type(target) in (cst.Name, cst.Attribute, cst.Subscript)):
        return False
    try:
        expr = ast.parse(analysis.code(target).strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return False
    return any(_same(c, cls) for c in held_by_attribute(project, Path(analysis.path), expr, _line_of(analysis, node)))


def _instantiating(project: Project, info, class_name: str) -> list[str]:
    """`instantiate` when a configuration file names the class (`_target_: pkg.mod.Cls`): a training file
    calling `instantiate(cfg.model)` may build it (analysis/config_targets.py); `create_model` when a project
    `@register_model` function builds it (timm's registry: analysis/named_classes.py)."""
    from gpulint.analysis.config_targets import is_config_target
    from gpulint.analysis.named_classes import registered_model_classes

    if info is None:
        return []
    cls = info.classes.get(class_name)
    names = ["instantiate"] if is_config_target(project, info.path, class_name) else []
    if cls is not None and any(_same(c, cls) for c in registered_model_classes(project)):
        names.append("create_model")
    return names


def _subclasses_in_module(info, class_name: str) -> list[str]:
    """The classes of the same module deriving from `class_name` (`MoCo_ViT(MoCo)`), directly or through
    each other: a script that builds only a subclass (`moco.builder.MoCo_ViT(...)`) runs the base's `forward`
    without ever naming the base."""
    if info is None:
        return []
    found: list[str] = []
    wanted = {class_name}
    changed = True
    while changed:
        changed = False
        for name, cls in info.classes.items():
            if name not in wanted and any(base.rsplit(".", 1)[-1] in wanted for base in cls.bases):
                wanted.add(name)
                found.append(name)
                changed = True
    return found


def _subclasses_elsewhere(project: Project, info, class_name: str, member: str) -> list[str]:
    """The project classes of other modules deriving from `class_name` that inherit `member` from it (no
    definition of their own between): a training script that builds only `vgg16(...)` of `class vgg16(_fasterRCNN)`
    in `vgg16.py` runs `_fasterRCNN.forward` of `faster_rcnn.py` without naming `_fasterRCNN`. Only asked for a
    module class's `forward`; the hot loop's call is then checked by `_Instances`, which knows inheritance."""
    cls = info.classes.get(class_name) if info is not None else None
    if cls is None or member != "forward" or not project.is_module_class(cls):
        return []
    from gpulint.analysis.candidate_methods import project_subclasses

    same = set(info.classes)
    return [sub.name for sub in project_subclasses(project, cls) if sub.name not in same and member not in sub.methods]


def _annotated_parameters(project: Project, class_name: str) -> list[str]:
    """The names of function parameters annotated with a class named `class_name` (`mixup_fn: Optional[Mixup] =
    None`, `scaler: "NativeScaler"`) in the training files that name the class: a loop calling such a parameter
    (`mixup_fn(samples, targets)`) may run the class's `__call__` (or `forward`) without ever naming the class
    in a call. Which class the annotation means is the caller's resolver's business (`_Instances._parameter`);
    this only picks the names worth looking for. Walked once per file content (kept beside the hot-loop facts)."""
    found: list[str] = []
    for file in project.files_naming(class_name, training=True):
        if project.is_test(file):
            continue
        info = project.module(file)
        if info is None or getattr(info, "statements", None) is not None:
            continue  # a big module streamed in pieces: no whole tree to walk
        key = ("annotated parameters", info.path)
        cached = project.hot_loop_files.get(key)
        if cached is None or cached[0] != info.digest:
            annotated: dict = {}
            for node in ast_walk.walk(info.tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                args = node.args
                for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                    if arg.annotation is None:
                        continue
                    for n in ast_walk.walk(arg.annotation):
                        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else \
                            n.value.rsplit(".", 1)[-1] if isinstance(n, ast.Constant) and isinstance(n.value, str) \
                            else None
                        if name is not None:
                            annotated.setdefault(name, set()).add(arg.arg)
            cached = project.hot_loop_files[key] = (info.digest, annotated)
        for name in sorted(cached[1].get(class_name, ())):
            if name != class_name and name not in found:
                found.append(name)
    return found


def _registries_building(project: Project, info, class_name: str) -> list[str]:
    """The module-level registries of the module (`NETS = {"small": net_small, ...}`) whose every entry builds
    the class `class_name` of that module."""
    if info is None or not info.registries:
        return []
    found = []
    for registry in info.registries.values():
        cls = project.registry_class(info.path, registry.name)
        if cls is not None and cls.name == class_name and cls.path == info.path:
            found.append(registry.name)
    return found


def _alternative_constructors(project: Project, info, class_name: str) -> list[str]:
    """The `@classmethod`s of the class that build and return `cls(...)` (`LossCompute.from_opts(opt, ...)`,
    `FunctionSummary.returns_cls`): a training file calling one (`train_loss = LossCompute.from_opts(...)`, then
    `Trainer(model, train_loss, ...)` storing it as `self.train_loss`) builds the class, and its hot loop's
    `self.train_loss(...)` resolves to it through the constructor's call sites. Only classmethods some training
    file names are summarised."""
    cls = info.classes.get(class_name) if info is not None else None
    if cls is None:
        return []
    found = []
    for name, node in cls.methods.items():
        if not any(isinstance(d, ast.Name) and d.id == "classmethod" for d in node.decorator_list):
            continue
        if not project.files_naming(name, training=True):
            continue
        summary = project.function(info.path, f"{class_name}.{name}")
        if summary is not None and summary.returns_cls:
            found.append(name)
    return found


def _factories_building(project: Project, info, class_name: str, training: bool = True) -> list[str]:
    """The top-level functions of the class's module that build it and return it (`def blip_decoder(**kw):
    model = BLIP_Decoder(**kw); ...; return model`): a training file calling one builds the class. Only
    functions that name the class are summarised."""
    if info is None:
        return []
    found = []
    for name in sorted(_names_in_functions(project, info).get(class_name, ())):
        if not project.files_naming(name, training=training):
            continue  # no (training) file names the function: nothing to summarise
        summary = project.function(info.path, name)
        returned = project.returned_classes(summary) if summary is not None else ()
        if len(returned) == 1 and returned[0].name == class_name and returned[0].path == info.path:
            found.append(name)
        elif summary is not None and len(summary.returns_classes) > 1 and any(
                c is not None and c.name == class_name and c.path == info.path for c in summary.returns_classes):
            found.append(name)  # an element of what it returns (`return model, criterion, postprocessors`)
    return found


def _may_call_in_hot_loop(project: Project, info, class_name: str) -> bool:
    """On the caller's `ast` tree (cached per content), before any LibCST parse: it calls something named
    `class_name` (a constructor, `pkg.mod.Cls(...)`), and the prefilter's over-approximation of a hot loop
    holds in it."""
    hot, called = _hot_file(project, info)
    return hot and class_name in called


def _hot_file(project: Project, info) -> tuple[bool, frozenset]:
    """(the prefilter's over-approximation of a hot loop holds in the module, the last names of its calls and
    of the callables it hands to `functools.partial`), cached per content."""
    from gpulint.prefilter import HOT_LOOP, FileFacts

    cached = project.hot_loop_files.get(info.path)
    if cached is None or cached[0] != info.digest:
        called = set()
        streamed = getattr(info, "statements", None)  # a big module: no whole tree (lazy_module.py)
        for stmt in (streamed() if streamed is not None else info.tree.body):
            called |= _called_names(stmt)
        if streamed is not None:
            hot = True  # the over-approximation needs the whole tree: the analyses that decide it run
        else:
            facts = FileFacts("", info.tree)
            hot = facts.holds(HOT_LOOP)
            facts.release()
        cached = project.hot_loop_files[info.path] = (info.digest, hot, frozenset(called))
    return cached[1], cached[2]


def _called_names(stmt: ast.stmt) -> frozenset:
    """The last names of the calls in one top-level statement and of the callables it hands to `partial`. In an
    editor, kept by statement: the buffer's `ast` tree is joined from kept pieces (incremental.python_tree),
    so an unchanged statement is the same object (`ast` trees are never modified after the parse)."""
    known = incremental.by_node(_called_names, stmt)
    if known is not None:
        return known
    called = set()
    for n in ast_walk.walk(stmt):
        if isinstance(n, ast.Call):
            called.add(_last_name(n.func))
            if isinstance(n.func, ast.Subscript):  # `NETS[args.model](...)`: a registry's builder
                called.add(_last_name(n.func.value))
            if _last_name(n.func) == "partial" and n.args:
                called.add(_last_name(n.args[0]))
    found = frozenset(called)
    incremental.keep_by_node(_called_names, stmt, found)
    return found


def _last_name(func: ast.expr) -> Optional[str]:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _hot_calls(project: Project, path: Path) -> list:
    """(analysis, call, what is called) for every call that runs every iteration of a hot loop of `path`, from
    one LibCST parse of it (kept for the next questions: `_CALLER_ANALYSES`; the questions bound how many
    callers each looks at, `_CALLERS_PER_QUESTION`). What is called is the call's function, or for a name bound to
    `functools.partial(f, ...)`, `f`. The calls are found the first time they are asked for: a caller parsed
    only for its methods (`caller_analysis`) is not walked for them."""
    from gpulint.incremental import checkpoint

    analysis = _caller_parse(project, path)
    kept = project.caller_analyses[path]
    if kept[1] is not None:
        return kept[1]
    found: list = []
    for position, node in enumerate(analysis.index.nodes if analysis is not None else ()):
        if position % 4096 == 0:
            checkpoint()  # an editor's lint of an outdated buffer stops here too (abandoned: nothing is kept)
        if type(node) is not cst.Call:
            continue
        if analysis.execution(node).every_iteration:
            found.append((analysis, node, _partial_target(analysis, node.func)))
    cache = project.caller_analyses
    cache[path] = (analysis, found)
    _hot_names(project, path, found)
    while len(cache) > _CALLER_ANALYSES:
        cache.popitem(last=False)
    return found


def _hot_names(project: Project, path: Path, found: list) -> None:
    project.hot_call_names[path] = frozenset(
        func.attr.value if type(func) is cst.Attribute else func.value
        for _, _, func in found if type(func) in (cst.Attribute, cst.Name))


def _caller_parse(project: Project, path: Path):
    """The `ModuleAnalysis` of a caller file (None if it cannot be read or parsed), from one LibCST parse kept in
    `project.caller_analyses` with its hot calls once `_hot_calls` has found them (None until then)."""
    from gpulint.analysis import ModuleAnalysis
    from gpulint.files import FileError, read_regular
    from gpulint.incremental import parse_module  # the script's own lint may have parsed it
    from gpulint.runtime import trusted_parse

    cache = project.caller_analyses
    if path in cache:
        cache.move_to_end(path)
        return cache[path][0]
    try:
        text = project.text_of(path)  # an editor's unsaved buffer: its text, as the project's `ast` model has it
        if text is None:
            text = read_regular(path)[0].decode("utf-8")  # never a FIFO or a device: they would block the read
        # a text CPython's parser accepted (the project model's `ast` parse of these very bytes) is parsed
        # without LibCST's node checks in a batch run, as the file's own lint parses it (runtime.trusted_parse)
        with trusted_parse(_python_accepted(project, path, text)):
            module = parse_module(text)
        analysis = ModuleAnalysis(module, text, path)
        # Only the caller's own loops: a model that another model's forward calls is not followed (bounded cost).
        analysis.loops.per_step_caller = None
    except (OSError, FileError, UnicodeDecodeError, ValueError, RecursionError, cst.ParserSyntaxError):
        analysis = None
    cache[path] = (analysis, None if analysis is not None else [])
    if analysis is None:
        _hot_names(project, path, [])  # nothing of it runs every iteration
    while len(cache) > _CALLER_ANALYSES:
        cache.popitem(last=False)
    return analysis


def caller_analysis(project: Project, path: Path):
    """The `ModuleAnalysis` of a caller file, parsed once (`_caller_parse`), even when none of its calls runs
    every iteration (a script whose loops are in an imported helper); None if it cannot be read. Its hot calls
    are not looked for until a question needs them (`_hot_calls`)."""
    return _caller_parse(project, path)


def _python_accepted(project: Project, path: Path, text: str) -> bool:
    """Whether CPython's parser accepted `text`: the project model holds an `ast` tree of the same bytes."""
    from gpulint import runtime
    from gpulint.analysis.project import ModuleInfo

    if not runtime.batch_mode():
        return False  # trusted parses are for batch runs only: no need to hash the text
    # the model's entry as it is (`Project.module` would record a dependency and stat the file): the digest decides
    entry = project._modules.get(project._resolved(path))
    info = entry[1] if entry is not None else None
    return type(info) is ModuleInfo and info.digest == hashlib.sha256(text.encode("utf-8")).hexdigest()


def _hot_call_names(project: Project, path: Path) -> frozenset:
    """The last names of what the calls of `path` that run every iteration of a hot loop call (`_hot_calls`),
    kept per caller file for the project's state, without its analysis: a question about a name no hot call of
    a caller has is answered without parsing that caller again once its analysis has left `caller_analyses`
    (a monorepo's questions read over a hundred callers; re-parsing them in turn cost minutes)."""
    known = project.hot_call_names.get(path)
    if known is None:
        _hot_calls(project, path)
        known = project.hot_call_names.get(path, frozenset())
    return known


def _partial_target(analysis, func: cst.BaseExpression) -> cst.BaseExpression:
    """`f` for a name bound only to `functools.partial(f, ...)` (`compute = partial(self.loss, model, x)` then
    `compute()`), else `func` itself."""
    if type(func) is not cst.Name:
        return func
    bindings = analysis.index.visible_bindings(func)
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None:
        return func
    value = bindings[0].value
    if type(value) is cst.Call and analysis.qualified(value.func) == "functools.partial" and value.args \
            and value.args[0].keyword is None and not value.args[0].star:
        return value.args[0].value
    return func


def _line_of(analysis, node: cst.CSTNode) -> int:
    from gpulint.runner import _positions, first_lines  # the runner's cheap per-statement positions

    try:  # where statements start, so only the statement holding the call is printed (unit_positions.py)
        big_file_firsts: list[int] = []
        # outside an editor, the caller's tree as its own lint and the project model parsed it
        tree = ast.parse(analysis.source) if incremental.enabled() else \
            incremental.python_parse(analysis.source, str(analysis.path), big_file_firsts,
                                     lambda: held_python_tree(analysis.path, analysis.source))
        firsts = first_lines(tree) if isinstance(tree, ast.Module) else big_file_firsts or None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        firsts = None
    position = _positions(analysis, analysis.source, [node], firsts).get(node)
    return position.start.line if position is not None else 1


def _is_none(expr) -> bool:
    """The literal `None`."""
    return type(expr) is cst.Name and expr.value == "None"


class _Instances:
    """Whether an expression of a caller module may hold an instance of `cls` (and nothing else)."""

    def __init__(self, calls, project: Project, cls: ClassSummary, member: Optional[str] = None) -> None:
        self.calls = calls
        self.index = calls.index
        self.project = project
        self.cls = cls
        self.member = member  # a method of `cls`: an instance of a subclass that runs it counts too
        self._suffix = _module_dotted(project.root, cls.path)
        self._memo: dict[int, bool] = {}

    def among(self, expr: cst.BaseExpression) -> bool:
        """For a method: `expr` holds an instance of one of several project classes the caller builds itself,
        every one of them known, and one of them runs the method (`converter = CTCLabelConverter(...)` on one
        branch, `AttnLabelConverter(...)` on the other): in the configuration that builds it, the hot call runs
        it. Not through a factory's union (`build_optimizer("lion", ...)`: its argument may pick the class)."""
        if self.member is None:
            return False
        calls = self.calls.built_by(expr)  # the caller's own constructor calls: not a factory's union, whose
        if not calls:                      # choice its arguments may make (`build_optimizer("lion", ...)`)
            return self._among_passed(expr)
        # a torch class on another branch (`LARS(...)` if args.optimizer == 'lars' else `torch.optim.AdamW(...)`)
        # is one more known candidate: the project class's method still runs in the configuration building it
        candidates: set = set()
        matched = False
        for call in calls:
            found = self.calls._lookup(call.func)
            if isinstance(found, ClassSummary):
                candidates.add((found.path, found.name))
                matched = matched or self._matches(found)
                continue
            if found is not None:
                return False  # a project factory: its arguments may pick the class
            dotted = dotted_name(call.func) or ""
            qualified = self.calls.analysis.qualified(call.func) or dotted
            if self._suffix and any(f".{name}".endswith(f".{self._suffix}.{self.cls.name}")
                                    for name in (dotted, qualified)):
                candidates.add((self.cls.path, self.cls.name))  # `moco.optimizer.LARS(...)`: the class itself
                matched = True
            elif qualified.startswith("torch.optim."):  # a torch optimizer class, not `torch.compile(x)` of x
                candidates.add(qualified)
            else:
                return False
        return matched and len(candidates) >= 2

    def _among_passed(self, expr: cst.BaseExpression) -> bool:
        """`among` for a parameter (`def train(loader, model, optimizer, scaler):`) that every call site of its
        function in this module passes a name `among` accepts."""
        found_param = self.index.parameter_of(expr) if type(expr) is cst.Name else None
        if found_param is None:
            return False
        fn = found_param[0]
        params = positional_names(fn)
        sites = self.calls.analysis.loops.calls_to(fn)
        found = False
        for node in sites:
            # a method called through `self` gets its `self` from the receiver
            # (`self._translate_batch_with_strategy(batch, decode_strategy)`)
            passed = argument_for(node, params, expr.value) if params and not any(a.star for a in node.args) \
                else None
            argument = passed.value if passed is not None else None
            if type(argument) is not cst.Name or not self.among(argument):
                return False
            found = True
        return found

    def receiver(self, expr: cst.BaseExpression) -> bool:
        """`may_be` for the object a hot call is made on (`ema_helper.update(model)`, `model(x)`): a binding of it
        to the literal `None` (`ema_helper = None` on the branch without EMA, `self.ema = None` in `__init__`)
        never holds it when the call runs, since the call would raise there. The other bindings decide, and at
        least one must remain."""
        if type(expr) is cst.Name:
            bindings = self.index.visible_bindings(expr)
            kept = [b for b in bindings if not (b.kind == "assign" and b.index is None and _is_none(b.value))]
            if kept and len(kept) < len(bindings) and len(bindings) <= 16:
                return self._bindings_hold(expr, kept, 0)
        elif type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
            values = self.calls.self_attributes(expr)
            kept = [v for v in values if not _is_none(v)]
            if kept and len(kept) < len(values):
                return all(self.may_be(v, 1) for v in kept)
        return self.may_be(expr)

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
        narrowed = narrowed_class(self.calls, expr)  # `if isinstance(self.sampler, LossAwareSampler): ...`
        if narrowed is not None:
            return self._matches(narrowed)
        if type(expr) is cst.Call:
            wrapped = self._wrapped(expr)
            if wrapped is not None:
                return self.may_be(wrapped, depth + 1)
            return self._constructs(expr)
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
            values = self.calls.self_attributes(expr)
            if not values:  # only declared: `optim: Optimizer` in the class body (a dataclass's field)
                declared = self.calls.annotation_class(self.calls.self_annotation(expr))
                if declared is None:  # set by a project base class from a builder this class overrides
                    built = self._built_by_base(expr)
                    return bool(built) and all(self.may_be(v, depth + 1) for v in built)
                return self._matches(declared) or self._dispatches(declared)
            # `self._wm = torch.compile(self._wm)`: the same object wrapped (ProjectCalls.rewrapped)
            values = [v for v in values if not self.calls.rewrapped(v, expr.attr.value)] or values
            return all(self.may_be(v, depth + 1) for v in values)
        if type(expr) is cst.Attribute and hasattr(self.calls, "field_instance_classes"):
            # `self.cfg.strategy` of a configuration class's field (analysis/config_fields.py)
            held = self.calls.field_instance_classes(expr)
            return any(self._matches(c) or self._dispatches(c) for c in held)
        if type(expr) is cst.BooleanOperation and type(expr.operator) is cst.Or:
            # `sampler or UniformSampler(diffusion)`: either side is what the name holds
            return self.may_be(expr.right, depth + 1) and (
                self.may_be(expr.left, depth + 1) or self.calls.unpassed_none(expr.left))
        if type(expr) is cst.Subscript:  # `nets[0]` of a sequence whose element 0 is the instance
            position = _constant_index(expr)
            return position is not None and self._element(expr.value, position, depth)
        if type(expr) is not cst.Name:
            return False
        bindings = self.index.visible_bindings(expr)
        if not bindings or len(bindings) > 16:
            return False
        if len(bindings) == 1 and bindings[0].kind == "for" and bindings[0].index is None \
                and bindings[0].value is not None:  # `for evaluator in self.evaluators:`
            elements = self.calls.element_classes(bindings[0].value, depth + 1)
            return bool(elements) and all(self._matches(c) for c in elements)
        return self._bindings_hold(expr, bindings, depth)

    def _bindings_hold(self, expr: cst.Name, bindings: list, depth: int) -> bool:
        """Every one of `bindings` of the name `expr` may hold an instance (a rewrap of the name itself passes)."""
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
            elif b.kind == "assign" and b.index is not None and type(b.value) is cst.Call:
                # `model, optimizer = amp.initialize(model, optimizer)`: element `index` is an argument
                passed = self.calls.passed_through(b.value, b.index)
                if type(passed) is cst.Name and passed.value == expr.value:
                    continue
                if passed is None:
                    # `model, criterion, postprocessors = build_model(args)`: element `index` of what a
                    # project factory returns
                    if not self._element_built(b.value, b.index):
                        return False
                elif not self.may_be(passed, depth + 1):
                    return False
            elif b.kind == "assign" and b.index is not None and b.value is not None:
                # `net_g, net_d = nets` of a parameter every call site passes as `[net_g, net_d]`
                if not self._element(b.value, b.index, depth + 1):
                    return False
            else:
                return False
            found = True
        return found

    def _element_built(self, call: cst.Call, index: int) -> bool:
        """Element `index` of what `call` returns is an instance: a project function whose every `return` hands
        back a tuple with the class at that place (`FunctionSummary.returns_classes`)."""
        found = self.calls._lookup(call.func)
        if not isinstance(found, FunctionSummary):
            return False
        returned = found.returns_classes
        return len(returned) > 1 and index < len(returned) and returned[index] is not None \
            and self._matches(returned[index]) and _element_only_builds(self.project, found, index, returned[index])

    def _built_by_base(self, expr: cst.Attribute) -> list:
        """`self.model` of a class that never assigns it, whose project base class does in one of its methods
        from a builder method (`self.model = self._build_model().to(self.device)` in `Exp_Basic.__init__`)
        that the class overrides here (`Exp_Informer._build_model`): the values that override `return`s. Empty
        when the base assigns it otherwise, more than once, or the class does not define the builder."""
        from gpulint.analysis.hierarchy import project_bases

        node = self.calls.index.enclosing_class(expr)
        path = getattr(self.calls, "path", None)
        info = self.project.module(Path(path)) if node is not None and path is not None else None
        cls = info.classes.get(node.name.value) if info is not None else None
        if cls is None or not cls.bases:
            return []
        attribute = expr.attr.value
        builders = set()
        for base in project_bases(self.project, cls):
            for method in base.methods.values():
                for stmt in ast_walk.walk(method):
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                        if any(isinstance(t, ast.Attribute) and t.attr == attribute and isinstance(t.value, ast.Name)
                               and t.value.id == "self" for t in targets):
                            builders.add(_self_builder(stmt.value))
        if len(builders) != 1 or None in builders:
            return []
        builder = builders.pop()
        method = next((m for m in node.body.body if type(m) is cst.FunctionDef and m.name.value == builder), None) \
            if type(node.body) is cst.IndentedBlock else None
        if method is None:
            return []
        span = self.index.subtree(method)
        if span is None:
            return []
        return [n.value for n in self.index.nodes[span[0]:span[1] + 1] if type(n) is cst.Return
                and n.value is not None and self.index.enclosing_function(n) is method]

    def _element(self, expr: cst.BaseExpression, position: int, depth: int) -> bool:
        """Element `position` of the sequence `expr` holds an instance: a list or tuple literal (`[net_g, net_d]`),
        a name bound only to such sequences, or a parameter of a function every call site in this module passes
        one (`train_and_evaluate(rank, epoch, [net_g, net_d], ...)` then `net_g, net_d = nets`)."""
        if depth > _MAX_DEPTH:
            return False
        if type(expr) in (cst.List, cst.Tuple):
            elements = expr.elements
            if position >= len(elements) or any(type(e) is cst.StarredElement for e in elements):
                return False
            return self.may_be(elements[position].value, depth)
        if type(expr) is not cst.Name:
            return False
        bindings = self.index.visible_bindings(expr)
        if not bindings or len(bindings) > 16:
            return False
        for b in bindings:
            if b.kind == "param":
                if not self._parameter(b, depth, position):
                    return False
            elif b.kind in ("assign", "annassign") and b.index is None and b.value is not None:
                if not self._element(b.value, position, depth + 1):
                    return False
            else:
                return False
        return True

    def _wrapped(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        func = call.func
        if type(func) is cst.Attribute and func.attr.value in _SELF_METHODS:
            return func.value
        if self.calls.analysis.qualified(func) in _WRAPPERS and call.args and call.args[0].keyword is None \
                and not call.args[0].star:
            return call.args[0].value
        if hasattr(self.calls, "passed_through"):  # `apply_gradient_allreduce(model)`: hands its argument back
            return self.calls.passed_through(call)
        return None

    def _rewraps(self, value: cst.BaseExpression, name: str) -> bool:
        while type(value) is cst.Call:
            inner = self._wrapped(value)
            if inner is None:
                return False
            value = inner
        return type(value) is cst.Name and value.value == name

    def _constructs(self, call: cst.Call) -> bool:
        if type(call.func) is cst.Subscript:  # `DiT_models[args.model](...)`: a registry of builders
            found_class = self.calls.registry_class(call.func)
            if found_class is None:  # `model_dict[self.args.model](...)` of a local dict literal of classes
                return any(self._matches(c) for c in self._dict_classes(call.func.value))
            return self._matches(found_class)
        found = self.calls._lookup(call.func)
        if isinstance(found, ClassSummary):
            return self._matches(found)
        if isinstance(found, FunctionSummary):  # a factory: every class it may return runs the member
            returned = self.project.returned_classes(found)
            if returned:
                return all(self._matches(c) for c in returned) or self._named(call)
            return bool(found.returns_classes) and all(c is not None and self._matches(c)
                                                       for c in found.returns_classes[:1]) or self._named(call)
        dotted = dotted_name(call.func) or ""
        qualified = self.calls.analysis.qualified(call.func) or dotted
        if found is None and self._chosen_module(call.func):
            return True  # `model.get_model(...)` of `model = importlib.import_module(args.model)`
        if found is None and self._named(call):
            return True  # `REGISTRY.get(name)(cfg)`, `algorithm_class(...)` of `get_algorithm_class(name)`
        return bool(self._suffix) and any(
            name.endswith(f".{self._suffix}.{self.cls.name}") for name in (dotted, qualified))

    def _dict_classes(self, expr: cst.BaseExpression) -> list:
        """The project classes a dict literal the name `expr` is bound to (once) maps to (`model_dict =
        {'informer': Informer, 'informerstack': InformerStack}`): one is built in the run whose key names it."""
        if type(expr) is not cst.Name:
            return []
        bindings = self.index.visible_bindings(expr)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None \
                or type(bindings[0].value) is not cst.Dict:
            return []
        found = []
        for element in bindings[0].value.elements:
            if type(element) is cst.DictElement:
                target = self.calls._lookup(element.value)
                if isinstance(target, ClassSummary):
                    found.append(target)
        return found

    def _named(self, call: cst.Call) -> bool:
        """The call may build the class, picked by a name (analysis/named_classes.py): a registry, a module's
        namespace, a dict of builders, or a project function handing back one of those. One candidate is enough:
        the run that names it builds it."""
        from gpulint.analysis.named_classes import caller_instances

        path = getattr(self.calls, "path", None)
        if path is None:
            return False
        function = None
        node: Optional[cst.CSTNode] = call
        while node is not None:  # the top-level function holding the call (its assignments are the scope)
            up = self.index.up.get(id(node))
            if type(node) is cst.FunctionDef and type(up) is cst.Module:
                function = node.name.value
            node = up
        found = caller_instances(self.project, Path(path), self.calls.analysis.code(call), function)
        return any(self._matches(c) for c in found or ())

    def _chosen_module(self, func: cst.BaseExpression) -> bool:
        """`func` is `m.Name` of a module `m` the script picks at run time (runtime_modules.py), and the class
        is `Name` of a module the import may pick: in the run that picks it, this builds the class."""
        from gpulint.analysis.runtime_modules import may_build

        path = getattr(self.calls, "path", None)
        return path is not None and may_build(self.calls, self.project, Path(path), func, self.cls.path,
                                              self.cls.name)

    def _parameter(self, binding, depth: int, element: Optional[int] = None) -> bool:
        """A parameter of a function: every call site in this module passes an instance (or, for a top-level
        function called elsewhere, the project's call sites agree on the class). With `element`, every call site
        passes a sequence whose element `element` is an instance (`_element`)."""
        fn = binding.source
        if type(fn) is not cst.FunctionDef:
            return False
        if element is not None and fn.params.star_arg is not None and type(fn.params.star_arg) is cst.Param \
                and fn.params.star_arg.name.value == binding.name:
            return False  # `*nets`: the call's arguments, not one sequence
        annotated = annotated_class(self.calls, fn, binding.name) if element is None else None
        if annotated is not None:  # `def train(trainer: Trainer, ...)`: what the signature promises
            return self._matches(annotated) or self._dispatches(annotated)
        params = positional_names(fn)
        position = params.index(binding.name) if binding.name in params else None
        found = False
        for node in self.index.nodes:
            if type(node) is not cst.Call or type(node.func) is not cst.Name \
                    or node.func.value != fn.name.value or self.calls.analysis.loops.local_function(node) is not fn:
                continue
            argument = _argument(node, position, binding.name)
            if argument is None:
                return False
            if not (self.may_be(argument, depth + 1) if element is None
                    else self._element(argument, element, depth + 1)):
                return False
            found = True
        if not found and element is not None:
            return False
        if not found:  # no call site in this module: the project's call sites (a top-level function)
            cross = self.calls._parameter_class(binding)
            return self._matches(cross) if cross is not None else self._named_parameter(binding)
        return found

    def _named_parameter(self, binding) -> bool:
        """A parameter of a top-level function (or of a top-level class's `__init__`) that some project call
        site passes an instance of a class picked by a name (analysis/named_classes.py), one of them the class."""
        from gpulint.analysis.named_classes import passed_candidates

        fn = binding.source
        path = getattr(self.calls, "path", None)
        owner = self.index.up.get(id(fn))
        if path is None or type(fn) is not cst.FunctionDef:
            return False
        if type(owner) is cst.Module:
            function = fn.name.value
        else:
            cls = self.index.up.get(id(owner)) if type(owner) is cst.IndentedBlock else None
            if not (fn.name.value == "__init__" and type(cls) is cst.ClassDef
                    and type(self.index.up.get(id(cls))) is cst.Module):
                return False
            function = f"{cls.name.value}.__init__"
        return any(self._matches(c) for c in passed_candidates(self.project, Path(path), function, binding.name))

    def _dispatches(self, declared: ClassSummary) -> bool:
        """Class hierarchy analysis: a value typed only by a project base class (`vae_model: BaseVAE`) may be an
        instance of any project subclass, so the subclass's own `member` (`VanillaVAE.loss_function`, overriding
        the base's abstract one) is a possible callee of `value.member(...)`. Only for a declared type (an
        annotation), never for a construction (`BaseVAE(...)` builds the base itself); the declared class must
        itself have `member` (directly or through its bases: the call is typed), and the class asked about must
        derive from it through project bases (hierarchy.py's bound)."""
        from gpulint.analysis.hierarchy import derives

        if self.member is None or self.member.startswith("__") or _same(declared, self.cls):
            return False
        if self.project.method(declared, self.member) is None:
            return False
        return derives(self.project, self.cls, declared) or _conforms(self.project, self.cls, declared)

    def _matches(self, found: ClassSummary) -> bool:
        """`found` is the class, or (for a method) a project subclass whose `member` runs the class's own: not
        overridden on the way up, or overridden by methods that call `super().member(...)`."""
        if _same(found, self.cls):
            return True
        if self.member is None:
            return False
        from gpulint.analysis.hierarchy import first_bases

        for current in first_bases(self.project, found, _MAX_DEPTH + 1):
            if _same(current, self.cls):
                return True
            own = current.methods.get(self.member)
            if own is not None and not _calls_super(own, self.member):
                return False
        return False


def _self_builder(value: Optional[ast.expr]) -> Optional[str]:
    """`m` for `self.m()` (also through `.to(device)`, `.cuda()`, `.float()`...: `self._build_model().to(dev)`),
    else None."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _SELF_METHODS:
        value = value.func.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            isinstance(value.func.value, ast.Name) and value.func.value.id == "self":
        return value.func.attr
    return None


_PROTOCOLS = frozenset({"typing.Protocol", "typing_extensions.Protocol"})


def _conforms(project: Project, cls: ClassSummary, declared: ClassSummary) -> bool:
    """`declared` is a `typing.Protocol` of the project (`algo: QLearningAlgoProtocol`) and `cls` defines, itself
    or through its project bases, every method and property the protocol declares: structural typing, the only
    subtyping a protocol has (d3rlpy's `QLearningAlgoBase` never names its protocol). A protocol of one or two
    members (`SupportsPredict`) is satisfied by too many unrelated classes to say which one runs: at least three."""
    if not any(project.external_name(declared.path, base) in _PROTOCOLS for base in declared.bases if base):
        return False
    members = [m for m in declared.methods if not m.startswith("__")]
    return len(members) >= 3 and all(project.method(cls, m) is not None for m in members)


def _constant_index(expr: cst.Subscript) -> Optional[int]:
    """The non-negative integer constant `expr` subscripts with (`nets[0]`), else None."""
    if len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
        return None
    value = expr.slice[0].slice.value
    if type(value) is cst.Integer:
        try:
            return int(value.value, 0)
        except ValueError:
            return None
    return None


def _calls_super(fn: ast.FunctionDef, member: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == member
               and isinstance(n.func.value, ast.Call) and isinstance(n.func.value.func, ast.Name)
               and n.func.value.func.id == "super" for n in ast_walk.walk(fn))


def annotated_class(calls, fn: cst.FunctionDef, name: str) -> Optional[ClassSummary]:
    """The project class the parameter `name` of `fn` is annotated with (`trainer: Trainer`,
    `trainer: "Trainer"`, `Optional[Trainer]`), else None."""
    params = (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)
    param = next((p for p in params if p.name.value == name), None)
    if param is None or param.annotation is None:
        return None
    return calls.annotation_class(param.annotation.annotation)


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


def feeds_a_gpu(analysis) -> bool:
    """A module that names no device itself (a file of `nn.Module` classes) whose model code a training loop
    runs every step, from a file that does name one (through the owners of submodules: `Gate` in `QueueModel`
    in the loop of train.py). Asked only when the module's own text has no device hint."""
    if analysis.path is None:
        return False
    if _steps_a_gpu_optimizer(analysis):
        return True
    if _helpers_stepped_by_a_gpu_loop(analysis):
        return True
    if helpers_feed_a_gpu(analysis, *analysis.fact(_project_of)):
        return True
    if _trainer_built_by_a_gpu_file(analysis):
        return True
    if _framework_classes(analysis):  # a LightningModule, a tianshou algorithm: the framework places it
        return True
    from gpulint.analysis.device_helpers import copies_through_a_cuda_helper

    if copies_through_a_cuda_helper(analysis):  # `tensor(rewards)` of a helper copying to `Config.DEVICE`
        return True
    if not any(
            type(s) is cst.ClassDef and type(s.body) is cst.IndentedBlock and
            any(type(m) is cst.FunctionDef and m.name.value == "forward" for m in s.body.body)
            for s in analysis.module.body):
        return False
    project, path = analysis.fact(_project_of)
    return any(type(stmt) is cst.ClassDef and
               site_names_a_device(project, per_step_site(project, path, stmt.name.value), sites=_MAX_DEPTH)
               for stmt in analysis.module.body)


def _trainer_built_by_a_gpu_file(analysis) -> bool:
    """`trainer_built_by_a_gpu_file` for a module being linted (its project model's `ast` tree); a module whose
    text never says `backward` has no such loop, and no method of it is walked."""
    text = analysis.source if analysis.source is not None else analysis.module.code
    if "backward" not in text:
        return False
    project, path = analysis.fact(_project_of)
    info = project.module(path)
    return info is not None and trainer_built_by_a_gpu_file(project, path, info.tree)


def _calls_backward(method: ast.FunctionDef) -> bool:
    """Some call of `.backward()` anywhere in `method`: one walk, before the walk of each loop's statements (most
    methods have none)."""
    return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "backward"
               for c in ast_walk.walk(method))


def trainer_built_by_a_gpu_file(project: Project, path: Path, tree: ast.Module) -> bool:
    """A module of agent classes with no device of its own (an RL algorithm's `update`: a minibatch loop over the
    rollout storage's generator that runs `loss.backward()` and `optimizer.step()` on the policy it was handed)
    one of whose top-level classes with such a loop another project file builds (`agent = algo.PPO(actor_critic,
    ...)`), a file that names the device: the network it trains, and the tensors of its loop, are on that
    device."""
    names = [stmt.name for stmt in tree.body if isinstance(stmt, ast.ClassDef) and any(
        isinstance(loop, (ast.For, ast.While)) and any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "backward"
            for statement in loop.body for c in ast_walk.walk(statement))
        for method in stmt.body if isinstance(method, ast.FunctionDef) and _calls_backward(method)
        for loop in ast_walk.walk(method))]
    if not names:
        return False
    with text_dependency():  # the callers' text is searched for a device: a cached lint depends on it
        return _built_by_a_gpu_file(project, _resolved(project, path), names)


def _built_by_a_gpu_file(project: Project, resolved: Path, names: list) -> bool:
    from gpulint.analysis import GPU_HINT
    from gpulint.textsearch import found_in

    for name in names:
        for caller in project.files_naming(name):
            if project.is_test(caller) or project._resolved(caller) == resolved:
                continue
            info = project.module(caller)
            if info is None or not any(
                    isinstance(found, ClassSummary) and found.name == name and
                    _resolved(project, found.path) == resolved
                    for found in (project.lookup(info.path, _dotted(call.func) or "")
                                  for call, _ in info.calls_named(name))):
                continue
            try:
                text = Path(caller).read_text(errors="replace")  # a file already read by the project model
            except OSError:
                continue
            if found_in(GPU_HINT, text):
                return True
    return False


def _framework_classes(analysis) -> bool:
    """A top-level class of the module with a base defines a method a framework calls every step
    (`framework_steps`)."""
    classes = [(s.name.value, [m.name.value for m in s.body.body if type(m) is cst.FunctionDef])
               for s in analysis.module.body
               if type(s) is cst.ClassDef and s.bases and type(s.body) is cst.IndentedBlock]
    if not classes:
        return False
    from gpulint.analysis.framework_steps import steps_a_framework

    return steps_a_framework(*analysis.fact(_project_of), classes)


def site_names_a_device(project: Project, site: Optional[CallSite], sites: int = 1) -> bool:
    """The file of the per-step call `site` names a device (`GPU_HINT`), or, following the owners' chain
    (a submodule's call in its owner's `forward`, then the owner's call site), the file of one of the first
    `sites` call sites does: the tensors the callee is handed are on that device."""
    from gpulint.analysis import GPU_HINT
    from gpulint.textsearch import found_in

    depth = 0
    while site is not None:
        if site.assumed:  # only a project that moves models or tensors to CUDA assumes a forward per-step
            return True
        try:
            text = Path(site.path).read_text(errors="replace")  # a file already read by the project model
        except OSError:
            return False
        if found_in(GPU_HINT, text):
            return True
        depth += 1
        if site.owner is None or depth >= sites:
            return False
        site = per_step_site(project, site.path, site.owner) if site.owner_member == "forward" \
            else member_site(project, site.path, site.owner, site.owner_member)
    return False


def _helpers_stepped_by_a_gpu_loop(analysis) -> bool:
    """A module of helpers with no device of its own (a mixed-precision trainer class: guided-diffusion's
    `fp16_util.py`) whose method of a top-level class a hot loop of another file calls every iteration with the
    object's own state (no argument but modules and optimizers: `optimize(opt)`, `zero_grad()`), from a file that
    names the device: the parameters the object holds and updates are on that device. Plain functions are left
    out: what they read is what they are given (an image writer handed a numpy array). A model's `forward` is
    `feeds_a_gpu`'s own question (through submodule owners)."""
    entries = {entry for found in analysis.fact(_entries).values() for entry in found
               if entry[1] not in ("forward", "__call__")}
    if not entries:
        return False
    project, path = analysis.fact(_project_of)
    for owner, member in sorted(entries, key=lambda e: (e[0] or "", e[1])):
        site = member_site(project, path, owner, member)
        if site is None and owner is not None:  # a callback run by its event's name (`self('after_batch')`)
            site = event_site(project, path, owner, member)
        if site is None:
            continue
        if owner is None:  # a plain function: only when handed parameter lists (`zero_grad(self.model_params)`)
            if hands_over_parameters(project, site) and site_names_a_device(project, site):
                return True
            continue
        if (not _hands_over_tensors(project, site) or _trains_its_network(project, path, owner, member) or
                _hands_over_device_tensors(project, site)) and site_names_a_device(project, site):
            return True
    return False


def _hands_over_device_tensors(project: Project, site: CallSite) -> bool:
    """Every argument of the per-step call `site` is a tensor its caller computed on the device (by the caller's
    own analysis: a tensor, not a host copy): `confusion_mat.update(pred, target.view(-1).byte())` with
    `_, pred = torch.max(output, 1)`. What the method reads of them is on the device the caller's file names.
    A batch a loader handed out (`src = example` of `for example in loader:`, never copied: `unmoved.loader_batch`)
    is where the loader put it, in host memory, not a tensor the caller computed on the device."""
    from gpulint.analysis.unmoved import loader_batch

    for analysis, node, _ in _hot_calls(project, site.path):
        if f"{analysis.code(node.func)}(...)" != site.code or _line_of(analysis, node) != site.line:
            continue
        return bool(node.args) and all(not a.star and analysis.kinds.is_tensor(a.value) and
                                       not analysis.kinds.on_host(a.value) and
                                       not loader_batch(analysis.kinds, a.value) for a in node.args)
    return False


def _trains_its_network(project: Project, path: Path, owner: str, member: str) -> bool:
    """The per-step method `owner.member` is a training step: it runs `.backward()` itself (outside loops of its
    own, directly or through `self.m(...)`: an RL implementation's `update(batch)`). Whatever it is handed (the
    batch), what it computes is the network's, and the network is where the caller's file put it: a batch left
    on the host could not meet parameters on the device."""
    from gpulint.analysis import _steps_backward

    cls = project.lookup(path, owner)
    if not isinstance(cls, ClassSummary):
        return False
    with text_dependency():  # the method's body is read: a lint cached on it depends on the module's text
        return _steps_backward(project, cls, member)


def _hands_over_tensors(project: Project, site: CallSite) -> bool:
    """The per-step call `site` passes something other than a module or an optimizer (or the call is not found
    again): what the helper reads may be what it is given, which the caller may have copied to the host first
    (SlowFast's visualizers get `preds.cpu()`), or a number (a meter's `update(time.time() - t)`). A helper
    called with its own state only (`mp_trainer.optimize(opt)`, `zero_grad()`) reads what it holds: the model's
    tensors, on the caller's device."""
    from gpulint.analysis.kinds import Kind

    for analysis, node, _ in _hot_calls(project, site.path):
        if f"{analysis.code(node.func)}(...)" != site.code or _line_of(analysis, node) != site.line:
            continue
        # (an event's name, `self('after_batch')` running callbacks by name, hands over no tensor)
        return any(analysis.kinds.of(a.value) not in (Kind.MODULE, Kind.OPTIMIZER)
                   and type(a.value) is not cst.SimpleString for a in node.args)
    return True


def hands_over_parameters(project: Project, site: CallSite) -> bool:
    """The per-step call `site` of a plain function passes a model's parameters and nothing else: each argument
    is `m.parameters()`, a sequence named for parameters (`self.model_params`, `master_params`; not
    `num_params`), or a module or optimizer (an fp16 helper's `zero_grad(self.model_params)`,
    `master_params_to_model_params(self.model_params, self.master_params)`): the tensors it updates are the
    model's, on the caller's device."""
    from gpulint.analysis.kinds import Kind

    for analysis, node, _ in _hot_calls(project, site.path):
        if f"{analysis.code(node.func)}(...)" != site.code or _line_of(analysis, node) != site.line:
            continue
        if not node.args or any(a.star or a.keyword is not None for a in node.args):
            return False
        return all(_names_parameters(a.value) or analysis.kinds.of(a.value) in (Kind.MODULE, Kind.OPTIMIZER)
                   for a in node.args)
    return False


def _names_parameters(expr: cst.BaseExpression) -> bool:
    if type(expr) is cst.Call and type(expr.func) is cst.Attribute:
        return expr.func.attr.value in ("parameters", "named_parameters")
    name = expr.value if type(expr) is cst.Name else (expr.attr.value if type(expr) is cst.Attribute else "")
    lowered = name.lower()
    return lowered.endswith(("params", "parameters")) and not lowered.startswith("num_")


def _steps_a_gpu_optimizer(analysis) -> bool:
    """A module of optimizer classes (a class deriving from `...Optimizer` with its own `step`, LARS written by
    hand) whose `step` a training loop runs every iteration (`optimizer.step()`, `scaler.step(optimizer)`), or of
    callable helpers whose `__call__` one runs every iteration (an EMA called as `ema(model)`), from a file that
    names the device: the tensors they update are the model's, on that device."""
    project = None
    for stmt in analysis.module.body:
        if type(stmt) is not cst.ClassDef or type(stmt.body) is not cst.IndentedBlock:
            continue
        methods = {m.name.value for m in stmt.body.body if type(m) is cst.FunctionDef}
        stepped = "step" in methods and any(_base_name(b.value).endswith("Optimizer")
                                            for b in stmt.bases if b.keyword is None)
        if not stepped and "__call__" not in methods:
            continue
        if project is None:
            project, path = analysis.fact(_project_of)
        site = member_site(project, path, stmt.name.value, "step") if stepped else None
        if site is None and "__call__" in methods:
            site = call_site(project, path, stmt.name.value)
        if site_names_a_device(project, site):
            return True
    return False


def _dotted_base(expr: ast.expr) -> str:
    return expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""


def _base_name(expr: cst.BaseExpression) -> str:
    """`Optimizer` of `torch.optim.Optimizer` or `Optimizer`; "" for anything else."""
    if type(expr) is cst.Attribute:
        return expr.attr.value
    return expr.value if type(expr) is cst.Name else ""
