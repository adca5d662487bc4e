"""Pinning decided by the script's own flags (analysis/flags.py): `pin_memory=args.pin_mem` with `--pin-mem` a
`store_true` flag is off in the default run (timm's and efficientdet-pytorch's training scripts), unless
`parser.set_defaults(pin_mem=True)` turns it on (DeiT, MAE); a project loader factory's `pin_memory=pin_mem`
parameter is resolved at each call, also through a prefetcher class that wraps the loader."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpulint.runner import lint_source

SCRIPT = """\
import argparse
import torch
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
{flag}
args = parser.parse_args()
model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
loader = DataLoader(torch.randn(64, 8), batch_size=8, pin_memory=args.pin_mem)
for x in loader:
    loss = model(x.cuda(non_blocking=True)).sum()
    loss.backward()
    opt.step()
"""


def messages(flag: str) -> list[str]:
    result = lint_source(SCRIPT.format(flag=flag), "train.py", frozenset({"GPU201"}))
    return [d.message for d in result.diagnostics]


@pytest.mark.parametrize("flag", [
    "parser.add_argument('--pin-mem', action='store_true', default=False)",
    "parser.add_argument('--pin-mem', action='store_true')",
    "parser.add_argument('--no-pin', dest='pin_mem', action='store_true')\nparser.set_defaults(pin_mem=False)",
])
def test_a_flag_off_by_default_is_an_unpinned_loader(flag):
    found = messages(flag)
    assert len(found) == 1 and "`pin_memory=args.pin_mem`, a flag that is off by default" in found[0]


@pytest.mark.parametrize("flag", [
    "parser.add_argument('--pin-mem', action='store_true')\nparser.set_defaults(pin_mem=True)",  # DeiT, MAE
    "parser.add_argument('--pin_mem', type=str2bool, default=True)",  # ConvNeXt
    "parser.add_argument('--no-pin-mem', dest='pin_mem', action='store_false')",
    "parser.add_argument('--pin_mem', default=os.environ.get('PIN'))",  # not a literal: unknown
    "",  # not declared here: unknown
])
def test_a_flag_on_by_default_or_unknown_is_not_reported(flag):
    assert messages(flag) == []


LOADER = """\
import torch


class PrefetchLoader:
    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        for x in self.loader:
            yield x.cuda(non_blocking=True)


def create_loader(dataset, batch_size, pin_mem=False, use_prefetcher=True):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, pin_memory=pin_mem)
    if use_prefetcher:
        loader = PrefetchLoader(loader)
    return loader
"""

TRAIN = """\
import argparse
import torch
from loader import create_loader

parser = argparse.ArgumentParser()
parser.add_argument('--pin-mem', action='store_true', default=False)
args = parser.parse_args()
model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
loader = create_loader(torch.randn(64, 8), 8{pin})
for x in loader:
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize("pin,expected", [
    (", pin_mem=args.pin_mem", [10]),  # the flag is off by default
    ("", [10]),  # the factory's default
    (", pin_mem=True", []),
    (", True", []),  # positionally
])
def test_a_factory_pinning_by_its_parameter_is_resolved_at_the_call(tmp_path: Path, pin, expected):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "loader.py").write_text(LOADER)
    (tmp_path / "train.py").write_text(TRAIN.format(pin=pin))
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--output-format", "json",
                          "--select", "GPU201", "train.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert [d["location"]["row"] for d in json.loads(out.stdout)] == expected


# One reading of a declaration (`flags._declare`) serves the boolean defaults (`FlagDefaults.default`, the loader
# above) and the literal ones (`option_default`, which keeps `if opt.debug:` blocks quiet): they never disagree.

def _read(source: str, read: str = "args.pin_mem"):
    import libcst as cst

    from gpulint.analysis import ModuleAnalysis
    from gpulint.analysis.flags import flag_defaults, option_default

    analysis = ModuleAnalysis(cst.parse_module(source), source, None)
    expr = cst.parse_expression(read)
    return analysis.fact(flag_defaults).default(expr), option_default(analysis, expr)


def test_a_store_true_flag_defaults_to_false_for_both_readings():
    assert _read("parser.add_argument('--pin-mem', action='store_true')\n") == (False, False)


def test_set_defaults_wins_for_both_readings():
    source = "parser.add_argument('--pin-mem', action='store_true')\nparser.set_defaults(pin_mem=True)\n"
    assert _read(source) == (True, True)


def test_a_destination_declared_with_true_and_with_one_has_no_known_default():
    """`True == 1` in Python: declarations of another type disagree even where they compare equal."""
    from gpulint.analysis.flags import UNKNOWN

    source = "parser.add_argument('--pin-mem', default=True)\nparser.add_argument('--pin-mem', default=1)\n"
    assert _read(source) == (None, UNKNOWN)


def test_a_destination_named_by_a_variable_is_not_the_options_name():
    from gpulint.analysis.flags import UNKNOWN

    assert _read("parser.add_argument('--pin-mem', dest=name, action='store_true')\n") == (None, UNKNOWN)


def test_an_option_given_no_default_is_none_but_no_boolean():
    assert _read("parser.add_argument('--resume')\n", "args.resume") == (None, None)
