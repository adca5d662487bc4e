"""Which files no enabled rule can report in, decided on CPython's `ast` (10x cheaper than LibCST's parse).

Each rule declares, in `Rule.reports_in`, a necessary condition of its findings: one of the conditions below.
A file is parsed with LibCST and analysed only if the condition of some enabled rule holds (or a rule declares
none). Every condition over-approximates a fact of the analysis (gpulint/analysis/loops.py, kinds.py), so it
never hides a finding; tests/test_prefilter.py runs every rule's INVALID examples through it, and compares
filtered and unfiltered findings on generated and real code.

- `HOT_LOOP`: the module may hold a training/evaluation loop (`LoopRole.HOT`). Every finding that goes
  through `Rule.where` needs one: code runs every iteration or periodically only inside a hot loop, in an epoch
  loop around one, or in a function called from one. A loop may be hot when (mirroring `LoopAnalysis`):
  it is a `for` loop and the module may name a loader (`Kind.LOADER` comes only from a `DataLoader` call or
  annotation, or a name like `loader`/`dl`); or it calls something that may train (`.backward()`, `.step()`,
  `.zero_grad()`, `.forward()`, a value that may be a model, or a function of the module that does); or it may
  iterate tensor math (an outermost `for ... in range(...)` or non-constant `while` of a function that is not
  setup code, with a call or an operator in its body).
- `COPY_IN_FOR_LOOP`: a `for` loop of the module calls `.to(...)` or `.cuda(...)` in its body (GPU201's
  `moves_batches`).
- `CUDA_TEXT`: the text mentions "cuda" (any case).
- `CONV_AND_BATCHNORM_CALLS`: a convolution call (`Conv1d`/`Conv2d`/`Conv3d`) may feed a batch norm
  (`BatchNorm1d`/`2d`/`3d`, `SyncBatchNorm`) the way GPU406 reports: the two calls are consecutive positional
  arguments of one call (`nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...))`), or `self.a(self.b(...))`
  is called where `self.a` is assigned a batch norm and `self.b` a convolution. A call's qualified name
  (analysis/imports.py) ends in the class's name only when the call is an attribute of that name
  (`nn.Conv2d(...)`) or a name bound by an import of it (`from torch.nn import Conv2d as C`; `C(...)`): any
  import in the module counts, wherever it is.

- `RETURNED_OPTIMIZER`: a top-level function of the module calls `Adam`, `AdamW` or `SGD` (any receiver) and
  has a `return` with a value (GPU402 at an optimizer factory that callers elsewhere train with on CUDA).
- `RETURNED_LOADER`: a top-level function of the module calls a name ending in `DataLoader` and has a `return`
  or a `yield from` (analysis/factory_loaders.py: GPU201 at a loader factory's own `DataLoader(...)`), or a
  method of a top-level class keeps one on `self`, or a name bound to one is passed to a class's constructor
  (analysis/handed_loaders.py).

- `CONFIGURED_OPTIMIZER`: the text calls `init_obj(` and names `torch.optim` (GPU402 at `config.init_obj('optimizer',
  torch.optim, params)`, whose class the project's configuration files name: analysis/configured_names.py).

A rule may declare several (any of them suffices), or `None`: no shortcut, every file is parsed.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator, Optional

from gpulint import ast_walk

HOT_LOOP = "hot-loop"
COPY_IN_FOR_LOOP = "copy-in-for-loop"
CUDA_TEXT = "cuda-text"
CONV_AND_BATCHNORM_CALLS = "conv-and-batchnorm-calls"
RETURNED_LOADER = "returned-loader"
RETURNED_OPTIMIZER = "returned-optimizer"
CONFIGURED_OPTIMIZER = "configured-optimizer"
CONDITIONS = (HOT_LOOP, COPY_IN_FOR_LOOP, CUDA_TEXT, CONV_AND_BATCHNORM_CALLS, RETURNED_LOADER, RETURNED_OPTIMIZER,
              CONFIGURED_OPTIMIZER)

# rules/throughput/conv_bias_before_batchnorm.py: CONVS and NORMS, the last part of each name
_CONV_CLASSES = frozenset({"Conv1d", "Conv2d", "Conv3d"})
_BATCHNORM_CLASSES = frozenset({"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"})

# The sources of `Kind.LOADER` (analysis/kinds.py): `_LOADER_NAME`, a `...DataLoader` call or annotation.
_LOADER_TEXT = re.compile(r"loader|\bdl\b|_dl\b|\bdl_")  # searched in the lower-cased text
# analysis/kinds.py `_LOADER_NAME`, for any part of a dotted name (`torch.utils.data.DataLoader`)
_LOADER_IDENTIFIER = re.compile(r"^(.*loader.*|.*_dl|dl|dl_.*)$", re.IGNORECASE)
_WORD = re.compile(r"\w+")
# a string that may be an annotation: "DataLoader", "Optional[data.DataLoader]", "Union[A, B]", "A | None"
_ANNOTATION_TEXT = re.compile(r"^[\w.\[\]]+(?:(?:, ?| ?\| ?)[\w.\[\]]+)*$")
# analysis/kinds.py `_MODULE_NAME`: names taken for a model when nothing else is known.
_MODULE_NAME = re.compile(r"^(model|net|network|module|criterion|loss_fn|lossfn|loss_func|loss_function|"
                          r".*_model|model_.*|.*_net|.*_criterion|criterion_.*|encoder|decoder|generator|"
                          r"discriminator|classifier|backbone|ddp_model|raw_model|teacher|student)$")
_TRAINING_METHODS = {"backward", "step", "zero_grad", "forward"}
# analysis/kinds.py `_MODULE_METHODS_SELF`: methods of a model that return the model.
_MODULE_METHODS_SELF = {"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16",
                        "requires_grad_", "share_memory", "to_empty", "type"}
# analysis/loops.py `_SETUP_METHODS`: loops there are never tensor-math loops.
_SETUP_METHODS = {"__init__", "__getitem__", "__len__", "__iter__", "__next__", "reset_parameters",
                  "_init_weights", "init_weights"}
_MANY = 8
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _has_comprehension(tree: ast.AST) -> bool:
    """A comprehension anywhere in the module: over a loader, its element runs every batch (loops.py `_walk_up`)."""
    return any(isinstance(node, _COMPREHENSIONS) for node in ast_walk.walk(tree))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class FileFacts:
    """The conditions that hold for one file, from its `ast` tree.

    Statements are walked once (cheap: expressions are not); the expressions of a loop are walked only while
    no earlier loop has been found possibly hot, and names' assignments only when a loop calls them.
    """

    def __init__(self, source: str, tree: ast.AST) -> None:
        self.source = source
        self.tree = tree
        # (loop, the function or class it is in, nested in a loop of it, every function it is in)
        self._loops: list[tuple[ast.AST, Optional[ast.AST], bool, tuple]] = []
        self._bindings: dict[str, list[ast.AST]] = {}  # name -> values assigned to it anywhere
        self._annotations: list[tuple[str, ast.AST]] = []  # (name, its annotation)
        self._functions: dict[str, list[ast.AST]] = {}  # every def of the module, by name
        self._classes: set[str] = set()
        # `self.<attr>` a class declares (`policy: Policy` in its body) or builds from a class (`self.agent =
        # Agent(...)`): analysis/module_attrs.py may find it an `nn.Module` through the project
        self._declared_attributes: set[str] = set()
        # classes of the file deriving from `Module` (or from one of them) or defining `forward`
        self._network_classes: set[str] = set()
        self._module_defs: set[str] = set()  # names a module-level def or import binds
        self._aliases: dict[str, set[str]] = {}  # imported name -> what it may stand for (imports.ImportMap)
        self._collect(tree.body if isinstance(tree, ast.Module) else [tree], None, False, ())
        self._held: dict[str, object] = {}

    def release(self) -> None:
        """Drop what was worked out (the tensor facts hold this object's bound methods: a reference cycle, which
        would keep the file's tree until a garbage collection; a batch run collects rarely)."""
        self._held.clear()

    def holds(self, condition: str) -> bool:
        if condition == CUDA_TEXT:
            return "cuda" in self.source.lower()
        if condition == COPY_IN_FOR_LOOP:
            if condition not in self._held:
                self._held[condition] = any(
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("to", "cuda")
                    for loop, _, _, _ in self._loops if not isinstance(loop, ast.While)
                    for statement in loop.body for node in ast_walk.walk(statement))
            return bool(self._held[condition])
        if condition == CONV_AND_BATCHNORM_CALLS:
            if condition not in self._held:
                self._held[condition] = self._conv_may_feed_batchnorm()
            return bool(self._held[condition])
        if condition == HOT_LOOP:
            if HOT_LOOP not in self._held:
                self._held[HOT_LOOP] = any(self._may_be_hot(*loop) for loop in self._loops) or (
                    self._names_a_loader() and _has_comprehension(self.tree)) or (  # `[f(b) for b in tqdm(loader)]`
                    self._imports_an_engine_library())  # `Engine(update)`: the library's loop (engine_steps.py)
            return bool(self._held[HOT_LOOP])
        if condition == RETURNED_LOADER:
            if condition not in self._held:
                self._held[condition] = "DataLoader" in self.source and _returns_a_loader(self.tree)
            return bool(self._held[condition])
        if condition == RETURNED_OPTIMIZER:
            if condition not in self._held:
                self._held[condition] = any(f"{name}(" in self.source for name in _FUSED_NAMES) and \
                    _returns_an_optimizer(self.tree)
            return bool(self._held[condition])
        if condition == CONFIGURED_OPTIMIZER:
            return "init_obj(" in self.source and "torch.optim" in self.source
        raise ValueError(f"unknown prefilter condition {condition!r}")

    def _imports_an_engine_library(self) -> bool:
        """analysis/engine_steps.py `imports_an_engine_library`: ignite or torchnet runs the module's handed
        functions once per batch, with no loop in the module."""
        from gpulint.analysis.engine_steps import LIBRARIES

        return any(full.split(".", 1)[0] in LIBRARIES for names in self._aliases.values() for full in names)

    def _conv_may_feed_batchnorm(self) -> bool:
        """CONV_AND_BATCHNORM_CALLS: rules/throughput/conv_bias_before_batchnorm.py's two shapes, each call's
        class judged by the last part of every qualified name it may have."""
        imported: dict[str, set[str]] = {}  # local name -> the last part of each name an import binds to it
        calls: list[ast.Call] = []
        self_assigned: dict[str, list[ast.expr]] = {}  # `self.<name> = value`, as data_facts.self_attributes
        for node in ast_walk.walk(self.tree):
            if isinstance(node, ast.Call):
                calls.append(node)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and _is_self(target.value):
                        self_assigned.setdefault(target.attr, []).append(node.value)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:  # `import torch.nn` binds `torch`, qualified as itself
                        imported.setdefault(alias.asname, set()).add(alias.name.rpartition(".")[2])
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module is not None:
                for alias in node.names:
                    imported.setdefault(alias.asname or alias.name, set()).add(alias.name)

        def constructs(value: ast.AST, classes: frozenset) -> bool:
            if not isinstance(value, ast.Call):
                return False
            func = value.func
            if isinstance(func, ast.Attribute):
                return func.attr in classes
            return isinstance(func, ast.Name) and not imported.get(func.id, set()).isdisjoint(classes)

        def self_layer(func: ast.AST, classes: frozenset) -> bool:  # the one value `self.<name>` is assigned
            if not (isinstance(func, ast.Attribute) and _is_self(func.value)):
                return False
            values = self_assigned.get(func.attr, [])
            return len(values) == 1 and constructs(values[0], classes)

        for call in calls:
            items = [a for a in call.args if not isinstance(a, ast.Starred)]
            if any(constructs(a, _CONV_CLASSES) and constructs(b, _BATCHNORM_CLASSES) for a, b in zip(items, items[1:])):
                return True
            if items and isinstance(items[0], ast.Call) and self_layer(call.func, _BATCHNORM_CLASSES) \
                    and self_layer(items[0].func, _CONV_CLASSES):
                return True
        return False

    # -- collecting (statements only) --------------------------------------------------------------------------
    def _collect(self, statements: list, scope: Optional[ast.AST], in_loop: bool, chain: tuple) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._functions.setdefault(node.name, []).append(node)
                if scope is None:
                    self._module_defs.add(node.name)
                args = node.args
                for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                    if arg is not None and arg.annotation is not None:
                        self._annotations.append((arg.arg, arg.annotation))
                self._collect(node.body, node, False, (*chain, node))
                continue
            if isinstance(node, ast.ClassDef):
                self._classes.add(node.name)
                if any(_last(b) == "Module" or _last(b) in self._network_classes for b in node.bases) or any(
                        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "forward"
                        for s in node.body):
                    self._network_classes.add(node.name)
                self._collect(node.body, node, False, (*chain, node))
                continue
            if isinstance(node, _LOOPS):
                self._loops.append((node, scope, in_loop, chain))
                self._collect(node.body, scope, True, chain)
                self._collect(node.orelse, scope, True, chain)
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value)
                    if isinstance(target, ast.Attribute) and _is_self(target.value) and \
                            not self._in_a_network(chain) and _builds_a_class(node.value):
                        self._declared_attributes.add(target.attr)
            elif isinstance(node, ast.AnnAssign):  # tree.py binds the annotation when there is no value
                if isinstance(node.target, ast.Name):
                    self._annotations.append((node.target.id, node.annotation))
                    if isinstance(scope, ast.ClassDef):
                        self._declared_attributes.add(node.target.id)
                self._bind(node.target, node.value if node.value is not None else node.annotation)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self._import(node, scope)
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    self._collect(block, scope, in_loop, chain)
            for handler in getattr(node, "handlers", ()):
                self._collect(handler.body, scope, in_loop, chain)
            for case in getattr(node, "cases", ()):
                self._collect(case.body, scope, in_loop, chain)

    def _import(self, node: ast.AST, scope: Optional[ast.AST]) -> None:
        """As analysis/imports.py's ImportMap (which leaves relative imports out)."""
        for alias in node.names:
            if alias.name == "*":
                continue
            if isinstance(node, ast.ImportFrom):
                local = alias.asname or alias.name
                full = None if node.level or node.module is None else f"{node.module}.{alias.name}"
            else:
                local = alias.asname or alias.name.split(".")[0]
                full = alias.name if alias.asname else local
            if scope is None:
                self._module_defs.add(local)
            if full is not None:
                self._aliases.setdefault(local, set()).add(full)

    def _qualified(self, node: ast.AST) -> set[str]:
        """What `ImportMap.qualify` may give for a dotted name (every alias, if imported more than once)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return set()
        rest = "".join("." + p for p in reversed(parts))
        return {head + rest for head in self._aliases.get(node.id, {node.id})}

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        """As analysis/tree.py binds: `x, y = a, b` pairwise; an element of an unpacked value is never a model
        (kinds._element), so only whole values are kept."""
        if isinstance(target, ast.Name):
            self._bindings.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for element, part in zip(target.elts, value.elts):
                if not isinstance(part, ast.Starred):
                    self._bind(element.value if isinstance(element, ast.Starred) else element, part)

    def _walrus_bindings(self) -> None:
        """`(name := value)` binds too: looked for only in files that have one."""
        if "walrus" not in self._held:
            self._held["walrus"] = True
            if ":=" in self.source:
                for node in ast_walk.walk(self.tree):
                    if isinstance(node, ast.NamedExpr):
                        self._bind(node.target, node.value)

    # -- models (Kind.MODULE) and model classes (Kind.MODULE_CLASS) ----------------------------------------------
    def _stored_names(self) -> set[str]:
        """Every name bound other than by a def or an import (a whole walk: needed only for model-like names)."""
        if "stored" not in self._held:
            stored = set(self._bindings) | {name for name, _ in self._annotations} | self._classes
            for node in ast_walk.walk(self.tree):
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    stored.add(node.id)
                elif isinstance(node, ast.arg):
                    stored.add(node.arg)
                elif isinstance(node, ast.ExceptHandler) and node.name:
                    stored.add(node.name)
            self._held["stored"] = stored
        return self._held["stored"]  # type: ignore[return-value]

    def _named_like_a_model(self, name: str) -> bool:
        """kinds._kind_from_name applies, unless every binding of the name is a module-level def or import."""
        if _MODULE_NAME.match(name) is None:
            return False
        return name not in self._module_defs or name in self._stored_names()

    def _propagated(self, key: str, base) -> set[str]:
        """Names some value of which `base` accepts, closed under `name = other_name` assignments."""
        if key not in self._held:
            self._walrus_bindings()
            found = {n for n, values in self._bindings.items() if any(base(v) for v in values)}
            if "referrers" not in self._held:  # name -> the names assigned a value that is (or picks) it
                referrers: dict[str, set[str]] = {}
                for name, values in self._bindings.items():
                    for value in values:
                        for ref in _names_in(value):
                            referrers.setdefault(ref, set()).add(name)
                self._held["referrers"] = referrers
            referrers = self._held["referrers"]  # type: ignore[assignment]
            pending = list(found)
            while pending:
                for name in referrers.get(pending.pop(), ()):
                    if name not in found:
                        found.add(name)
                        pending.append(name)
            self._held[key] = found
        return self._held[key]  # type: ignore[return-value]

    def _class_names(self) -> set[str]:
        return self._propagated("classes", lambda v: any(n in self._classes for n in _names_in(v))) \
            | self._classes

    def _model_names(self) -> set[str]:
        if "model names" not in self._held:
            annotated = {name for name, annotation in self._annotations if self._may_say_module(annotation)}
            self._held["model names"] = self._propagated("models", self._value_may_be_model) | annotated
        return self._held["model names"]  # type: ignore[return-value]

    def _may_say_module(self, annotation: ast.AST) -> bool:
        """kinds._annotation_kind gives MODULE: `nn.Module`/`torch.nn.Module`, under any alias, or as a string."""
        if isinstance(annotation, ast.Constant):
            return isinstance(annotation.value, str) and "Module" in annotation.value
        return bool(self._qualified(annotation) & {"torch.nn.Module", "nn.Module"})  # `Optional[...]`: no

    def _value_may_be_model(self, node: ast.AST) -> bool:
        """Without following names assigned in the module (`_propagated` does)."""
        if isinstance(node, ast.Name):
            return self._named_like_a_model(node.id)
        if isinstance(node, ast.Attribute):
            return _is_self(node.value) and (_MODULE_NAME.match(node.attr) is not None or
                                             node.attr in self._declared_attributes)
        if isinstance(node, ast.Call):
            return self._call_may_make_model(node)
        if isinstance(node, ast.IfExp):
            return self._value_may_be_model(node.body) or self._value_may_be_model(node.orelse)
        if isinstance(node, ast.BoolOp):
            return any(self._value_may_be_model(v) for v in node.values)
        if isinstance(node, ast.NamedExpr):
            return self._value_may_be_model(node.value)
        return False

    def _call_may_make_model(self, call: ast.Call) -> bool:
        """kinds._call: `torch.nn.X(...)`, `torch.compile`, torchvision/timm models, a class of the module,
        `model.to(...)`-like methods."""
        func = call.func
        for q in self._qualified(func):
            if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper() or q == "torch.compile" \
                    or q.startswith(("torchvision.models.", "timm.create_model")):
                return True
        if isinstance(func, ast.Name):
            return func.id in self._class_names()
        return isinstance(func, ast.Attribute) and func.attr in _MODULE_METHODS_SELF

    def _may_be_model(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self._model_names() or self._named_like_a_model(node.id)
        if isinstance(node, (ast.IfExp, ast.BoolOp, ast.NamedExpr)):
            return any(self._may_be_model(n) for n in ast_walk.iter_child_nodes(node) if isinstance(n, ast.expr))
        return self._value_may_be_model(node)

    # -- loops -------------------------------------------------------------------------------------------------
    def _in_a_network(self, chain: tuple) -> bool:
        """The innermost class around a statement derives from `Module` (module_attrs.py asks nothing there)."""
        cls = next((c for c in reversed(chain) if isinstance(c, ast.ClassDef)), None)
        return cls is not None and cls.name in self._network_classes

    def _may_train(self, call: ast.Call, function: Optional[ast.AST] = None) -> bool:
        """`LoopAnalysis.is_training_call` without following helpers, for a call in `function`'s own body."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _TRAINING_METHODS:
            return True
        if isinstance(func, ast.Name) and func.id in self._loop_variables(function):
            # `for stage in self.stages: x = stage(x)`: the loop binds it, and the kind of what a loop yields is
            # never a model (kinds.iteration_kind), so only the name can make it one (kinds._kind_from_name).
            return _MODULE_NAME.match(func.id) is not None
        return self._may_be_model(func)

    def _loop_variables(self, function: Optional[ast.AST]) -> frozenset:
        """Names that `function` binds only as targets of `for` loops or comprehensions (analysis/tree.py's
        scope: its body without nested functions and lambdas; a nested class body binds in it too)."""
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return frozenset()
        key = ("loop variables", id(function))
        if key not in self._held:
            loop_targets: set[int] = set()
            stored: set[str] = set()
            other: set[str] = {a.arg for a in [*function.args.posonlyargs, *function.args.args,
                                                 *function.args.kwonlyargs, function.args.vararg,
                                                 function.args.kwarg] if a is not None}
            stack = list(function.body)
            while stack:
                node = stack.pop()
                if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    loop_targets.update(id(n) for n in ast_walk.walk(node.target))
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    (stored if id(node) in loop_targets else other).add(node.id)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    other.add(node.name)
                elif isinstance(node, ast.alias):
                    other.add((node.asname or node.name).split(".")[0])
                elif isinstance(node, (ast.Global, ast.Nonlocal)):
                    other.update(node.names)
                elif isinstance(node, ast.ExceptHandler) and node.name:
                    other.add(node.name)
                elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                    other.add(node.name)
                elif isinstance(node, ast.MatchMapping) and node.rest:
                    other.add(node.rest)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    for default in [*node.args.defaults, *node.args.kw_defaults, *node.decorator_list] \
                            if not isinstance(node, ast.Lambda) else [*node.args.defaults, *node.args.kw_defaults]:
                        if default is not None:
                            stack.append(default)
                    continue  # its own scope
                stack.extend(ast_walk.iter_child_nodes(node))
            self._held[key] = frozenset(stored - other)
        return self._held[key]  # type: ignore[return-value]

    def _trains(self, name: str) -> bool:
        """A function of the module by that name may train in its own body or through the module's functions it
        calls (`LoopAnalysis._function_trains`)."""
        key = "trains:" + name
        if key not in self._held:
            self._held[key] = False  # recursion guard
            # (or steps a project object: `self.world.learn(batch)`, LoopAnalysis._steps_an_object)
            self._held[key] = any(isinstance(n, ast.Call) and (
                self._may_train(n, fn) or self._calls_trainer(n) or
                isinstance(n.func, ast.Attribute) and n.func.attr not in _CONTAINER_METHODS and
                self._may_hold_an_object(n.func.value, fn))
                for fn in self._functions.get(name, ()) for n in _walk_body(fn))
        return bool(self._held[key])

    def _calls_trainer(self, call: ast.Call) -> bool:
        name = _local_name(call.func)
        return name is not None and name in self._functions and self._trains(name)

    def _names_a_loader(self) -> bool:
        if "loader" not in self._held:
            lower = self.source.lower()
            # without the text (a caller's tree from the project model), the identifiers alone decide
            self._held["loader"] = (not self.source or "loader" in lower or "dl" in lower and
                                    _LOADER_TEXT.search(lower) is not None) \
                and any(_LOADER_IDENTIFIER.match(name) for name in self._identifiers())
        return bool(self._held["loader"])

    def _identifiers(self) -> Iterator[str]:
        """Every identifier of the module (names, attributes, parameters, definitions, imports) and every string
        that could be an annotation (`x: "DataLoader"`): what `Kind.LOADER`'s names come from, without the
        docstrings, comments and URLs (`https://dl.fbaipublicfiles.com/...`) that the text search also sees."""
        for node in ast_walk.walk(self.tree):
            if isinstance(node, ast.Name):
                yield node.id
            elif isinstance(node, ast.Attribute):
                yield node.attr
            elif isinstance(node, ast.arg):
                yield node.arg
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield node.name
            elif isinstance(node, ast.alias):
                yield node.asname or node.name
                yield node.name
            elif isinstance(node, ast.keyword) and node.arg:
                yield node.arg
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200 \
                    and _ANNOTATION_TEXT.match(node.value):
                yield from _WORD.findall(node.value)

    def _called_from_a_loop(self, function: ast.AST) -> bool:
        """`LoopAnalysis._called_from_a_loop`: the module's only def of that name is called in a loop outside it."""
        if len(self._functions.get(function.name, ())) != 1:
            return False
        if "called" not in self._held:
            called: dict[str, list[tuple]] = {}
            for loop, _, _, chain in self._loops:
                for node in _walk_body(loop):
                    name = _local_name(node.func) if isinstance(node, ast.Call) else None
                    if name is not None:
                        called.setdefault(name, []).append(chain)
            self._held["called"] = called
        return any(function not in chain for chain in self._held["called"].get(function.name, ()))

    def _may_iterate_tensor_math(self, loop: ast.AST, function: Optional[ast.AST], nested: bool) -> bool:
        """`LoopAnalysis._iterates_tensor_math`'s conditions on the loop's shape and place, and on its body."""
        if nested or isinstance(function, ast.Lambda):
            return False
        # (`LoopAnalysis` also rules out a function a *training* loop calls: that a loop calls it is not enough to
        # tell here, so that exclusion is not mirrored; timm's naflex_random_erasing.py showed the difference.)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name in _SETUP_METHODS:
            return False
        if isinstance(loop, ast.While):
            test = loop.test  # `while True:`, `while 1:`, `while running:` (LibCST: a Name or an Integer)
            if isinstance(test, ast.Name) or isinstance(test, ast.Constant) and (
                    test.value is None or type(test.value) in (bool, int)):
                return False
        elif not _many_range_iterations(loop.iter):
            return False
        return self._tensors().body_may_compute_tensor(_walk_body(loop))  # its body may compute a tensor

    def _tensors(self):
        """Which names and values of the module may be tensors (gpulint/prefilter_tensors.py), on first use."""
        if "tensors" not in self._held:
            from gpulint.prefilter_tensors import TensorFacts

            # (forward.py asks about callers' trees without their text: then loader names come from the tree)
            loaders = self._names_a_loader() if self.source else any(
                _LOADER_IDENTIFIER.match(name) for name in self._identifiers())
            self._held["tensors"] = TensorFacts(self.tree, self._qualified, self._may_be_model, loaders)
        return self._held["tensors"]

    def _may_be_hot(self, loop: ast.AST, function: Optional[ast.AST], nested: bool, chain: tuple) -> bool:
        if not isinstance(loop, ast.While) and self._names_a_loader():
            return True  # it may iterate a loader
        calls_or_math = False
        counts_steps = isinstance(loop, ast.While) and _counts_steps(loop.test)
        for node in _walk_body(loop):
            if isinstance(node, ast.Call):
                calls_or_math = True
                if self._may_train(node, function):
                    return True
                if counts_steps and isinstance(node.func, ast.Attribute):
                    return True  # `self.agent.update(...)` may be one training step (loops.py `_body_trains`)
                if isinstance(node.func, ast.Attribute) and node.func.attr not in _CONTAINER_METHODS and \
                        self._may_hold_an_object(node.func.value, function):
                    return True  # `dqn.act(state)` may run a network (analysis/step_callables.py)
                name = _local_name(node.func)
                if name is not None and name in self._functions and self._trains(name):
                    return True
            elif isinstance(node, ast.BinOp):
                calls_or_math = True
        return calls_or_math and self._may_iterate_tensor_math(loop, function, nested)

    def _may_hold_an_object(self, receiver: ast.AST, function: Optional[ast.AST]) -> bool:
        """A method call's receiver that may hold an instance of a project class (`_steps_through_method`'s
        `_receiver_classes`): `self.X` that a class declares or builds from a class outside networks
        (`_declared_attributes`), a name bound to a call (a constructor, a factory), or a parameter of the loop's
        function (its class comes from the call sites)."""
        if isinstance(receiver, ast.Attribute):
            return _is_self(receiver.value) and receiver.attr in self._declared_attributes
        if not isinstance(receiver, ast.Name) or receiver.id == "self" or receiver.id in self._module_defs:
            return False
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and receiver.id in {
                a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]}:
            return True
        return any(isinstance(v, ast.Call) for v in self._bindings.get(receiver.id, ()))


