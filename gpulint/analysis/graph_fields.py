"""Tensor fields of a graph object moved to the device: PyTorch Geometric's `Data`/`Batch` (and objects shaped like
them) keep their tensors as attributes, and `data = dataset[0].to(device)` / `batch = batch.to(device)` moves every
one of them (`Data.to` moves the object's tensors). Nothing tells the kind inference that `data` is a tensor, so
`data.y`, `data.edge_index` and `data.train_mask` were unknown and the syncs on them unseen (`out[data.train_mask]`,
a boolean mask every step).

Only the field names PyG gives tensors count (`x`, `y`, `edge_index`, `edge_attr`, `pos`, `batch`, the split masks
`train_mask`/`val_mask`/`test_mask`, ...): counts such as `num_nodes` or `num_graphs` are Python ints and stay
unknown, and so does any field of an object not seen moved to an accelerator in its scope. The split masks are
boolean tensors.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from gpulint.syntax import string_value

if TYPE_CHECKING:
    from gpulint.analysis.kinds import KindInference

GRAPH_TENSOR_FIELDS = frozenset({"x", "y", "z", "pos", "edge_index", "edge_attr", "edge_weight", "edge_label",
                                 "edge_label_index", "adj_t", "n_id", "e_id", "node_type", "edge_type",
                                 "train_mask", "val_mask", "valid_mask", "test_mask"})
SPLIT_MASKS = frozenset({"train_mask", "val_mask", "valid_mask", "test_mask"})
_DEVICE_TEXT = re.compile(r"device|rank|gpu|cuda", re.IGNORECASE)


def moved_graph_field(inference: KindInference, node: cst.Attribute) -> bool:
    """`data.<field>` for a tensor field name where `data` is a name the scope binds to `<...>.to(<device>)` or
    `<...>.cuda()`."""
    if node.attr.value not in GRAPH_TENSOR_FIELDS or type(node.value) is not cst.Name:
        return False
    bindings = inference.index.visible_bindings(node.value)
    return any(b.kind == "assign" and b.index is None and _moves_to_device(b.value) for b in bindings)


def _moves_to_device(value) -> bool:
    if type(value) is not cst.Call or type(value.func) is not cst.Attribute:
        return False
    method = value.func.attr.value
    if method == "cuda":
        return True
    if method != "to" or not value.args or value.args[0].keyword not in (None,) and \
            value.args[0].keyword.value != "device":
        return False
    target = value.args[0].value
    text = string_value(target)
    if text is not None:
        return text.split(":")[0] in ("cuda", "mps", "xpu", "npu")
    if type(target) is cst.Name:
        return bool(_DEVICE_TEXT.search(target.value))
    if type(target) is cst.Attribute:
        return bool(_DEVICE_TEXT.search(target.attr.value))
    return False
