"""A plain tensor attribute of a model that holds a host tensor: `self.pos_embed = sinusoid_table(n, d)` in
`__init__`, where the helper returns `torch.tensor(numpy_table).unsqueeze(0)`.

Such an attribute is neither a parameter nor a buffer, so `model.to(device)` / `model.cuda()` leaves it on the
host; `self.pos_embed.type_as(x).to(x.device)` in `forward` copies it from pageable memory on every step
(VideoMAE's sinusoid position table). `register_buffer("pos_embed", ...)` (moved with the model) or a copy kept
on the attribute (`self.t = self.t.to(dev)`) is fine.

Precision first. The attribute counts only when every assignment of `self.<name>` in the class is a host tensor:
a torch factory without `device=` (`torch.zeros(...)`, `torch.tensor(table)`, `torch.from_numpy(a)`), or a call
of a project function whose every tensor return is built on the host (`FunctionSummary.returns_host_batch`),
through methods that keep the values (`.unsqueeze(0)`, `.float()`). One more form of assignment is allowed: an
`nn.Parameter(...)` in the body of `if flag:` in `__init__`, where `flag` (or `self.flag`, assigned it there) is a
parameter of `__init__` whose default is `False` (`use_learnable_pos_emb=False`, `learn_logvar=False`): the
default model holds the host tensor. Rows of the attribute (`self.logvar[t].to(self.device)`) are host rows.
Any other assignment (anywhere in the class), a `register_buffer`/`setattr` naming the attribute, or a class that
is not a top-level class of the module: not known, so not reported.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.data import _FACTORIES, _SAME_ON_DEVICE
from gpulint.analysis.data_facts import keyword
from gpulint.syntax import string_value

# Methods over the attribute, before the copy, that keep its values (a dtype cast of the same numbers).
_KEEPS = _SAME_ON_DEVICE | {"type_as", "detach"}
_HOST_BUILDERS = {"from_numpy"}
# The legacy typed constructors (`torch.Tensor(a)`, `torch.FloatTensor(a)`): host tensors from host data or sizes.
_LEGACY = frozenset(f"torch.{t}" for t in ("Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor",
                                           "IntTensor", "ByteTensor", "BoolTensor"))
_DTYPE_NAMES = frozenset({"float", "float32", "float64", "float16", "half", "bfloat16", "double", "long", "int",
                          "int64", "int32", "int16", "int8", "uint8", "bool"})


def _dtype_cast(analysis, call: cst.Call) -> bool:
    """`t.to(x.dtype)` / `t.to(torch.float32)`: a cast that keeps the tensor where it is."""
    if call.func.attr.value != "to" or len(call.args) != 1 or call.args[0].star or \
            call.args[0].keyword is not None and call.args[0].keyword.value != "dtype":
        return False
    arg = call.args[0].value
    if type(arg) is cst.Attribute and arg.attr.value == "dtype":
        return True
    q = analysis.qualified(arg) if type(arg) in (cst.Name, cst.Attribute) else None
    return q is not None and q.startswith("torch.") and q.split(".")[-1] in _DTYPE_NAMES
# Torch functions whose result lives where their first argument does (a host tensor in, a host tensor out).
_ELEMENTWISE = frozenset({"exp", "log", "sqrt", "rsqrt", "cumprod", "cumsum", "flip", "sin", "cos", "square",
                          "abs", "sigmoid", "pow", "clamp", "log1p", "expm1", "reciprocal"})


def host_attribute(analysis, expr: cst.BaseExpression) -> Optional[str]:
    """The attribute name when `expr` (what a `.to(...)`/`.cuda()` copies, maybe
    through `.type_as(x)`, `.expand(...)`, ...) is `self.<name>` of the enclosing top-level class and that
    attribute holds a host tensor (the module docstring); else None."""
    while type(expr) is cst.Subscript or \
            type(expr) is cst.Call and type(expr.func) is cst.Attribute and (
                expr.func.attr.value in _KEEPS or _dtype_cast(analysis, expr)):
        expr = expr.value if type(expr) is cst.Subscript else expr.func.value  # rows of it are on the host too
    if type(expr) is not cst.Attribute or type(expr.value) is not cst.Name or expr.value.value != "self":
        return None
    cls = _top_level_class(analysis, expr)
    if cls is None:
        return None
    name = expr.attr.value
    facts = analysis.fact(_host_attributes)
    classes = {id(s): s for s in analysis.module.body if type(s) is cst.ClassDef}
    by_name = {s.name.value: s for s in classes.values()}
    seen: set[int] = set()
    while cls is not None and id(cls) not in seen:  # the class, else the base of this module that sets it
        seen.add(id(cls))
        host, touched = facts.get(id(cls), (set(), set()))
        if name in touched:
            return name if name in host else None
        bases = [b.value for b in cls.bases if b.keyword is None]
        own = [by_name.get(b.value) for b in bases if type(b) is cst.Name and b.value in by_name]
        cls = own[0] if len(own) == 1 else None
    return None


def _top_level_class(analysis, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    scopes = [a for a in analysis.index.ancestors(node) if type(a) in (cst.ClassDef, cst.FunctionDef, cst.Lambda)]
    if len(scopes) != 2 or type(scopes[0]) is not cst.FunctionDef or type(scopes[1]) is not cst.ClassDef:
        return None
    return scopes[1] if isinstance(analysis.index.up.get(id(scopes[1])), cst.Module) else None


def _host_attributes(analysis) -> dict[int, tuple[set[str], set[str]]]:
    """Fact provider: id(top-level class) -> (the attributes that hold a host tensor, every attribute the class
    assigns or names)."""
    found: dict[int, tuple[set[str], set[str]]] = {}
    for stmt in analysis.module.body:
        if type(stmt) is cst.ClassDef and type(stmt.body) is cst.IndentedBlock:
            found[id(stmt)] = _of_class(analysis, stmt)
    return found


def _of_class(analysis, cls: cst.ClassDef) -> tuple[set[str], set[str]]:
    init = next((s for s in cls.body.body if type(s) is cst.FunctionDef and s.name.value == "__init__"), None)
    assigned: dict[str, list[cst.Assign]] = {}
    named: set[str] = set()  # register_buffer("x", ...), setattr(self, "x", ...), augmented or annotated writes
    for node in _walk(cls):
        if type(node) is cst.Assign:
            for target in node.targets:
                for element in _targets(target.target):
                    if _self_attr(element) is not None:
                        if len(node.targets) == 1 and element is target.target:
                            assigned.setdefault(element.attr.value, []).append(node)
                        else:
                            named.add(element.attr.value)
        elif type(node) in (cst.AugAssign, cst.AnnAssign) and _self_attr(node.target) is not None:
            named.add(node.target.attr.value)
        elif type(node) is cst.Call and type(node.func) in (cst.Attribute, cst.Name):
            fname = node.func.attr.value if type(node.func) is cst.Attribute else node.func.value
            if fname in ("register_buffer", "register_parameter", "setattr", "__setattr__", "delattr"):
                for arg in node.args:
                    text = string_value(arg.value)
                    if text is not None:
                        named.add(text)
    found: set[str] = set()
    changed = True
    while changed:  # `self.alphas = 1. - self.discrete_betas` after `self.discrete_betas = torch.linspace(...)`
        changed = False
        for name, assigns in assigned.items():
            if name in named or init is None or name in found:
                continue
            host = [a for a in assigns if _host_value(analysis, a.value, found)]
            if not host or not all(a in host or _default_off_parameter(analysis, init, a, host) for a in assigns):
                continue
            found.add(name)
            changed = True
    return found, set(assigned) | named


def _walk(cls: cst.ClassDef):
    stack: list[cst.CSTNode] = [cls.body]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _targets(target: cst.BaseExpression):
    if type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            yield from _targets(element.value)
    else:
        yield target


def _self_attr(node: cst.CSTNode) -> Optional[str]:
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return node.attr.value
    return None


def _host_value(analysis, value: cst.BaseExpression, host_attributes: frozenset = frozenset()) -> bool:
    """A torch factory without `device=`, `torch.from_numpy(...)`, or a project function returning host tensors,
    maybe through value-keeping methods; also elementwise math of such a value (or of an attribute of the class
    already known to hold one, `host_attributes`) with numbers: `1. - self.discrete_betas`,
    `torch.sqrt(self.alphas_cumprod)`, `torch.exp(torch.linspace(...))` stay on the host."""
    while type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in _KEEPS:
        value = value.func.value
    if _self_attr(value) is not None:
        return _self_attr(value) in host_attributes
    if type(value) is cst.UnaryOperation:
        return _host_value(analysis, value.expression, host_attributes)
    if type(value) is cst.BinaryOperation:
        sides = [value.left, value.right]
        numbers = [s for s in sides if type(s) in (cst.Integer, cst.Float)]
        return len(numbers) < 2 and all(s in numbers or _host_value(analysis, s, host_attributes) for s in sides)
    if type(value) is not cst.Call:
        return False
    q = analysis.qualified(value.func) or ""
    if q.startswith("torch.") and q.count(".") == 1 and q.split(".")[1] in _FACTORIES | _HOST_BUILDERS:
        return keyword(value, "device") is None and not any(a.star for a in value.args)
    if q in _LEGACY and value.args and not any(a.star or a.keyword is not None for a in value.args):
        return True  # `torch.Tensor(A_scales)` of a numpy array: the legacy constructor builds on the host
    if q.startswith("torch.") and q.count(".") == 1 and q.split(".")[1] in _ELEMENTWISE and value.args and \
            value.args[0].keyword is None and not value.args[0].star and keyword(value, "out") is None:
        return _host_value(analysis, value.args[0].value, host_attributes)
    if type(value.func) is not cst.Name or analysis.path is None:
        return False
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    found = calls.callee(value, own_module=True) if calls is not None else None
    return found is not None and found[1].returns_host_batch is not None


def _default_off_parameter(analysis, init: cst.FunctionDef, assign: cst.Assign, host: list) -> bool:
    """`self.x = nn.Parameter(...)` in the body of `if flag:` in `__init__`, `flag` a parameter of `__init__`
    defaulting to `False` (or `self.flag` assigned that parameter in `__init__`): the default model keeps the host
    tensor (`self.logvar = torch.full(...)`, then `if self.learn_logvar: self.logvar = nn.Parameter(self.logvar)`)."""
    value = assign.value
    if type(value) is not cst.Call or (analysis.qualified(value.func) or "") not in (
            "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return False
    test_if, inside = None, assign
    for parent in analysis.index.ancestors(assign):
        if type(parent) is cst.If:
            test_if = parent if any(n is inside for n in (parent.body,)) else None
            break
        if type(parent) in (cst.FunctionDef, cst.ClassDef, cst.Else):
            return False
        inside = parent
    if test_if is None or not any(a is init for a in analysis.index.ancestors(test_if)):
        return False
    flag = _self_attr(test_if.test) if type(test_if.test) is cst.Attribute else (
        test_if.test.value if type(test_if.test) is cst.Name else None)
    if flag is None:
        return False
    if type(test_if.test) is cst.Attribute:  # `self.learn_logvar = learn_logvar` in `__init__`
        sources = [n.value for n in _walk_block(init.body) if type(n) is cst.Assign and len(n.targets) == 1 and
                   _self_attr(n.targets[0].target) == flag]
        if len(sources) != 1 or type(sources[0]) is not cst.Name:
            return False
        flag = sources[0].value
    param = next((p for p in (*init.params.params, *init.params.kwonly_params) if p.name.value == flag), None)
    return param is not None and type(param.default) is cst.Name and param.default.value == "False"


def _walk_block(block: cst.CSTNode):
    stack = [block]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


# -- the same attribute read through an object of the class (branch recall70) -------------------------------------
def object_host_attribute(analysis, expr: cst.BaseExpression) -> Optional[str]:
    """`vpsde.sqrt_alphas_cumprod` (what a `.to(...)` copies, maybe through value-keeping methods or rows) where
    `vpsde` holds an instance of project classes each of which keeps that attribute as a host tensor (the module
    docstring's rules, in the class's own module): an SDE or noise schedule built with `torch.linspace(...)` in
    `__init__` and copied with `.to(x.device)` in a loss or sampling step. The receiver's classes: what
    `ProjectCalls.instance_classes` knows (a constructor, a parameter every call site passes one for), else the
    classes an `isinstance` test of the receiver around the read names (`if isinstance(sde, A) or
    isinstance(sde, B):`) or an `assert isinstance(vpsde, VPSDE)` at the top of an enclosing function (a
    factory whose closure reads it). Returns the receiver and attribute as written, else None."""
    while type(expr) is cst.Subscript or \
            type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _KEEPS:
        expr = expr.value if type(expr) is cst.Subscript else expr.func.value
    if type(expr) is not cst.Attribute or type(expr.value) not in (cst.Name, cst.Attribute) or \
            type(expr.value) is cst.Name and expr.value.value == "self" or analysis.path is None:
        return None
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    receiver, name = expr.value, expr.attr.value
    classes = _tested_classes(analysis, calls, receiver) or calls.instance_classes(receiver)
    if not classes or not all(_class_keeps_host(analysis, calls.project, cls, name) for cls in classes):
        return None
    return f"{analysis.code(receiver)}.{name}"


def _tested_classes(analysis, calls, receiver: cst.BaseExpression) -> tuple:
    from gpulint.analysis.imports import dotted_name
    from gpulint.analysis.project import ClassSummary

    target = dotted_name(receiver)
    if target is None:
        return ()
    child: cst.CSTNode = receiver
    tests = []
    for parent in analysis.index.ancestors(receiver):
        if type(parent) is cst.If and child is parent.body:
            tests.append(parent.test)
        elif type(parent) is cst.FunctionDef and type(parent.body) is cst.IndentedBlock:
            for stmt in parent.body.body:  # `assert isinstance(vpsde, VPSDE), "..."` among its statements
                if type(stmt) is cst.SimpleStatementLine:
                    tests.extend(s.test for s in stmt.body if type(s) is cst.Assert)
        elif type(parent) in (cst.ClassDef, cst.Lambda):
            break
        child = parent
    for test in tests:
        names = _isinstance_disjuncts(test, target)
        if not names:
            continue
        found = [calls._lookup(n) for n in names]
        if all(isinstance(c, ClassSummary) for c in found):
            return tuple(found)
    return ()


def _isinstance_disjuncts(test: cst.BaseExpression, target: str) -> list:
    """The class expressions of `isinstance(<target>, C)` or a chain `isinstance(t, A) or isinstance(t, B)`
    (`isinstance(t, (A, B))` too); [] for any other test."""
    from gpulint.analysis.imports import dotted_name

    if type(test) is cst.BooleanOperation and type(test.operator) is cst.Or:
        left, right = _isinstance_disjuncts(test.left, target), _isinstance_disjuncts(test.right, target)
        return left + right if left and right else []
    if type(test) is not cst.Call or dotted_name(test.func) != "isinstance" or len(test.args) != 2 or \
            any(a.keyword is not None or a.star for a in test.args) or dotted_name(test.args[0].value) != target:
        return []
    cls = test.args[1].value
    elements = [e.value for e in cls.elements] if type(cls) is cst.Tuple else [cls]
    return elements if all(type(e) in (cst.Name, cst.Attribute) for e in elements) else []


def _class_keeps_host(analysis, project, cls, name: str) -> bool:
    """The project class `cls` (or a base of its module it inherits the attribute from) keeps `name` as a host
    tensor, read from a LibCST analysis of the class's module (the linted one, or the one kept for callers)."""
    from pathlib import Path

    path = Path(cls.path)
    if Path(analysis.path).resolve() == path.resolve():
        other = analysis
    else:
        from gpulint.analysis.forward import caller_analysis

        other = caller_analysis(project, path)
    if other is None:
        return False
    by_name = {s.name.value: s for s in other.module.body if type(s) is cst.ClassDef}
    node = by_name.get(cls.name)
    facts = other.fact(_host_attributes)
    seen: set[int] = set()
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        host, touched = facts.get(id(node), (set(), set()))
        if name in touched:
            return name in host
        own = [by_name.get(b.value.value) for b in node.bases
               if b.keyword is None and type(b.value) is cst.Name and b.value.value in by_name]
        node = own[0] if len(own) == 1 else None
    return False


