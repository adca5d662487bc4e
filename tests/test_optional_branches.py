"""A read a project function makes only when a caller gives an `Optional` parameter a value (`if p is not None:`,
`if p:`, also as one operand of an `and`: `if not torch.jit.is_scripting() and counts is not None:`), where that
parameter defaults to None, costs nothing at a call leaving it out: the summary records the branch as not taken
for such calls (`Sink.when` with `NOT_NONE`/`TRUTHY`), along the whole path (a model's `forward` handing its input
to a trimming helper only when given per-hop counts). A call passing the parameter still reports."""

from __future__ import annotations

from tests.projects import lint_files

HELPERS = '''
import torch


def trim(x, counts):
    return x[x > 0]


def pick(x):
    return x[x.sum(-1) > 0]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, counts=None):
        if not torch.jit.is_scripting() and counts is not None:
            x = trim(x, counts)
        return self.lin(x)


class Picker(Net):
    def forward(self, x, ids=None):
        if ids:
            x = pick(x)
        return self.lin(x)


class Keeper(Net):
    def forward(self, x, keep=None):
        if keep is None:
            pass
        else:
            x = pick(x)
        return self.lin(x)
'''

TRAIN = '''
import torch
from torch.utils.data import DataLoader

from helpers import Keeper, Net, Picker

model = Net().cuda()
picker = Picker().cuda()
keeper = Keeper().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(8)), batch_size=2, pin_memory=True)
for x, y in loader:
    x = x.cuda(non_blocking=True)
    plain = model(x)
    trimmed = model(x, counts=[4, 2])
    picked = picker(x, ids=[1])
    kept = keeper(x, keep=True)
    left_none = model(x, counts=None)
    unpicked = picker(x)
    unkept = keeper(x)
    plain.sum().backward()
    opt.step()
'''


def test_a_call_leaving_an_optional_parameter_out_skips_its_branch(tmp_path):
    found = {row for name, row, code in lint_files(tmp_path, {"helpers.py": HELPERS, "train.py": TRAIN}, "GPU112")
             if name == "train.py"}
    assert {14, 19, 20} & found == set()  # `model(x)`: no branch of `forward` that reads is taken
    assert 18 not in found  # `counts=None` is the default again
    assert {15, 17} <= found  # each call giving the parameter reaches a boolean mask
    # (`if ids:` is read as an option whose reads are not the call's, given or not: analysis/project.py `_flag`)
