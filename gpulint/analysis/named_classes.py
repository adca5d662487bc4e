"""Classes built by name: a registry, a module's namespace or a dict picks the class at run time (issue 11).

Real trainers rarely write `model = MyNet(...)`. The class comes from a name in a configuration:

    def get_algorithm_class(name):          # a module's own namespace
        return globals()[name]
    for module in _model_modules:           # modules imported by name, `importlib.import_module(f"pkg.{f}")`
        model_cls = getattr(module, model_type, None)
    model = META_ARCH_REGISTRY.get(name)(cfg)   # a registry filled by `@META_ARCH_REGISTRY.register()`
    model = MODELS.build(cfg)               # the same, mmengine's spelling
    models = {"GatedGCN": GatedGCN, ...}; return models[name](params)   # a dict of classes or builders

Which class runs is the run's choice; in the run that names class C, C is built and its `forward` (or the method
the loop calls) runs every step. So the candidates of such a choice are the classes the name may pick:

- `globals()[x]`: the classes the module binds at top level (defined there or imported from the project);
- `getattr(M, x[, default])`, `vars(M)[x]`, `M.__dict__[x]` with `M` a project module (an import, or a module
  imported by a name with a constant package prefix: then every module of that package): the classes M binds;
- `R.get(x)`, `R.build(cfg)`, `build_from_cfg(cfg, R)` with `R` a project object assigned from a call at module
  level (`Registry("META_ARCH")`): the classes registered into that object (`@R.register()`,
  `@R.register_module()`, `R.register(C)`, `R.register_module(module=C)`) in the modules naming it;
- `D[x]` of a dict literal (local or module level) of project classes or builders: those classes, and the
  classes the builders return;
- `M(opt)` of a name the function binds by imports in its own body, one per branch of a choice (`if model ==
  'plain': from models.model_plain import ModelPlain as M`, KAIR's `define_Model`): each imported class.

A name that is a constant is not a choice (the ordinary look-up decides), and anything else stays unknown.

How candidates are used (the union semantics): a candidate's per-step methods are per-step code when the loop
calls them (`forward._Instances`: *any* candidate may be the instance), since some run builds it; a cost reported
at the loop's call site must not depend on all candidates paying, and these unions are not handed to
`calls.ProjectCalls.instance_classes`, whose call-site costs need every candidate to pay.

Everything is read from the project's `ast` trees, once per function and project state (`forward._remembered`,
which records the modules read as dependencies of the caller's findings).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.analysis.config_targets import instantiated, is_instantiate
from gpulint.analysis.project import ClassSummary, FunctionSummary, Project, Registry, _dotted

_MAX_DEPTH = 8
_MAX_PACKAGE_MODULES = 64  # modules of a package whose names are chosen at run time
_MAX_FILES = 24  # files looked at for the registrations of one registry, or for the choosers of one class
_REGISTER = ("register", "register_module")
_KEEPING = frozenset({"to", "cuda", "float", "half", "double", "bfloat16", "train", "eval"})
# the text of a module holding one of those shapes (a cheap test before its tree is read)
_CHOICE_TEXT = re.compile(rb"create_model\(|globals\(\)\[|vars\(.*\)\[|__dict__\[|getattr\([A-Za-z_][A-Za-z_.]*, *[A-Za-z_]|"
                          rb"\.get\([^()]*\)\(|\.build\(|build_from_cfg|[A-Za-z_]\[[A-Za-z_][A-Za-z_0-9.]*\]\(|"
                          rb"= *[A-Za-z_][A-Za-z_0-9.]*\[[A-Za-z_][A-Za-z_0-9.]*\] *\n|"
                          rb"\n[ \t]+from +[A-Za-z_.][A-Za-z_0-9.]* +import +[A-Za-z_][A-Za-z_0-9]* +as ")


class _Scope:
    """The plain assignments and `for` targets of one function (nested blocks included) and of its module."""

    def __init__(self, info, fn: Optional[ast.AST]) -> None:
        self.info = info
        self.assigns: dict[str, list[ast.expr]] = {}
        self.loops: dict[str, list[ast.expr]] = {}
        self.module_assigns: dict[str, list[ast.expr]] = {}
        # names the function binds by `from m import C as M` in its own body (one per branch of a choice)
        self.imports: dict[str, list[ast.ImportFrom]] = {}
        for stmt in info.tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self.module_assigns.setdefault(stmt.targets[0].id, []).append(stmt.value)
        for node in (ast_walk.walk(fn) if fn is not None else ast_walk.scope_nodes(info.tree)):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigns.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
                self.loops.setdefault(node.target.id, []).append(node.iter)
            elif isinstance(node, ast.ImportFrom) and fn is not None:
                for alias in node.names:
                    if alias.name != "*":
                        self.imports.setdefault(alias.asname or alias.name, []).append(node)

    def values(self, name: str) -> list[ast.expr]:
        return self.assigns.get(name) or ([] if name in self.loops else self.module_assigns.get(name, []))


# -- modules ------------------------------------------------------------------------------------------------------
def _modules(project: Project, scope: _Scope, expr: ast.expr, depth: int = 0) -> Optional[list[Path]]:
    """The project modules `expr` may be: an imported module, a module imported by a name with a constant package
    prefix (every module of the package), or a loop over a list of those. None when not known."""
    info = scope.info
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, ast.Call):
        return _imported_by_name(project, info, expr)
    if isinstance(expr, ast.Name):
        if expr.id in scope.loops and not scope.assigns.get(expr.id):
            found: list[Path] = []
            for iterable in scope.loops[expr.id]:
                elements = _elements(project, scope, iterable, depth + 1)
                if elements is None:
                    return None
                found.extend(p for p in elements if p not in found)
            return found or None
        values = scope.values(expr.id)
        if values:
            found = []
            for value in values:
                one = _modules(project, scope, value, depth + 1)
                if one is None:
                    return None
                found.extend(p for p in one if p not in found)
            return found or None
    dotted = _dotted(expr)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if head not in info.imports:
        return None
    module, attr, level = info.imports[head]
    name = module if attr is None else (f"{module}.{attr}" if module else attr)
    if attr is None and rest:
        name = f"{head}.{rest}" if module == head else None
        if name is None:
            return None
    elif rest:
        name = f"{name}.{rest}"
    target = project.resolver.resolve(name, info.path, level)
    return [target.resolve()] if target is not None else None


def _elements(project: Project, scope: _Scope, iterable: ast.expr, depth: int) -> Optional[list[Path]]:
    """The modules a list (or a name bound to one) of `importlib.import_module(...)` calls holds."""
    if isinstance(iterable, ast.Name):
        values = scope.values(iterable.id)
        if len(values) != 1:
            return None
        iterable = values[0]
    if isinstance(iterable, (ast.ListComp, ast.GeneratorExp)):
        return _modules(project, scope, iterable.elt, depth + 1)
    if isinstance(iterable, (ast.List, ast.Tuple)) and iterable.elts:
        found: list[Path] = []
        for element in iterable.elts:
            one = _modules(project, scope, element, depth + 1)
            if one is None:
                return None
            found.extend(p for p in one if p not in found)
        return found
    return None


def _imported_by_name(project: Project, info, call: ast.Call) -> Optional[list[Path]]:
    """`importlib.import_module("pkg." + name)` / `f"pkg.{name}"`: the modules of the project package `pkg`."""
    qualified = info.qualify(_dotted(call.func) or "")
    if qualified not in ("importlib.import_module", "__import__") or len(call.args) != 1:
        return None
    arg = call.args[0]
    prefix = None
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = arg.values[0].value
    elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add) and isinstance(arg.left, ast.Constant):
        prefix = arg.left.value
    if not isinstance(prefix, str) or not prefix.endswith(".") or len(prefix) < 2:
        return None
    package = project.resolver.resolve(prefix[:-1], info.path)
    if package is None or package.name != "__init__.py":
        return None
    folder = package.resolve().parent
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".py" and p.name != "__init__.py" and p.is_file())
    except OSError:
        return None
    return files[:_MAX_PACKAGE_MODULES] or None


def module_classes(project: Project, path: Path) -> list[ClassSummary]:
    """The project classes a module binds at top level: defined there, or imported by name from the project."""
    info = project.module(path)
    if info is None:
        return []
    found = list(info.classes.values())
    for local, (_module, attr, _level) in info.imports.items():
        if attr is None:
            continue
        target = project.lookup(info.path, local)
        if isinstance(target, ClassSummary) and all(target is not c for c in found):
            found.append(target)
    return found


# -- registries -----------------------------------------------------------------------------------------------------
def _definition(project: Project, path: Path, dotted: str, depth: int = 0) -> Optional[tuple[Path, str]]:
    """Where the object `dotted` (as written in `path`) is assigned from a call at module level
    (`META_ARCH_REGISTRY = Registry("META_ARCH")`), following the project's imports."""
    info = project.module(path)
    if info is None or depth > _MAX_DEPTH:
        return None
    head, _, rest = dotted.partition(".")
    if not rest:
        for stmt in info.tree.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and any(
                    isinstance(t, ast.Name) and t.id == head for t in stmt.targets):
                return info.path.resolve(), head
    if head not in info.imports:
        return None
    module, attr, level = info.imports[head]
    if attr is None:
        target = project.resolver.resolve(module, info.path, level) if rest else None
        return _definition(project, target, rest, depth + 1) if target is not None else None
    target = project.resolver.resolve(f"{module}.{attr}" if module else attr, info.path, level)
    if target is not None and rest:
        return _definition(project, target, rest, depth + 1)
    owner = project.resolver.resolve(module, info.path, level) if (module or level) else None
    if owner is None or owner.resolve() == info.path.resolve():
        return None
    return _definition(project, owner, f"{attr}.{rest}" if rest else attr, depth + 1)


