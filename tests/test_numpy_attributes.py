"""Numpy arrays a class keeps in an attribute (recall50; heldout14's SAC replay buffer): `self.obses =
np.empty(...)` in `__init__`, filled in place, then `torch.as_tensor(self.obses[idxs], device=self.device)` in the
`sample()` an agent's `update(replay_buffer)` calls every step. The rows are gathered on the host and copied from
pageable memory on every call (GPU203), as `torch.as_tensor(np_array, device=...)` of a local array is.

- Every assignment of the attribute in the class is a numpy call (maybe through array methods): a host array.
- An attribute also assigned a tensor anywhere in the class, or appended to, is not known: quiet.
- A buffer sampled once (before the loop): quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

BUFFER = textwrap.dedent("""\
    import numpy as np
    import torch


    class ReplayBuffer:
        def __init__(self, capacity, device):
            self.device = device
            self.idx = 0
            self.obses = np.empty((capacity, 8), dtype=np.float32)
            self.rewards = np.zeros((capacity, 1)).astype(np.float32)

        def add(self, obs, reward):
            self.obses[self.idx] = obs
            self.rewards[self.idx] = reward
            self.idx += 1

        def sample(self, batch_size):
            idxs = np.random.randint(0, self.idx, size=batch_size)
            obses = torch.as_tensor(self.obses[idxs], device=self.device).float()
            rewards = torch.as_tensor(self.rewards[idxs], device=self.device)
            return obses, rewards
""")

TRAIN = textwrap.dedent("""\
    import numpy as np
    import torch
    from buffer import ReplayBuffer


    def update(model, opt, replay_buffer):
        obs, reward = replay_buffer.sample(256)
        loss = (model(obs) - reward).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


    def main():
        device = torch.device("cuda")
        model = torch.nn.Linear(8, 1).to(device)
        opt = torch.optim.Adam(model.parameters())
        buffer = ReplayBuffer(10000, device)
        for step in range(100000):
            buffer.add(np.random.randn(8), 1.0)
            update(model, opt, buffer)


    main()
""")


def _findings(tmp_path, buffer=BUFFER, train=TRAIN):
    return {(path, row) for path, row, code in found(_items(tmp_path, buffer, train)) if code == "GPU203"}


def _items(tmp_path, buffer=BUFFER, train=TRAIN):
    root = write_project(tmp_path / "p", {"buffer.py": buffer, "train.py": train})
    return check(root, "--no-cache", "--exit-zero")


def test_numpy_attribute_rows_copied_every_sample_are_reported(tmp_path):
    assert {("buffer.py", 19), ("buffer.py", 20)} <= _findings(tmp_path)


def test_the_message_names_the_array_and_the_way_out(tmp_path):
    messages = [d["message"] for d in _items(tmp_path) if d["code"] == "GPU203" and d["location"]["row"] == 19]
    assert messages and "numpy array `self.obses`" in messages[0] and "tensor on the device" in messages[0]


def test_attribute_also_holding_a_tensor_stays_quiet(tmp_path):
    moved = BUFFER.replace("    def sample(", "    def to_gpu(self):\n"
                           "        self.obses = torch.from_numpy(self.obses).to(self.device)\n\n    def sample(")
    assert ("buffer.py", 22) not in _findings(tmp_path, buffer=moved)  # obses' copy, two lines further down
    assert ("buffer.py", 23) in _findings(tmp_path, buffer=moved)  # rewards is still a host array


def test_attribute_holding_device_tensors_stays_quiet(tmp_path):
    on_device = BUFFER.replace("np.empty((capacity, 8), dtype=np.float32)",
                               "torch.empty((capacity, 8), device=device)").replace(
        "np.zeros((capacity, 1)).astype(np.float32)", "torch.zeros((capacity, 1), device=device)")
    assert not _findings(tmp_path, buffer=on_device)


def test_buffer_sampled_once_stays_quiet(tmp_path):
    once = TRAIN.replace("        update(model, opt, buffer)\n", "").replace(
        "    for step in", "    update(model, opt, buffer)\n    for step in")
    assert not _findings(tmp_path, train=once)
