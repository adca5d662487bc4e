"""Calls of project loader factories are loaders, whatever the name they are bound to.

`data = load_data(data_dir=..., batch_size=...)` where `load_data` (another module of the project) builds a
`DataLoader` and returns it, or is a generator handing on its batches (`while True: yield from loader`): `data`
holds batches, so `next(data)` draws one and `for batch in data` is a pass over them. Names that read as loaders
(`train_loader`) were already loaders by name; this makes the kind follow the factory's summary
(`FunctionSummary.returns_loader`), for a factory returning the loader itself (not one element of a tuple, which
`DataFacts._unpacked_loaders` binds by place). Asked only for calls bound to a name the module draws
batches from with `next(...)` (directly, or through a parameter of its own function): the summary lookup is not
paid for every call of every module (cold CPU).
"""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.imports import dotted_name
from gpulint.syntax import positional_names


def project_loader_call(analysis, call: cst.Call) -> bool:
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.project import FunctionSummary

    func = call.func
    parent = analysis.parent(call)
    if type(parent) is cst.Arg and parent.keyword is None and not parent.star:
        wrapper = analysis.parent(parent)  # `data_loader = iter(get_data_loader(...))`: the same batches
        if type(wrapper) is cst.Call and len(wrapper.args) == 1 and wrapper.args[0] is parent and \
                dotted_name(wrapper.func) in ("iter", "cycle", "itertools.cycle"):
            parent = analysis.parent(wrapper)
    if type(func) not in (cst.Name, cst.Attribute) or type(parent) is not cst.Assign or not any(
            type(t.target) is cst.Name and t.target.value in analysis.fact(_drawn_names) for t in parent.targets):
        return False  # asked only for a name batches are drawn from: the summary lookup is not paid for the rest
    dotted = dotted_name(func)
    if dotted is None or dotted.split(".")[0] == "self":
        return False
    calls = analysis.fact(project_calls)
    if calls is None:
        return False
    found = calls._lookup(func)
    return isinstance(found, FunctionSummary) and found.returns_loader is not None and \
        found.returns_loader_at is None and found.path != calls.path


def _drawn_names(analysis) -> frozenset:
    """Names the module draws batches from with `next(name)`, and the names its calls pass for a parameter of a
    function of the module that does (`def step(data_loader): batch = next(data_loader)` ... `step(data)`)."""
    from gpulint.analysis.node_types import of_types

    names: set = set()
    params: dict = {}
    for node in of_types(analysis.index, cst.Call):
        if dotted_name(node.func) == "next" and node.args and type(node.args[0].value) is cst.Name:
            name = node.args[0].value
            names.add(name.value)
            for b in analysis.index.visible_bindings(name):
                if b.kind == "param" and type(b.source) is cst.FunctionDef:
                    params.setdefault(id(b.source), set()).add(b.name)
    if params:
        for node in of_types(analysis.index, cst.Call):
            fn = analysis.loops.local_function(node)
            wanted = params.get(id(fn)) if fn is not None else None
            if not wanted:
                continue
            positional = positional_names(fn)
            for position, arg in enumerate(a for a in node.args if a.keyword is None):
                if position < len(positional) and positional[position] in wanted and type(arg.value) is cst.Name:
                    names.add(arg.value.value)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in wanted and type(arg.value) is cst.Name:
                    names.add(arg.value.value)
    return frozenset(names)
