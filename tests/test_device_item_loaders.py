"""A map-style dataset whose `__getitem__` moves every sample to the GPU (`return seq.cuda()`, `.to(device)`) makes
CUDA batches: `pin_memory=True` would raise on them and DataLoader workers cannot use CUDA after a fork, so GPU201
and GPU409 stay quiet on its loaders (x-transformers `train_with_muon.py`). A dataset returning host samples keeps
both findings."""

from __future__ import annotations

from pathlib import Path

from projects import lint_script as lint
from window_datasets import LOADER, TRAIN_MOVING, windows

def test_loaders_of_samples_moved_in_getitem_get_no_pinning_or_workers_advice(tmp_path: Path):
    for move in ("seq.cuda()", "seq.to(device)", "(seq.cuda(), seq.cuda())"):
        found = lint(tmp_path, windows(move, loop=TRAIN_MOVING))
        assert not {f for f in found if f[1] in ("GPU201", "GPU409")}, (move, found)


def test_loaders_of_host_samples_keep_both_findings(tmp_path: Path):
    found = lint(tmp_path, windows("seq", loop=TRAIN_MOVING))
    assert {(LOADER, "GPU201"), (LOADER, "GPU409")} <= found, found


TOY = """\
import torch
from torch.utils.data import Dataset, DataLoader

tensor_1 = torch.tensor([1.0, 2.0])
tensor_1 = tensor_1.to("cuda")


class ToyDataset(Dataset):
    def __init__(self, X, y):
        self.features = X
        self.labels = y

    def __getitem__(self, index):
        one_x = self.features[index]
        one_y = self.labels[index]
        return one_x, one_y

    def __len__(self):
        return self.labels.shape[0]


X_train = torch.randn(5, 2)
y_train = torch.tensor([0, 0, 0, 1, 1])
train_loader = DataLoader(ToyDataset(X_train, y_train), batch_size=2, shuffle=True, num_workers=1)
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
for epoch in range(3):
    for features, labels in train_loader:
        features, labels = features.to(device), labels.to(device)
        loss = torch.nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_rows_of_host_tensors_stay_host_samples_beside_other_cuda_tensors(tmp_path: Path):
    """`return one_x, one_y` of rows of host tensors, in a module that moves other tensors to "cuda" (a tutorial
    notebook's earlier cell): `__getitem__` moves nothing itself, so its loader still gets the pinning advice."""
    found = lint(tmp_path, TOY)
    assert (24, "GPU201") in found, found
