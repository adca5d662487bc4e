"""A map-style dataset whose `__getitem__` moves every sample to the GPU (`return seq.cuda()`, `.to(device)`) makes
CUDA batches: `pin_memory=True` would raise on them and DataLoader workers cannot use CUDA after a fork, so GPU201
and GPU409 stay quiet on its loaders (x-transformers `train_with_muon.py`). A dataset returning host samples keeps
both findings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROGRAM = '''
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda")


class Windows(Dataset):
    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data) - 9

    def __getitem__(self, i):
        start = torch.randint(0, len(self.data) - 9, (1,))
        seq = self.data[start:start + 9].long()
        return MOVE


model = torch.nn.Embedding(256, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Windows(torch.randint(0, 256, (1000,))), batch_size=8)
for seq in loader:
    model(seq.to(device)).sum().backward()
    opt.step()
'''


def lint(root: Path, text: str) -> set:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "train.py").write_text(text)
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache",
                          "--exit-zero", "train.py"], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {(d["location"]["row"], d["code"]) for d in json.loads(out.stdout)}


def test_loaders_of_samples_moved_in_getitem_get_no_pinning_or_workers_advice(tmp_path: Path):
    for move in ("seq.cuda()", "seq.to(device)", "(seq.cuda(), seq.cuda())"):
        found = lint(tmp_path, PROGRAM.replace("MOVE", move))
        assert not {f for f in found if f[1] in ("GPU201", "GPU409")}, (move, found)


def test_loaders_of_host_samples_keep_both_findings(tmp_path: Path):
    found = lint(tmp_path, PROGRAM.replace("MOVE", "seq"))
    assert {(23, "GPU201"), (23, "GPU409")} <= found, found
