"""A submodule's `forward` called every step by its owner's `forward` with a flag left off (analysis/forward.py
`_flags_left_off`, loops.py `_walk_up`): VITS's `self.dp(x, x_mask, w, g=g)` leaves `reverse=False`, so the
`else:` of `if not reverse:` in the duration predictor (the inference path, which only `infer` selects with
`reverse=True`) does not run every step; the `if not reverse:` body does."""

from __future__ import annotations

from tests.projects import check, found, write_project

MODELS = '''import torch
import torch.nn as nn


class DurationPredictor(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.proj = nn.Conv1d(channels, 2, 1)

    def forward(self, x, w=None, reverse=False):
        x = self.proj(x)
        if not reverse:
            noise = torch.randn(w.size(0), 2, w.size(2)).to(device=x.device)
            return (x - noise).sum()
        else:
            z = torch.randn(x.size(0), 2, x.size(2)).to(device=x.device)
            return x + z


class Synthesizer(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.dp = DurationPredictor(channels)

    def forward(self, x, w):
        return self.dp(x, w{passed})

    def infer(self, x):
        return self.dp(x, reverse=True)
'''

TRAIN = '''import torch
from models import Synthesizer


def main():
    device = torch.device("cuda")
    model = Synthesizer(8).to(device)
    opt = torch.optim.Adam(model.parameters(), fused=True)
    loader = torch.utils.data.DataLoader(torch.randn(64, 8, 4), batch_size=4, num_workers=2, pin_memory=True)
    for x in loader:
        x = x.to(device, non_blocking=True)
        loss = model(x, x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
'''

TRAINING_PATH = ("models.py", 13, "GPU203")
INFERENCE_PATH = ("models.py", 16, "GPU203")


def _lint(tmp_path, passed: str) -> set:
    root = write_project(tmp_path / "p", {"models.py": MODELS.format(passed=passed), "train.py": TRAIN})
    return found(check(root, "--no-cache"))


def test_the_branch_a_flag_left_off_selects_is_not_per_step(tmp_path):
    got = _lint(tmp_path, "")
    assert TRAINING_PATH in got  # `if not reverse:` runs every step
    assert INFERENCE_PATH not in got  # its `else:` runs only where `infer` passes `reverse=True`


def test_the_literal_false_leaves_it_off_too(tmp_path):
    got = _lint(tmp_path, ", reverse=False")
    assert TRAINING_PATH in got and INFERENCE_PATH not in got


def test_a_flag_the_step_may_set_keeps_the_branch(tmp_path):
    got = _lint(tmp_path, ", reverse=x.requires_grad")
    assert TRAINING_PATH in got and INFERENCE_PATH in got


def test_a_flag_the_step_sets_keeps_the_branch(tmp_path):
    got = _lint(tmp_path, ", reverse=True")
    assert INFERENCE_PATH in got
