"""GPU202 on a tensor pinned in the copy's own chain (issue 11, fourth set: a GAN's training loop draws class
labels on the host every iteration and copies them with `torch.from_numpy(...).pin_memory().to(device)`): the
copy has no `non_blocking=True`, so it blocks the CPU and the pinning buys no overlap. The fix adds it.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

TRAIN = """\
import numpy as np
import torch

device = torch.device("cuda")
G = torch.nn.Linear(8, 8).to(device)
opt = torch.optim.Adam(G.parameters(), fused=True)
labels = np.eye(8, dtype=np.float32)
fixed = torch.from_numpy(labels).pin_memory().to(device)
for step in range(100000):
    c = torch.from_numpy(labels[np.random.randint(8, size=16)]).pin_memory().to(device)
    d = torch.from_numpy(labels[np.random.randint(8, size=16)]).pin_memory().cuda(non_blocking=True)
    loss = G(c + d + fixed).sum()
    loss.backward()
    opt.step()
"""


def test_a_pinned_chain_copied_blocking_every_step_is_reported_and_fixed(tmp_path: Path):
    root = write_project(tmp_path, {"train.py": TRAIN})
    items = check(root, "--no-cache", "--select", "GPU202", ".")
    assert found(items) == {("train.py", 10, "GPU202")}  # not the copy before the loop, not the non-blocking one
    assert "pinned with `.pin_memory()`" in items[0]["message"]
    check(root, "--no-cache", "--select", "GPU202", "--fix", ".")
    fixed = (root / "train.py").read_text()
    assert ".pin_memory().to(device, non_blocking=True)" in fixed
    assert "fixed = torch.from_numpy(labels).pin_memory().to(device)\n" in fixed
