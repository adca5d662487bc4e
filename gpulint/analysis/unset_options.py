"""An option a class never turns on: `if self.autobalance:` in a method of a loss class whose `__init__` takes
`autobalance=False` and stores it (`self.autobalance = autobalance`), where no construction of the class in the
project passes that argument (YOLOv7's `ComputeLoss(model)`, whose balancing `.item()` sits under the flag).

The block under such a test never runs in the project as shipped, so what it costs is not a per-step cost.

Precision first (a flag that some run may turn on must stay reported). The option counts only when:
- the test is `self.<attr>` itself, in a method of a top-level class of the module;
- every assignment of `<attr>` on any object in the module is `self.<attr> = <param>` (alone or as one element of
  a tuple assignment) in that class's own `__init__`, `<param>` a parameter of it whose default is `False` or
  `None`, and the class body never calls `setattr` or touches `__dict__`;
- no other project file names `<attr>` or `<param>` (a config, a `partial(..., flag=True)`, a subclass's keyword)
  other than as the keyword of a construction passing `False`/`None`;
- every call that may construct the class (a call of the class's name, or any `__init__(...)` call) in this module
  and in the other project files naming the class passes no `*args`/`**kwargs`, no `<param>=` other than
  `False`/`None`, and fewer positional arguments than reach `<param>` (or `False`/`None` there); and the class
  is never used other than by being called (a registry entry, a base class, an argument: not followed).
At most `_FILES` other files naming the class are read; more is not known.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint import ast_walk

_FILES = 12


class UnsetOptions:
    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self._answers: dict[tuple[str, str], bool] = {}
        self._dynamic: dict = {}  # id of a class of the module's tree -> (class, `_dynamic_assignments`)
        self._tree: Optional[ast.Module] = None
        self._parsed = False

    def never_runs(self, branch: cst.If) -> bool:
        """The body of `branch` never runs in the project as shipped: its test is an option the class never turns
        on (`never_enabled`), or `hasattr(self, "X")` of an attribute no training code sets
        (`attribute_never_set`)."""
        attr = hasattr_self(branch.test)
        if attr is not None:
            return self.attribute_never_set(attr)
        return self.never_enabled(branch.test, branch) or self.never_passed(branch.test, branch) \
            or self.setting_off(branch.test)

    def setting_off(self, test: cst.BaseExpression) -> bool:
        """`if cfg.DETECTION.ENABLE:` of a yacs setting the project declares `False` and no recipe, script or
        document turns on (analysis/config_defaults.py): the block is an option no shipped run takes."""
        if self.analysis.path is None or type(test) not in (cst.Attribute, cst.BooleanOperation):
            return False
        from gpulint.analysis.config_defaults import config_test_off
        from gpulint.analysis.forward import _project_of

        project, _ = self.analysis.fact(_project_of)
        return project is not None and config_test_off(project, test)

    def never_passed(self, test: cst.BaseExpression, branch: cst.If) -> bool:
        """`test` is `if eos_token is not None:` / `if exists(eos_token):` / `if eos_token:` of a parameter of
        the enclosing function (or method) whose default is `None`, that the function never rebinds, and that no
        call of the function in the project passes (lucidrains' `generate(self, start_tokens, seq_len,
        eos_token=None, ...)`, which the training script calls as `model.generate(inp, GENERATE_LENGTH)`): the
        block is an option no run of the project turns on. Every call by the function's name in this module and
        in the other project files naming it (at most `_FILES`) passes no `*args`/`**kwargs`, no `eos_token=`
        other than `None`, and fewer positional arguments than reach it; and the name is only ever called."""
        param = _tested_parameter(test, self.analysis)
        if param is None:
            return False
        fn = self.analysis.index.enclosing_function(branch)
        if fn is None or self.analysis.path is None:
            return False
        key = (f"param:{fn.name.value}:{id(fn)}", param)
        if key not in self._answers:
            self._answers[key] = self._compute_never_passed(fn, param)
        return self._answers[key]

    def _compute_never_passed(self, fn: cst.FunctionDef, param: str) -> bool:
        params = [*fn.params.posonly_params, *fn.params.params]
        found = next((p for p in [*params, *fn.params.kwonly_params] if p.name.value == param), None)
        if found is None or found.default is None or not (type(found.default) is cst.Name
                                                          and found.default.value == "None"):
            return False
        # the function never rebinds the parameter
        for node in _walk_cst(fn.body):
            if type(node) in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign) and any(
                    type(n) is cst.Name and n.value == param for n in _walk_cst(node.target)):
                return False
            if type(node) in (cst.For, cst.CompFor, cst.WithItem, cst.NamedExpr) and any(
                    type(n) is cst.Name and n.value == param for n in _walk_cst(
                        node.target if type(node) is not cst.WithItem else (node.asname or node.item))):
                return False
        names = [p.name.value for p in params]
        is_method = bool(names) and names[0] in ("self", "cls") and self.analysis.index.enclosing_class(fn) is not None
        position = names.index(param) - (1 if is_method else 0) if param in names else None
        tree = self._module_tree()
        if tree is None:
            return False
        from gpulint.analysis.forward import _project_of

        project, path = self.analysis.fact(_project_of)
        here = project._resolved(path)
        name = fn.name.value
        trees = [tree]
        others = {project._resolved(f) for f in project.files_naming(name)}
        others.discard(here)
        if len(others) > _FILES:
            return False
        for file in sorted(others):
            info = project.module(Path(file))
            if info is None or getattr(info, "tree", None) is None:
                return False
            trees.append(info.tree)
        calls = 0
        for t in trees:
            for node in ast_walk.walk(t):
                if isinstance(node, ast.Call):
                    func = node.func
                    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(
                        func, ast.Name) else None
                    if called == name:
                        calls += 1
                        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                                k.arg is None or k.arg == param and not _off(k.value) for k in node.keywords):
                            return False
                        if position is not None and len(node.args) > position and not _off(node.args[position]):
                            return False
                    elif any(isinstance(a, (ast.Name, ast.Attribute)) and _last_name(a) == name
                             for a in [*node.args, *(k.value for k in node.keywords)]):
                        return False  # handed on as a callable (`partial(generate, ...)`): calls not seen
        return calls > 0

    def never_enabled(self, test: cst.BaseExpression, branch: cst.If) -> bool:
        """`test` (of `branch`) is `self.<attr>` for an option its class never turns on (module docstring)."""
        if type(test) is not cst.Attribute or type(test.value) is not cst.Name or test.value.value != "self":
            return False
        cls = _enclosing_class(self.analysis, branch)
        if cls is None:
            return False
        key = (cls.name.value, test.attr.value)
        if key not in self._answers:
            self._answers[key] = self._compute(cls, test.attr.value)
        return self._answers[key]

    def _compute(self, cls: cst.ClassDef, attr: str) -> bool:
        analysis = self.analysis
        if analysis.path is None:
            return False
        init = next((s for s in cls.body.body if type(s) is cst.FunctionDef and s.name.value == "__init__"), None)
        if init is None:
            return False
        tree = self._module_tree()
        if tree is None:
            return False
        ast_cls = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == cls.name.value), None)
        if ast_cls is None or sum(isinstance(s, ast.ClassDef) and s.name == cls.name.value for s in tree.body) != 1:
            return False
        ast_init = next((s for s in ast_cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if ast_init is None:
            return False
        if not _no_dynamic_assignment(ast_cls, attr, self._dynamic):
            return False
        param = _stored_parameter(tree, ast_cls, ast_init, attr)
        if param is None:
            return self._constant_off(tree, ast_init, attr)
        positional = [a.arg for a in (*ast_init.args.posonlyargs, *ast_init.args.args)][1:]  # after `self`
        position = positional.index(param) if param in positional else None
        from gpulint.analysis.forward import _project_of

        project, path = analysis.fact(_project_of)
        here = project._resolved(path)
        if not _constructions_leave_off(tree, cls.name.value, param, position):
            return False
        others = {project._resolved(f) for name in (cls.name.value, attr, param) for f in project.files_naming(name)}
        others.discard(here)
        if len(others) > _FILES:
            return False
        for file in sorted(others):
            info = project.module(Path(file))
            if info is None or not _constructions_leave_off(info.tree, cls.name.value, param, position) \
                    or _names_otherwise(info.tree, cls.name.value, {attr, param}):
                return False
        return True


    def _constant_off(self, tree: ast.Module, init: ast.FunctionDef, attr: str) -> bool:
        """`self.DBval = False  # only set True for CUB` in `__init__`, the attribute's one assignment in the
        module, and no other project file names it: a switch the source turns off, that no run turns on."""
        if _constant_assignments(tree, init, attr) != 1:
            return False
        from gpulint.analysis.forward import _project_of

        project, path = self.analysis.fact(_project_of)
        here = project._resolved(path)
        return all(project._resolved(f) == here for f in project.files_naming(attr))

    def attribute_never_set(self, attr: str) -> bool:
        """No code that trains gives objects the attribute `attr`: this module never assigns `<x>.attr` (nor a
        class attribute of that name, nor `setattr` with a name it cannot tell apart), and every other project file
        naming `attr` runs no training (`Project.files_naming(..., training=True)`: no `.backward(` and no loop over
        a loader), and one does name it (an attribute no project file names may be a library's, set on the object
        by a framework); latent-diffusion's `split_input_params`, set only by a notebook helper for inference."""
        key = ("", attr)
        if key in self._answers:
            return self._answers[key]
        self._answers[key] = answer = self._compute_never_set(attr)
        return answer


    def _compute_never_set(self, attr: str) -> bool:
        tree = self._module_tree()
        if tree is None or self.analysis.path is None:
            return False
        class_level = {id(stmt) for c in ast_walk.walk(tree) if isinstance(c, ast.ClassDef) for stmt in c.body}
        for node in ast_walk.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                for element in ast_walk.walk(target):
                    if _names_attr(element, attr) and (element is target or isinstance(target, (ast.Tuple, ast.List))):
                        return False  # `model.split_input_params = {...}`
                    if isinstance(element, ast.Name) and element.id == attr and id(node) in class_level:
                        return False  # a class attribute of that name
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and (
                    len(node.args) < 2 or not (isinstance(node.args[1], ast.Constant) and node.args[1].value != attr)):
                return False
            if isinstance(node, ast.Attribute) and node.attr == "__dict__":
                return False
        from gpulint.analysis.forward import _project_of

        project, path = self.analysis.fact(_project_of)
        here = project._resolved(path)
        if any(project._resolved(f) != here for f in project.files_naming(attr, training=True)):
            return False
        # the project sets it somewhere else (not a library: Lightning's `self.trainer`, `torch.compile`'s
        # `_orig_mod` are set by code no project file shows)
        return any(project._resolved(f) != here for f in project.files_naming(attr))

    def _module_tree(self) -> Optional[ast.Module]:
        if not self._parsed:
            self._parsed = True
            from gpulint import runtime

            # the module's code (not its raw text: no fact here depends on comments, tests/test_rule_reuse.py);
            # in a batch run that is the text it was parsed from (LibCST gives back the text it parsed, to the
            # byte), with no codegen pass over the whole module (a sixth of this fact's cost on fairseq)
            parsed = self.analysis.parsed_text if runtime.batch_mode() else None
            try:
                self._tree = ast.parse(parsed if parsed is not None else self.analysis.module.code)
            except (SyntaxError, ValueError):
                self._tree = None
        return self._tree