def _registrar(expr: ast.expr) -> Optional[str]:
    """`R` of a decorator `@R.register()`, `@R.register`, `@R.register_module(...)`."""
    func = expr.func if isinstance(expr, ast.Call) else expr
    if isinstance(func, ast.Attribute) and (func.attr in _REGISTER or func.attr.startswith("register_")
                                            or func.attr.startswith("registe_")):
        return _dotted(func.value)  # `register_with_name(...)`, DINO's `registe_with_name(module_name=...)`
    return None


def registered_classes(project: Project, key: tuple[Path, str]) -> list[ClassSummary]:
    """The project classes registered into the registry defined at `key` (its module, its name)."""
    from gpulint.analysis.forward import _remembered

    found = _remembered(project, ("registered classes", key), lambda: tuple(_registered(project, key)))
    return list(found or ())


def _registering_modules(project: Project, key: tuple[Path, str]):
    """The non-test modules whose text names the registry defined at `key` (bounded): where it may be filled."""
    for file in project._files_mentioning(key[1])[:_MAX_FILES * 4]:
        info = project.module(file)
        if info is not None and not project.is_test(file):
            yield info


def _registered(project: Project, key: tuple[Path, str]) -> list[ClassSummary]:
    found: list[ClassSummary] = []
    for info in _registering_modules(project, key):
        for stmt in info.tree.body:
            names: list[tuple[str, str]] = []  # (registry as written, class name)
            if isinstance(stmt, ast.ClassDef):
                names = [(r, stmt.name) for r in map(_registrar, stmt.decorator_list) if r]
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                registry = _registrar(call.func) if isinstance(call.func, ast.Attribute) else None
                arguments = [a for a in call.args] + [k.value for k in call.keywords if k.arg == "module"]
                if registry:
                    names = [(registry, _dotted(a) or "") for a in arguments if isinstance(a, (ast.Name, ast.Attribute))]
            for registry, name in names:
                if not name or _definition(project, info.path, registry) != key:
                    continue
                cls = info.classes.get(name) or project.lookup(info.path, name)
                if isinstance(cls, ClassSummary) and all(cls is not c for c in found):
                    found.append(cls)
    return found


