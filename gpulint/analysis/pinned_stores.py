"""Host staging buffers a class keeps in an attribute: `self.host_stats[name] = torch.zeros(1).pin_memory()`.

A pinned tensor lives in host memory by definition (page-locked, so copies into it can run asynchronously). A
class that fills an attribute (or a dict attribute, by key) only with pinned tensors, and later reads one back
with `.item()` (`self.host_stats[name].item()`), reads host memory: no wait for the GPU (DeepLearningExamples'
BERT `SyncFreeStats`, whose whole point is copying device statistics into pinned buffers with
`non_blocking=True` and reading them later without a sync).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.tree import descendants


def stored_pinned(analysis, receiver: cst.BaseExpression) -> bool:
    """`self.attr[key]` or `self.attr`, in a method of a class of this module, where every value the module
    stores there (`self.attr[k] = v`, `self.attr = v`; a `{}` or `[]` start excepted) is a pinned host tensor
    (`....pin_memory()`, a torch constructor given `pin_memory=True` and no device). A store of a method's
    parameter counts only when nothing in the module calls that method (a setter no code uses)."""
    attr = _self_attribute(receiver.value if type(receiver) is cst.Subscript else receiver)
    if attr is None:
        return False
    cls = analysis.index.enclosing_class(receiver)
    if cls is None:
        return False
    return analysis.fact(_pinned_attributes).get((id(cls), attr), False)


def _self_attribute(node: cst.BaseExpression) -> Optional[str]:
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return node.attr.value
    return None


def _pinned_attributes(analysis) -> dict:
    """Fact provider: (id(class), attribute) -> whether every store into it is pinned (see `stored_pinned`)."""
    found: dict = {}
    called = _called_method_names(analysis)
    for cls in analysis.index.classes.values():
        for node in descendants(cls):
            if type(node) is not cst.Assign:
                continue
            for target in node.targets:
                where = target.target
                attr = _self_attribute(where.value if type(where) is cst.Subscript else where)
                if attr is None:
                    continue
                key = (id(cls), attr)
                ok = _pinned(analysis, node.value) or (type(where) is cst.Attribute and _empty(node.value)) \
                    or _unused_setter(analysis, node, called)
                found[key] = found.get(key, True) and ok
    return found


def _empty(value: cst.BaseExpression) -> bool:
    return type(value) in (cst.Dict, cst.List) and not value.elements  # type: ignore[attr-defined]


def _pinned(analysis, value: cst.BaseExpression) -> bool:
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and func.attr.value == "pin_memory" and not value.args:
        return True
    name = analysis.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None
    keywords = {a.keyword.value: a.value for a in value.args if a.keyword is not None}
    pinned = keywords.get("pin_memory")
    return bool(name) and name.startswith("torch.") and "device" not in keywords and \
        type(pinned) is cst.Name and pinned.value == "True"


def _unused_setter(analysis, assign: cst.Assign, called: set) -> bool:
    """`self.host_stats[name] = tensor` in `def update_host_stat(self, name, tensor)`, a method nothing in the
    module calls."""
    if type(assign.value) is not cst.Name:
        return False
    fn = None
    for ancestor in analysis.index.ancestors(assign):
        if type(ancestor) is cst.FunctionDef:
            fn = ancestor
            break
    if fn is None or fn.name.value in called:
        return False
    return any(p.name.value == assign.value.value for p in fn.params.params)


def _called_method_names(analysis) -> set:
    """The last names of every call in the module, and of every attribute read (a bound method handed on)."""
    names = set()
    for node in analysis.index.nodes:  # every node of the module, already listed
        if type(node) is cst.Attribute:
            names.add(node.attr.value)
        elif type(node) is cst.Call and type(node.func) is cst.Name:
            names.add(node.func.value)
    return names
