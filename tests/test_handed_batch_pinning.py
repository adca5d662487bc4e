"""A method another module's training loop hands a pinned loader's batch (branch recall62; heldout16's KAIR: the
training script iterates `DataLoader(..., pin_memory=True)` and calls `model.feed_data(train_data)`, whose
`data['L'].to(self.device)` in the model class runs every step without `non_blocking=True`). Where every call of
the method found in the project passes the batch (or a part of it) that a loop over a pinned loader binds, the
copies of its items are GPU202's "add non_blocking=True"; a call passing anything else, a loader that is not
pinned, or a copy of the whole batch object (whose `.to()` may be a custom one) stays quiet.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, write_project

MODEL = """\
import torch


class Restorer:
    def __init__(self, net, device):
        self.net = net.to(device)
        self.device = device
        self.optimizer = torch.optim.Adam(self.net.parameters())

    def feed(self, data, need_target=True):
        self.low = data["low"].to(self.device)
        if need_target:
            self.high = data["high"].to(self.device)

    def feed_whole(self, data):
        self.all = data.to(self.device)

    def step(self):
        self.optimizer.zero_grad()
        loss = torch.nn.functional.l1_loss(self.net(self.low), self.high)
        loss.backward()
        self.optimizer.step()
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader

from models.restorer import Restorer


def main(net, train_set, epochs):
    model = Restorer(net, torch.device("cuda"))
    train_loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=8{pin})
    for epoch in range(epochs):
        for i, train_data in enumerate(train_loader):
            model.{method}(train_data)
            model.step()
{extra}"""


def _messages(tmp_path: Path, pin: str = ", pin_memory=True", method: str = "feed", extra: str = "") -> dict:
    root = write_project(tmp_path, {"models/__init__.py": "", "models/restorer.py": MODEL,
                                    "train.py": TRAIN.format(pin=pin, method=method, extra=extra)})
    return {(d["filename"], d["location"]["row"], d["code"]): d["message"]
            for d in check(root, "--no-cache", ".")}


def _pinned(found: dict) -> set:
    return {row for (path, row, code), message in found.items()
            if path == "models/restorer.py" and code == "GPU202" and "pinned batch" in message}


def test_items_of_a_pinned_batch_handed_to_a_method_block(tmp_path: Path):
    assert _pinned(_messages(tmp_path)) == {11, 13}


def test_an_unpinned_loader_is_not_called_pinned(tmp_path: Path):
    assert not _pinned(_messages(tmp_path, pin=""))


def test_a_call_passing_something_else_keeps_it_quiet(tmp_path: Path):
    extra = "    model.feed({'low': torch.zeros(1, 3, 8, 8), 'high': torch.zeros(1, 3, 8, 8)})\n"
    assert not _pinned(_messages(tmp_path, extra=extra))


def test_the_whole_batch_object_moved_by_its_own_to_is_left_alone(tmp_path: Path):
    assert not _pinned(_messages(tmp_path, method="feed_whole"))
