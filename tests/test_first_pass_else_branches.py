"""The `else` of `if loss_ema:` where `loss_ema = None` before the loop and the loop always sets it (Fast
AutoAugment's running loss: `loss_ema = loss.item()` on the first step, `loss_ema * 0.9 + ...` after): the first
pass only, no per-step sync (heldout32a labels it ACCEPTABLE; it was flagged blind). A name not bound to None before
the loop, or set back to None inside it, keeps the branch per step."""

from __future__ import annotations

from projects import lint_files

TRAIN = """\
    def train(model, loader, opt):
        loss_ema = None
        for x, y in loader:
            loss = model(x.cuda(non_blocking=True)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if loss_ema:
                loss_ema = loss_ema * 0.9 + loss.detach() * 0.1
            else:
                loss_ema = loss.item()
"""


def test_the_else_of_a_value_set_on_the_first_pass(tmp_path):
    assert not lint_files(tmp_path, {"train.py": TRAIN}, "GPU101")


def test_a_value_not_none_before_or_reset_inside_stays_per_step(tmp_path):
    zero = TRAIN.replace("loss_ema = None", "loss_ema = 0")
    assert lint_files(tmp_path, {"train.py": zero}, "GPU101") == {("train.py", 11, "GPU101")}
    reset = TRAIN.replace("            opt.step()\n", "            opt.step()\n            if x is None:\n                loss_ema = None\n")
    assert ("train.py", 13, "GPU101") in lint_files(tmp_path, {"train.py": reset}, "GPU101")