# Methods of Python's containers and strings (`items.pop()`, `names.append(x)`): taken for what they are, not for a
# project object's step (`_may_hold_an_object`); `update` is left out (`agent.update(batch)` is a training step).
_CONTAINER_METHODS = frozenset({"pop", "append", "extend", "insert", "remove", "items", "keys", "values", "get",
                                "setdefault", "copy", "clear", "index", "count", "add", "discard", "format", "join",
                                "split", "strip", "replace", "lower", "upper", "startswith", "endswith"})


def _counts_steps(test: ast.AST) -> bool:
    """`self.step < self.cfg.num_train_steps`, `global_step < max_steps`: a step counter compared with a bound
    (analysis/project.py `_STEP_WHILE_TEXT`, which makes the file a training file)."""
    if not (isinstance(test, ast.Compare) and isinstance(test.ops[0], (ast.Lt, ast.LtE))):
        return False
    return "step" in _last(test.left).lower()


def _names_in(value: ast.AST) -> list[str]:
    """The names whose kind a value's kind is joined from (kinds.py: a name, the branches of `a if c else b`,
    `a or b`, `(n := a)`)."""
    if isinstance(value, ast.Name):
        return [value.id]
    if isinstance(value, ast.IfExp):
        return _names_in(value.body) + _names_in(value.orelse)
    if isinstance(value, ast.BoolOp):
        return [n for v in value.values for n in _names_in(v)]
    if isinstance(value, ast.NamedExpr):
        return _names_in(value.value)
    return []