def registered_builders(project: Project, key: tuple[Path, str]) -> list[FunctionSummary]:
    """The project functions registered into the registry defined at `key`: build functions decorated
    `@R.register(...)` / `@R.register_with_name(...)` at a module's top level (DINO's `@MODULE_BUILD_FUNCS.
    registe_with_name(module_name='dino') def build_dino(args): ... return model, criterion, postprocessors`)."""
    from gpulint.analysis.forward import _remembered

    def find() -> tuple:
        found: list[FunctionSummary] = []
        for info in _registering_modules(project, key):
            for stmt in info.tree.body:
                if not isinstance(stmt, ast.FunctionDef):
                    continue
                if not any(r and _definition(project, info.path, r) == key
                           for r in map(_registrar, stmt.decorator_list)):
                    continue
                summary = project.function(info.path, stmt.name)
                if summary is not None and all(summary is not f for f in found):
                    found.append(summary)
        return tuple(found)

    return list(_remembered(project, ("registered builders", key), find) or ())


def _local_definition(project: Project, path: Path, dotted: str, fn: Optional[ast.AST]) -> Optional[tuple[Path, str]]:
    """`_definition`, and where the module does not bind the name's head, an import of it in the function's own
    body (`def build_model_main(args): from models.registry import MODULE_BUILD_FUNCS`)."""
    key = _definition(project, path, dotted)
    if key is not None or fn is None:
        return key
    head, _, rest = dotted.partition(".")
    for node in ast_walk.walk(fn):
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if (alias.asname or alias.name) != head or alias.name == "*":
                continue
            target = project.resolver.resolve(node.module or "", path, node.level)
            if target is not None:
                return _definition(project, target, f"{alias.name}.{rest}" if rest else alias.name)
    return None


