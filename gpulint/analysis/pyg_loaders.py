"""PyTorch Geometric's loaders: `torch_geometric.loader.DataLoader` (a list of graphs, collated into batches; PyG 1.x
named it `torch_geometric.data.DataLoader`), `NeighborLoader` and `LinkNeighborLoader` (subgraphs sampled around
seed nodes or edges of one graph) subclass torch's `DataLoader` and pass their
`**kwargs` (`pin_memory`, `num_workers`) on to it. Their batches are sliced from the data they are given, so they
are host batches (to pin, and moved with a blocking copy each step) only when that data is on the host: PyG's own
examples often move the whole graph first (`data = data.to(device)`, `data.to(device)` in place: `Data.to`
changes the object) and sample on the GPU, where `pin_memory=True` raises and the batch's `.to(device)` is a no-op.

A PyG loader counts as a DataLoader for the transfer rules only when its data argument is known to be on the
host: a name (or an index or attribute of one) bound only by assignments in the module, none of them built from a
tensor moved to an accelerator, never moved in place (`data.to(...)`, `data.cuda()` as a statement, anywhere in the
module: the loader holds the same object; this also covers `data.to(device, "x", "y")`, which moves some
attributes and leaves a batch that pinning would reject), and no `ToDevice` transform or `PrefetchLoader` (which
pins and moves batches itself) anywhere in the module. GPU201 also asks for pinning of a PyG loader only where a
loop of the module is seen moving its batches (not from "the module targets CUDA" alone). Anything else
(a parameter, a call's result handed in, a `(feature_store, graph_store)` pair) is not known, and stays quiet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from gpulint.analysis.node_types import of_types
from gpulint.syntax import argument

if TYPE_CHECKING:
    from gpulint.analysis.data_facts import DataFacts

# `torch_geometric.data.DataLoader`: where PyG 1.x kept the same loader (and 2.x still re-exports it, deprecated)
PYG_GRAPH_LOADERS = {"torch_geometric.loader.DataLoader", "torch_geometric.loader.dataloader.DataLoader",
                     "torch_geometric.data.DataLoader", "torch_geometric.data.dataloader.DataLoader"}
# `LinkNeighborLoader`: subgraphs sampled around seed edges of one graph (`data` first, as NeighborLoader)
PYG_NODE_LOADERS = {"torch_geometric.loader.NeighborLoader", "torch_geometric.loader.neighbor_loader.NeighborLoader",
                    "torch_geometric.loader.LinkNeighborLoader",
                    "torch_geometric.loader.link_neighbor_loader.LinkNeighborLoader"}
PYG_LOADERS = PYG_GRAPH_LOADERS | PYG_NODE_LOADERS
_MAX_DEPTH = 4


def data_argument(qualified: str, call: cst.Call) -> Optional[cst.BaseExpression]:
    """What a PyG loader call samples from: `dataset` (DataLoader) or `data` (NeighborLoader), first positional."""
    arg = argument(call, "dataset" if qualified in PYG_GRAPH_LOADERS else "data", 0)
    return arg.value if arg is not None else None


def data_on_host(facts: DataFacts, qualified: str, call: cst.Call) -> bool:
    """The PyG loader `call` samples from data known to be on the host (see the module docstring)."""
    text = facts.analysis.source if facts.analysis.source is not None else facts.analysis.module.code
    if "ToDevice" in text or "PrefetchLoader" in text:
        return False  # a transform that moves every graph; a loader wrapper that pins and moves batches itself
    data = data_argument(qualified, call)
    return data is not None and _host(facts, data, 0)


def _host(facts: DataFacts, expr: cst.BaseExpression, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    while type(expr) in (cst.Subscript, cst.Attribute):  # `dataset[:n]`, `dataset[0]`, `splits.train`
        expr = expr.value  # type: ignore[attr-defined]
    if type(expr) is not cst.Name:
        return False
    bindings = facts.bindings(expr)
    if not bindings or any(b.kind != "assign" or b.value is None for b in bindings):
        return False
    if facts.on_device(expr) or _moved_in_place(facts, expr.value):
        return False
    for b in bindings:  # `train = dataset[:100]`: the graphs come from `dataset`
        value = b.value
        while type(value) in (cst.Subscript, cst.Attribute):
            value = value.value  # type: ignore[attr-defined]
        if type(value) is cst.Name and not _host(facts, value, depth + 1):
            return False
    return True


def _moved_in_place(facts: DataFacts, name: str) -> bool:
    """`name.to(...)` / `name.cuda()` anywhere in the module, not to the CPU (PyG's `Data.to` moves in place)."""
    from gpulint.analysis.data_facts import CPU

    for node in of_types(facts.index, cst.Call):
        func = node.func  # type: ignore[attr-defined]
        if type(func) is cst.Attribute and func.attr.value in ("to", "cuda") and type(func.value) is cst.Name \
                and func.value.value == name and facts.copy_target(node) != CPU:  # type: ignore[arg-type]
            return True
    return False
