"""A batch entry that the training loop's copy loop leaves on the host (`for k in batch: if k != 'meta':
batch[k] = batch[k].to(device)`) is a host tensor in the per-step method the loop hands the batch to, in another
module: its `.cpu()` costs nothing (analysis/skipped_keys.py). Entries the loop moves are still device tensors."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

BASE = """import torch


class BaseTrainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.results = {}

    def run_epoch(self, loader):
        for step, batch in enumerate(loader):
            for k in batch:
                if {test}:
                    batch[k] = batch[k].to(device="cuda", non_blocking=True)
            output = self.model(batch["input"])
            loss = (output - batch["target"]).pow(2).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.record(output, batch)

    def record(self, output, batch):
        raise NotImplementedError
"""

TASK = """from base import BaseTrainer


class DetTrainer(BaseTrainer):
    def record(self, output, batch):
        ids = batch["meta"]["ids"].cpu().numpy()
        target = batch["target"].cpu().numpy()
        self.results[int(ids[0])] = target

    def predict(self, images):
        return self.model(images.cuda())
"""

TRAIN = """import torch
from torch.utils.data import DataLoader

from task import DetTrainer

model = torch.nn.Linear(8, 2).cuda()
loader = DataLoader(list(range(64)), batch_size=4, pin_memory=True, num_workers=2)
trainer = DetTrainer(model, torch.optim.SGD(model.parameters(), lr=0.1, fused=True))
for epoch in range(3):
    trainer.run_epoch(loader)
"""


def _rows(root: Path) -> set:
    return {(row, code) for path, row, code in found(check(root, "--no-cache", "task.py"))}


def test_an_entry_the_copy_loop_skips_stays_on_the_host(tmp_path: Path) -> None:
    for name, test in (("ne", "k != 'meta'"), ("not_in", "k not in ('meta', 'name')")):
        root = write_project(tmp_path / name, {"base.py": BASE.replace("{test}", test), "task.py": TASK,
                                               "train.py": TRAIN})
        rows = _rows(root)
        assert (6, "GPU104") not in rows, (name, rows)  # batch["meta"]: left on the host
        assert (7, "GPU104") in rows, (name, rows)  # batch["target"]: moved, a device-to-host copy


def test_an_entry_the_copy_loop_moves_is_a_device_tensor(tmp_path: Path) -> None:
    root = write_project(tmp_path / "other", {"base.py": BASE.replace("{test}", "k != 'name'"), "task.py": TASK,
                                              "train.py": TRAIN})
    assert (6, "GPU104") in _rows(root)
