"""A program that sets the CUDA default tensor type (`torch.set_default_tensor_type('torch.cuda.FloatTensor')`,
nerf-pytorch's `__main__`) or default device (`torch.set_default_device("cuda")`): `torch.Tensor([1e10])`,
`torch.Tensor(numpy_array)` and `torch.tensor(host_list)` copy host data to the GPU on every call (GPU203), in
the script and in the project modules it imports; `torch.rand`, `torch.ones`, `torch.linspace` are made on the
device, `torch.Tensor(3, 4)` has no data, `torch.Tensor(t)` of a tensor copies nothing from the host.
Without the setter, none of it is reported (the same calls build CPU tensors).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from projects import check, found

HELPERS = """\
import numpy as np
import torch


def mse2psnr(x):
    return -10. * torch.log(x) / torch.log(torch.Tensor([10.]))


def noise(shape):
    return torch.rand(shape) + torch.ones(shape) * torch.linspace(0., 1., steps=shape[-1])
"""

SCRIPT = """\
import numpy as np
import torch
from helpers import *


def raw2outputs(raw, dists):
    dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)
    scale = torch.tensor(np.ones(3))
    empty = torch.Tensor(3, 4)
    same = torch.Tensor(raw)
    return raw * dists + noise(raw.shape) + empty.sum() + same.sum() + scale.sum()


def train(model, images, optimizer):
    for i in range(1000):
        target = images[np.random.randint(len(images))]
        out = raw2outputs(model(target), target)
        loss = ((out - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        psnr = mse2psnr(loss)
        if i % 100 == 0:
            print(psnr.item())


if __name__ == "__main__":
{setter}    train(torch.nn.Linear(3, 3).cuda(), torch.randn(10, 3, device="cuda"), None)
"""


def _lint(root: Path, setter: str, *targets: str) -> set:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    (root / "helpers.py").write_text(HELPERS)
    (root / "run.py").write_text(SCRIPT.format(setter=setter))
    items = check(root, "--no-cache", *targets)
    return {(f, line) for f, line, code in found(items) if code == "GPU203"}, items


@pytest.mark.parametrize("setter", ["    torch.set_default_tensor_type('torch.cuda.FloatTensor')\n",
                                    "    torch.set_default_tensor_type(torch.cuda.FloatTensor)\n",
                                    "    torch.set_default_device('cuda')\n"])
def test_host_data_built_under_the_cuda_default_is_a_copy_every_step(tmp_path, setter):
    got, items = _lint(tmp_path, setter, ".")
    assert got == {("run.py", 7), ("run.py", 8), ("helpers.py", 6)}
    messages = {(d["filename"], d["location"]["row"]): d["message"] for d in items if d["code"] == "GPU203"}
    assert "(set in this module)" in messages[("run.py", 7)]
    assert "(set at run.py:27)" in messages[("helpers.py", 6)]


def test_helper_module_named_alone_reads_the_script_that_sets_the_default(tmp_path):
    got, _ = _lint(tmp_path, "    torch.set_default_tensor_type('torch.cuda.FloatTensor')\n", "helpers.py")
    assert got == {("helpers.py", 6)}


def test_without_the_cuda_default_nothing_is_reported(tmp_path):
    got, _ = _lint(tmp_path, "    torch.set_default_tensor_type(torch.DoubleTensor)\n", ".")
    assert got == set()
    got, _ = _lint(tmp_path / "variable", "    torch.set_default_device(args.device)\n", ".")
    assert got == set()