def registry_returns(project: Project, path: Path, func: ast.expr, fn: Optional[ast.AST] = None) -> tuple:
    """What calling a build function picked from a project registry hands back, per element (as
    `FunctionSummary.returns_classes`): `func` is `R.get(name)` with `R` a registry object filled by decorated
    build functions (`registered_builders`), imported by the module or by the function `fn`. Where the registered
    builders disagree on an element it is None; () when `func` is no such pick."""
    if not (isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "get"
            and len(func.args) == 1 and not func.keywords and not isinstance(func.args[0], ast.Constant)):
        return ()
    dotted = _dotted(func.func.value)
    if dotted is None or dotted.split(".")[0] == "self":
        return ()
    key = _local_definition(project, path, dotted, fn)
    builders = registered_builders(project, key) if key is not None else []
    if not builders and key is not None:
        # a registry of classes: `EVALUATOR_REGISTRY.get(cfg.TEST.EVALUATOR)(cfg)` builds the one class
        # registered into it (Dassl's `Classification`); with several, the run's configuration picks one and
        # a cost at a call site must not depend on which (the union semantics of the module's docstring)
        classes = registered_classes(project, key)
        return (classes[0],) if len(classes) == 1 else ()
    returned = [b.returns_classes for b in builders]
    if not returned or not all(returned):
        return ()
    width = len(returned[0])
    if any(len(r) != width for r in returned):
        return ()
    agreed = tuple(r0 if all(r[i] is r0 for r in returned) else None for i, r0 in enumerate(returned[0]))
    return agreed if any(c is not None for c in agreed) else ()


def _registry(project: Project, scope: _Scope, expr: ast.expr) -> Optional[list[ClassSummary]]:
    """The classes registered into `expr`, when it names a project registry with at least one registration."""
    dotted = _dotted(expr)
    if dotted is None or dotted.split(".")[0] == "self":
        return None
    key = _definition(project, scope.info.path, dotted)
    found = registered_classes(project, key) if key is not None else []
    return found or None


# -- choices ------------------------------------------------------------------------------------------------------
def class_objects(project: Project, scope: _Scope, expr: ast.expr, depth: int = 0) -> Optional[list[ClassSummary]]:
    """The project classes (the class objects, not instances) `expr` may be when a name picks it; None when it is
    not such a choice or cannot be told."""
    if depth > _MAX_DEPTH:
        return None
    info = scope.info
    if isinstance(expr, ast.Subscript) and not isinstance(expr.slice, ast.Constant):
        value = expr.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and not value.args:
            if value.func.id == "globals" and "globals" not in info.imports:
                return module_classes(project, info.path) or None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "vars" \
                and len(value.args) == 1:
            return _classes_of_modules(project, _modules(project, scope, value.args[0], depth + 1))
        if isinstance(value, ast.Attribute) and value.attr == "__dict__":
            return _classes_of_modules(project, _modules(project, scope, value.value, depth + 1))
        entries = _dict_entries(project, scope, value)
        if entries is not None:
            classes = [e for e in entries if isinstance(e, ClassSummary)]
            return classes if classes and len(classes) == len(entries) else None
        # `registry.BOX_HEADS[cfg.MODEL.BOX_HEAD.NAME]` of a dict-like registry filled by `@R.register("name")`
        return _registry(project, scope, value) if isinstance(value, (ast.Name, ast.Attribute)) else None
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(expr.args) in (2, 3) and \
                not isinstance(expr.args[1], ast.Constant) and "getattr" not in info.imports:
            return _classes_of_modules(project, _modules(project, scope, expr.args[0], depth + 1))
        if isinstance(func, ast.Attribute) and func.attr == "get" and len(expr.args) == 1 and \
                not isinstance(expr.args[0], ast.Constant):
            return _registry(project, scope, func.value)
        summary = _function(project, info, func)
        if summary is not None:
            return list(function_choices(project, summary, depth + 1)[0]) or None
        return None
    if isinstance(expr, ast.Name):
        values = [v for v in scope.values(expr.id) if not (isinstance(v, ast.Constant) and v.value is None)]
        found = _union(class_objects(project, scope, v, depth + 1) for v in values) if values else None
        return _union((found, _imported_here(project, scope, expr.id)))
    return None


def _imported_here(project: Project, scope: _Scope, name: str) -> Optional[list[ClassSummary]]:
    """The project classes the function binds `name` to by imports in its own body: `from models.model_plain
    import ModelPlain as M` on one branch of `if model == 'plain':`, `from models.model_gan import ModelGAN as M`
    on another (KAIR's `define_Model(opt)`). Each branch is a run's choice, so each class is a candidate."""
    found: list[ClassSummary] = []
    for node in scope.imports.get(name, ()):
        target = project.resolver.resolve(node.module or "", scope.info.path, node.level)
        if target is None:
            continue
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                cls = project.lookup(target, alias.name)
                if isinstance(cls, ClassSummary) and all(cls is not f for f in found):
                    found.append(cls)
    return found or None


