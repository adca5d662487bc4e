"""Names resolved as the module binds them last: a module's own `def log(t)` after `from math import log` is the
module's function (a device `t.clamp(min=eps).log()`), not `math.log` (which would read the tensor into Python);
and `if layer.kind == "a":` compares a string, a Python bool, not a tensor (x-transformers
`autoregressive_wrapper.py`)."""

from __future__ import annotations

from pathlib import Path

from projects import lint_script as lint

PROGRAM = '''
from math import log

import torch
from torch.utils.data import DataLoader


def log(t, eps=1e-20):
    return t.clamp(min=eps).log()


def gumbel_noise(t):
    return -log(-log(torch.rand_like(t)))


model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(8)), batch_size=2, pin_memory=True)
for x, y in loader:
    x = x.cuda(non_blocking=True)
    out = model(x)
    noisy = out + gumbel_noise(out)
    for layer in model.children():
        if layer.kind == "a":
            noisy = noisy * 2
    noisy.sum().backward()
    opt.step()
'''


def test_a_module_function_shadowing_an_import_is_the_module_function(tmp_path: Path):
    found = lint(tmp_path, PROGRAM)
    assert not {f for f in found if f[1] == "GPU112"}, found


def test_the_import_alone_is_still_math_log(tmp_path: Path):
    found = lint(tmp_path, PROGRAM.replace("def log(t, eps=1e-20):\n    return t.clamp(min=eps).log()\n", ""))
    assert {f for f in found if f[1] == "GPU112"}, found


def test_a_comparison_with_a_string_is_not_a_tensor_test(tmp_path: Path):
    found = lint(tmp_path, PROGRAM)
    assert not {f for f in found if f[1] == "GPU106"}, found
    found = lint(tmp_path, PROGRAM.replace('layer.kind == "a"', "out.sum() > 0"))
    assert (24, "GPU106") in found, found
