"""GPU201 names where the unpinned memory is paid (issue 11: "the finding belongs at the factory, or at the call
site, naming the factory"; labels of real code put the cost at the copy): a `DataLoader` without `pin_memory=True`
is reported where it is built, with the copies of its batches to the GPU in this module's loops over it as related
locations, `non_blocking=True` or not (SimCLR's `x_i.cuda(non_blocking=True)` of an unpinned batch cannot overlap).
"""

from __future__ import annotations

from pathlib import Path

from projects import check, write_project

TRAIN = """\
import torch
from torch.utils.data import DataLoader


def train(args, train_loader, model, criterion, optimizer):
    for step, ((x_i, x_j), _) in enumerate(train_loader):
        optimizer.zero_grad()
        x_i = x_i.cuda(non_blocking=True)
        x_j = x_j.cuda(non_blocking=True)
        loss = criterion(model(x_i), model(x_j))
        loss.backward()
        optimizer.step()


def main(args, dataset, model, criterion):
    model = model.cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, fused=True)
    train_loader = DataLoader(dataset, batch_size=256, shuffle=True, drop_last=True, num_workers=8)
    for epoch in range(100):
        train(args, train_loader, model, criterion, optimizer)
"""


def test_the_unpinned_loader_names_the_copies_of_its_batches(tmp_path: Path):
    found = check(write_project(tmp_path, {"main.py": TRAIN}), "--no-cache", "--select", "GPU201", ".")
    assert [(d["location"]["row"], [r["location"]["row"] for r in d["related"]]) for d in found] == [(18, [8, 9])]


def test_a_loader_whose_batches_are_not_copied_here_names_none(tmp_path: Path):
    """The batches go to a project helper of another module that copies them: no copy here to name."""
    helper = "def to_gpu(x):\n    return x.cuda(non_blocking=True)\n"
    train = TRAIN.replace("        x_i = x_i.cuda(non_blocking=True)\n        x_j = x_j.cuda(non_blocking=True)\n",
                          "        x_i, x_j = to_gpu(x_i), to_gpu(x_j)\n").replace(
        "from torch.utils.data import DataLoader\n", "from torch.utils.data import DataLoader\nfrom util import to_gpu\n")
    found = check(write_project(tmp_path, {"main.py": train, "util.py": helper}), "--no-cache", "--select", "GPU201",
                  ".")
    assert found and all(d["related"] == [] for d in found)
