"""PyG's loaders are DataLoaders when they sample host data: `torch_geometric.loader.DataLoader` and
`NeighborLoader` subclass torch's DataLoader and pass `pin_memory` on, so an unpinned one over host graphs feeding
a GPU is GPU201 and the blocking moves of its batches GPU202. A loader over a graph already moved to the GPU
(`data = data.to(device)`, `data.to(device)` in place, a `ToDevice` transform) samples device batches: pinning
them raises and their `.to(device)` copies nothing, so it stays quiet (analysis/pyg_loaders.py)."""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

HOST = """\
import torch
from torch_geometric.datasets import Reddit, TUDataset
from torch_geometric.loader import DataLoader, NeighborLoader

device = torch.device("cuda")
graphs = TUDataset("/tmp/g", name="MUTAG")
train_graphs = graphs[:100]
graph = Reddit("/tmp/r")[0]
kwargs = {"batch_size": 1024, "num_workers": 6}
by_graph = DataLoader(train_graphs, batch_size=32, shuffle=True)
by_node = NeighborLoader(graph, num_neighbors=[25, 10], shuffle=True, **kwargs)
pinned = NeighborLoader(graph, num_neighbors=[25, 10], pin_memory=True)
for batch in by_graph:
    batch = batch.to(device)
    model(batch.x).sum().backward()
for batch in by_node:
    batch = batch.to(device)
    model(batch.x).sum().backward()
for batch in pinned:
    batch = batch.to(device, non_blocking=True)
    model(batch.x).sum().backward()
"""

ON_DEVICE = """\
import torch
from torch_geometric.datasets import Reddit
from torch_geometric.loader import NeighborLoader

device = torch.device("cuda")
dataset = Reddit("/tmp/r")
moved = dataset[0].to(device)
in_place = dataset[0]
in_place.to(device)
first = NeighborLoader(moved, num_neighbors=[25, 10], shuffle=True)
second = NeighborLoader(in_place, num_neighbors=[25, 10], shuffle=True)
for batch in first:
    batch = batch.to(device)
    model(batch.x).sum().backward()
for batch in second:
    batch = batch.to(device)
    model(batch.x).sum().backward()


def train(data):
    loader = NeighborLoader(data, num_neighbors=[10], batch_size=128)
    for batch in loader:
        batch = batch.to(device)
        model(batch.x).sum().backward()
"""


def _found(root: Path) -> set:
    return {(row, code) for _, row, code in found(check(root, "--no-cache", "--select", "GPU201,GPU202", "."))}


def test_pyg_loaders_over_host_data_are_checked_for_pinning(tmp_path: Path):
    assert _found(write_project(tmp_path, {"train.py": HOST})) == \
        {(10, "GPU201"), (11, "GPU201"), (14, "GPU202"), (17, "GPU202")}


def test_pyg_loaders_over_device_or_unknown_data_are_quiet(tmp_path: Path):
    assert _found(write_project(tmp_path, {"train.py": ON_DEVICE})) == set()


def test_a_todevice_transform_keeps_the_module_quiet(tmp_path: Path):
    text = HOST.replace('graphs = TUDataset("/tmp/g", name="MUTAG")',
                        'graphs = TUDataset("/tmp/g", name="MUTAG", transform=T.ToDevice(device))')
    assert _found(write_project(tmp_path, {"train.py": text})) == set()


def test_the_fix_pins_a_pyg_loader(tmp_path: Path):
    root = write_project(tmp_path, {"train.py": HOST})
    check(root, "--no-cache", "--select", "GPU201", "--fix", ".")
    fixed = (root / "train.py").read_text()
    assert "DataLoader(train_graphs, batch_size=32, shuffle=True, pin_memory=True)" in fixed
    assert "NeighborLoader(graph, num_neighbors=[25, 10], shuffle=True, **kwargs, pin_memory=True)" in fixed


PARTLY_MOVED_OR_UNSEEN = """\
import torch
from torch_geometric.datasets import Reddit, TUDataset
from torch_geometric.loader import DataLoader, NeighborLoader

device = torch.device("cuda")
graph = Reddit("/tmp/r")[0]
graph.to(device, "x", "y")
loader = NeighborLoader(graph, num_neighbors=[25, 10], shuffle=True)
for batch in loader:
    out = model(batch.x, batch.edge_index.to(device))
    out.sum().backward()
graphs = TUDataset("/tmp/g", name="MUTAG")
first = next(iter(DataLoader(graphs, batch_size=4)))
model.cuda()
"""


def test_partly_moved_graphs_and_loaders_never_seen_moving_batches_are_quiet(tmp_path: Path):
    # pinning a batch whose x is a CUDA tensor raises; a loader only drawn from once is no per-step cost
    assert _found(write_project(tmp_path, {"train.py": PARTLY_MOVED_OR_UNSEEN})) == set()


OLD_PATH_AND_LINKS = """\
import torch
from torch_geometric.data import DataLoader
from torch_geometric.datasets import TUDataset
from torch_geometric.loader import LinkNeighborLoader

device = torch.device("cuda")
graphs = TUDataset("/tmp/g", name="MUTAG")
train_graphs, test_graphs = graphs[:100], graphs[100:]
graph = TUDataset("/tmp/g", name="MUTAG")[0]
by_graph = DataLoader(graphs, batch_size=32, shuffle=True)
by_edge = LinkNeighborLoader(graph, num_neighbors=[20, 10], batch_size=256, shuffle=True)
for batch in by_graph:
    batch = batch.to(device)
    model(batch.x).sum().backward()
for batch in by_edge:
    batch = batch.to(device)
    model(batch.x).sum().backward()
"""


def test_pyg_1x_dataloader_and_link_neighbor_loader_are_checked_for_pinning(tmp_path: Path):
    # PyG 1.x's `torch_geometric.data.DataLoader` and `LinkNeighborLoader` pass `pin_memory` on to torch's loader
    assert _found(write_project(tmp_path, {"train.py": OLD_PATH_AND_LINKS})) == \
        {(10, "GPU201"), (11, "GPU201"), (13, "GPU202"), (16, "GPU202")}


def test_pyg_1x_dataloader_over_moved_graphs_is_quiet(tmp_path: Path):
    text = OLD_PATH_AND_LINKS.replace('graph = TUDataset("/tmp/g", name="MUTAG")[0]',
                                      'graph = TUDataset("/tmp/g", name="MUTAG")[0].to(device)').replace(
        'graphs = TUDataset("/tmp/g", name="MUTAG")\n', 'graphs = TUDataset("/tmp/g", name="MUTAG")\ngraphs.to(device)\n')
    assert _found(write_project(tmp_path, {"train.py": text})) == set()