def _last(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _builds_a_class(value: ast.AST) -> bool:
    """`Agent(...)`, `nets.Agent(...).to(device)`: a call of a capitalised name (module_attrs.py's construction)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and isinstance(value.func.value,
                                                                                              ast.Call):
        value = value.func.value
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return last[:1].isupper()


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _local_name(func: ast.AST) -> Optional[str]:
    """The name `LoopAnalysis.local_function` looks up: `f(...)` or `self.f(...)`."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and _is_self(func.value):
        return func.attr
    return None


def _walk_body(loop: ast.AST) -> Iterator[ast.AST]:
    """Nodes of the loop (nested loops included), not of functions, classes or lambdas defined in it."""
    stack = list(ast_walk.iter_child_nodes(loop))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast_walk.iter_child_nodes(node))


def _many_range_iterations(iterable: ast.AST) -> bool:
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"
            and (iterable.args or iterable.keywords)):
        return False
    values = []
    for arg in iterable.args:  # positional arguments come first, as LibCST's loop meets them
        if isinstance(arg, ast.Starred):
            return False
        negative = isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub)
        literal = arg.operand if negative else arg
        if not (isinstance(literal, ast.Constant) and type(literal.value) is int):
            return True
        values.append(-literal.value if negative else literal.value)
    if iterable.keywords:
        return False
    try:
        return len(range(*values)) >= _MANY
    except (TypeError, ValueError):
        return True


