"""Lists of a model's parameters that a helper class keeps (`self.model_params = list(self.model.parameters())`,
`self.master_params = self.model_params`), read from the class's `ast` for the project summaries.

A trainer or mixed-precision helper that holds such a list and, in a method, loops over it reading each tensor
(`for p in self.master_params: total += (p.grad ** 2).sum().item()`) reads the model's tensors, which live on the
device of the model being trained: the method syncs on every call whatever it is given (`always_syncs`), as a read
of a device tensor it makes itself does, so its per-step call sites pay it (GPU112).

An attribute counts when one of its assignments in the class is a module's parameters (`m.parameters()`,
`list(m.parameters())`, `[p for p in m.parameters()]`, `m.named_parameters()` is not: pairs), or another such
attribute, and none is a copy to the host (`[p.cpu() for p in ...]`, `.to("cpu")`) or a literal (`[]`, `None`).
Other assignments (the fp16 master copies `make_master_params(self.model_params)`, tensors derived on the same
device) do not disagree.
"""

from __future__ import annotations

import ast
from gpulint import ast_walk

_HOST = ("cpu", "numpy", "tolist")


def held_parameter_lists(cls) -> frozenset:
    """The attributes of the class (a `ClassSummary`) that hold a list of a module's parameters."""
    found = getattr(cls, "_held_parameter_lists", None)
    if found is not None:
        return found
    assigned: dict[str, list[ast.expr]] = {}
    for method in cls.methods.values():
        for node in ast_walk.walk(method):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                            target.value.id == "self":
                        assigned.setdefault(target.attr, []).append(node.value)
    held: set = set()
    changed = True
    while changed:  # `self.master_params = self.model_params`: through other such attributes
        changed = False
        for attr, values in assigned.items():
            if attr in held or any(_host_or_literal(v) for v in values):
                continue
            if any(_parameters(v) or _self_attribute(v) in held for v in values):
                held.add(attr)
                changed = True
    result = frozenset(held)
    try:
        cls._held_parameter_lists = result
    except AttributeError:  # a summary that takes no attributes: computed again next time
        pass
    return result


def _parameters(value: ast.expr) -> bool:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "tuple") \
            and len(value.args) == 1 and not value.keywords:
        return _parameters(value.args[0])
    if isinstance(value, ast.ListComp) and len(value.generators) == 1 and \
            isinstance(value.elt, ast.Name) and isinstance(value.generators[0].target, ast.Name) and \
            value.elt.id == value.generators[0].target.id:
        return _parameters(value.generators[0].iter)
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        value.func.attr == "parameters" and not value.args


def _self_attribute(value: ast.expr):
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return value.attr
    return None


def _host_or_literal(value: ast.expr) -> bool:
    if isinstance(value, (ast.Constant, ast.List, ast.Tuple, ast.Dict)) and not getattr(value, "elts", None):
        return True
    for node in ast_walk.walk(value):
        if isinstance(node, ast.Attribute) and node.attr in _HOST:
            return True
        if isinstance(node, ast.Constant) and node.value == "cpu":
            return True
    return False
