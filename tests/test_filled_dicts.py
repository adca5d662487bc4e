"""Dicts of tensors filled item by item (issue 11, heldout7: guided-diffusion's classifier script builds
`losses = {}`, stores `losses["train_loss"] = loss.detach()`, and hands the dict to `log_loss_dict`, whose
`.item()` runs on every value each step).

A dict started empty whose item assignments store a tensor carries tensors, as the literal `{"loss": loss}`
does, so a per-step call handing it to a project helper that reads its values is a GPU112 finding. A dict filled
only with numbers stays quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

LOGGING = textwrap.dedent("""\
    def log_values(values):
        for key, value in values.items():
            print(key, value.mean().item())
""")

TRAIN = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F
    from logging_utils import log_values


    def train(model, loader, opt):
        model = model.cuda()
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = F.cross_entropy(model(x), y, reduction="none")
            stats = {{}}
            stats["loss"] = {stored}
            log_values(stats)
            loss.mean().backward()
            opt.step()
""")


def _findings(tmp_path, stored):
    root = write_project(tmp_path / "p", {"logging_utils.py": LOGGING, "train.py": TRAIN.format(stored=stored)})
    return found(check(root))


def test_dict_filled_with_tensors_carries_them_to_the_helper(tmp_path):
    assert ("train.py", 13, "GPU112") in _findings(tmp_path, "loss.detach()")


def test_dict_filled_with_numbers_stays_quiet(tmp_path):
    assert ("train.py", 13, "GPU112") not in _findings(tmp_path, "0.5")
