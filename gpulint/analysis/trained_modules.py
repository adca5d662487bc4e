"""A network's `forward` runs once per batch wherever it is called: the fallback for model classes whose call no
known route connects to a loop.

Many projects build their model where gpulint cannot follow the call to a loop: from a YAML file or a registry
(`build_model(cfg)`, `MODELS.build(cfg.model)`), by an importlib name, inside a trainer framework, or in a script
whose loop calls `model(batch)` through layers of indirection. Yet the `forward` of an `nn.Module` a project trains
runs on every batch, whoever calls it. When no known route (analysis/forward.py `per_step_site`, `call_site`)
decides a project module class, its `forward` (or a `__call__` it overrides) counts as per-step code here, with no
invented call site (`CallSite.assumed`: the message says "which runs on every forward pass", with no related
location), when all of these hold:

- the project runs models on a GPU: some non-test project file moves a model or tensors to CUDA or builds with
  a CUDA device (`.cuda(`, a "cuda" device string, `torch.cuda.is_available()`, `CUDA_VISIBLE_DEVICES`), so a
  CPU-only project stays silent;
- the class is a subclass of `torch.nn.Module` (directly or through project bases) defined in a module that is
  not test code and does not export or trace a network itself (`torch.onnx.export`, `torch.jit.trace`: a
  conversion script runs it once);
- the class is instantiated: "instantiated" means its name appears, beyond its own `class` line, in a non-test
  project file that is no export-only script (a constructor call, an import to build it, a registry dict or an
  `__init__` export, a subclass naming it as base, another module's `self.sub = Cls(...)`), or in its own module
  (`self.block = Cls(...)` in another class, `MODELS = {"x": Cls}`, `__all__`), or it carries a class decorator (a
  registry's `@MODELS.register_module()`, which builds it from a config string). A class named nowhere else is
  dead code and stays silent.

What such a `forward` reaches (its module's functions and methods through `self`, its submodules' forwards,
project helpers it imports) follows exactly as for a forward a loop was seen to call, and so do the stances
(first-call guards, `if not self.training:` branches).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.analysis.project import Project, _dotted

# Evidence, in a project file, that models or tensors go to a CUDA device
_CUDA_USE = re.compile(r"\.cuda\(|[\"']cuda[\"':]|cuda\.is_available\(|CUDA_VISIBLE_DEVICES|cuda\.device_count\(")
# A script that exports or traces a network once (ONNX, TorchScript, Core ML), not a training or serving loop
_EXPORTS = re.compile(r"\bonnx\.export\(|\bjit\.trace\(|\bcoremltools\b|\btorch\.export\.export\(")
_GPU_KEY = ("trained_modules", "gpu project")


def runs_on_gpu(project: Project) -> bool:
    """Some non-test project file moves a model or tensors to CUDA (`_CUDA_USE`), remembered per project state."""
    with project._lock:
        known = project.per_step_sites.get(_GPU_KEY)
    if known is not None:
        return known
    found = any(not project.is_test(f) and _CUDA_USE.search(_text(f)) is not None
                for f in project.files_naming("cuda"))
    with project._lock:
        project.per_step_sites[_GPU_KEY] = found
    return found


def assumed_site(project: Project, path: Path, class_name: str, member: str = "forward"):
    """A `CallSite` with `assumed=True` for the `member` (`forward`, `__call__`) of the project `nn.Module` class
    `class_name` of `path` when it counts as run on every batch (see the module's documentation), else None."""
    from gpulint.analysis.forward import CallSite

    if project.is_test(path):
        return None
    info = project.module(path)
    cls = info.classes.get(class_name) if info is not None else None
    if cls is None or member not in cls.methods or not project.is_module_class(cls):
        return None
    own = _text(path)
    if _EXPORTS.search(own) is not None or not runs_on_gpu(project):
        return None
    if not _instantiated(project, path, cls, own, info) or _decided(project, cls):
        return None
    return CallSite(path, cls.methods[member].lineno, "", f"{class_name}.{member}", assumed=True)


def _instantiated(project: Project, path: Path, cls, own: str, info) -> bool:
    if len(re.findall(rf"\b{re.escape(cls.name)}\b", own)) > 1:
        return True  # built or listed by its own module (another class's submodule, a dict, `__all__`)
    if _decorated(project, cls):
        return True  # a registry's decorator: built by the name a config gives
    here = project._resolved(path)
    training = set(project.files_naming(cls.name, training=True))
    for file in project.files_naming(cls.name):
        if project._resolved(file) == here or project.is_test(file):
            continue
        text = _text(file)
        if _EXPORTS.search(text) is not None and file not in training:
            continue  # an export script runs it once
        return True
    return False


def _decided(project: Project, cls) -> bool:
    """A known route already decides the class, so the fallback keeps out: a non-test file whose hot loop the
    prefilter sees names it by a name that resolves to it (`Probe()` in train.py, whose loop calls it only
    under `if step % 100 == 0:`; `{"informer": Informer}` in a builder: analysis/forward.py followed those and
    found no per-step call), or any non-test file builds it by a constructor call resolving to it (the instance is
    in sight of the existing routes, which follow it: `Net(...).fit(x, y)`), or a project subclass has its own
    `forward` (the base's may never run), or another project
    module class builds it in its `__init__` and calls it through that attribute in a method (a submodule: it
    runs as often as that method, `forward._submodule_site`, whether the owner is reached by a loop or assumed
    here). A submodule added to a container (`seq.add(Block(...))`) whose call is not seen is assumed itself.
    A class a registry's decorator registers is never decided here: configurations build it by name."""
    from gpulint.analysis.forward import _attribute_called, _built_in_init, _hot_file, _same

    if _registry_decorated(project, cls):
        # a registry's decorator builds the class by a configuration's name, a route no search follows: another
        # module building it for its own use (LAVIS's `BlipDiffusion` holds a `Blip2Qformer` for its features),
        # or a subclass overriding `forward`, does not tell whether the configurations that name it train it
        return False
    for file in project.files_naming(cls.name):
        if project.is_test(file):
            continue
        info = project.module(file)
        if info is None:
            continue
        for owner in info.classes.values():
            held = {attr for attr, _ in _built_in_init(project, owner).get(cls.name, ())}
            if held and not _same(owner, cls) and project.is_module_class(owner) and any(
                    _attribute_called(project, owner, held, m) is not None for m in owner.methods):
                return True  # the owner's method calls it (`__init__` too: setup): it runs as often as that
            if not _same(owner, cls) and "forward" in owner.methods and \
                    any(b.rsplit(".", 1)[-1] == cls.name for b in owner.bases):
                return True  # a subclass with its own forward: the base's may never run
        if not hasattr(info, "class_node") and not isinstance(getattr(info, "tree", None), ast.Module):
            continue  # (a big module's `tree` is parsed anew on each read: its index is kept instead)
        hot = _hot_file(project, info)[0]
        handed = info.indexed(_handed_back).get(cls.name)
        # the class's own module trying it once under `if __name__ == "__main__":` (no loop: a smoke test of the
        # shapes, FEDformer's `Model(configs)` on random tensors) does not decide where the project trains it
        references = info.indexed(_references_beyond_smoke_test) if _same_path(project, file, cls.path) and \
            project.files_naming(cls.name) != [file] else info.indexed(_references)
        for dotted, called in references.get(cls.name, {}).items():
            if not hot and not called:
                continue  # outside a hot file only a constructor call decides: the instance is in sight
            if called and handed is not None and not _factories_decided(project, file, handed):
                continue  # built only by factories that return it, themselves reached by name only
            found = project.lookup(file, dotted)
            if found is not None and getattr(found, "name", None) == cls.name and \
                    getattr(found, "path", None) is not None and _same_path(project, found.path, cls.path):
                return True
            if hot and "." in dotted and dotted.split(".")[0] not in getattr(info, "imports", {}):
                return True  # `net_module.Net(8)` of a module picked at run time: the named-module route decides
    return False


def _factories_decided(project: Project, path: Path, factories: frozenset, depth: int = 0) -> bool:
    """Whether some factory of `factories` (top-level functions of `path` returning the instance they build) is in
    sight of the existing routes: a non-test file calls it by a name that resolves to it (outside a factory of its
    own that returns the result, followed in turn), or a hot file names it. A factory reached only by a name the
    analysis cannot resolve (`models.__dict__[arch](...)`, `getattr(zoo, name)(...)`, a registry filled by a
    decorator, a config string) hands its instance to a call no route follows: the class stays undecided."""
    from gpulint.analysis.forward import _hot_file

    if depth > 3:
        return True
    for name in factories:
        for file in project.files_naming(name):
            if project.is_test(file):
                continue
            info = project.module(file)
            if info is None or not hasattr(info, "class_node") and \
                    not isinstance(getattr(info, "tree", None), ast.Module):
                continue  # (a big module's `tree` is parsed anew on each read: its index is kept instead)
            hot = _hot_file(project, info)[0]
            handed = info.indexed(_handed_back).get(name)
            for dotted, called in info.indexed(_references).get(name, {}).items():
                if not hot and not called:
                    continue
                found = project.lookup(file, dotted)
                if found is None or (getattr(found, "name", None) or getattr(found, "qualname", None)) != name or \
                        getattr(found, "path", None) is None or not _same_path(project, found.path, path):
                    continue
                if not called or handed is None or _factories_decided(project, file, handed, depth + 1):
                    return True
    return False


# Calls that read an object without taking it anywhere: an instance passed only to these stays in sight
_READS = {"print", "isinstance", "len", "str", "repr", "type", "id", "getattr", "hasattr", "setattr", "info",
          "debug", "warning", "format", "append", "count_parameters", "summary"}


def _handed_back(tree: ast.Module) -> dict:
    """Last name -> the top-level functions that return its result, when every call of that name in the module
    hands the instance it builds away: returned by the top-level function that builds it (`model = Net(cfg);
    load(model); return model`, `return Net()`: a factory), or bound to a name in a function that passes it on to
    another call (`loss_fn = Loss(...)` then `train(model, loss_fn=loss_fn)`), where no route follows the instance
    into a loop of another module. Names called elsewhere too are left out (one walk per module,
    `ModuleInfo.indexed`)."""
    factories: dict[str, set] = {}
    elsewhere: set = set()
    for fn in tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # a call outside every top-level function (a class body, module code): walked once here
            for node in ast_walk.walk(fn):
                if isinstance(node, ast.Call):
                    last = _last(node.func)
                    if last is not None:
                        elsewhere.add(last)
            continue
        bound: dict[str, set] = {}
        returned_calls: set = set()
        returned_names: set = set()
        passed: set = set()
        calls = []
        for node in ast_walk.walk(fn):
            if isinstance(node, ast.Call):
                calls.append(node)
                if _last(node.func) not in _READS:
                    passed.update(a.id for a in node.args if isinstance(a, ast.Name))
                    passed.update(k.value.id for k in node.keywords if isinstance(k.value, ast.Name))
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1:
                # `model = build(cfg)`, or one element of `model, criterion, postprocessors = build(args)`
                target = node.targets[0]
                for name in ([target] if isinstance(target, ast.Name) else
                             target.elts if isinstance(target, ast.Tuple) else ()):
                    if isinstance(name, ast.Name):
                        bound.setdefault(name.id, set()).add(id(node.value))
            elif isinstance(node, ast.Return) and node.value is not None:
                # `return model`, `return Net()`, or an element of `return model, criterion, postprocessors`
                for value in (node.value.elts if isinstance(node.value, ast.Tuple) else (node.value,)):
                    if isinstance(value, ast.Call):
                        returned_calls.add(id(value))
                    elif isinstance(value, ast.Name):
                        returned_names.add(value.id)
        for name in returned_names:
            returned_calls |= bound.get(name, set())
        passed_calls = {call for name in passed for call in bound.get(name, ())}
        for call in calls:
            last = _last(call.func)
            if last is None:
                continue
            if id(call) in returned_calls:
                factories.setdefault(last, set()).add(fn.name)
            elif id(call) in passed_calls:
                factories.setdefault(last, set())
            else:
                elsewhere.add(last)
    return {name: frozenset(fns) for name, fns in factories.items() if name not in elsewhere}


def _references_beyond_smoke_test(tree: ast.Module) -> dict:
    """`_references` of the module without its top-level `if __name__ == "__main__":` blocks that hold no loop."""
    body = [stmt for stmt in tree.body if not (_main_guard(stmt) and not any(
        isinstance(n, (ast.For, ast.While, ast.AsyncFor)) for n in ast_walk.walk(stmt)))]
    if len(body) == len(tree.body):
        return _references(tree)
    return _references(ast.Module(body=body, type_ignores=[]))


def _main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":`."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" and \
        len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) and \
        test.comparators[0].value == "__main__"


def _references(tree: ast.Module) -> dict:
    """Last name -> {dotted name: whether some call calls it} of every name and attribute chain of a module (not
    the bases of its class statements), from one walk (`ModuleInfo.indexed`: asked for every class a module names, not a walk per class)."""
    found: dict[str, dict[str, bool]] = {}
    # a class statement's bases name a class without using an instance (`class AttModel(CaptionModel):`)
    # nor does `super(AttModel, self).__init__()`, nor a decorator's argument (`@utils.copy_args(PropertyPrediction,
    # ignore=...)` on a subclass copies the class's signature once, at definition): the walk is breadth-first, so the
    # class or function statement or the `super` call is met before the nodes it leaves out (one walk, not one more
    # per kind of node left out)
    bases: set = set()
    for node in ast_walk.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases.update(id(b) for b in node.bases)
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            bases.update(id(a) for d in node.decorator_list if isinstance(d, ast.Call)
                         for a in (*d.args, *(k.value for k in d.keywords)) if isinstance(a, (ast.Name, ast.Attribute)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
            bases.update(id(a) for a in node.args)
        if id(node) in bases:
            continue
        called = isinstance(node, ast.Call)
        if called:
            node = node.func
        if isinstance(node, (ast.Name, ast.Attribute)):
            dotted = _dotted(node)
            if dotted is not None:
                names = found.setdefault(_last(node), {})
                names[dotted] = names.get(dotted, False) or called
    return found


def _last(func: ast.expr) -> Optional[str]:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _same_path(project: Project, a: Path, b: Path) -> bool:
    return project._resolved(Path(a)) == project._resolved(Path(b))


def _registry_decorated(project: Project, cls) -> bool:
    """The class carries a registry's decorator (`@registry.register_model("blip2")`, `@MODELS.register_module()`,
    `@register_model`): a configuration builds it by name."""
    from gpulint.analysis.module_attrs import class_node

    node = class_node(project, cls)
    for decorator in (node.decorator_list if node is not None else ()):
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name.startswith(("register", "registe_")):
            return True
    return False


def _decorated(project: Project, cls) -> bool:
    from gpulint.analysis.module_attrs import class_node

    node = class_node(project, cls)  # from the class's own lines in a big module: no whole-text parse per class
    return node is not None and bool(node.decorator_list)


def _text(path: Path) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def stepped_optimizer(project: Project, path: Path, class_name: str) -> bool:
    """The top-level class `class_name` of `path` is a hand-written optimizer (a base of its own, as written,
    qualifies to `torch.optim.*`: `class RAdam(Optimizer)` with `from torch.optim.optimizer import Optimizer`) with
    its own `step`, in a project that runs models on a GPU, named by another module beyond its imports (built from a
    config by name: `getattr(optimizers, cfg.get("optimizer_type", "RAdam"))(...)`) and not test code: the training loop steps it every
    iteration, whoever calls `step`, like a network's `forward` once per batch (GPU411 reports a per-parameter loop
    in that `step`)."""
    if project.is_test(path):
        return False
    info = project.module(path)
    cls = info.classes.get(class_name) if info is not None else None
    if cls is None or "step" not in cls.methods or not any(
            (info.qualify(b) or "").startswith("torch.optim.") for b in cls.bases if b):
        return False
    return runs_on_gpu(project) and _named_beyond_imports(project, path, cls.name)


def _named_beyond_imports(project: Project, path: Path, name: str) -> bool:
    """Some other non-test project module, not a package's `__init__.py`, names the class outside its imports: a
    name or attribute resolving to it (`RAdam(model.parameters())`, `optim.RAdam`), or a string that is exactly its
    name (a config default, `config.get("optimizer_type", "RAdam")`). Not a zoo of optimizers only re-exported,
    a docstring or error message mentioning the name, nor a script whose later import binds the name to another
    class (`from transformers import AdamW` after the project's)."""
    here = project._resolved(path)
    for file in project.files_naming(name):
        if project._resolved(file) == here or project.is_test(file) or Path(file).name == "__init__.py":
            continue
        info = project.module(file)
        tree = getattr(info, "tree", None)
        if not isinstance(tree, ast.Module):
            continue
        for node in ast_walk.walk(tree):
            if isinstance(node, ast.Constant) and node.value == name:
                return True
            dotted = node.id if isinstance(node, ast.Name) and node.id == name else (
                _dotted(node) if isinstance(node, ast.Attribute) and node.attr == name else None)
            if dotted:
                found = project.lookup(file, dotted)
                if getattr(found, "name", None) == name and getattr(found, "path", None) is not None and \
                        _same_path(project, found.path, path):
                    return True
    return False
