"""A replay buffer built for the CPU copies nothing to the device (branch recall61, GPU410
`_built_for_the_cpu`): `rb = ReplayBuffer(..., device="cpu")` (cleanrl's JAX scripts with SB3's buffer) whose
`sample` turns numpy arrays into tensors with `torch.tensor(array, device=self.device)` keeps them in host memory,
so `rb.sample(...)` every step is no host-to-device copy. The same buffer built with `device=device` (a GPU) is
reported.
"""

from __future__ import annotations

from projects import check, found, write_project

BUFFERS = """\
import numpy as np
import torch


class ReplayBuffer:
    def __init__(self, size, device="auto"):
        self.device = device
        self.obs = np.zeros((size, 4), dtype=np.float32)

    def to_torch(self, array: np.ndarray):
        return torch.tensor(array, device=self.device)

    def sample(self, batch_size):
        idx = np.random.randint(0, len(self.obs), size=batch_size)
        return self.to_torch(self.obs[idx])
"""

TRAIN = """\
import torch

from buffers import ReplayBuffer

device = torch.device("cuda")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.Adam(model.parameters())
rb = ReplayBuffer(1000, device=device)
for step in range(10000):
    data = rb.sample(32)
    loss = model(data).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _gpu410(root, train) -> set:
    items = check(write_project(root, {"buffers.py": BUFFERS, "train.py": train}), "--no-cache", "--exit-zero", ".")
    return {key for key in found(items) if key[2] == "GPU410"}


def test_a_buffer_built_for_the_gpu_copies_every_step(tmp_path):
    assert _gpu410(tmp_path, TRAIN) == {("train.py", 10, "GPU410")}


def test_a_buffer_built_for_the_cpu(tmp_path):
    assert _gpu410(tmp_path, TRAIN.replace("device=device)\n", 'device="cpu")\n')) == set()
