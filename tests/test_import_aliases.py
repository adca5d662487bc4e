"""Per-step helpers imported under another name (issue 11, tenth set: graph benchmarks import
`accuracy_SBM as accuracy` and call `accuracy(scores, labels)` every batch). The helper's body is per-step code
as when it is called by its own name: its host reads are reported in the helper module, naming the call.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

METRICS = """\
import torch


def accuracy_nodes(scores, targets):
    predicted = scores.detach().argmax(dim=1)
    return (predicted == targets).float().sum().item()
"""

TRAIN = """\
import torch
from tools.metrics import accuracy_nodes as accuracy


def train_epoch(model, optimizer, device, data_loader):
    total = 0.0
    for graphs, labels in data_loader:
        graphs, labels = graphs.to(device), labels.to(device)
        scores = model(graphs)
        loss = torch.nn.functional.cross_entropy(scores, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        {call}
    return total
"""


def _check(tmp_path: Path, call: str) -> set:
    root = write_project(tmp_path, {"tools/__init__.py": "", "tools/metrics.py": METRICS,
                                    "train.py": TRAIN.format(call=call)})
    return found(check(root, "--no-cache", "."))


def test_a_helper_called_by_its_alias_every_step_is_per_step_code(tmp_path: Path):
    keys = _check(tmp_path, "total += accuracy(scores, labels)")
    assert ("tools/metrics.py", 6, "GPU101") in keys


def test_an_alias_called_once_after_the_loop_is_not(tmp_path: Path):
    keys = _check(tmp_path, "pass\n    total = accuracy(scores, labels)")
    assert ("tools/metrics.py", 6, "GPU101") not in keys
