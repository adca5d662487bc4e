"""Modules a script imports by name and functions it keeps under another name (issue 11, recall): research code
picks its model module with `MODEL = importlib.import_module(FLAGS.model)` (a command-line option with a literal
default, on a folder the script puts on `sys.path`) and keeps the loss as `criterion = MODEL.get_loss`, then
calls `criterion(end_points, config)` every step. gpulint follows the default the program runs with, as for every
option default: the loss's host copies are per-step costs, reported in the loss module and at the call.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

LOSS = textwrap.dedent("""\
    import torch

    WEIGHTS = [0.2, 0.8]


    def get_loss(end_points, config):
        pred = end_points["pred"]
        w = torch.Tensor(WEIGHTS).cuda()
        return (pred * w).sum()
""")

NET = textwrap.dedent("""\
    import torch
    from lossmod import get_loss


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, x):
            return {"pred": self.lin(x)}
""")

TRAIN = textwrap.dedent("""\
    import argparse
    import importlib
    import os
    import sys

    import torch

    BASE_DIR = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(os.path.join(BASE_DIR, "models"))

    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="net", help="model module in models/")
    FLAGS = parser.parse_args()

    MODEL = importlib.import_module(FLAGS.model)
    net = MODEL.Net().cuda()
    criterion = MODEL.get_loss
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, fused=True)


    def train_one_epoch(loader):
        for x in loader:
            x = x.cuda(non_blocking=True)
            end_points = net(x)
            loss = criterion(end_points, None)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")

BODY = ("models/lossmod.py", 8, "GPU203")  # `torch.Tensor(WEIGHTS).cuda()` in get_loss, every step
CALL = ("train.py", 25, "GPU112")  # `criterion(end_points, None)` in the batch loop


def _lint(root: Path, train: str, *named: str) -> set:
    write_project(root, {"models/lossmod.py": LOSS, "models/net.py": NET, "train.py": train})
    return found(check(root, "--no-cache", *(named or (".",))))


def test_a_module_imported_by_an_option_default_is_followed(tmp_path: Path):
    assert {BODY, CALL} <= _lint(tmp_path, TRAIN)


def test_the_loss_module_named_alone_finds_its_per_step_caller(tmp_path: Path):
    assert BODY in _lint(tmp_path, TRAIN, "models/lossmod.py")


def test_a_module_imported_by_a_literal_name_is_followed(tmp_path: Path):
    train = TRAIN.replace("importlib.import_module(FLAGS.model)", 'importlib.import_module("net")')
    assert {BODY, CALL} <= _lint(tmp_path, train)


def test_a_function_kept_under_another_name_from_a_plain_import(tmp_path: Path):
    train = TRAIN.replace("MODEL = importlib.import_module(FLAGS.model)", "import lossmod\nimport net as MODEL") \
        .replace("criterion = MODEL.get_loss", "criterion = lossmod.get_loss")
    results = _lint(tmp_path, train)
    assert BODY in results and ("train.py", 26, "GPU112") in results


def test_an_option_without_a_default_names_no_module(tmp_path: Path):
    """`--model` given no default: which module runs is not known, so the loss is not followed."""
    train = TRAIN.replace('default="net", ', "required=True, ")
    results = _lint(tmp_path, train)
    assert BODY not in results and CALL not in results


def test_an_option_the_script_overrides_names_no_module(tmp_path: Path):
    train = TRAIN.replace("FLAGS = parser.parse_args()\n", "FLAGS = parser.parse_args()\nFLAGS.model = 'other'\n")
    results = _lint(tmp_path, train)
    assert BODY not in results and ("train.py", 26, "GPU112") not in results


def test_a_name_bound_twice_is_not_an_alias(tmp_path: Path):
    """`criterion = MODEL.get_loss`, later `criterion = make_loss()`: which one a call reaches is not known."""
    train = TRAIN.replace("criterion = MODEL.get_loss\n",
                          "criterion = MODEL.get_loss\ncriterion = torch.nn.MSELoss()\n")
    results = _lint(tmp_path, train)
    assert BODY not in results and ("train.py", 26, "GPU112") not in results


# The model class chosen on the branches of a top-level `if` (votenet: `Detector = MODEL.BoxNet` when
# `--model boxnet`, else `Detector = MODEL.VoteNet`): with the default module, only one candidate exists there.
NET_COPYING = NET.replace('        return {"pred": self.lin(x)}',
                          '        w = torch.from_numpy(np.ones(2, dtype=np.float32)).cuda()\n'
                          '        return {"pred": self.lin(x) * w}').replace("import torch\n", "import numpy as np\nimport torch\n", 1)
CHOSEN = ("if FLAGS.model == 'boxnet':\n    Detector = MODEL.BoxNet\nelse:\n    Detector = MODEL.Net\n"
          "net = Detector().cuda()\n")
FORWARD = ("models/net.py", 12, "GPU203")  # `torch.from_numpy(np.ones(...)).cuda()` in Net.forward, every step


def _lint_chosen(root: Path, train: str, *named: str) -> set:
    write_project(root, {"models/lossmod.py": LOSS, "models/net.py": NET_COPYING, "train.py": train})
    return found(check(root, "--no-cache", *(named or (".",))))


def test_a_class_chosen_on_the_branches_of_an_if_is_the_one_that_exists(tmp_path: Path):
    train = TRAIN.replace("net = MODEL.Net().cuda()\n", CHOSEN)
    results = _lint_chosen(tmp_path, train)
    assert FORWARD in results and ("train.py", 28, "GPU112") in results
    assert FORWARD in _lint_chosen(tmp_path / "alone", train, "models/net.py")


def test_a_class_chosen_between_two_that_exist_is_unknown(tmp_path: Path):
    """Both candidates exist in the chosen module: which one runs is the option's choice, so neither is assumed."""
    train = TRAIN.replace("net = MODEL.Net().cuda()\n", CHOSEN.replace("MODEL.BoxNet", "MODEL.Other"))
    net = NET_COPYING + "\n\nclass Other(torch.nn.Module):\n    def forward(self, x):\n        return {'pred': x}\n"
    write_project(tmp_path, {"models/lossmod.py": LOSS, "models/net.py": net, "train.py": train})
    results = found(check(tmp_path, "--no-cache", "."))
    assert FORWARD not in results and ("train.py", 28, "GPU112") not in results


def test_a_class_bound_on_one_branch_only_is_unknown(tmp_path: Path):
    train = TRAIN.replace("net = MODEL.Net().cuda()\n", CHOSEN.replace("else:\n    Detector = MODEL.Net\n", ""))
    results = _lint_chosen(tmp_path, train)
    assert FORWARD not in results
