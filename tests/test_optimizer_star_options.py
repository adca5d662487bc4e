"""GPU402 over an optimizer built with `**options` the module can read (branch recall88): `optim.Adam(params,
**opt_args)` with `opt_args = dict(lr=lr, weight_decay=wd)` carries neither `fused` nor `foreach`, so the
optimizer is the default foreach one and is reported like `Adam(params, lr=lr, weight_decay=wd)`. Options that may
carry `fused=` (a parameter, another call's result, a dict naming `fused`) keep it silent.
"""

from __future__ import annotations

from projects import check, found, write_project

TRAIN = """\
import torch
from torch import optim


def main(loader, options, lr, wd):
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    opt_args = {opt_args}
    optimizer = optim.Adam(model.parameters(), **opt_args)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


def _lint(tmp_path, opt_args):
    return found(check(write_project(tmp_path, {"train.py": TRAIN.format(opt_args=opt_args)}),
                       "--no-cache", "--exit-zero", "--select", "GPU402", "."))


def test_options_known_to_leave_out_fused_are_reported(tmp_path):
    assert _lint(tmp_path, "dict(lr=lr, weight_decay=wd)") == {("train.py", 8, "GPU402")}


def test_a_literal_dict_of_options_is_reported(tmp_path):
    assert _lint(tmp_path, '{"lr": lr, "weight_decay": wd}') == {("train.py", 8, "GPU402")}


def test_options_naming_fused_or_foreach_are_left_alone(tmp_path):
    assert _lint(tmp_path, "dict(lr=lr, fused=True)") == set()
    assert _lint(tmp_path, "dict(lr=lr, foreach=False)") == set()


def test_options_from_a_parameter_are_left_alone(tmp_path):
    assert _lint(tmp_path, "options") == set()


def test_options_printed_and_a_key_popped_are_still_known(tmp_path):
    """timm's `create_optimizer` shape (ConvNeXt-V2, VideoMAEv2): `print("optimizer settings:", opt_args)` only
    shows the dict and `opt_args.pop('eps', None)` only takes a key away, so `fused` is still certainly absent."""
    assert _lint(tmp_path, "dict(lr=lr, weight_decay=wd)\n    print('optimizer settings:', opt_args)\n"
                 "    opt_args.pop('eps', None)") == {("train.py", 10, "GPU402")}


def test_options_handed_to_a_project_function_are_left_alone(tmp_path):
    assert _lint(tmp_path, "dict(lr=lr, weight_decay=wd)\n    tweak(opt_args)") == set()
