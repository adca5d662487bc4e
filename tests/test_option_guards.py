"""Code behind a debug or analysis option that is off by default is not every-step code (analysis/test_mode.py,
`diagnostic_off`): the options are declared by the project's parser in another module (`opts.py`), the trainer reads
them from the `opt` it receives, and a method called only under such a test is off too."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

OPTS = """import argparse


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument('--debug', type=int, default={debug})
    parser.add_argument('--eval_oracle_box', action='store_true')
    parser.add_argument('--test', action='store_true')
    return parser.parse_args()
"""

TRAINER = """import torch


class Trainer:
    def __init__(self, opt, model, optimizer):
        self.opt = opt
        self.model = model
        self.optimizer = optimizer
        self.results = []

    def run_epoch(self, loader):
        opt = self.opt
        for x, y in loader:
            x = x.cuda(non_blocking=True)
            y = y.cuda(non_blocking=True)
            out = self.model(x)
            if opt.eval_oracle_box:
                print(y.detach().cpu().numpy())
            loss = (out - y).pow(2).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            if opt.debug > 0:
                self.show(out)
            if opt.test:
                self.save(out)

    def show(self, out):
        print(out.detach().cpu().numpy())

    def save(self, out):
        self.results.append(out.detach().cpu().numpy())
"""

TRAIN = """import torch
from torch.utils.data import DataLoader, TensorDataset

from opts import parse
from trainer import Trainer

opt = parse()
model = torch.nn.Linear(8, 2).cuda()
loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 2)), batch_size=4, pin_memory=True,
                    num_workers=2)
trainer = Trainer(opt, model, torch.optim.SGD(model.parameters(), lr=0.1, fused=True))
for epoch in range(3):
    trainer.run_epoch(loader)
"""


def _rows(root: Path) -> set:
    return {(row, code) for path, row, code in found(check(root, "--no-cache", "trainer.py"))
            if path.endswith("trainer.py")}


def test_debug_and_oracle_options_off_by_default_are_not_every_step(tmp_path: Path) -> None:
    root = write_project(tmp_path / "off", {"opts.py": OPTS.format(debug=0), "trainer.py": TRAINER,
                                            "train.py": TRAIN})
    rows = _rows(root)
    assert (18, "GPU104") not in rows, rows  # `if opt.eval_oracle_box:` (store_true)
    assert (29, "GPU104") not in rows, rows  # `show`, called only under `if opt.debug > 0:` (default 0)
    assert (32, "GPU104") in rows, rows  # `--test` selects an evaluation the program ships: a real run


def test_an_option_on_by_default_still_runs_every_step(tmp_path: Path) -> None:
    root = write_project(tmp_path / "on", {"opts.py": OPTS.format(debug=1), "trainer.py": TRAINER,
                                           "train.py": TRAIN})
    assert (29, "GPU104") in _rows(root)


def test_an_option_the_trainer_sets_itself_is_unknown(tmp_path: Path) -> None:
    trainer = TRAINER.replace("        opt = self.opt\n", "        opt = self.opt\n        opt.debug = 2\n")
    root = write_project(tmp_path / "set", {"opts.py": OPTS.format(debug=0), "trainer.py": trainer,
                                            "train.py": TRAIN})
    assert (30, "GPU104") in _rows(root)
