"""Batches a training loop hands to a function of the same module that copies them to the GPU (GPU202).

Recommendation-model and speech scripts often move a batch inside a small wrapper rather than in the loop:

    def model_wrap(X, offsets, indices, device):
        indices = [i.to(device) for i in indices]
        return model(X.to(device), offsets.to(device), indices)

    for batch in loader:
        X, offsets, indices, T = unpack_batch(batch)
        Z = model_wrap(X, offsets, indices, device)

The copies in `model_wrap` run every step, on the loop's batch: where every call of the wrapper in the module
passes a batch of a loop over a loader at that parameter (`passed_batch_loops`), GPU202 judges them by that
loop's loaders, as it judges a copy written in the loop. The per-step call is reported too, naming the copy
(`helper_copy_of`), as GPU112 reports the call of a helper that syncs.

`unpacked_element` follows a helper that splits a batch into its parts (`def unpack_batch(b): return b[0], b[1],
b[2]`): `X, offsets, indices = unpack_batch(batch)` binds parts of the batch. Only the module's own functions
are followed (read from its tree); every tuple `return` must put a subscript of the same parameter at the
unpacked position; a `return` of a call (an opaque formatter on another configuration) does not count against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from gpulint.analysis.tree import child_nodes
from gpulint.syntax import argument_for, positional_names

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.analysis.data_facts import DataFacts

_MAX_DEPTH = 4
_HANDED = 2  # functions of the module a batch is handed through, parameter to parameter, before its copy


def _returns(fn: cst.FunctionDef) -> list[cst.Return]:
    """The `return` statements of `fn` itself (not of nested functions, classes or lambdas)."""
    found, stack = [], list(child_nodes(fn.body))
    while stack:
        node = stack.pop()
        if type(node) is cst.Return:
            found.append(node)
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        stack.extend(child_nodes(node))
    return found


def _subscripted_param(expr: cst.BaseExpression, params: list[str]) -> Optional[str]:
    """`b[0]` / `b["x"]` of a parameter `b`: its name."""
    if type(expr) is cst.Subscript and type(expr.value) is cst.Name and expr.value.value in params:
        return expr.value.value
    return None


def unpacked_element(facts: "DataFacts", call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    """`call` calls a function of this module every tuple `return` of which puts a subscript of one parameter at
    position `index` (other `return`s only hand back that parameter or an opaque call's result): the argument
    the call passes to that parameter, whose part the unpacked name then holds. Else None."""
    fn = facts.analysis.loops.local_function(call)
    if type(fn) is not cst.FunctionDef:
        return None
    params = positional_names(fn)
    if not params or params[0] in ("self", "cls"):
        return None
    chosen: Optional[str] = None
    tuples = 0
    for ret in _returns(fn):
        value = ret.value
        if type(value) is cst.Tuple:
            elements = value.elements
            if index >= len(elements) or any(type(e) is cst.StarredElement for e in elements):
                return None
            name = _subscripted_param(elements[index].value, params)
            if name is None or (chosen is not None and name != chosen):
                return None
            chosen, tuples = name, tuples + 1
        elif type(value) is cst.Call or (type(value) is cst.Name and value.value in params):
            continue
        else:
            return None
    if chosen is None or tuples == 0:
        return None
    arg = argument_for(call, params, chosen)
    return arg.value if arg is not None and not arg.star else None


def _function_of(facts: "DataFacts", name: cst.Name) -> Optional[tuple[cst.FunctionDef, str]]:
    """`name` is a parameter of a function of the module (a method called through `self` included: Python's
    scopes skip the class body), or a comprehension variable over one
    (`[s.to(device) for s in indices]`): the function and the parameter."""
    index = facts.analysis.index
    for _ in range(_MAX_DEPTH):
        bindings = facts.bindings(name)
        params = [b for b in bindings if b.kind == "param"]
        if params:
            # `x = x.to(device)` further on rebinds the parameter: a read before it, or in that very
            # statement, still reads the parameter
            place = index.order(name)
            if len(params) != 1 or place is None or any(
                    b.kind != "assign" or b.source is None or not (
                        index.is_ancestor_or_self(b.source, name) or (index.order(b.source) or -1) > place)
                    for b in bindings if b is not params[0]):
                return None
            bindings = params
        if len(bindings) != 1:
            return None
        b = bindings[0]
        if b.kind == "param":
            fn = b.scope
            if type(fn) is not cst.FunctionDef or type(facts.analysis.index.enclosing_scope(fn)) is not cst.Module:
                return None
            return fn, b.name
        if b.kind in ("comp", "for") and b.index is None and type(b.value) is cst.Name:
            name = b.value
            continue
        return None
    return None


def passed_batch_loops(facts: "DataFacts", receiver: cst.BaseExpression, depth: int = 0) -> tuple[list, bool]:
    """`receiver` (a name, or a subscript of one) is a parameter of a function or method of this module, and
    every call of that function in the module passes a batch of a loop over a loader there (`batch_loop`, in
    the loop's body), or hands on such a parameter of its own function in turn (`self.forward(x)` in
    `forward_loss(self, x, y)`, which the loop calls with its batch; `_HANDED` functions up): those loops (one
    per call), and whether some call passes a loop's whole batch (the name its `for` binds); else ([], False)."""
    while type(receiver) is cst.Subscript:
        receiver = receiver.value
    if type(receiver) is not cst.Name:
        return [], False
    field = _field_of(facts, receiver)
    if field is not None:
        loops, _ = passed_batch_loops(facts, field)
        return loops, False  # a field of the batch (`for key, ipt in inputs.items(): ipt.to(device)`)
    found = _function_of(facts, receiver)
    if found is None:
        return [], False
    fn, param = found
    loops, whole = [], False
    params = positional_names(fn)
    for call in facts.analysis.loops.calls_to(fn):
        arg = argument_for(call, params, param)
        if arg is None or arg.star:
            return [], False
        loop = facts.batch_loop(arg.value, call)
        if loop is None and depth < _HANDED and type(arg.value) is cst.Name and \
                _function_of(facts, arg.value) not in (None, found):
            handed, part = passed_batch_loops(facts, arg.value, depth + 1)
            if not handed:
                return [], False
            loops.extend(handed)
            whole = whole or part
            continue
        if loop is None or not facts.index.is_ancestor_or_self(loop.body, call):
            return [], False
        loops.append(loop)
        whole = whole or (type(arg.value) is cst.Name and any(
            b.kind == "for" and b.source is loop and b.index is None for b in facts.bindings(arg.value)))
    return loops, whole


def handed_batch(facts: "DataFacts", receiver: cst.BaseExpression) -> Optional[bool]:
    """`receiver` (a name, or a subscript of one) is a parameter of a method (or top-level function) that no call
    of this module reaches, and every call of it in the project's other files hands it the batch of a loop over a
    pinned loader (`model.feed_data(train_data)` in `for i, train_data in enumerate(train_loader):`,
    analysis/passed_pinning.py `handed_batch_pinning`): True; all unpinned: False; else None."""
    subscripted = type(receiver) is cst.Subscript
    while type(receiver) is cst.Subscript:
        receiver = receiver.value
    if type(receiver) is not cst.Name or facts.analysis.path is None:
        return None
    found = _function_of(facts, receiver)
    if found is None:
        return None
    fn, param = found
    if facts.analysis.loops.calls_to(fn):
        return None  # the module's own calls: `passed_batch_loops`
    index = facts.analysis.index
    owner = index.up.get(id(fn))
    if type(owner) is cst.IndentedBlock:
        owner = index.up.get(id(owner))
    if type(owner) is cst.ClassDef:
        if type(index.up.get(id(owner))) is not cst.Module:
            return None
        owner_name: Optional[str] = owner.name.value
    elif type(owner) is cst.Module:
        owner_name = None
    else:
        return None
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.passed_pinning import handed_batch_pinning

    calls = facts.analysis.fact(project_calls)
    if calls is None:
        return None
    return handed_batch_pinning(calls.project, calls.path, owner_name, fn.name.value, param, subscripted)


def _field_of(facts: "DataFacts", name: cst.Name) -> Optional[cst.Name]:
    """`ipt` bound only by `for key, ipt in inputs.items():` (or `for ipt in inputs.values():`) over a name
    `inputs`: that name, whose fields `ipt` holds in turn; else None."""
    bindings = facts.bindings(name)
    if len(bindings) != 1 or bindings[0].kind != "for" or type(bindings[0].source) is not cst.For:
        return None
    loop = bindings[0].source
    it = loop.iter
    if not (type(it) is cst.Call and not it.args and type(it.func) is cst.Attribute
            and type(it.func.value) is cst.Name):
        return None
    method = it.func.attr.value
    target = loop.target
    if method == "values" and type(target) is cst.Name:
        return it.func.value
    if method == "items" and type(target) is cst.Tuple and len(target.elements) == 2 and \
            type(target.elements[1].value) is cst.Name and target.elements[1].value.value == name.value:
        return it.func.value
    return None


def helper_copy_of(facts: "DataFacts", call: cst.Call, copies: dict) -> Optional[cst.Call]:
    """`call` calls a top-level function of this module holding one of `copies` (the copies GPU202 reports
    because of what the calls pass, by the function holding them): the first of them."""
    fn = facts.analysis.loops.local_function(call)
    if type(fn) is not cst.FunctionDef:
        return None
    held = copies.get(id(fn))
    return held[0] if held else None