def instances(project: Project, scope: _Scope, expr: ast.expr, depth: int = 0) -> Optional[list[ClassSummary]]:
    """The project classes an instance `expr` may be of, when a name picks its class; None otherwise."""
    if depth > _MAX_DEPTH:
        return None
    info = scope.info
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _KEEPING:  # `model.to(device)`: the same model
            return instances(project, scope, func.value, depth + 1)
        if isinstance(func, ast.Attribute) and func.attr == "build" and expr.args:
            return _registry(project, scope, func.value)
        if isinstance(func, ast.Name) and info.qualify(func.id).endswith("build_from_cfg") and len(expr.args) >= 2:
            return _registry(project, scope, expr.args[1])
        if isinstance(func, ast.Subscript) and not isinstance(func.slice, ast.Constant):
            entries = _dict_entries(project, scope, func.value)
            if entries is not None:
                return _union(_built(project, e) for e in entries)
            if isinstance(func.value, (ast.Name, ast.Attribute)):  # `R[name](cfg)` of a registry object
                return _registry(project, scope, func.value)
        if _library_create_model(project, info, expr):  # timm's `create_model(args.model)`: `@register_model`
            return list(registered_model_classes(project)) or None
        if is_instantiate(func):  # `instantiate(cfg.model)`: the classes the configuration files name (config_targets.py)
            return instantiated(project, info.path, expr)
        chosen = class_objects(project, scope, func, depth + 1)
        if chosen:
            return chosen
        summary = _function(project, info, func)
        if summary is not None:
            return list(function_choices(project, summary, depth + 1)[1]) or None
        return None
    if isinstance(expr, ast.Name):
        values = scope.values(expr.id)
        found = [instances(project, scope, v, depth + 1) for v in values]
        return _union(found) if any(found) else None
    return None


def _library_create_model(project: Project, info, call: ast.Call) -> bool:
    """`create_model(name, ...)` (timm's registry, `from timm.models import create_model`) with a name that is
    no constant, where `create_model` is no project function: the project's `@register_model` builders fill
    that registry."""
    func = call.func
    last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return last == "create_model" and bool(call.args) and not isinstance(call.args[0], ast.Constant) and \
        _function(project, info, func) is None


def registered_model_classes(project: Project) -> tuple:
    """The classes the project's `@register_model` functions (timm's model registry) build and return: the
    candidates of `create_model(args.model)`. Once per project state."""
    from gpulint.analysis.forward import _remembered

    def find() -> tuple:
        found: list[ClassSummary] = []
        for file in project.files_naming("register_model")[:_MAX_FILES]:
            info = project.module(file)
            if info is None or project.is_test(file):
                continue
            for name, fn in info.functions.items():
                if not any((_dotted(d.func if isinstance(d, ast.Call) else d) or "").rsplit(".", 1)[-1]
                           == "register_model" for d in fn.decorator_list):
                    continue
                summary = project.function(info.path, name)
                for cls in _built(project, summary) or () if summary is not None else ():
                    if all(cls is not f for f in found):
                        found.append(cls)
        return tuple(found)

    return _remembered(project, ("registered models",), find) or ()


def _built(project: Project, entry) -> Optional[list[ClassSummary]]:
    """What calling a dict entry builds: the class, or the classes a builder function returns."""
    if isinstance(entry, ClassSummary):
        return [entry]
    if isinstance(entry, FunctionSummary):
        returned = project.returned_classes(entry) or tuple(c for c in entry.returns_classes[:1] if c is not None)
        return list(returned) or None
    return None


def _dict_entries(project: Project, scope: _Scope, value: ast.expr) -> Optional[list]:
    """The project classes and functions of a dict literal `value` names (a local or module-level name bound
    once to `{...}`); None when it is no such dict or an entry is something else."""
    where, names = scope.info.path, None
    if isinstance(value, ast.Name):
        values = scope.values(value.id)
        literal = values[0] if len(values) == 1 and isinstance(values[0], ast.Dict) else None
        if not values:  # `from detectors.factory import detector_factory`: a registry of another module
            registry = project.lookup(where, value.id)
            if isinstance(registry, Registry):
                where, names = registry.path, list(registry.values)
    elif isinstance(value, ast.Dict):
        literal = value
    else:
        literal = None
    if names is None:
        if literal is None or not literal.values or None in literal.keys:
            return None
        names = [_dotted(element) for element in literal.values]
    entries = []
    for dotted in names:
        found = project.lookup(where, dotted) if dotted else None
        if not isinstance(found, (ClassSummary, FunctionSummary)):
            return None
        entries.append(found)
    return entries


