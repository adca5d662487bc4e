"""Tensor fields of a graph moved to the device (analysis/graph_fields.py): `data = dataset[0].to(device)` makes
`data.y`, `data.edge_index` and the split masks device tensors, so a boolean-mask index with `data.train_mask`
(or a mask built from `data.edge_index`) every step is GPU111; counts such as `data.num_nodes` stay unknown, and
so do the fields of an object never moved to the device."""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

TRAIN = """\
import torch
import torch.nn.functional as F
from torch_geometric.datasets import Planetoid

device = torch.device("cuda")
data = Planetoid("/tmp/p", "Cora")[0].to(device)
host = Planetoid("/tmp/p", "Cora")[0]


def train():
    for step in range(100):
        keep = data.edge_index[0] < data.edge_index[1]
        out = model(data.x, data.edge_index)
        loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
        kept = data.edge_index[:, keep]
        n = int(data.num_nodes)
        other = host.x[host.train_mask]
        loss.backward()
        optimizer.step()
"""


def test_split_masks_and_masks_of_a_moved_graph_are_boolean_indexes(tmp_path: Path):
    got = {(row, code) for _, row, code in found(check(write_project(tmp_path, {"train.py": TRAIN}),
                                                       "--no-cache", "--select", "GPU1", "."))}
    assert (14, "GPU111") in got and (15, "GPU111") in got
    assert not any(row in (16, 17) for row, _ in got), got
