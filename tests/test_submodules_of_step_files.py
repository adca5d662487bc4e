"""A module class that a model file both builds and calls as a submodule keeps its per-step reach when that
model file looks like a training file (a `for step in range(self.n_steps):` over a network's decision steps in
its own `forward`): no hot loop of that file calls the class directly, so the search falls back to the owner's
`forward` that calls it (`forward._find_site` -> `_submodule_site`). TabNet's encoder lost its per-forward host
tensors (`torch.ones(...).to(x.device)`) when step-counter loops began to mark training files."""

from __future__ import annotations

from tests.projects import check, found, write_project

MODEL = '''import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, dim, n_steps):
        super().__init__()
        self.n_steps = n_steps
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(n_steps)])

    def forward(self, x, prior=None):
        if prior is None:
            prior = torch.ones(x.shape).to(x.device)
        out = x
        for step in range(self.n_steps):
            out = self.layers[step](out * prior)
        return out


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.encoder = Encoder(dim, 3)
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        return self.head(self.encoder(x))
'''

TRAIN = '''import torch

from model import Net


def main(loader):
    net = Net(8).cuda()
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = ((net(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def test_a_submodule_of_a_per_step_model_runs_every_step_in_a_step_counter_file(tmp_path):
    got = found(check(write_project(tmp_path / "p", {"model.py": MODEL, "train.py": TRAIN}), "--no-cache"))
    assert ("model.py", 13, "GPU203") in got
