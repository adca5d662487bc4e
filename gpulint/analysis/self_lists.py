"""Python lists of numbers a class keeps in an attribute (`self.timestep_map = []`, then
`self.timestep_map.append(i)` with `i` a loop index), and what another class of the module stores from one
(`_WrappedModel(model, self.timestep_map, ...)` whose `__init__` does `self.timestep_map = timestep_map`).

Such an attribute holds host values, so `torch.tensor(self.timestep_map, device=ts.device)` builds the tensor on the
host and copies it on every call (GPU203), as `torch.tensor([1, 2], device=...)` does. An attribute counts when
every assignment of it in the class is a list literal of numbers (empty included) and every `append`/`extend`
on it adds numbers, or when every assignment stores an `__init__` parameter that every construction of the class
in the module passes such a list for. Anything else (a tensor appended, another assignment) leaves it unknown.

The same holds for numpy arrays a class keeps (`self.obses = np.empty((capacity, *shape))` in a replay buffer's
`__init__`, filled in place with `self.obses[self.idx] = obs`): `numpy_attribute` says so when every assignment of
the attribute in the class is a numpy call (`np.zeros(...)`, `np.array(...).astype(...)`, maybe through array
methods) and nothing is appended to it. Then `torch.as_tensor(self.obses[idxs], device=self.device)` in `sample()`
builds the batch on the host and copies it from pageable memory on every call (GPU203).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.kinds import Kind
from gpulint.analysis.node_types import of_types
from gpulint.analysis.tree import descendants
from gpulint.syntax import positional_names


def host_list_attribute(analysis, node: cst.Attribute, depth: int = 0) -> bool:
    if depth > 2 or not (type(node.value) is cst.Name and node.value.value == "self"):
        return False
    cls = analysis.index.enclosing_class(node)
    if cls is None:
        return False
    key = ("self-list", id(cls), node.attr.value)
    memo = analysis.fact(_memo)
    if key not in memo:
        memo[key] = False  # recursion guard
        memo[key] = _compute(analysis, cls, node.attr.value, depth)
    return memo[key]


def numpy_attribute(analysis, node: cst.Attribute) -> bool:
    """`self.<attr>` of a class whose every assignment of it is a numpy array (the module docstring)."""
    if not (type(node.value) is cst.Name and node.value.value == "self"):
        return False
    cls = analysis.index.enclosing_class(node)
    if cls is None:
        return False
    uses = _attribute_uses(analysis, cls).get(node.attr.value, ())
    values = [n for event, n in uses if event == "assign"]
    return bool(values) and len(values) == sum(event != "augassign" for event, _ in uses) and \
        all(_numpy_value(analysis, v) for v in values)


def _numpy_value(analysis, value: cst.BaseExpression) -> bool:
    """A call of a numpy function (`np.empty(...)`, `np.load(path)`), maybe through methods of the array it
    returns (`.astype(np.float32)`, `.reshape(-1)`, `.copy()`)."""
    while type(value) is cst.Call and type(value.func) is cst.Attribute and \
            not (analysis.qualified(value.func) or "").startswith("numpy."):
        value = value.func.value
    return type(value) is cst.Call and (analysis.qualified(value.func) or "").startswith("numpy.")


def _memo(analysis) -> dict:
    return {}


def _compute(analysis, cls: cst.ClassDef, attr: str, depth: int) -> bool:
    values: list[cst.BaseExpression] = []
    init: Optional[cst.FunctionDef] = None
    for stmt in cls.body.body if type(cls.body) is cst.IndentedBlock else ():
        if type(stmt) is cst.FunctionDef and stmt.name.value == "__init__":
            init = stmt
    for event, n in _attribute_uses(analysis, cls).get(attr, ()):
        if event == "assign":
            values.append(n)
        elif event == "augassign":
            return False
        else:  # `self.<attr>.append(x)`: only numbers are added
            added = n.args[-1].value if n.args else None
            if added is None or analysis.kinds.of(added) is not Kind.NUMBER:
                return False
    if not values:
        return False
    for value in values:
        if type(value) is cst.List and all(type(e) is cst.Element and type(e.value) in (cst.Integer, cst.Float)
                                           for e in value.elements):
            continue
        if type(value) is cst.Name and init is not None and _init_param(init, value.value) and \
                _constructions_pass_lists(analysis, cls, init, value.value, depth):
            continue
        return False
    return True


def _attribute_uses(analysis, cls: cst.ClassDef) -> dict[str, list[tuple[str, cst.CSTNode]]]:
    """attribute -> what the class does with it, in `descendants` order: ("assign", value) for `self.X = value`,
    ("augassign", node) for `<x>.X += ...`, ("append", call) for `self.X.append/extend/insert(...)`. One walk of
    the class for all its attributes (a model class of a monorepo is asked about dozens of them), kept per lint."""
    uses = analysis.fact(_memo).get(("self-list uses", id(cls)))
    if uses is not None:
        return uses
    uses = {}
    for n in descendants(cls):
        if type(n) is cst.Assign:
            for target in n.targets:
                t = target.target
                if type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self":
                    uses.setdefault(t.attr.value, []).append(("assign", n.value))
        elif type(n) is cst.AugAssign and type(n.target) is cst.Attribute:
            uses.setdefault(n.target.attr.value, []).append(("augassign", n))
        elif type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in ("append", "extend",
                                                                                             "insert") \
                and type(n.func.value) is cst.Attribute and type(n.func.value.value) is cst.Name and \
                n.func.value.value.value == "self":
            uses.setdefault(n.func.value.attr.value, []).append(("append", n))
    analysis.fact(_memo)[("self-list uses", id(cls))] = uses
    return uses


def _init_param(init: cst.FunctionDef, name: str) -> bool:
    return name in positional_names(init)


def _constructions_pass_lists(analysis, cls: cst.ClassDef, init: cst.FunctionDef, name: str, depth: int) -> bool:
    params = positional_names(init)[1:]
    position = params.index(name)
    found = False
    for call in of_types(analysis.index, cst.Call):
        if type(call.func) is not cst.Name or call.func.value != cls.name.value:  # type: ignore[attr-defined]
            continue
        args = call.args  # type: ignore[attr-defined]
        if any(a.star for a in args):
            return False
        arg = next((a.value for a in args if a.keyword is not None and a.keyword.value == name), None)
        if arg is None:
            positional = [a.value for a in args if a.keyword is None]
            arg = positional[position] if position < len(positional) else None
        if type(arg) is not cst.Attribute or not host_list_attribute(analysis, arg, depth + 1):
            return False
        found = True
    return found
