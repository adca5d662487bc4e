"""Objects a class keeps from its constructor's parameters, and what their methods cost (branch recall84).

A trainer, a metric or a search keeps the helper objects it is handed:

    class ErrorRate:                                   # metrics.py
        def __init__(self, vocab):
            self.vocab = vocab
        def __call__(self, targets, y_hats):
            for target, y_hat in zip(targets, y_hats):
                s1 = self.vocab.label_to_string(target)  # which class? `vocab` says nothing
    class CharacterErrorRate(ErrorRate):
        def __init__(self, vocab):
            super().__init__(vocab)

    class Trainer:                                     # trainer.py
        def __init__(self, ..., vocab: Vocabulary):
            self.metric = CharacterErrorRate(vocab)
        def train(self):
            for batch in loader:  ...; cer = self.metric(targets, y_hats)     # every step

    vocab = CharVocabulary(path); trainer = Trainer(..., vocab=vocab)     # main.py

`self.vocab` holds what the constructions of the class pass for `vocab`: the project's calls `ErrorRate(...)`, and
`CharacterErrorRate(...)` of a subclass that hands its own parameter to `super().__init__(...)` (or has no
`__init__` of its own). What a site passes is a project instance (`CharVocabulary(...)`, a name bound to one, a
`.cuda()`/`.to(...)` of one), `None` or nothing (the code using the attribute runs when it is set), or a parameter
of the enclosing constructor, followed the same way to that class's constructions (`Trainer(..., vocab=vocab)`),
else what that parameter's annotation names (`vocab: Vocabulary`, whose subclasses' overrides are then the
candidates). Anything else, or a site that cannot be told, resolves nothing.

The function summaries (`project._Summarizer._callee`, `_stored_function`) then resolve `self.vocab.m(...)` to the
candidates' `m` and `self.criterion(...)` to their `__call__` (an `nn.Module`'s `forward`), with the stance of
`candidate_methods`: a fact holds when every candidate has it (`merged`). So the metric's summary records that
its `targets` reach the vocabulary's per-token `.item()`, and the trainer's per-step `self.metric(targets, ...)`
is reported at the call (GPU112), its related location the read.

Bounded: constructions are found through the project's identifier index (the files naming the class), a holder
with more than `_MAX_SUBCLASSES` project subclasses (a framework's task or model base) is not followed, the chain
of constructor parameters is followed `_DEPTH` classes deep, each answer remembered per project state
(`forward._remembered`, which also records the files read as the caller's dependencies).
"""
from __future__ import annotations

import ast
from typing import Optional

from gpulint.analysis.project import ClassSummary, FunctionSummary, Project, _UNKNOWN, _argument, _dotted, \
    _self_stores

_DEPTH = 3
_MAX_SUBCLASSES = 8  # constructions followed through at most this many subclasses of the holder
_SELF_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16"})


def held_method(project: Project, cls: ClassSummary, attr: str, member: str) -> Optional[FunctionSummary]:
    """`self.<attr>.member(...)` in a method of `cls`, where `<attr>` is a constructor parameter the class keeps:
    the candidates' `member`, merged (None when not known)."""
    from gpulint.analysis.candidate_methods import implementations, merged

    classes = held_classes(project, cls, attr)
    if not classes:
        return None
    candidates = implementations(project, classes, member)
    return merged(candidates) if candidates else None


def held_call(project: Project, cls: ClassSummary, attr: str) -> Optional[FunctionSummary]:
    """`self.<attr>(...)`: the held instances' `__call__` (an `nn.Module`'s `forward`), merged."""
    from gpulint.analysis.candidate_methods import merged

    classes = held_classes(project, cls, attr)
    found: list = []
    for held in classes:
        method = project.method(held, "__call__")
        if method is None and project.is_module_class(held):
            method = project.method(held, "forward")
        if method is None:
            return None
        if all(method is not f for f in found):
            found.append(method)
    return merged(tuple(found)) if found else None


def held_classes(project: Project, cls: ClassSummary, attr: str, depth: int = 0) -> tuple:
    """The project classes `self.<attr>` may hold in `cls` (or in the project base that stores it), where its one
    store is `self.<attr> = <a parameter of __init__>`; () when not known."""
    from gpulint.analysis.hierarchy import project_bases

    for owner in (cls, *project_bases(project, cls)):
        stores = _self_stores(owner).get(attr)
        if not stores:
            continue
        init = owner.methods.get("__init__")
        if len(stores) != 1 or init is None or not isinstance(stores[0], ast.Assign) or \
                not isinstance(stores[0].value, ast.Name):
            return ()
        name = stores[0].value.id
        if name not in _positional(init) and name not in (a.arg for a in init.args.kwonlyargs) or \
                not _in_function(stores[0], init) or _rebinds(init, name):
            return ()
        return _parameter_classes(project, owner, name, depth)
    return ()


def _parameter_classes(project: Project, owner: ClassSummary, param: str, depth: int) -> tuple:
    from gpulint.analysis.forward import _remembered, _resolved

    if depth > _DEPTH:
        return ()
    key = ("held parameter classes", _resolved(project, owner.path), owner.name, owner.line, param)
    return _remembered(project, key, lambda: _constructed(project, owner, param, depth)) or ()


