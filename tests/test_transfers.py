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



def test_a_written_pin_memory_false_is_reported_and_set_only_by_an_unsafe_fix():
    """GPU201: `pin_memory=False` on a loader whose batches go to the GPU every step costs the same pageable copies
    as none passed; its fix reverses a written choice, so `--fix` alone keeps it."""
    body = """
        loader = DataLoader(dataset, batch_size=8, pin_memory=False)
        for x, y in loader:
            model(x.to(device)).sum().backward()
    """
    found = lint(body, codes=("GPU201",))
    assert [d.message for d in found.diagnostics] == [
        "`DataLoader` with `pin_memory=False` feeds a GPU every step: host-to-device copies block and cannot overlap"]
    assert "pin_memory=False" in lint(body, codes=("GPU201",), fix=FixMode.SAFE).source
    assert "DataLoader(dataset, batch_size=8, pin_memory=True)" in lint(body, codes=("GPU201",),
                                                                         fix=FixMode.UNSAFE).source
    kept = body.replace("pin_memory=False)", "pin_memory=False)  # noqa: GPU201")
    assert not lint(kept, codes=("GPU201",)).diagnostics
    unseen = body.replace("x.to(device)", "x")  # the batches are not seen going to the device
    assert not lint(unseen, codes=("GPU201",)).diagnostics


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


def test_host_arithmetic_over_a_factory_is_moved_to_the_device_only_by_an_unsafe_fix():
    body = """
        import math
        loader = DataLoader(dataset, pin_memory=True)
        for x, y in loader:
            freqs = torch.exp(-math.log(10000) * torch.arange(0, 8, dtype=torch.float32) / 8).to(device)
            model(x.to(device, non_blocking=True) * freqs).sum().backward()
    """
    found = lint(body, codes=("GPU203",)).diagnostics
    assert [d.location.row for d in found] == [PRELUDE.count("\n") + 5]
    assert "the arithmetic on it runs on the host" in found[0].message
    assert ".to(device)" in lint(body, codes=("GPU203",), fix=FixMode.SAFE).source  # exp may differ in the last bits
    fixed = lint(body, codes=("GPU203",), fix=FixMode.UNSAFE)
    assert "torch.exp(-math.log(10000) * torch.arange(0, 8, dtype=torch.float32, device=device) / 8)\n" in fixed.source
    assert not fixed.diagnostics


_DIFFUSION_STEP = """
    loader = DataLoader(dataset, batch_size=4, pin_memory=True)
    alphas_cumprod = torch.cumprod(1.0 - torch.linspace(1e-4, 0.02, 1000), dim=0)
    for x, y in loader:
        t = torch.randint(0, 1000, (x.shape[0],))
        a = alphas_cumprod[t].view(-1, 1).to(device)
        model(x.to(device, non_blocking=True) * a + t.to(device)[:, None]).sum().backward()
"""


def test_timesteps_drawn_on_the_host_and_the_table_they_index_are_reported_and_moved_together():
    found = lint(_DIFFUSION_STEP, codes=("GPU203",)).diagnostics
    assert [d.location.row for d in found] == [12, 13]
    assert "`alphas_cumprod` lives on the host" in found[0].message
    assert "`t` is built on the host by `torch.randint`" in found[1].message
    # both fixes are unsafe: a safe run changes nothing
    assert lint(_DIFFUSION_STEP, codes=("GPU203",), fix=FixMode.SAFE).source == PRELUDE + textwrap.dedent(
        _DIFFUSION_STEP)
    fixed = lint(_DIFFUSION_STEP, codes=("GPU203",), fix=FixMode.UNSAFE)
    assert "alphas_cumprod = torch.cumprod(1.0 - torch.linspace(1e-4, 0.02, 1000), dim=0).to(device)" in fixed.source
    assert "t = torch.randint(0, 1000, (x.shape[0],), device=device)" in fixed.source
    assert "a = alphas_cumprod[t].view(-1, 1)\n" in fixed.source
    assert "* a + t[:, None])" in fixed.source
    assert not fixed.diagnostics


def test_a_step_tensor_also_read_on_the_host_is_left_alone():
    body = _DIFFUSION_STEP + "    print(t.sum())\n"
    assert [d.message.split()[0] for d in lint(body, codes=("GPU203",)).diagnostics] == ["`alphas_cumprod`"]


def test_the_timesteps_stay_on_the_host_while_the_table_cannot_move():
    # the table is also read whole on the host: it is reported but not moved, and so the index that reads it
    # (a host table indexed by a device tensor would raise) is reported without a fix
    body = textwrap.dedent(_DIFFUSION_STEP) + "print(alphas_cumprod.mean())\n"
    found = lint(body, codes=("GPU203",)).diagnostics
    assert len(found) == 2 and all(d.fix is None for d in found)
    assert lint(body, codes=("GPU203",), fix=FixMode.UNSAFE).source == PRELUDE + textwrap.dedent(body)
