"""A trainer class whose step writes metrics through a period attribute and a static method (issue 11, recall;
detectron2's `SimpleTrainer`): `run_step` calls `self._write_metrics(losses)`, which runs
`if (self.iter + 1) % self.metric_period == 0: Trainer.write_metrics(losses)` with `metric_period` stored in
`__init__` from a parameter whose default is 1, and the static method reads every loss with `.cpu().item()`.

- A period that defaults to 1 is every step (as the script's own `--every` option with default 1 already was);
  a default of 20, or a period the class sets again elsewhere, stays periodic.
- `Trainer.write_metrics(...)`, a `@staticmethod` called through its class, is followed like `self.m(...)`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from test_model_code import check, found

TRAINER = textwrap.dedent("""\
    import torch


    class Trainer:
        def __init__(self, model, loader, opt, metric_period=1):
            self.model = model
            self.loader = loader
            self.opt = opt
            self.metric_period = metric_period
            self.iter = 0

        def train(self, steps):
            for self.iter in range(steps):
                self.run_step()

        def run_step(self):
            batch = next(iter(self.loader))
            losses = self.model(batch.cuda(non_blocking=True))
            total = sum(losses.values())
            self.opt.zero_grad()
            total.backward()
            self.opt.step()
            self._write_metrics(losses)

        def _write_metrics(self, losses):
            if (self.iter + 1) % self.metric_period == 0:
                Trainer.write_metrics(losses)

        @staticmethod
        def write_metrics(losses):
            values = {k: v.detach().cpu().item() for k, v in losses.items()}
            print(values)
""")


def _lint(root: Path, text: str) -> set:
    (root / "trainer.py").write_text(text)
    return found(check(root, "--no-cache", "--select", "GPU101,GPU104", "trainer.py"))


def test_metrics_written_every_step_by_default(tmp_path: Path):
    keys = _lint(tmp_path, TRAINER)
    assert {k for k in keys if k[1] == 31}, keys


@pytest.mark.parametrize("change", [
    ("metric_period=1", "metric_period=20"),  # a real period
    ("        self.iter = 0\n", "        self.iter = 0\n        self.metric_period = 50\n"),  # set again
])
def test_a_real_period_stays_quiet(tmp_path: Path, change):
    text = TRAINER.replace(*change)
    assert text != TRAINER
    assert not {k for k in _lint(tmp_path, text) if k[1] in (30, 31)}


def test_static_method_through_its_class_is_followed(tmp_path: Path):
    text = TRAINER.replace("        if (self.iter + 1) % self.metric_period == 0:\n"
                           "            Trainer.write_metrics(losses)\n",
                           "        Trainer.write_metrics(losses)\n")
    assert text != TRAINER
    keys = _lint(tmp_path, text)
    assert {k for k in keys if k[1] == 30}, keys