_FUSED_NAMES = ("Adam", "AdamW", "SGD")  # rules/throughput/optimizer_not_fused.py: FUSED_OPTIMIZERS' last names


def _returns_an_optimizer(tree: ast.AST) -> bool:
    """RETURNED_OPTIMIZER: a top-level function calls a name ending in `Adam`, `AdamW` or `SGD` and returns
    something (an optimizer factory: analysis/training.py `factory_callers`, GPU402)."""
    for stmt in getattr(tree, "body", ()):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nodes = list(ast_walk.walk(stmt))
            if any(isinstance(n, ast.Call) and str(_last(n.func)) in _FUSED_NAMES for n in nodes) and \
                    any(isinstance(n, ast.Return) and n.value is not None for n in nodes):
                return True
    return False


def _on_self(target: ast.expr) -> bool:
    """`self.X` or `self.X[key]`."""
    if isinstance(target, ast.Subscript):
        target = target.value
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"


def _loader_handed_to_a_class(tree: ast.AST) -> bool:
    """A name bound to `...DataLoader(...)` (or `DataLoader(...) if c else None`) passed to a call of a
    capitalised name, a class's constructor (`Trainer(model, train_dataloader=loader)`: analysis/handed_loaders.py)."""
    nodes = list(ast_walk.walk(tree))
    loaders = set()
    for n in nodes:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            value = n.value.body if isinstance(n.value, ast.IfExp) else n.value
            if isinstance(value, ast.Call) and str(_last(value.func)).endswith("DataLoader"):
                loaders.add(n.targets[0].id)
    if not loaders:
        return False
    for n in nodes:
        if isinstance(n, ast.Call) and str(_last(n.func))[:1].isupper() and any(
                isinstance(a, ast.Name) and a.id in loaders for a in [*n.args, *(k.value for k in n.keywords)]):
            return True
    return False


