"""A step function handed to the loop as a callable parameter, a bound method of a class of the same module
(recall22; DeepLearningExamples' ConvNets `train(train_step, ...)` with `training_step = trainer.train_step`):
the loop calls `train_step(x, y)` every step (the parameter named as the method is), and every call site of `train` passes `Trainer.train_step`, which
ends with `torch.cuda.synchronize()`. The synchronize inside the method was already reported (the method runs
every step); the per-step call is now reported too (GPU112, related location the synchronize), as a call of a
helper of another module is. A call site passing something else keeps the call unknown (quiet).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

TRAINING = textwrap.dedent("""\
    import torch


    class Trainer:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer

        def train_step(self, images, labels):
            loss = torch.nn.functional.cross_entropy(self.model(images), labels)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            torch.cuda.synchronize()
            return loss


    def run_epoch(train_step, loader):
        for images, labels in loader:
            images = images.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True)
            loss = train_step(images, labels)


    def fit(trainer: Trainer, loader, epochs):
        step = trainer.train_step
        for epoch in range(epochs):
            run_epoch(step, loader)
""")

MAIN = textwrap.dedent("""\
    import torch
    from training import Trainer, fit


    def main(model, loader):
        model = model.cuda()
        trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1, fused=True))
        fit(trainer, loader, 10)
""")

CALL = ("training.py", 22, "GPU112")


def _lint(root: Path, training: str = TRAINING) -> list:
    return check(write_project(root, {"training.py": training, "main.py": MAIN}), "--no-cache", ".")


def test_the_call_of_a_passed_bound_method_that_synchronizes_is_reported(tmp_path: Path):
    items = _lint(tmp_path)
    assert CALL in found(items)
    assert ("training.py", 14, "GPU109") in found(items)  # the synchronize itself, as before
    [call] = [d for d in items if (d["location"]["row"], d["code"]) == (22, "GPU112")]
    assert "Trainer.train_step" in call["message"]
    assert [r["location"]["row"] for r in call["related"]] == [14]


def test_a_call_site_passing_another_function_keeps_it_quiet(tmp_path: Path):
    training = TRAINING + "\n\ndef probe(loader):\n    run_epoch(print, loader)\n"
    assert CALL not in found(_lint(tmp_path, training))
