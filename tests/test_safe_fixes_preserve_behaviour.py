"""A safe fix keeps what the program computes: every safe-fixed INVALID example of every rule, run on CPU torch.

For each rule whose fix is marked safe (`fix_safety.level == "safe"`), each INVALID example with a `fixed` text is
run twice, as written and as fixed, from the same seed, on the CPU: CUDA device names become "cpu", `.cuda()`
copies like it does, `pin_memory()` copies without pinning (nothing to pin to without an accelerator). Every tensor,
number and module (parameters and their gradients) the program leaves behind, and everything it prints, must be
the same bit for bit (printed tensors compared without their `grad_fn=` annotation: detaching a running total,
GPU301's fix, removes that annotation and nothing else). The examples name their data (`loader`, `dataset`)
without defining it: each is tried with a few stand-ins, and the first under which the original runs is used for
both runs. Examples that cannot run on the CPU under any of them are listed in NOT_RUNNABLE with the reason;
tests/test_rule_examples.py checks their text.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from gpulint.diagnostics import FixMode
from gpulint.rule import Safety, all_rules
from gpulint.runner import lint_source

torch = pytest.importorskip("torch")

_STAND_INS = (
    # batches of one tensor, and a dataset of rows
    "loader = [torch.randn(4, 2) for _ in range(3)]\ndataset = torch.randn(16, 2)\n",
    # batches of (input, target) pairs
    "loader = [(torch.randn(4, 2), torch.randn(4, 2)) for _ in range(3)]\n"
    "dataset = torch.utils.data.TensorDataset(torch.randn(16, 8), torch.randn(16, 2))\n",
    # a dataset of (input, target) rows for an 8-feature model
    "dataset = torch.utils.data.TensorDataset(torch.randn(16, 8), torch.randn(16, 2))\n"
    "loader = torch.utils.data.DataLoader(dataset, batch_size=4)\n",
)
_CUDA = re.compile(r"""(["'])cuda(:\d+)?\1""")
# What a printed tensor says about its autograd graph: GPU301's fix (`.detach()`) drops exactly that, by design.
_GRAPH = re.compile(r",\s*(grad_fn=<\w+>|requires_grad=True)")

# Safe-fixed examples that cannot run on a CPU, and why (their fixed text is checked by test_rule_examples.py).
NOT_RUNNABLE = {
    ("GPU202", 1): "its loader is a TensorDataset but the loop reads dict batches (`batch.items()`): a shape sketch",
    ("GPU301", 1): "the loader yields Python ints that CrossEntropyLoss cannot take: a shape sketch, not data",
    ("GPU410", 0): "`model` is not defined by the example and is fed an int64 batch",
    ("GPU410", 1): "it maps a token file (`train.bin`) the example does not ship",
}


def _safe_examples():
    for code, rule in all_rules().items():
        if rule.fix_safety is None or rule.fix_safety.level is not Safety.SAFE:
            continue
        fixed = [ex for ex in rule.INVALID if ex.fixed is not None]
        for i, example in enumerate(fixed):
            yield pytest.param(code, i, example, id=f"{code}-{i}")


@pytest.fixture
def on_cpu(monkeypatch):
    """`.cuda()` and `.pin_memory()` behave as on a GPU machine, value-wise, with the data staying on the CPU."""
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self.clone())
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self, *a, **k: self.clone())


def _run(program: str, stand_in: str) -> dict:
    """Run `program` from seed 0 with `stand_in` for its data; return what it leaves behind, and what it prints."""
    torch.manual_seed(0)
    scope: dict = {"torch": torch, "__name__": "example"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), torch.random.fork_rng():
        torch.manual_seed(0)
        exec(compile(stand_in, "stand_in.py", "exec"), scope)
        exec(compile(_CUDA.sub('"cpu"', program), "example.py", "exec"), scope)
    state = {"<stdout>": _GRAPH.sub("", out.getvalue())}
    for name, value in scope.items():
        if isinstance(value, torch.Tensor):
            state[name] = value.detach()
        elif isinstance(value, torch.nn.Module):
            for key, tensor in value.state_dict().items():
                state[f"{name}.{key}"] = tensor
            for key, param in value.named_parameters():
                state[f"{name}.{key}.grad"] = param.grad
        elif isinstance(value, (int, float, bool)) and not name.startswith("__"):
            state[name] = value
    return state


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b))
    return type(a) is type(b) and a == b


def _stand_in_for(program: str):
    for stand_in in _STAND_INS:
        try:
            _run(program, stand_in)
        except Exception:  # noqa: BLE001 - this stand-in does not fit the example's data; try the next
            continue
        return stand_in
    return None


@pytest.mark.parametrize("code, i, example", list(_safe_examples()))
def test_safe_fix_computes_the_same_bit_for_bit(code, i, example, on_cpu):
    fixed = lint_source(example.code, "example.py", frozenset({code}), fix=FixMode.SAFE,
                        report_periodic=example.periodic).source
    if fixed != example.fixed:
        # the example shows an unsafe fix (GPU410's device-resident batch); what --fix alone writes is its safe
        # fallback, and that is what must compute the same
        unsafe = lint_source(example.code, "example.py", frozenset({code}), fix=FixMode.UNSAFE,
                             report_periodic=example.periodic).source
        assert unsafe == example.fixed and fixed != example.code
    else:
        assert fixed == example.fixed  # the safe fix alone (no --unsafe-fixes) writes the example's fixed text
    stand_in = _stand_in_for(example.code)
    if (code, i) in NOT_RUNNABLE:
        assert stand_in is None, f"{code} example {i} runs now: remove it from NOT_RUNNABLE"
        pytest.skip(NOT_RUNNABLE[(code, i)])
    assert stand_in is not None, f"{code} example {i} does not run on the CPU with any stand-in"
    before, after = _run(example.code, stand_in), _run(fixed, stand_in)
    assert set(before) <= set(after)
    changed = [name for name in before if not _same(before[name], after[name])]
    assert changed == []
    assert len(before) > 1  # it computed something: more than its (possibly empty) output


def test_the_comparison_sees_a_changed_value(on_cpu):
    # The harness is not vacuous: a "fix" that changes one value is caught.
    program = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nfor x in loader:\n    model(x).sum().backward()\n"
    before = _run(program, _STAND_INS[0])
    after = _run(program.replace("model(x)", "model(x * 1.0000001)"), _STAND_INS[0])
    assert [n for n in before if not _same(before[n], after[n])] != []


def test_most_safe_fixed_examples_run():
    examples = list(_safe_examples())
    assert len(examples) >= 10
    assert len(examples) - len(NOT_RUNNABLE) >= 2 * len(examples) // 3  # at least two thirds are run
