"""A name rebound to a host copy of its own value (`neg = neg.data.cpu().numpy().astype(np.float32)`,
`actions = actions.cpu().numpy()`): the read on the right is the tensor the name held before the statement, not
the array the statement makes (analysis/kinds.py `_copied_to_host_by_own_binding`), so the copy is reported
where it runs every step (GPU104), in a helper of another module that a training loop calls every step."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

ALIGN = """import numpy as np
import torch


def maximum_path(neg):
    device = neg.device
    neg = {statement}
    path = np.zeros(neg.shape, dtype=np.int32)
    return torch.from_numpy(path).to(device=device)
"""

TRAIN = """import torch
from align import maximum_path
model = torch.nn.Linear(4, 4).cuda()
for x in loader:
    y = model(x.cuda())
    path = maximum_path(y)
    y.sum().backward()
"""


def _rows(tmp_path: Path, statement: str) -> set:
    root = write_project(tmp_path, {"align.py": ALIGN.format(statement=statement), "train.py": TRAIN})
    return {(row, code) for path, row, code in found(check(root, "--no-cache", "."))
            if path.endswith("align.py")}


def test_rebinding_to_a_host_array_reports_the_copy(tmp_path: Path) -> None:
    assert (7, "GPU104") in _rows(tmp_path, "neg.data.cpu().numpy().astype(np.float32)")


def test_rebinding_without_a_copy_is_quiet(tmp_path: Path) -> None:
    # `.numpy()` alone works on a host tensor only: nothing to wait for
    assert not {row for row, code in _rows(tmp_path, "neg.numpy().astype(np.float32)") if row == 7}



def test_rebinding_under_a_type_test_is_quiet(tmp_path: Path) -> None:
    # `if isinstance(neg, torch.Tensor): neg = neg.cpu().numpy()`: a helper written for host data too (plotting,
    # logging); the code says the name may hold an array, as `loss = loss.item()` under the same test does
    align = ALIGN.replace("    neg = {statement}\n",
                          "    if isinstance(neg, torch.Tensor):\n        neg = neg.data.cpu().numpy()\n")
    root = write_project(tmp_path, {"align.py": align, "train.py": TRAIN})
    rows = {(row, code) for path, row, code in found(check(root, "--no-cache", ".")) if path.endswith("align.py")}
    assert (8, "GPU104") not in rows
