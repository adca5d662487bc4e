"""A buffer registered empty and filled on the first call runs its filling block once per object (issue 11,
precision; DomainBed's GroupDRO: `self.register_buffer("q", torch.Tensor())`, then in `update`
`if not len(self.q): self.q = torch.ones(len(minibatches)).to(device)`). The host-built copy in that block is not
reported as every-step code (analysis/once.py); the copy beside it, made on every call, is; a block that tests the
buffer's size but does not fill it still runs every step."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.projects import check, found, write_project

ALGORITHMS = """import torch
import torch.nn.functional as F


class GroupDRO(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 2)
        self.optimizer = torch.optim.Adam(self.net.parameters())
        self.register_buffer("q", torch.Tensor())

    def update(self, minibatches):
        device = "cuda" if minibatches[0][0].is_cuda else "cpu"
        if {test}:
            {fill} = torch.ones(len(minibatches)).to(device)
        losses = torch.zeros(len(minibatches)).to(device)
        for m in range(len(minibatches)):
            x, y = minibatches[m]
            losses[m] = F.cross_entropy(self.net(x), y)
        loss = torch.dot(losses, self.q / self.q.sum())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
"""

TRAIN = """import torch

from algorithms import GroupDRO

algorithm = GroupDRO().cuda()
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
loader = torch.utils.data.DataLoader(data, batch_size=8, pin_memory=True)
for x, y in loader:
    minibatches = [(x.cuda(non_blocking=True), y.cuda(non_blocking=True))]
    algorithm.update(minibatches)
"""


def _copies(tmp_path: Path, test: str, fill: str = "self.q") -> set:
    root = write_project(tmp_path, {"algorithms.py": ALGORITHMS.format(test=test, fill=fill), "train.py": TRAIN})
    return {row for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU203"}


@pytest.mark.parametrize("test", ["not len(self.q)", "len(self.q) == 0", "self.q.numel() == 0", "not self.q.numel()"])
def test_filled_on_the_first_call_is_not_reported(tmp_path: Path, test: str):
    assert _copies(tmp_path, test) == {16}


def test_a_block_that_does_not_fill_the_buffer_is_reported(tmp_path: Path):
    assert _copies(tmp_path, "not len(self.q)", fill="weights") == {15, 16}