def _walk_cst(node: cst.CSTNode):
    from gpulint.analysis.training import _all_below  # every node below, nested definitions included

    return _all_below(node)


def _last_name(node: ast.expr) -> Optional[str]:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _tested_parameter(test: cst.BaseExpression, analysis) -> Optional[str]:
    """The name `test` asks to be set: `x` of `if x:`, `if x is not None:`, `if exists(x):` where `exists` is a
    function of this module returning `<arg> is not None` (lucidrains' helper)."""
    if type(test) is cst.Name:
        return test.value if test.value not in ("True", "False", "None") else None
    if type(test) is cst.Comparison and type(test.left) is cst.Name and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if type(target.operator) is cst.IsNot and type(target.comparator) is cst.Name \
                and target.comparator.value == "None":
            return test.left.value
        return None
    if type(test) is cst.Call and type(test.func) is cst.Name and len(test.args) == 1 \
            and type(test.args[0].value) is cst.Name and not test.args[0].keyword and not test.args[0].star:
        helper = next((s for s in analysis.module.body if type(s) is cst.FunctionDef
                       and s.name.value == test.func.value), None)
        if helper is None or len(helper.params.params) != 1:
            return None
        body = helper.body.body if type(helper.body) is cst.IndentedBlock else [helper.body]
        first = body[0] if len(body) == 1 else None
        inner = first.body[0] if type(first) is cst.SimpleStatementLine and len(first.body) == 1 else None
        arg = helper.params.params[0].name.value
        if type(inner) is cst.Return and type(inner.value) is cst.Comparison and \
                _tested_parameter(inner.value, analysis) == arg:
            return test.args[0].value.value
    return None


