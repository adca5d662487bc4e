"""Where a loader's batches are traced through a function: `with tqdm(enumerate(loader)) as t: for ... in t:`
iterates the loader (the name bound by `with` to an iteration wrapper), and a dataset built from the function's
host data is not on the device because the same name is rebound to a moved batch later in the loop
(`x = x_train.to(self.device)`): a binding written after the read, outside any loop around it, cannot reach it
(analysis/data_facts.py)."""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

FIT = """\
import numpy as np
import torch
import torch.utils.data as Data
from torch.utils.data import DataLoader
from tqdm import tqdm


class BaseModel(torch.nn.Module):
    def __init__(self, device="cpu"):
        super().__init__()
        self.device = device

    def fit(self, x, y, batch_size=256, epochs=1):
        x = np.concatenate(x, axis=-1)
        data = Data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        train_loader = DataLoader(dataset=data, shuffle=True, batch_size=batch_size)
        for epoch in range(epochs):
            with tqdm(enumerate(train_loader)) as t:
                for _, (x_train, y_train) in t:
                    x = x_train.to(self.device).float()
                    y = y_train.to(self.device).float()
                    loss = torch.nn.functional.mse_loss(self(x), y)
                    loss.backward()
"""

MOVED_FIRST = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def fit(model, x, y, device):
    for epoch in range(10):
        x = x.to(device)
        y = y.to(device)
        loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
        for xb, yb in loader:
            model(xb.to(device)).sum().backward()
"""


def _found(tmp_path: Path, text: str) -> set:
    root = write_project(tmp_path, {"train.py": text})
    return {(row, code) for _, row, code in found(check(root, "--no-cache", "--select", "GPU201,GPU202", "."))}


def test_a_loader_iterated_through_with_tqdm_over_host_data_is_reported(tmp_path: Path):
    assert _found(tmp_path, FIT) == {(16, "GPU201"), (20, "GPU202"), (21, "GPU202")}


def test_data_moved_before_the_loader_is_built_is_still_on_the_device(tmp_path: Path):
    # the moves come first, in the loop around the loader: its dataset holds CUDA tensors (pinning them raises)
    assert _found(tmp_path, MOVED_FIRST) == set()
