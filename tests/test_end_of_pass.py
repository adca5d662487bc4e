"""A test that holds only on the last iteration of a pass (issue 11, tenth set: a point-tracking trainer evaluates
and frees the cache under `if (i_batch >= len(train_loader) - 1) or (total_steps == 1 and ...)`): the branch runs
once per epoch, not every step, so its per-step rules stay quiet (GPU110 on `torch.cuda.empty_cache()` there was a
false alarm).
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

SCRIPT = """\
import torch


def train(model, optimizer, loader, epochs, warmup):
    total_steps = 0
    for epoch in range(epochs):
        for i_batch, (x, y) in enumerate(loader):
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_steps += 1
            if {test}:
                torch.cuda.empty_cache()
"""


def _codes(tmp_path: Path, test: str) -> set:
    root = write_project(tmp_path, {"train.py": SCRIPT.format(test=test)})
    return found(check(root, "--no-cache", "."))


def test_the_last_batch_of_an_epoch_is_not_every_step(tmp_path: Path):
    assert ("train.py", 15, "GPU110") not in _codes(tmp_path, "i_batch >= len(loader) - 1")


def test_or_the_first_step_is_still_rare(tmp_path: Path):
    keys = _codes(tmp_path, "(i_batch >= len(loader) - 1) or (total_steps == 1 and epoch == 0)")
    assert ("train.py", 15, "GPU110") not in keys


def test_the_mirrored_spelling_counts(tmp_path: Path):
    assert ("train.py", 15, "GPU110") not in _codes(tmp_path, "len(loader) <= i_batch + 1")


def test_a_threshold_that_is_not_the_length_still_runs_every_step(tmp_path: Path):
    """`i_batch >= warmup`: true on every step after the warm-up."""
    assert ("train.py", 15, "GPU110") in _codes(tmp_path, "i_batch >= warmup")