def _returns_a_loader(tree: ast.AST) -> bool:
    """RETURNED_LOADER: a top-level function calls `...DataLoader(...)` and returns something (or hands on an
    iterable's items: `yield from loader`), or a top-level class with an `__iter__` builds one in `__init__` (a
    loader class: analysis/loader_classes.py), or a method of a top-level class keeps one on `self`."""
    for stmt in getattr(tree, "body", ()):
        if isinstance(stmt, ast.ClassDef):
            methods = {m.name: m for m in stmt.body if isinstance(m, ast.FunctionDef)}
            if "__iter__" in methods and "__init__" in methods and any(
                    isinstance(n, ast.Call) and str(_last(n.func)).endswith("DataLoader")
                    for n in ast_walk.walk(methods["__init__"])):
                return True
            # a method keeping one on `self` (`self.data_loader['train'] = DataLoader(...)`): a subclass's loop
            # may move its batches (analysis/handed_loaders.py)
            if any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and
                   str(_last(n.value.func)).endswith("DataLoader") and len(n.targets) == 1 and
                   _on_self(n.targets[0]) for m in methods.values() for n in ast_walk.walk(m)):
                return True
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nodes = list(ast_walk.walk(stmt))
            if any(isinstance(n, ast.Call) and _last(n.func) is not None and str(_last(n.func)).endswith("DataLoader")
                   for n in nodes) and any(isinstance(n, ast.Return) and n.value is not None or
                                           isinstance(n, ast.YieldFrom) for n in nodes):
                return True
    return _loader_handed_to_a_class(tree)
