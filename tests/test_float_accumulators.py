"""An accumulator started at a Python number (`running_loss, num_tokens = 0.0, 0`) and fed a tensor that a project
helper or method returns (`running_loss += self._loss_step(batch) * n`, `total += compute_loss(model, x, y)`) is
a device tensor from then on: reading it every step (`(running_loss / n).item()`, an f-string) is a sync. Fed
host numbers (`+= loss.item()`, `+= float(loss)`, a helper returning `loss.item()`), it stays a host number.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found

LOSSES = """\
import torch.nn.functional as F


def compute_loss(model, x, y):
    return F.cross_entropy(model(x), y)


def loss_value(model, x, y):
    return F.cross_entropy(model(x), y).item()
"""

TRAIN = """\
import torch
from losses import compute_loss, loss_value


class Recipe:
    def _loss_step(self, batch):
        logits = self._model(batch["tokens"])
        return torch.nn.functional.cross_entropy(logits, batch["labels"])

    def train(self):
        self._model = self._model.cuda()
        running_loss, num_tokens = 0.0, 0
        for batch in self._dataloader:
            batch = {{k: v.cuda(non_blocking=True) for k, v in batch.items()}}
            self._model(batch["tokens"]).sum().backward()
            running_loss += {fed}
            num_tokens += batch["tokens"].shape[0]
            self.optimizer.step()
            print(f"{{running_loss / num_tokens}}")
            running_loss, num_tokens = 0.0, 0


def main(model, loader, opt):
    model = model.cuda()
    total, seen = 0.0, 0
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        model(x).sum().backward()
        opt.step()
        total += {helper}
        seen += x.shape[0]
        print(f"{{total / seen}}")
"""


def _lint(root: Path, fed: str, helper: str) -> set:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    (root / "losses.py").write_text(LOSSES)
    (root / "train.py").write_text(textwrap.dedent(TRAIN.format(fed=fed, helper=helper)))
    return {(line, code) for _, line, code in found(check(root, "--no-cache", "train.py"))}


def test_an_accumulator_fed_a_project_helpers_tensor_is_a_tensor(tmp_path):
    got = _lint(tmp_path, "self._loss_step(batch) * 2", "compute_loss(model, x, y)")
    assert (19, "GPU107") in got  # f"{running_loss / num_tokens}": the method returns a tensor
    assert (32, "GPU107") in got  # f"{total / seen}": the helper in losses.py returns one


def test_host_numbers_keep_the_accumulator_on_the_host(tmp_path):
    got = _lint(tmp_path, "self._loss_step(batch).item()", "loss_value(model, x, y)")
    assert (19, "GPU107") not in got and (32, "GPU107") not in got
    got = _lint(tmp_path / "b", "float(self._loss_step(batch))", "float(compute_loss(model, x, y))")
    assert (19, "GPU107") not in got and (32, "GPU107") not in got
