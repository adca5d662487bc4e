"""Layers a model appends to a container in `__init__` (`self.gnns = nn.ModuleList()`, then
`self.gnns.append(GINConv(...))` on the branch a layer type picks) and calls in its `forward`
(`self.gnns[layer](h, ...)`) run every step with it; PyTorch Geometric's `MessagePassing` is a module base class,
so a layer deriving from it is a module whose `forward` runs when it is called (pretrain-gnns' shape).
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

MODEL = '''\
import torch
from torch_geometric.nn import MessagePassing


class GINConv(MessagePassing):
    def __init__(self, emb_dim):
        super().__init__(aggr="add")
        self.mlp = torch.nn.Linear(emb_dim, emb_dim)

    def forward(self, x, edge_index, edge_attr):
        self_loop_attr = torch.zeros(x.size(0), 2)
        self_loop_attr[:, 0] = 4
        self_loop_attr = self_loop_attr.to(edge_attr.device)
        edge_attr = torch.cat((edge_attr, self_loop_attr), dim=0)
        return self.propagate(edge_index, x=x, edge_attr=edge_attr)

    def message(self, x_j, edge_attr):
        return x_j + edge_attr


class GNN(torch.nn.Module):
    def __init__(self, num_layer, emb_dim, gnn_type="gin"):
        super().__init__()
        self.num_layer = num_layer
        self.gnns = torch.nn.ModuleList()
        for layer in range(num_layer):
            if gnn_type == "gin":
                self.gnns.append(GINConv(emb_dim))
            else:
                self.gnns.append(torch.nn.Linear(emb_dim, emb_dim))

    def forward(self, x, edge_index, edge_attr):
        h = x
        for layer in range(self.num_layer):
            h = CALL
        return h
'''

TRAIN = '''\
import torch
from torch.utils.data import DataLoader
from model import GNN


def main(dataset):
    device = torch.device("cuda")
    model = GNN(5, 300).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    loader = DataLoader(dataset, batch_size=32, pin_memory=True, num_workers=2)
    for x, edge_index, edge_attr in loader:
        x = x.to(device, non_blocking=True)
        edge_index = edge_index.to(device, non_blocking=True)
        edge_attr = edge_attr.to(device, non_blocking=True)
        loss = model(x, edge_index, edge_attr).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main(None)
'''

COPY = ("model.py", 13, "GPU203")  # the host self-loop attributes copied to the GPU in every layer, every step


def _findings(tmp_path: Path, call: str) -> set:
    root = write_project(tmp_path, {"model.py": MODEL.replace("CALL", call), "train.py": TRAIN})
    return found(check(root, "--no-cache", "."))


def test_an_appended_message_passing_layer_runs_every_step(tmp_path: Path):
    assert COPY in _findings(tmp_path, "self.gnns[layer](h, edge_index, edge_attr)")


def test_an_appended_layer_the_forward_does_not_call_does_not_run(tmp_path: Path):
    assert COPY not in _findings(tmp_path, "torch.relu(h)")
