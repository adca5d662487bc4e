"""Collate functions that copy each batch to the accelerator.

    def collate(batch, pad_id=0, device="cpu"):
        inputs = torch.stack([...])             # built on the host, pageable
        return inputs.to(device)                # a blocking copy, every batch, in the loader's own process

    collate_on_device = functools.partial(collate, device=device)   # device = "cuda" ...
    loader = DataLoader(data, batch_size=8, collate_fn=collate_on_device, num_workers=0)

The loader hands out CUDA tensors: `pin_memory=True` cannot apply (pinning a CUDA tensor raises), so GPU201 leaves
such a loader alone, and the copy inside the collate function is the per-batch cost (GPU202 reports it there: a
blocking copy from pageable memory, every batch; the remedy is to return host tensors, let the loader pin them,
and copy in the loop with `non_blocking=True`).

`collate_copies(analysis)`: for every `DataLoader(...)` of the module whose `collate_fn` is a top-level function of
the module, or `functools.partial` of one (bound in the call or through a name assigned once), the copies to an
accelerator in that function whose result it returns (directly, or through a name it returns, alone or in a
tuple). A copy to the function's own device parameter counts only where the partial binds that parameter to a
device that is an accelerator (`device=device` with `device = torch.device("cuda" ...)`), or its default is one; a
literal `num_workers` above 0 (the collate runs in worker processes) is left out.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.tree import descendants
from gpulint.syntax import literal_value


class CollateCopies:
    """Per module: loader call id -> the copies its collate function makes; copy call id -> its loaders."""

    def __init__(self, analysis) -> None:
        from gpulint.analysis.data_facts import data_facts, is_dataloader, keyword
        from gpulint.analysis.node_types import of_types

        self.by_loader: dict[int, list[cst.Call]] = {}
        self.by_copy: dict[int, list[cst.Call]] = {}
        facts = data_facts(analysis)
        for node in of_types(analysis.index, cst.Call):
            if not is_dataloader(analysis, node):
                continue
            collate = keyword(node, "collate_fn")  # type: ignore[arg-type]
            workers = keyword(node, "num_workers")  # type: ignore[arg-type]
            if collate is None or workers is not None and _positive(literal_value(workers.value)):
                continue
            resolved = _collate_function(analysis, collate.value)
            if resolved is None:
                continue
            fn, bound = resolved
            copies = _returned_copies(analysis, facts, fn, bound)
            if copies:
                self.by_loader[id(node)] = copies
                for copy in copies:
                    self.by_copy.setdefault(id(copy), []).append(node)  # type: ignore[arg-type]


def _positive(value) -> bool:
    return type(value) is int and value > 0


def collate_copies(analysis) -> CollateCopies:
    return analysis.fact(CollateCopies)


def _collate_function(analysis, expr: cst.BaseExpression, depth: int = 0):
    """(the top-level function, the keywords a `partial` binds) for a collate_fn expression, else None."""
    if depth > 2:
        return None
    if type(expr) is cst.Name:
        bindings = analysis.index.visible_bindings(expr)
        if len(bindings) != 1:
            return None
        b = bindings[0]
        if b.kind == "def" and type(b.source) is cst.FunctionDef and \
                type(analysis.index.enclosing_scope(b.source)) is cst.Module:
            return b.source, {}
        if b.kind == "assign" and b.index is None and b.value is not None:
            return _collate_function(analysis, b.value, depth + 1)
        return None
    if type(expr) is cst.Call and analysis.qualified(expr.func) == "functools.partial" and expr.args and \
            expr.args[0].keyword is None and not expr.args[0].star:
        inner = _collate_function(analysis, expr.args[0].value, depth + 1)
        if inner is None or inner[1] or any(a.star for a in expr.args):
            return None
        return inner[0], {a.keyword.value: a.value for a in expr.args[1:] if a.keyword is not None}
    return None


def _returned_copies(analysis, facts, fn: cst.FunctionDef, bound: dict) -> list[cst.Call]:
    from gpulint.analysis.data_facts import ACCELERATOR

    params = {p.name.value: p for p in (*fn.params.params, *fn.params.kwonly_params)}
    returned: set[str] = set()
    returned_nodes: list[cst.BaseExpression] = []
    for node in descendants(fn.body):
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(node) is cst.Return and node.value is not None:
            values = [e.value for e in node.value.elements] if type(node.value) in (cst.Tuple, cst.List) \
                else [node.value]
            for value in values:
                if type(value) is cst.Name:
                    returned.add(value.value)
                else:
                    returned_nodes.append(value)
    copies: list[cst.Call] = []
    for node in descendants(fn.body):
        if type(node) is not cst.Call or type(node.func) is not cst.Attribute or \
                node.func.attr.value not in ("to", "cuda"):
            continue
        if not _to_accelerator(analysis, facts, node, params, bound):
            continue
        parent = analysis.parent(node)
        kept = any(node is v for v in returned_nodes) or (
            type(parent) is cst.Assign and len(parent.targets) == 1 and type(parent.targets[0].target) is cst.Name
            and parent.targets[0].target.value in returned)
        if kept:
            copies.append(node)
    return copies


def _to_accelerator(analysis, facts, copy: cst.Call, params: dict, bound: dict) -> bool:
    from gpulint.analysis.data_facts import ACCELERATOR

    if copy.func.attr.value == "cuda":  # type: ignore[attr-defined]
        return True
    from gpulint.syntax import argument

    target = argument(copy, "device", 0)
    if target is None:
        return False
    value = target.value
    if type(value) is cst.Name and value.value in params:
        given: Optional[cst.BaseExpression] = bound.get(value.value)
        if given is None:
            given = params[value.value].default
        return given is not None and facts.device_of(given) == ACCELERATOR
    return facts.device_of(value) == ACCELERATOR