def captured_host_tensor(analysis, expr: cst.BaseExpression) -> Optional[str]:
    """The name, when `expr` (what a copy moves, maybe through value-keeping methods or rows) is a name a closure
    reads from its factory that holds a host tensor (`_captured_host`)."""
    while type(expr) is cst.Subscript or \
            type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _KEEPS:
        expr = expr.value if type(expr) is cst.Subscript else expr.func.value
    return _captured_host(analysis, expr) if type(expr) is cst.Name and analysis.path is not None else None


def _captured_host(analysis, name: cst.Name) -> Optional[str]:
    """A name a closure reads from its factory, bound there once to a host tensor: a torch factory without
    `device=`, or math over a host attribute of an object (`smld_sigma_array = torch.flip(vesde.discrete_sigmas,
    dims=(0,))`): built once when the factory runs, copied on every call of the closure."""
    bindings = analysis.index.visible_bindings(name)
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
            bindings[0].value is None:
        return None
    here = next((a for a in analysis.index.ancestors(name) if type(a) in (cst.FunctionDef, cst.Lambda)), None)
    there = next((a for a in analysis.index.ancestors(bindings[0].value) if type(a) in (cst.FunctionDef, cst.Lambda)),
                 None)
    if here is None or type(there) is not cst.FunctionDef or here is there or \
            not any(a is there for a in analysis.index.ancestors(here)):
        return None  # only a value the enclosing function computed before defining the closure
    value = bindings[0].value
    if _host_value(analysis, value):
        return name.value
    while type(value) is cst.Call and value.args and value.args[0].keyword is None and not value.args[0].star and \
            (analysis.qualified(value.func) or "").split(".")[-1] in _ELEMENTWISE and \
            (analysis.qualified(value.func) or "").startswith("torch.") and keyword(value, "device") is None:
        value = value.args[0].value
    if type(value) is cst.Attribute and object_host_attribute(analysis, value) is not None:
        return name.value
    return None
