"""GPU203 and `torch.*_like` factories: `torch.zeros_like(x)` is built where `x` lives, so
`torch.zeros_like(student).to(device)` of a model output copies nothing (DeepLearningExamples' BERT distillation
loss, co-tracker's failed-sample path; precision13's sample). A `_like` of a host tensor is still a host build."""

from __future__ import annotations

from tests.projects import check, found, write_project

TRAIN = '''import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

device = torch.device("cuda")
model = nn.Linear(8, 8).to(device)
loader = DataLoader(list(range(10)), batch_size=2, pin_memory=True)
for x, y in loader:
    student = model(x.to(device, non_blocking=True))
    student = torch.where(student <= -1e2, torch.zeros_like(student).to(device), student)
    table = torch.from_numpy(np.ones((2, 8), dtype=np.float32))
    loss = (student * torch.ones_like(table).to(device)).sum()
    loss.backward()
'''


def test_a_like_factory_of_a_device_tensor_is_not_a_host_build(tmp_path):
    items = {(row, code) for _, row, code in found(check(write_project(tmp_path, {"train.py": TRAIN}), "--no-cache"))}
    assert (11, "GPU203") not in items
    assert (13, "GPU203") in items  # `torch.ones_like(table)` of a host table: built on the host, copied
