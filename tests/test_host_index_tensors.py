"""GPU203: a device tensor indexed every step by an index tensor built on the host (a torch factory without
`device=`, or a batch of a DataLoader over a Python range) copies the index to the GPU each time; an index built
on the device, a host tensor indexed by a host index, and a CUDA default device stay quiet."""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

HEAD = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
table = torch.randn(16, 16).to(device)
host = torch.randn(16, 16)
"""

LOOP = HEAD + """\
for step in range(100):
    n = 16
    li = torch.tensor([i for i in range(n) for j in range(i)])
    lj = torch.tensor([j for i in range(n) for j in range(i)])
    flat = table[li, lj]
    on_device = torch.arange(n, device=device)
    fine = table[on_device] + host[li, lj].to(device)
    flat.sum().backward()
for index in DataLoader(range(16), batch_size=4, shuffle=True):
    rows = table[:, index]
    rows.sum().backward()
"""


def _found(root: Path) -> set:
    return {(row, code) for _, row, code in found(check(root, "--no-cache", "--select", "GPU203", "."))}


def test_host_index_tensors_indexing_a_device_tensor_each_step(tmp_path: Path):
    assert _found(write_project(tmp_path, {"train.py": LOOP})) == {(11, "GPU203"), (16, "GPU203")}


def test_a_cuda_default_device_builds_the_index_on_the_device(tmp_path: Path):
    text = LOOP.replace('device = torch.device("cuda")\n', 'device = torch.device("cuda")\ntorch.set_default_device("cuda")\n')
    assert (12, "GPU203") not in _found(write_project(tmp_path, {"train.py": text}))