def _classes_of_modules(project: Project, paths: Optional[list[Path]]) -> Optional[list[ClassSummary]]:
    if not paths:
        return None
    found: list[ClassSummary] = []
    for path in paths:
        found.extend(c for c in module_classes(project, path) if all(c is not f for f in found))
    return found or None


def _union(parts) -> Optional[list[ClassSummary]]:
    found: list[ClassSummary] = []
    for part in parts:
        for cls in part or ():
            if all(cls is not f for f in found):
                found.append(cls)
    return found or None


def _function(project: Project, info, func: ast.expr) -> Optional[FunctionSummary]:
    dotted = _dotted(func)
    if dotted is None or dotted.split(".")[0] == "self":
        return None
    found = project.lookup(info.path, dotted)
    return found if isinstance(found, FunctionSummary) else None


def function_choices(project: Project, summary: FunctionSummary, depth: int = 0) -> tuple[tuple, tuple]:
    """(the class objects, the instances) a project function's `return`s may hand back where a name picks the
    class: `return globals()[name]`, `model = REGISTRY.get(name)(cfg); return model`. Remembered per project
    state."""
    from gpulint.analysis.forward import _remembered

    if depth > _MAX_DEPTH:
        return (), ()
    key = ("named classes", summary.path.resolve(), summary.qualname)
    found = _remembered(project, key, lambda: _function_choices(project, summary, depth))
    return found or ((), ())


def _function_choices(project: Project, summary: FunctionSummary, depth: int) -> tuple[tuple, tuple]:
    info = project.module(summary.path)
    if info is None:
        return (), ()
    owner, _, name = summary.qualname.rpartition(".")
    if owner:
        cls = info.classes.get(owner)
        fn = cls.methods.get(name) if cls is not None else None
    else:
        fn = info.functions.get(name)
    if fn is None or not _may_choose(fn):
        return (), ()
    scope = _Scope(info, fn)
    objects: list = []
    built: list = []
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            for cls in class_objects(project, scope, node.value, depth) or ():
                if all(cls is not c for c in objects):
                    objects.append(cls)
            for cls in instances(project, scope, node.value, depth) or ():
                if all(cls is not c for c in built):
                    built.append(cls)
    return tuple(objects), tuple(built)


