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
