"""A loader whose batches only pick items of host containers (`for step, batch in enumerate(loader):
adj = train_adj[batch[0]].to(device)`, a `DataLoader` over `torch.LongTensor(range(20))` graph indices) copies no
batch to the GPU: what goes there is the container's item, so `pin_memory=True` on the loader changes nothing and
GPU201 stays quiet. A batch handed to the model (or moved, or unpacked) still asks for pinning."""

from __future__ import annotations

from tests.projects import lint_script

SCRIPT = """import torch
import torch.utils.data as Data

device = torch.device("cuda")
model = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.Adam(model.parameters())
train_feat = [torch.randn(10, 8) for _ in range(20)]
train_labels = [torch.randn(10, 2) for _ in range(20)]
train_nodes = [10] * 20

idx = torch.LongTensor(range(20))
loader = Data.DataLoader(dataset=idx, batch_size=1, shuffle=True)
direct = Data.DataLoader(dataset=torch.randn(20, 8), batch_size=4, shuffle=True)


def train():
    for step, batch in enumerate(loader):
        feature = train_feat[batch[0]].to(device)
        label = train_labels[batch[0]].to(device)
        optimizer.zero_grad()
        output = model(feature)
        loss = ((output[:train_nodes[batch]] - label[:train_nodes[batch]]) ** 2).mean()
        loss.backward()
        optimizer.step()


def train_direct():
    for batch in direct:
        optimizer.zero_grad()
        loss = model(batch.to(device)).mean()
        loss.backward()
        optimizer.step()


for epoch in range(10):
    train()
    train_direct()
"""


def _row(needle: str) -> int:
    return next(i for i, line in enumerate(SCRIPT.splitlines(), 1) if needle in line)


def test_a_loader_of_indices_into_host_lists_is_not_asked_to_pin(tmp_path):
    rows = {row for row, code in lint_script(tmp_path, SCRIPT) if code == "GPU201"}
    assert _row("loader = Data.DataLoader") not in rows
    assert _row("direct = Data.DataLoader") in rows  # its batches are moved: pinning lets the copy overlap
