"""Parts of a batch a module helper splits off and the loop leaves on the host (issue 11, precision): DLRM's
`inference` unpacks each test batch with its own `unpack_batch(testBatch)` (parts of the batch; an opaque
formatter on another configuration), hands the inputs to `dlrm_wrap`, which copies them to the GPU, and keeps the
targets where the loader put them: `T_test = T_test.detach().cpu().numpy()` copies nothing from a GPU, so GPU104
stays quiet on it. The model's output copied beside it is still reported, and so are the targets of a loop that
moves no part of its batch (the loader may hand out device tensors).
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

TRAIN = """\
import numpy as np
import torch
from torch.utils.data import DataLoader

try:
    from internal_formats import format_batch

    has_internal = True
except ImportError:
    has_internal = False


def unpack_batch(b):
    if has_internal:
        return format_batch(b)
    return b[0], b[1], b[2], b[3], torch.ones(b[3].size()), None


def model_wrap(model, X, offsets, indices, device):
    indices = [i.to(device) for i in indices]
    return model(X.to(device), offsets.to(device), indices)


def evaluate(model, test_ld, device):
    correct = 0
    for i, test_batch in enumerate(test_ld):
        X, offsets, indices, T, W, _ = unpack_batch(test_batch)
        Z = model_wrap(model, X, offsets, indices, device)
        S = Z.detach().cpu().numpy()
        T = T.detach().cpu().numpy()
        correct += np.sum(np.round(S) == T)
    return correct


def evaluate_moving_inline(model, test_ld, device):
    correct = 0
    for test_batch in test_ld:
        X, offsets, indices, T, W, _ = unpack_batch(test_batch)
        Z = model(X.to(device), offsets.to(device), indices)
        S = Z.detach().cpu().numpy()
        T = T.detach().cpu().numpy()
        correct += np.sum(np.round(S) == T)
    return correct


def evaluate_on_device_batches(model, test_ld):
    correct = 0
    for i, test_batch in enumerate(test_ld):
        X, offsets, indices, T, W, _ = unpack_batch(test_batch)
        Z = model(X, offsets, indices)
        S = Z.detach().cpu().numpy()
        T = T.detach().cpu().numpy()
        correct += np.sum(np.round(S) == T)
    return correct


def main(dataset, model):
    test_ld = DataLoader(dataset, batch_size=64, num_workers=2, pin_memory=True)
    model = model.cuda()
    print(evaluate(model, test_ld, torch.device("cuda")))
    print(evaluate_moving_inline(model, test_ld, torch.device("cuda")))
    print(evaluate_on_device_batches(model, test_ld))
"""

DATA = """\
from torch.utils.data import DataLoader


def make_loaders(train_set, test_set):
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2, pin_memory=True)
    test_loader = DataLoader(test_set, batch_size=64, num_workers=2, pin_memory=True)
    return train_set, train_loader, test_set, test_loader
"""

SCORES = {29, 40, 51}  # `S = Z.detach().cpu().numpy()` of the model's output in each loop: device copies
MOVED_HELPER, MOVED_INLINE, NOTHING_MOVED = 30, 41, 52  # `T = T.detach().cpu().numpy()`


def _gpu104(root: Path, modules: dict) -> set:
    items = check(write_project(root, modules), "--no-cache", "--exit-zero")
    return {row for path, row, code in found(items) if path == "train.py" and code == "GPU104"}


def test_targets_split_off_by_a_helper_stay_on_the_host(tmp_path: Path) -> None:
    assert _gpu104(tmp_path / "p", {"train.py": TRAIN}) == SCORES | {NOTHING_MOVED}


def test_a_loader_parameter_from_another_modules_factory(tmp_path: Path) -> None:
    # `_, _, _, test_ld = make_loaders(...)`: the caller's loader is of no kind this module knows
    train = TRAIN.replace("from torch.utils.data import DataLoader", "from data import make_loaders").replace(
        "    test_ld = DataLoader(dataset, batch_size=64, num_workers=2, pin_memory=True)\n",
        "    _, _, _, test_ld = make_loaders(dataset, dataset)\n")
    assert "make_loaders(dataset" in train
    assert _gpu104(tmp_path / "p", {"train.py": train, "data.py": DATA}) == SCORES | {NOTHING_MOVED}
