"""A block under a test of the trainer's own step counter against 0 runs on the run's first update only
(unset_options.first_step_only with `held`, read in loops.py `_walk_up`): fairseq's `Trainer.train_step` empties
the CUDA cache `if self.cuda and self.get_num_updates() == 0:`. Only counters the trainer holds count here (a
loop's own `step` starts again with the loop); an `or` is not a first-update test."""

from __future__ import annotations

from tests.projects import check, found, write_project

TRAIN = '''import torch


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.cuda = torch.cuda.is_available()
        self._num_updates = 0

    def get_num_updates(self):
        return self._num_updates

    def train_step(self, samples):
        for i, sample in enumerate(samples):
            loss = self.model(sample.cuda(non_blocking=True)).sum()
            loss.backward()
            if {test}:
                torch.cuda.empty_cache()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self._num_updates += 1


def main(model, loader):
    trainer = Trainer(model.cuda(), torch.optim.Adam(model.parameters(), fused=True))
    for samples in loader:
        trainer.train_step(samples)
'''

EMPTY = ("train.py", 19, "GPU110")


def _lint(tmp_path, test: str) -> set:
    return found(check(write_project(tmp_path / "p", {"train.py": TRAIN.format(test=test)}), "--no-cache"))


def test_the_first_update_only(tmp_path):
    assert EMPTY not in _lint(tmp_path, "self.cuda and self.get_num_updates() == 0")


def test_an_or_is_not_first_only(tmp_path):
    assert EMPTY in _lint(tmp_path, "self.get_num_updates() == 0 or self.cuda")

