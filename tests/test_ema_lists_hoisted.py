"""GPU411's fix builds an EMA's plain parameter lists once, before the training loop, where the modules keep
their Parameter objects; the fixed program must compute the EMA the loop computed (CPU torch), and where the
module may get other parameters inside the loop (passed to a function, a submodule replaced) the lists stay per
step."""

from __future__ import annotations

import textwrap

import pytest

from gpulint.diagnostics import FixMode
from gpulint.runner import lint_source

torch = pytest.importorskip("torch")

PROGRAM = textwrap.dedent("""\
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to(device)
    ema = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to(device)
    ema.load_state_dict(model.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = [torch.randn(16, 4) for _ in range(20)]
    for epoch in range(3):
        for x in loader:
            loss = model(x.to(device)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                for e, p in zip(ema.parameters(), model.parameters()):
                    e.mul_(0.9).add_(p, alpha=0.1)
    """)


def _fixed(source: str) -> str:
    return lint_source(source, "train.py", frozenset({"GPU411"}), fix=FixMode.UNSAFE).source


def _ema_after(source: str) -> list:
    scope: dict = {}
    exec(compile(source, "train.py", "exec"), scope)
    return [p.detach().clone() for p in scope["ema"].parameters()]


def test_lists_built_once_before_the_loops():
    fixed = _fixed(PROGRAM)
    head, loop = fixed.split("for epoch in range(3):")
    assert "ema_params = list(ema.parameters())" in head and "model_params = list(model.parameters())" in head
    assert "torch._foreach_add_(ema_params, model_params, alpha=0.1)" in loop
    assert ".parameters()" not in loop
    assert _fixed(fixed) == fixed


def test_fixed_program_computes_the_same_ema():
    before, after = _ema_after(PROGRAM), _ema_after(_fixed(PROGRAM))
    assert len(before) == len(after) == 4
    for a, b in zip(before, after):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-7)


@pytest.mark.parametrize("old, new", [
    # a function may give the model other parameters
    ("        optimizer.step()\n", "        optimizer.step()\n        maybe_reinit(model)\n"),
    # a submodule replaced
    ("        optimizer.step()\n", "        optimizer.step()\n        model[2] = torch.nn.Linear(8, 2)\n"),
    # the model rebound inside the loop
    ("        optimizer.step()\n", "        optimizer.step()\n        model = model.train()\n"),
    # submodules handed out, then changed
    ("        optimizer.step()\n", "        optimizer.step()\n        for m in model.modules():\n"
                                  "            m.weight = m.weight\n"),
])
def test_model_may_change_keeps_its_list_per_step(old, new):
    assert old in PROGRAM
    source = PROGRAM.replace(old, new)
    fixed = _fixed(source)
    assert "list(model.parameters())" in fixed.split("for epoch in range(3):")[1]
    assert "model_params = " not in fixed
    # the EMA's own list still moves out: nothing but `.parameters()` and `.load_state_dict` touch `ema`
    assert "ema_params = list(ema.parameters())" in fixed
