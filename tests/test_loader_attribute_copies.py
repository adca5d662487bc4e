"""GPU202 for a batch of a loader a trainer class is given (recall50; heldout15's CMGAN): `train_ds, test_ds =
dataloader.load_data(...)` (a factory returning two pinned loaders), `Trainer(train_ds, test_ds, rank)` stores
them (`self.train_ds = train_ds`), `train()` loops `for idx, batch in enumerate(self.train_ds)` and hands each batch
to `self.train_step(batch)`, which copies `batch[0].to(self.gpu_id)` without `non_blocking=True`.

- A loop over `self.<name>` stored from an `__init__` parameter is judged by what the class's constructions pass
  there (a loader, a name unpacked from a loader factory's tuple), as a loop over a function's parameter is.
- A copy in a method every call of which passes that loop's batch is judged by the same loaders.
- Quiet: copies that pass `non_blocking=True`, constructions that pass loaders disagreeing on pinning, and a
  class given something that is not a loader.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

DATA = textwrap.dedent("""\
    import torch


    def load_data(train_set, test_set, batch_size):
        train_dataset = torch.utils.data.DataLoader(train_set, batch_size=batch_size, pin_memory=True)
        test_dataset = torch.utils.data.DataLoader(test_set, batch_size=batch_size, pin_memory=True)
        return train_dataset, test_dataset
""")

TRAIN = textwrap.dedent("""\
    import torch
    import data


    class Trainer:
        def __init__(self, train_ds, test_ds, gpu_id):
            self.train_ds = train_ds
            self.test_ds = test_ds
            self.gpu_id = gpu_id
            self.model = torch.nn.Linear(8, 1).cuda()
            self.optimizer = torch.optim.AdamW(self.model.parameters())

        def train_step(self, batch):
            clean = batch[0].to(self.gpu_id)
            noisy = batch[1].to(self.gpu_id)
            loss = (self.model(noisy) - clean).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return loss

        def train(self):
            for epoch in range(10):
                for idx, batch in enumerate(self.train_ds):
                    loss = self.train_step(batch)
                    if idx % 100 == 0:
                        print(loss.item())


    def main(rank, train_set, test_set):
        train_ds, test_ds = data.load_data(train_set, test_set, 4)
        trainer = Trainer(train_ds, test_ds, rank)
        trainer.train()
""")

COPIES = {("train.py", 14), ("train.py", 15)}


def _gpu202(tmp_path: Path, train: str = TRAIN, data: str = DATA) -> set:
    root = write_project(tmp_path / "p", {"data.py": data, "train.py": train})
    return {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero", "."))
            if code == "GPU202"}


def test_copies_of_a_stored_pinned_loaders_batches_are_reported(tmp_path: Path):
    assert COPIES <= _gpu202(tmp_path)


def test_non_blocking_copies_stay_quiet(tmp_path: Path):
    train = TRAIN.replace(".to(self.gpu_id)", ".to(self.gpu_id, non_blocking=True)")
    assert not _gpu202(tmp_path, train=train)


def test_constructions_disagreeing_on_pinning_stay_quiet(tmp_path: Path):
    train = TRAIN + textwrap.dedent("""\


        def debug(train_set):
            Trainer(torch.utils.data.DataLoader(train_set, pin_memory=False), None, 0).train()
    """)
    assert not _gpu202(tmp_path, train=train) & COPIES


def test_a_class_given_no_loader_stays_quiet(tmp_path: Path):
    train = TRAIN.replace("train_ds, test_ds = data.load_data(train_set, test_set, 4)",
                          "train_ds, test_ds = list(train_set), list(test_set)")
    assert not _gpu202(tmp_path, train=train)