def _constructed(project: Project, owner: ClassSummary, param: str, depth: int) -> tuple:
    """The union of what the constructions of `owner` and of its forwarding subclasses pass as `param`."""
    from gpulint.analysis.candidate_methods import project_subclasses

    init = owner.methods.get("__init__")
    if init is None:
        return ()
    union: list = []
    targets = [(owner, init, param)]
    subclasses = project_subclasses(project, owner)
    if len(subclasses) > _MAX_SUBCLASSES:
        return ()  # a framework base (a task, a model) built in many ways: not a helper object's class
    for sub in subclasses:
        own = sub.methods.get("__init__")
        if own is None:
            targets.append((sub, init, param))  # `CharacterErrorRate(vocab)` runs the base's `__init__`
            continue
        forwarded = _forwarded(own, owner, init, param)
        if forwarded is None:
            return ()
        if forwarded is not False:
            targets.append((sub, own, forwarded))
    for target, init_node, name in targets:
        found = _passed(project, target, init_node, name, depth)
        if found is None:
            return ()
        union.extend(c for c in found if all(c is not u for u in union))
    return tuple(union)


def _forwarded(own: ast.FunctionDef, base: ClassSummary, base_init: ast.FunctionDef, param: str):
    """The parameter of a subclass's `__init__` handed to the base's as `param` (`super().__init__(vocab)`), False
    where the subclass passes no base `__init__` call, None where it passes something else there."""
    positional = _positional(base_init)
    position = positional.index(param) if param in positional else None
    for node in _walk(own):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or \
                node.func.attr != "__init__":
            continue
        receiver = node.func.value
        args = node.args
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            pass
        elif _dotted(receiver) == base.name and args and isinstance(args[0], ast.Name) and args[0].id == "self":
            args = args[1:]  # `Base.__init__(self, vocab)`
        else:
            continue
        call = ast.Call(func=node.func, args=args, keywords=node.keywords)
        passed = _argument(call, position, param)
        if passed is None:
            return False  # left at the base's default
        if isinstance(passed, ast.Name) and passed.id in _positional(own) + [a.arg for a in own.args.kwonlyargs] \
                and not _rebinds(own, passed.id):
            return passed.id
        return None
    return False


def _passed(project: Project, cls: ClassSummary, init: ast.FunctionDef, param: str, depth: int) -> Optional[list]:
    """The classes the project's `cls(...)` calls pass for `param` of `init`; None when one cannot be told."""
    positional = _positional(init)
    position = positional.index(param) if param in positional else None
    found: list = []
    for file in project._files_mentioning(cls.name):
        caller = project.module(file)
        if caller is None:
            continue
        for call, assigns in caller.calls_named(cls.name):
            dotted = _dotted(call.func)
            if dotted is None or project.lookup(caller.path, dotted) is not cls:
                continue
            argument = _argument(call, position, param)
            if argument is _UNKNOWN:
                return None
            if argument is None or isinstance(argument, ast.Constant) and argument.value is None:
                continue
            classes = _classes_at(project, caller, call, argument, assigns, depth)
            if classes is None:
                return None
            found.extend(classes)
    return found


def _classes_at(project: Project, caller, call: ast.Call, expr: ast.expr, assigns: dict, depth: int,
                names: int = 0):
    """The classes `expr`, passed at `call` in `caller`, is an instance of (a name assigned on several branches:
    each branch's); None when not known."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _SELF_METHODS:
        expr = expr.func.value  # `TripletLoss(margin).cuda()`: the module itself
    if isinstance(expr, ast.Name):
        bound = assigns.get(expr.id, ())
        annotated = [value for value, _ in bound if getattr(value, "annotation_only", False)]
        if len(annotated) == len(bound):  # the name is a parameter of the enclosing function (maybe annotated)
            enclosing = _enclosing_init(caller, call)
            if enclosing is not None and expr.id in _positional(enclosing[1]) + \
                    [a.arg for a in enclosing[1].args.kwonlyargs] and not _rebinds(enclosing[1], expr.id):
                chained = _parameter_classes(project, enclosing[0], expr.id, depth + 1)
                if chained:
                    return list(chained)
            if not annotated:
                return None
        elif names < 2:
            # `vocab = CharVocabulary(...)` on one branch, `vocab = WordVocabulary(...)` on another: either
            union: list = []
            for value, index in bound:
                if index is not None or getattr(value, "annotation_only", False):
                    return None
                if isinstance(value, ast.Name) and value.id == expr.id:
                    return None
                found = _classes_at(project, caller, call, value, assigns, depth, names + 1)
                if found is None:
                    return None
                union.extend(c for c in found if all(c is not u for u in union))
            return union
    found = project.class_at(caller, expr, assigns)
    if found is _UNKNOWN or found is None:
        return None if found is _UNKNOWN else []
    return [found]


def _enclosing_init(caller, call: ast.Call) -> Optional[tuple[ClassSummary, ast.FunctionDef]]:
    """The class and `__init__` of `caller` whose body holds `call`."""
    line = getattr(call, "lineno", None)
    if line is None:
        return None
    for cls in caller.classes.values():
        init = cls.methods.get("__init__")
        if isinstance(init, ast.FunctionDef) and init.lineno <= line <= (init.end_lineno or init.lineno):
            return cls, init
    return None


def _positional(fn: ast.FunctionDef) -> list:
    return [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]


def _in_function(node: ast.AST, fn: ast.FunctionDef) -> bool:
    line = getattr(node, "lineno", None)
    return line is not None and fn.lineno <= line <= (fn.end_lineno or fn.lineno)


def _rebinds(fn: ast.FunctionDef, name: str) -> bool:
    """`fn` assigns `name` (`vocab = vocab or Default()`): what the call passed is not what is kept."""
    for node in _walk(fn):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
    return False


def _walk(node: ast.AST):
    from gpulint import ast_walk

    return ast_walk.walk(node)