def unset_options(analysis) -> UnsetOptions:
    """Fact provider."""
    return UnsetOptions(analysis)


def _enclosing_class(analysis, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    fn = None
    for parent in analysis.index.ancestors(node):
        if type(parent) is cst.FunctionDef and fn is None:
            fn = parent
        elif type(parent) is cst.ClassDef:
            return parent if fn is not None and analysis.index.up.get(id(parent)) is analysis.module else None
    return None


def _stored_parameter(tree: ast.Module, cls: ast.ClassDef, init: ast.FunctionDef, attr: str) -> Optional[str]:
    """The parameter of `init` that every assignment of `<x>.<attr>` in the module stores as `self.<attr>` in
    `init`, when its default is False or None; else None. `self.<attr>` of another class of the module is that
    class's own (a subclass of `cls` is ruled out by `_constructions_leave_off`)."""
    others = {id(n) for c in tree.body if isinstance(c, ast.ClassDef) and c is not cls for n in ast_walk.walk(c)}
    args = init.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    inside = {id(n) for n in ast_walk.walk(init)}
    found: set[str] = set()
    for node in ast_walk.walk(tree):
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and _names_attr(node.target, attr):
            return None
        if isinstance(node, (ast.For, ast.comprehension, ast.With, ast.withitem, ast.NamedExpr)):
            targets = [getattr(node, "target", None) or getattr(node, "optional_vars", None)]
            if any(t is not None and any(_names_attr(e, attr) for e in ast_walk.walk(t)) for t in targets):
                return None
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = [(target, node.value)]
            if isinstance(target, (ast.Tuple, ast.List)):
                if any(_names_attr(e, attr) for e in ast_walk.walk(target)):
                    if not isinstance(node.value, (ast.Tuple, ast.List)) or len(node.value.elts) != len(target.elts):
                        return None
                    pairs = list(zip(target.elts, node.value.elts))
            for t, v in pairs:
                if not any(_names_attr(e, attr) for e in ast_walk.walk(t)):
                    continue
                if id(node) in others and _names_attr(t, attr) and isinstance(t.value, ast.Name) \
                        and t.value.id == "self":
                    continue
                if not (_names_attr(t, attr) and isinstance(t.value, ast.Name) and t.value.id == "self"
                        and id(node) in inside and isinstance(v, ast.Name) and v.id in defaults):
                    return None
                if not _off(defaults[v.id]):
                    return None
                found.add(v.id)
    return found.pop() if len(found) == 1 else None


def _constant_assignments(tree: ast.Module, init: ast.FunctionDef, attr: str) -> int:
    """How many times `tree` assigns `<x>.<attr>`, when every one is `self.<attr> = False/None/0` in `init`;
    -1 when any other binding of it exists (an augmented assignment, a loop or `with` target, a tuple, another
    value, another method)."""
    inside = {id(n) for n in ast_walk.walk(init)}
    count = 0
    for node in ast_walk.walk(tree):
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and _names_attr(node.target, attr):
            return -1
        if isinstance(node, (ast.For, ast.comprehension, ast.With, ast.withitem, ast.NamedExpr)):
            targets = [getattr(node, "target", None) or getattr(node, "optional_vars", None)]
            if any(t is not None and any(_names_attr(e, attr) for e in ast_walk.walk(t)) for t in targets):
                return -1
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if not any(_names_attr(e, attr) for e in ast_walk.walk(target)):
                continue
            if not (_names_attr(target, attr) and isinstance(target.value, ast.Name) and target.value.id == "self"
                    and id(node) in inside and (_off(node.value) or isinstance(node.value, ast.Constant) and
                                                node.value.value == 0 and not isinstance(node.value.value, bool))):
                return -1
            count += 1
    return count


def _names_attr(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr


def _off(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and (value.value is False or value.value is None)


def _constructions_leave_off(tree: ast.Module, class_name: str, param: str, position: Optional[int]) -> bool:
    """Every call in `tree` of `class_name` (or of any `__init__`) leaves `param` at its default or passes
    False/None, and the class is not used other than called (module docstring)."""
    called = set()
    for node in ast_walk.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "super" and node.args:
            called.add(id(node.args[0]))  # `super(ComputeLoss, self).__init__()`
        func = node.func
        last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if last not in (class_name, "__init__"):
            continue
        called.add(id(func))
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return False
        if any(k.arg == param and not _off(k.value) for k in node.keywords):
            return False
        if position is not None and len(node.args) > position and not _off(node.args[position]):
            return False
    for node in ast_walk.walk(tree):
        if id(node) in called:
            continue
        if isinstance(node, ast.Name) and node.id == class_name or \
                isinstance(node, ast.Attribute) and node.attr == class_name:
            return False  # `LOSSES = {"a": ComputeLoss}`, `class Sub(ComputeLoss)`, `partial(ComputeLoss, ...)`
    return True


def _names_otherwise(tree: ast.Module, class_name: str, names: set) -> bool:
    """`tree` names one of `names` other than as the keyword of a call of `class_name` passing False/None."""
    allowed = set()
    for node in ast_walk.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if last == class_name:
                allowed.update(id(k) for k in node.keywords if k.arg in names and _off(k.value))
    for node in ast_walk.walk(tree):
        if isinstance(node, ast.Name) and node.id in names or isinstance(node, ast.Attribute) and node.attr in names:
            return True
        if isinstance(node, ast.keyword) and node.arg in names and id(node) not in allowed:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(n in node.value for n in names):
            return True  # `getattr(loss, "autobalance")`, a config key
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                a.arg in names for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)):
            return True
    return False


def _no_dynamic_assignment(cls: ast.ClassDef, attr: str, memo: Optional[dict] = None) -> bool:
    """`cls` touches no `__dict__` and calls `setattr` only with names that are not `attr`: a string, or the
    target of a loop over a literal tuple/list of strings (`for k in 'na', 'nc': setattr(self, k, ...)`). The
    class is walked once for all its attributes (`_dynamic_assignments`, kept in `memo` by the class node)."""
    if memo is None:
        found = _dynamic_assignments(cls)
    else:
        kept = memo.get(id(cls))
        if kept is None or kept[0] is not cls:
            kept = memo[id(cls)] = (cls, _dynamic_assignments(cls))  # the node kept alive: its id stays its own
        found = kept[1]
    if found is None:
        return False
    return not any(attr in names for names in found)


def _dynamic_assignments(cls: ast.ClassDef) -> Optional[list[frozenset]]:
    """None when `cls` touches `__dict__` or names `setattr` other than in a call `setattr(x, name, ...)` whose
    name is a string or the target of a loop over a literal tuple/list of strings; else, for each such call, the
    attribute names it may set (`_no_dynamic_assignment` holds for an attribute none of them names). One walk."""
    loops: dict[str, set] = {}
    calls: list[tuple[ast.Name, ast.expr]] = []
    named: list[ast.Name] = []
    for node in ast_walk.walk(cls):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            names = loops.setdefault(node.target.id, set())
            if isinstance(node.iter, (ast.Tuple, ast.List)) and \
                    all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.iter.elts):
                names.update(e.value for e in node.iter.elts)
            else:
                names.add(None)  # not known
        elif isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return None
        elif isinstance(node, ast.Name) and node.id == "setattr":
            named.append(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2:
            calls.append((node.func, node.args[1]))
    sets: dict[int, frozenset] = {}
    for func, name in calls:
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            sets[id(func)] = frozenset((name.value,))
        elif isinstance(name, ast.Name) and name.id in loops and None not in loops[name.id]:
            sets[id(func)] = frozenset(loops[name.id])
    if any(id(node) not in sets for node in named):
        return None  # a `setattr` whose name cannot be told: any attribute
    return [sets[id(node)] for node in named]


# -- guards of a method's block that a training run never (or only once) passes ----------------------------------
# Counters of training steps and batches: `if self.global_step == 0 and batch_idx == 0:` holds on the first step
# (or the first batch of an epoch) only. Names only of steps and batches (`epoch == 0` holds for a whole epoch,
# `layer_idx == 0` on every call for the first layer).
_STEP_COUNTERS = frozenset({"global_step", "global_steps", "step", "steps", "batch_idx", "batch_nb", "iteration",
                            "iter_num", "train_step", "num_updates"})


def first_step_only(test: cst.BaseExpression, held: bool = False) -> bool:
    """`test` is `<step counter> == 0`, or an `and` of tests one of which is (module comment above). With `held`,
    only a counter the trainer object holds for the whole run counts (`self.global_step`,
    `self.get_num_updates()`), not a name (a loop's own counter starts again with the loop)."""
    if type(test) is cst.BooleanOperation:
        return type(test.operator) is cst.And and (first_step_only(test.left, held) or
                                                    first_step_only(test.right, held))
    if type(test) is not cst.Comparison or len(test.comparisons) != 1 or \
            type(test.comparisons[0].operator) is not cst.Equal:
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(type(s) is cst.Integer and s.value == "0" for s in sides) and any(_counter(s, held) for s in sides)


def _counter(node: cst.BaseExpression, held: bool = False) -> bool:
    if type(node) is cst.Call and not node.args:  # `self.get_num_updates()`: a getter of a held counter
        func = node.func
        return type(func) is cst.Attribute and type(func.value) is cst.Name and \
            func.value.value in ("self", "trainer") and func.attr.value.startswith("get_") and \
            func.attr.value[len("get_"):] in _STEP_COUNTERS
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value in ("self", "trainer"):
        return node.attr.value in _STEP_COUNTERS
    return not held and type(node) is cst.Name and node.value in _STEP_COUNTERS


def hasattr_self(test: cst.BaseExpression) -> Optional[str]:
    """`X` of `hasattr(self, "X")`, alone or as one operand of an `and`; else None."""
    if type(test) is cst.BooleanOperation:
        if type(test.operator) is not cst.And:
            return None
        return hasattr_self(test.left) or hasattr_self(test.right)
    if type(test) is not cst.Call or type(test.func) is not cst.Name or test.func.value != "hasattr" or \
            len(test.args) != 2 or type(test.args[0].value) is not cst.Name or test.args[0].value.value != "self":
        return None
    name = test.args[1].value
    if type(name) is not cst.SimpleString:
        return None
    value = name.evaluated_value
    return value if isinstance(value, str) and value.isidentifier() else None
