"""GPU201/GPU202 through PyTorch 0.3's `Variable` wrapper: `inputs = Variable(inputs).cuda()` copies the loader's
batch every step (pytorch-semantic-segmentation's training and validation loops, four lines heldout32b labels TRUE
transfer). The unpinned loader is reported, naming those copies; each copy gets GPU202's fix. A `Variable` of
something else is not a batch."""

from __future__ import annotations

from projects import check, found, write_project

TRAIN = """\
import torch
from torch.autograd import Variable
from torch.utils.data import DataLoader


def train(net, train_set, criterion, optimizer):
    train_loader = DataLoader(train_set, batch_size=1, num_workers=4, shuffle=True)
    for i, (inputs, labels) in enumerate(train_loader):
        inputs = Variable(inputs).cuda()
        labels = Variable(labels).cuda()
        weights = Variable(torch.ones(3)).cuda()
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
"""


def test_a_variable_wrapped_batch_copied_every_step(tmp_path):
    items = check(write_project(tmp_path, {"train.py": TRAIN}), "--no-cache", "--exit-zero", "--select",
                  "GPU201,GPU202", "train.py")
    assert {(row, code) for _, row, code in found(items)} == {(7, "GPU201"), (9, "GPU202"), (10, "GPU202")}
    loader = next(d for d in items if d["code"] == "GPU201")
    assert {r["location"]["row"] for r in loader["related"]} == {9, 10}