def _may_choose(fn: ast.AST) -> bool:
    """A cheap test on the function's tree: it holds one of the shapes a choice by name starts from
    (`globals()[x]`, `vars(m)[x]`, `m.__dict__[x]`, `getattr(m, x)` with `x` not a constant, `R.get(x)(...)`,
    `R.build(cfg)`, `build_from_cfg(cfg, R)`, `d[x](...)`)."""
    imported = {alias.asname or alias.name for node in ast_walk.walk(fn) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    # `meta_arch = _META_ARCHITECTURES[cfg.MODEL.META_ARCHITECTURE]` then `meta_arch(cfg)`: a name bound to an
    # element a name picks, called
    imported.update(node.targets[0].id for node in ast_walk.walk(fn) if isinstance(node, ast.Assign)
                    and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and _picked_element(node.value))
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant) and (
                isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id in ("globals", "vars") or
                isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__"):
            return True
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in imported:
            return True  # `M(opt)` of a class the function imports itself, on one of its branches
        if isinstance(func, ast.Name) and (func.id == "getattr" and len(node.args) >= 2 and
                                           not isinstance(node.args[1], ast.Constant) or func.id == "build_from_cfg"):
            return True
        if isinstance(func, ast.Attribute) and func.attr == "build" and node.args:
            return True
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "get":
            return True  # `R.get(name)(cfg)`
        if (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) == "create_model" and \
                node.args and not isinstance(node.args[0], ast.Constant):
            return True  # timm's `create_model(args.model)`
        if _picked_element(func):
            return True  # `models[name](params)`, `registry.BOX_HEADS[cfg.NAME](cfg)`
    return False


def _picked_element(expr: ast.expr) -> bool:
    """`D[x]` (or `R.D[x]`) with `x` a name or an attribute: an element of a dict or registry a name picks."""
    return isinstance(expr, ast.Subscript) and isinstance(expr.value, (ast.Name, ast.Attribute)) and \
        isinstance(expr.slice, (ast.Name, ast.Attribute))


# -- the caller's side (LibCST expressions, read again with `ast`) --------------------------------------------------
def caller_instances(project: Project, path: Path, code: str, function: Optional[str] = None) \
        -> Optional[list[ClassSummary]]:
    """The candidate classes of what the caller expression `code` (a call, as written in the module `path`)
    builds, in the scope of its top-level function `function` (None: module level)."""
    info = project.module(path)
    if info is None:
        return None
    try:
        expr = ast.parse(code.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    key = ("named classes scope", info.path, info.digest, function)
    scope = project.per_step_sites.get(key)
    if scope is None:  # one scope per caller function and module content (several calls are asked about)
        fn = info.functions.get(function) if function else None
        scope = project.per_step_sites[key] = _Scope(info, fn)
    return instances(project, scope, expr)


def chooser_names(project: Project, path: Path, class_name: str) -> list[str]:
    """The names of the project functions that may build (or hand back) the class `class_name` of the module
    `path` by a name (see the module's docstring): a training file calling one of them may build it."""
    names: list[str] = []
    for _file, name in chooser_functions(project, path, class_name):
        if name not in names:
            names.append(name)
    return names


def chooser_functions(project: Project, path: Path, class_name: str) -> list[tuple[Path, str]]:
    """(module, name) of each top-level project function that may build (or hand back) the class `class_name`
    of the module `path` by a name."""
    from gpulint.analysis.forward import _remembered

    key = ("chooser functions", path.resolve(), class_name)
    found = _remembered(project, key, lambda: tuple(_chooser_functions(project, path.resolve(), class_name)))
    return list(found or ())


def _chooser_functions(project: Project, path: Path, class_name: str) -> list[tuple[Path, str]]:
    from gpulint.analysis.module_attrs import class_node

    info = project.module(path)
    cls = info.classes.get(class_name) if info is not None else None
    if cls is None:
        return []
    files: list[Path] = [path] if _chooses(project, path) else []
    package = path.parent / "__init__.py"  # `getattr(module, name)` over the package's modules, in its `__init__`
    if package != path and package.is_file() and _chooses(project, package):
        files.append(package)
    words = {path.stem, class_name}
    node = class_node(project, cls)  # the registries the class is registered into
    if node is not None:
        words.update(r.split(".")[-1] for r in map(_registrar, node.decorator_list) if r)
    for word in sorted(words):
        for file in project.files_naming(word):
            if len(files) >= _MAX_FILES:
                break
            if file not in files and not project.is_test(file) and _chooses(project, file):
                files.append(file)
    found: list[tuple[Path, str]] = []
    for file in files[:_MAX_FILES]:
        for name, classes in _choosers_in(project, file):
            if any(c is cls for c in classes) and (file, name) not in found:
                found.append((file, name))
    return found


def _chooses(project: Project, file: Path) -> bool:
    """The text of `file` has one of the shapes `_may_choose` tests (a regular expression on its bytes, before its
    tree is read): once per file and project state."""
    from gpulint.analysis.forward import _remembered

    def find() -> bool:
        from gpulint.files import FileError, read_regular

        try:
            text = project.text_of(file)
            raw = text.encode() if text is not None else read_regular(file)[0]
        except (OSError, FileError, UnicodeError):
            return False
        return _CHOICE_TEXT.search(raw) is not None

    return bool(_remembered(project, ("file chooses by name", project._resolved(file)), find))


def _choosers_in(project: Project, file: Path) -> tuple:
    """(name, candidate classes) of each top-level function of `file` that picks a class by name: once per
    file and project state."""
    from gpulint.analysis.forward import _remembered

    def find() -> tuple:
        caller = project.module(file)
        found = []
        for name, fn in (caller.functions.items() if caller is not None else ()):
            summary = project.function(caller.path, name) if _may_choose(fn) else None
            if summary is not None:
                objects, built = function_choices(project, summary)
                if objects or built:
                    found.append((name, (*objects, *built)))
        return tuple(found)

    return _remembered(project, ("choosers in", project._resolved(file)), find) or ()


def passed_candidates(project: Project, path: Path, function: str, parameter: str) -> tuple:
    """The classes picked by a name that project call sites of `function` (a top-level function of `path`, or
    `Class.__init__`, whose call sites are `Class(...)`) pass as `parameter`: `train_epoch(model, ...)` with
    `model = gnn_model(name, params)`. Any one site passing one is enough (the run that takes that path builds
    it); () when none does."""
    from gpulint.analysis.forward import _remembered

    key = ("named classes passed", path.resolve(), function, parameter)
    return _remembered(project, key, lambda: tuple(_passed(project, key[1], function, parameter))) or ()


def _passed(project: Project, path: Path, function: str, parameter: str) -> list[ClassSummary]:
    info = project.module(path)
    if info is None:
        return []
    owner, _, name = function.rpartition(".")
    if owner:
        cls = info.classes.get(owner)
        node = cls.methods.get(name) if cls is not None and name == "__init__" else None
    else:
        cls, node = None, info.functions.get(function)
    if node is None:
        return []
    positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)][1 if owner else 0:]
    position = positional.index(parameter) if parameter in positional else None
    wanted = owner or function
    found: list[ClassSummary] = []
    for file in project._files_mentioning(wanted)[:_MAX_FILES]:
        caller = project.module(file)
        if caller is None or project.is_test(file):
            continue
        # `from train.train_sbm import train_epoch_sparse as train_epoch`: calls by the local name
        local = [wanted] + [n for n, (_m, attr, _l) in caller.imports.items() if attr == wanted and n != wanted]
        inner = _imported_in_functions(project, caller, wanted, path)  # `from x import f as g` in a function
        for called in local + [n for n in inner if n not in local]:
            for call, _assigns in caller.calls_named(called):
                dotted = _dotted(call.func)
                target = project.lookup(caller.path, dotted) if dotted else None
                if target is None and isinstance(call.func, ast.Name) and call.func.id in inner:
                    target = info.classes.get(owner) if owner else project.function(path, function)
                if owner and target is not cls or not owner and not (
                        isinstance(target, FunctionSummary) and target.path.resolve() == path
                        and target.qualname == function):
                    continue
                _add_passed(project, caller, call, position, parameter, found)
    if owner:  # `trainer_dict[cfg.TRAINER](name, distiller, ...)` of a dict holding the class (or a subclass)
        for caller, call in _dict_constructions(project, cls):
            _add_passed(project, caller, call, position, parameter, found)
    return found


