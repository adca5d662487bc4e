"""GPU2xx rules together: fixes of several transfer rules in one run, and what only a fix mode shows.

Single-rule cases (a code shape -> finding / fixed text) are the rules' VALID/INVALID examples."""

from __future__ import annotations

import textwrap

from gpulint.runner import FixMode, lint_source

PRELUDE = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda")
model = nn.Linear(8, 2).to(device)
dataset = TensorDataset(torch.randn(64, 8), torch.randn(64, 2))
"""


def lint(body: str, codes=("GPU201", "GPU202", "GPU203", "GPU204"), fix=FixMode.NONE):
    text = PRELUDE + textwrap.dedent(body)
    return lint_source(text, "t.py", frozenset(codes), fix=fix)


def test_one_fix_run_pins_the_loader_and_makes_its_copies_non_blocking():
    result = lint("""
        loader = DataLoader(dataset, batch_size=8)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            model(x).sum().backward()
    """, codes=("GPU201", "GPU202"), fix=FixMode.SAFE)
    assert "DataLoader(dataset, batch_size=8, pin_memory=True)" in result.source
    assert "x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)" in result.source
    assert not result.diagnostics



def test_device_to_host_copies_never_get_non_blocking():
    result = lint("""
        loader = DataLoader(dataset, batch_size=8, pin_memory=True)
        for x, y in loader:
            out = model(x.to(device, non_blocking=True))
            kept = out.to("cpu")
            also = y.to(torch.device("cpu"))
            last = out.cpu()
            out.sum().backward()
    """, fix=FixMode.UNSAFE)
    assert not [d for d in result.diagnostics if d.code == "GPU202"]
    assert 'out.to("cpu")' in result.source and "out.cpu()" in result.source







def test_random_factories_need_unsafe_fixes():
    body = """
        loader = DataLoader(dataset, pin_memory=True)
        for x, y in loader:
            noise = torch.randn(8).to(device)
            model(x.to(device, non_blocking=True) + noise).sum().backward()
    """
    assert "torch.randn(8).to(device)" in lint(body, codes=("GPU203",), fix=FixMode.SAFE).source
    assert "torch.randn(8, device=device)" in lint(body, codes=("GPU203",), fix=FixMode.UNSAFE).source
