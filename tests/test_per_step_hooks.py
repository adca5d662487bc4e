"""Backward hooks registered on per-step tensors (branch recall77).

`loss.register_hook(check)` inside a training loop registers `check` on a tensor made this step, so `check` runs
in every backward: its body is per-step code, as if the loop called it. A hook registered once outside the loop
(the registration itself runs once), a hook registered in an evaluation loop, and a hook whose body reads nothing
from the device stay quiet.
"""

from __future__ import annotations

from projects import lint_script

HEAD = """\
import torch
import torch.nn as nn


def raise_if_nan(t):
    if torch.isnan(t):
        raise ValueError("nan")


model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
"""

PER_STEP = HEAD + """\
for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).sum()
    loss.register_hook(raise_if_nan)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_hook_registered_on_a_per_step_loss_runs_every_step(tmp_path):
    assert lint_script(tmp_path, PER_STEP) == {(6, "GPU108")}


def test_hook_registered_every_step_through_post_accumulate_grad_hook(tmp_path):
    text = PER_STEP.replace("loss.register_hook(raise_if_nan)",
                            "model.weight.register_post_accumulate_grad_hook(raise_if_nan)")
    assert lint_script(tmp_path, text) == {(6, "GPU108")}


def test_hook_registered_once_outside_the_loop_is_quiet(tmp_path):
    text = HEAD + """\
model.weight.register_hook(raise_if_nan)
for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    assert lint_script(tmp_path, text) == set()


def test_hook_registered_under_a_periodic_guard_is_quiet(tmp_path):
    text = PER_STEP.replace("    loss.register_hook(raise_if_nan)",
                            "    if step % 100 == 0:\n        loss.register_hook(raise_if_nan)")
    assert lint_script(tmp_path, text) == set()


def test_hook_that_reads_nothing_from_the_device_is_quiet(tmp_path):
    text = PER_STEP.replace("    if torch.isnan(t):\n        raise ValueError(\"nan\")", "    return t * 2")
    assert lint_script(tmp_path, text) == set()


# -- a helper that clears each optimizer of a collection is not a training loop -----------------------------------
SOLVER = """\
import torch
import torch.nn as nn


class Solver:
    def __init__(self):
        self.gen = nn.Linear(4, 4).cuda()
        self.disc = nn.Linear(4, 1).cuda()
        self.optims = {"gen": torch.optim.Adam(self.gen.parameters(), fused=True),
                       "disc": torch.optim.Adam(self.disc.parameters(), fused=True)}

    def _reset_grad(self):
        for optim in self.optims.values():
            optim.zero_grad()

    def train(self, total_iters):
        for i in range(total_iters):
            x = torch.randn(8, 4, device="cuda")
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = self.disc(self.gen(x)).mean()
            self._reset_grad()
            loss.backward()
            self.optims["disc"].step()
            print(loss.item())


Solver().train(1000)
"""


def test_loop_zeroing_each_optimizer_leaves_the_caller_a_step_loop(tmp_path):
    assert lint_script(tmp_path, SOLVER) == {(24, "GPU101")}


def test_step_loop_over_optimizers_inside_a_training_loop_still_trains(tmp_path):
    text = SOLVER.replace('            self.optims["disc"].step()\n',
                          '            for optim in self.optims.values():\n                optim.step()\n')
    assert (25, "GPU101") in lint_script(tmp_path, text)


def test_loop_that_also_computes_is_not_a_plain_fan_out(tmp_path):
    # a loop over optimizers that does more than clear or step each stays as it was: the caller's loop is an epoch
    text = SOLVER.replace("            optim.zero_grad()\n",
                          "            optim.zero_grad()\n            print(optim)\n")
    assert (24, "GPU101") not in lint_script(tmp_path, text)
