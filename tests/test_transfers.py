"""GPU2xx edge cases: how the transfer rules and their fixes behave on code shapes users write."""

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


def codes(body: str, **kw) -> list[str]:
    return sorted(d.code for d in lint(body, **kw).diagnostics)


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


def test_copies_of_an_explicitly_unpinned_loader_are_left_alone():
    assert codes("""
        loader = DataLoader(dataset, batch_size=8, pin_memory=False)
        for x, y in loader:
            model(x.to(device)).sum().backward()
    """, codes=("GPU201", "GPU202")) == []


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


def test_a_device_variable_that_is_the_cpu_is_not_a_gpu_copy():
    text = """
        import torch
        from torch.utils.data import DataLoader
        dev = "cpu"
        loader = DataLoader([1, 2], batch_size=1)
        for x in loader:
            x = x.to(dev)
            model(x).sum().backward()
    """
    result = lint_source(textwrap.dedent(text), "t.py", frozenset({"GPU201", "GPU202"}))
    assert not result.diagnostics


def test_loader_reached_through_a_function_argument_and_keyword():
    result = lint("""
        def run(model, *, data):
            for batch in data:
                batch = {k: v.to(device) for k, v in batch.items()}
                model(batch["x"]).sum().backward()
        run(model, data=DataLoader(dataset, pin_memory=True))
    """, codes=("GPU202",))
    assert [d.code for d in result.diagnostics] == ["GPU202"]


def test_same_name_for_different_loops_resolves_to_the_enclosing_loop():
    assert codes("""
        plain = DataLoader(dataset, pin_memory=False)
        pinned = DataLoader(dataset, pin_memory=True)
        for batch in plain:
            model(batch[0].to(device)).sum().backward()
        for batch in pinned:
            model(batch[0].to(device)).sum().backward()
    """, codes=("GPU202",)) == ["GPU202"]


def test_pin_memory_fix_keeps_a_multiline_call_readable():
    result = lint("""
        loader = DataLoader(
            dataset,
            batch_size=8,
        )
        for x, y in loader:
            model(x.cuda()).sum().backward()
    """, codes=("GPU201",), fix=FixMode.SAFE)
    assert "    batch_size=8,\n    pin_memory=True,\n)" in result.source


def test_factory_fix_keeps_the_dtype_conversion_on_the_device():
    result = lint("""
        loader = DataLoader(dataset, pin_memory=True)
        for x, y in loader:
            t = torch.tensor([0.1, 0.2]).to(device, torch.float64, non_blocking=True)
            model(x.to(device, non_blocking=True) * t[0]).sum().backward()
    """, codes=("GPU203",), fix=FixMode.SAFE)
    # Cast after creation, as before: torch.tensor(..., dtype=float64) would not round through float32.
    assert "t = torch.tensor([0.1, 0.2], device=device).to(torch.float64)" in result.source


def test_random_factories_need_unsafe_fixes():
    body = """
        loader = DataLoader(dataset, pin_memory=True)
        for x, y in loader:
            noise = torch.randn(8).to(device)
            model(x.to(device, non_blocking=True) + noise).sum().backward()
    """
    assert "torch.randn(8).to(device)" in lint(body, codes=("GPU203",), fix=FixMode.SAFE).source
    assert "torch.randn(8, device=device)" in lint(body, codes=("GPU203",), fix=FixMode.UNSAFE).source


def test_tensordataset_loader_reported_once_without_a_fix():
    result = lint("""
        loader = DataLoader(dataset, batch_size=8, pin_memory=True)
        for epoch in range(2):
            for x, y in loader:
                model(x.to(device, non_blocking=True)).sum().backward()
    """, codes=("GPU204",), fix=FixMode.UNSAFE)
    assert [d.code for d in result.diagnostics] == ["GPU204"]
    assert result.diagnostics[0].fix is None


def test_cpu_only_module_has_no_transfer_findings():
    text = textwrap.dedent("""
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        model = torch.nn.Linear(8, 2)
        loader = DataLoader(TensorDataset(torch.randn(8, 8)), batch_size=2)
        for (x,) in loader:
            model(x).sum().backward()
    """)
    assert not lint_source(text, "t.py", frozenset({"GPU201", "GPU202", "GPU203", "GPU204"})).diagnostics