def _add_passed(project, caller, call, position, parameter, found: list) -> None:
    """Add to `found` the project objects `call` passes for the parameter (`position`, `parameter`), once each."""
    from gpulint.analysis.param_unions import _enclosing_function
    from gpulint.analysis.project import _UNKNOWN, _argument

    argument = _argument(call, position, parameter)
    if argument is None or argument is _UNKNOWN:
        return
    scope = _Scope(caller, _enclosing_function(caller.tree, call))
    for one in instances(project, scope, argument) or ():
        if all(one is not f for f in found):
            found.append(one)


def _dict_constructions(project: Project, cls: ClassSummary) -> list:
    """(module, call) for each `D[x](...)` in the project where `D` is a module-level dict of classes (a
    `Registry` of `project.py`: `trainer_dict = {"base": BaseTrainer, "crd": CRDTrainer}`) one of which runs
    `cls.__init__` (the class itself, or a subclass that does not define its own): the run whose key picks it
    builds it with those arguments. The dicts are found in the files naming the class, their calls in the files
    naming a dict (at most `_MAX_FILES` each)."""
    init = cls.methods.get("__init__")
    if init is None:
        return []
    found: list = []
    for file in project.files_naming(cls.name)[:_MAX_FILES]:
        holder = project.module(file)
        if holder is None or project.is_test(file):
            continue
        for registry in holder.registries.values():
            entries = [project.lookup(holder.path, dotted) for dotted in registry.values]
            if not any(isinstance(e, ClassSummary) and _runs_init(project, e, init) for e in entries):
                continue
            for other in project.files_naming(registry.name)[:_MAX_FILES]:
                caller = project.module(other)
                if caller is None or project.is_test(other) or getattr(caller, "statements", None) is not None:
                    continue
                for node in ast_walk.walk(caller.tree):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and \
                            isinstance(node.func.value, ast.Name) and node.func.value.id == registry.name and \
                            not isinstance(node.func.slice, ast.Constant) and \
                            _same_registry(project.lookup(caller.path, registry.name), registry):
                        found.append((caller, node))
    return found


def _runs_init(project: Project, cls: ClassSummary, init: ast.FunctionDef) -> bool:
    """`cls` runs the `__init__` node `init` (its own, or the first one up its project bases)."""
    from gpulint.analysis.hierarchy import first_bases

    for current in first_bases(project, cls, _MAX_DEPTH):
        own = current.methods.get("__init__")
        if own is not None:
            return own is init
    return False


def _same_registry(found, registry: Registry) -> bool:
    return isinstance(found, Registry) and found.name == registry.name and found.path == registry.path


def _imported_in_functions(project: Project, info, name: str, path: Path) -> set[str]:
    """The local names a function of `info` binds to `name` of the module `path` by an import in its body."""
    found: set[str] = set()
    for stmt in info.tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast_walk.walk(stmt):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name == name:
                        target = project.resolver.resolve(node.module or "", info.path, node.level)
                        if target is not None and target.resolve() == path:
                            found.add(alias.asname or alias.name)
    return found
