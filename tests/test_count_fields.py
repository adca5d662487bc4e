"""Counts a batch or graph object carries are Python ints (kinds.COUNT_FIELDS): a PyG `NeighborLoader` batch's
`batch_size`, a graph's `num_nodes`/`num_graphs`. Sizing a factory with them reads nothing from the device, even
when the batch was moved there; a size read from one of the batch's tensors (`batch.y.max()`) still syncs (GPU105)."""

from __future__ import annotations

from tests.projects import lint_script

TRAIN = '''import torch
from torch_geometric.loader import NeighborLoader


def run(data, model, device):
    loader = NeighborLoader(data, num_neighbors=[10], batch_size=128, pin_memory=True)
    for i, batch in enumerate(loader):
        batch = batch.to(device, non_blocking=True)
        seeds = torch.arange(i * batch.{field}, (i + 1) * batch.{field}, device=device)
        out = model(batch.x, batch.edge_index)
        order = torch.arange(batch.y.max(), device=device)
        loss = out[seeds].sum() + order.sum()
        loss.backward()
'''


def test_a_batch_count_sizes_nothing_on_the_device(tmp_path):
    for field in ("batch_size", "num_nodes", "num_graphs"):
        keys = lint_script(tmp_path / field, TRAIN.format(field=field))
        assert (9, "GPU105") not in keys, field
        assert (11, "GPU105") in keys, field  # a size read from the batch's own tensor


def test_another_field_of_a_moved_batch_is_still_a_tensor(tmp_path):
    keys = lint_script(tmp_path, TRAIN.format(field="ptr[-1]"))
    assert (9, "GPU105") in keys


SAMPLED = '''import torch
from torch_geometric.loader import NeighborLoader


def run(data, model, device):
    loader = NeighborLoader(data, num_neighbors=[10], batch_size=128, pin_memory=True)
    for batch in loader:
        batch = batch.to(device, non_blocking=True)
        batch_size = batch.{field}[0]
        out = model(batch.x, batch.edge_index)
        seeds = out[:batch_size]
        top = out[:batch.y.max()]
        loss = seeds.sum() + top.sum()
        loss.backward()
'''


def test_a_sampled_batch_counts_per_hop_are_host_ints(tmp_path):
    """`batch.num_sampled_nodes[0]` (a list of Python ints per hop) bounds a slice without a read of the device;
    the slice bounded by the batch's own tensor still syncs."""
    for field in ("num_sampled_nodes", "num_sampled_edges"):
        keys = lint_script(tmp_path / field, SAMPLED.format(field=field))
        assert [k for k in keys if k[1] == "GPU105"] == [(12, "GPU105")], (field, keys)
