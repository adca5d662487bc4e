"""A size (`idxs.shape[0]`, `x.size(0)`, `len(x)`) is a Python int in eager mode: a binding made under `if
isinstance(n, torch.Tensor):` / `torch.is_tensor(n)` of such a size (`k = torch.clamp(n, max=m)`, the branch a
traced model takes) is not what an eager run holds, so `scores.topk(k)` reads no device tensor (GPU105). A name
whose tensor binding is under a test of a real tensor still is one."""

from __future__ import annotations

from tests.projects import lint_script

TRAIN = '''import torch
from torch import Tensor
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(8)), batch_size=2, pin_memory=True)
for x in loader:
    x = x.cuda(non_blocking=True)
    scores = model(x).flatten()
    size = {size}
    if {test}:
        k = torch.clamp(size, max=10)
    else:
        k = min(size, 10)
    top, order = scores.topk(k)
    top.sum().backward()
    opt.step()
'''


def test_a_size_tested_for_a_tensor_is_an_int_in_eager_mode(tmp_path):
    for i, (size, test) in enumerate((("scores.shape[0]", "isinstance(size, Tensor)"),
                                      ("scores.size(0)", "torch.is_tensor(size)"),
                                      ("len(scores)", "isinstance(size, torch.Tensor)"))):
        keys = lint_script(tmp_path / str(i), TRAIN.format(size=size, test=test))
        assert (16, "GPU105") not in keys, (size, keys)


def test_a_device_value_tested_for_a_tensor_still_reads(tmp_path):
    keys = lint_script(tmp_path, TRAIN.format(size="(scores > 0).sum()", test="isinstance(size, Tensor)"))
    assert (16, "GPU105") in keys, keys
