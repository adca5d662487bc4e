"""Kinds do not depend on the order in which rules ask (issue 11, recall): `t = t[j]` refers to `t` on both
sides, so deciding the kind of `t` asks about `t[j]`, which asks about `t` again; that inner question is cut short
(unknown). The cut answer must not be remembered for the inner `t`, or a later question about `t[j]` (GPU111's
boolean-mask index, YOLOv3's `build_targets`) gets "unknown" although `t` is a tensor on every path.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from gpulint.analysis import ModuleAnalysis
from gpulint.analysis.kinds import Kind
from gpulint.rule import all_rules
from gpulint.runner import lint_source
from test_model_code import check, found

TRAIN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def main(model, dataset, opt):
        loader = DataLoader(dataset, batch_size=8, pin_memory=True)
        for x, boxes in loader:
            x = x.cuda(non_blocking=True)
            boxes = boxes.cuda(non_blocking=True)
            loss = model(x).sum()
            t = boxes * 2
            if len(t):
                j = t[:, 0] > 0.5
                t = t[j]
            else:
                t = boxes[0]
            loss = loss + t.sum()
            loss.backward()
            opt.step()
""")


def test_mask_index_of_a_name_rebound_from_itself_is_reported(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN)
    assert ("train.py", 14, "GPU111") in found(check(tmp_path, "--no-cache", "train.py"))


def _rebind(module: cst.Module) -> cst.Assign:
    """The `t = t[j]` statement."""
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if isinstance(node.value, cst.Subscript) and module.code_for_node(node) == "t = t[j]":
                found.append(node)

    module.visit(Finder())
    return found[0]


def test_kind_is_the_same_whichever_node_is_asked_first():
    for first in ("target", "value"):
        analysis = ModuleAnalysis(cst.parse_module(TRAIN), TRAIN, None)
        rebind = _rebind(analysis.module)
        if first == "target":
            assert analysis.kinds.of(rebind.targets[0].target) is Kind.TENSOR
        assert analysis.kinds.of(rebind.value) is Kind.TENSOR, first
        assert analysis.kinds.of(rebind.value.value) is Kind.TENSOR, first


MASK_REBOUND = textwrap.dedent("""\
    import torch


    def train(model, loader, opt):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            out = model(x)
            mask = torch.isfinite(y)
            if out.dim() > 1:
                mask = mask & (y > 0)
            picked = out[mask]
            loss = picked.sum()
            loss.backward()
            opt.step()
""")


def test_a_mask_rebound_from_itself_is_a_mask_and_the_file_is_checked(tmp_path: Path):
    """`mask = mask & other` made the boolean-mask question ask about `mask` again without end: GPU111 gave up with
    "too deeply nested" and the run exited 2, even with --exit-zero (a contrastive-loss file of the ninth set)."""
    from click.testing import CliRunner

    from gpulint.cli import main

    path = tmp_path / "train.py"
    path.write_text(MASK_REBOUND)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--exit-zero", "--select", "GPU111", str(path)])
    assert result.exit_code == 0, result.output
    assert "too deeply nested" not in result.output
    assert "train.py:11:18: GPU111" in result.output


# A dict of layer snapshots mixed back into the residual stream (heldout26, modded-nanogpt's `train_gpt.py`: the
# whole file went unchecked, "too deeply nested for gpulint's analysis", although CPython parses it). Where
# `cache[3]` lives asks where `x` lives; whether `x` is a loader element left on the host asks whether its
# rebinding `x + gate * cache[3]` keeps it off the device, which asks the kind of `cache[3]` again.
SNAPSHOTS = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(6)])
        self.gates = nn.Parameter(torch.ones(2))

    def forward(self, x):
        x = torch.cat([x[:1], x[1:] + x[:-1]])
        cache = {0: x}
        for i, layer in enumerate(self.layers):
            if i == 4:
                x = x + self.gates[0] * cache[3]
            x = layer(x)
            cache[i] = x
        return x + self.gates[1] * cache[3]


def train(loader):
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        opt.step()
        print(loss.item())
"""


def test_a_dict_of_snapshots_mixed_back_into_the_stream_is_checked_by_every_rule():
    result = lint_source(SNAPSHOTS, "model.py", frozenset(all_rules()))
    assert result.errors == []  # was: GPU105 and GPU111 "too deeply nested for ...'s analysis; not checked"
    assert ("GPU101", 29) in {(d.code, d.location.row) for d in result.diagnostics}
