"""A project function that computes its result where its arguments live (analysis/host_values.py,
`computed_where_given`): YOLOv7's `xyxy2xywh(torch.tensor(xyxy).view(1, 4))` of Python floats is a host tensor, so
its `.tolist()` waits for no GPU (`test.py:149`, a heldout12 fine-code finding)."""

from __future__ import annotations

from tests.projects import check, found, write_project

UTILS = '''import numpy as np
import torch


def xyxy2xywh(x):
    y = x.clone() if isinstance(x, torch.Tensor) else np.copy(x)
    y[:, 0] = (x[:, 0] + x[:, 2]) / 2
    y[:, 1] = (x[:, 1] + x[:, 3]) / 2
    y[:, 2] = x[:, 2] - x[:, 0]
    y[:, 3] = x[:, 3] - x[:, 1]
    {last}
'''

VAL = '''import torch
from utils import xyxy2xywh


def evaluate(model, loader, device):
    for img, shapes in loader:
        img = img.to(device, non_blocking=True)
        out = model(img)
        for si, pred in enumerate(out):
            gn = torch.tensor(shapes[si][0])[[1, 0, 1, 0]]
            rows = pred.tolist()
            for *xyxy, conf, cls in rows:
                xywh = (xyxy2xywh(torch.tensor(xyxy).view(1, 4)) / gn).view(-1).tolist()
                print(xywh)
'''

READ = ("val.py", 13, "GPU102")


def _lint(tmp_path, last="return y"):
    root = write_project(tmp_path, {"utils.py": UTILS.format(last=last), "val.py": VAL})
    return found(check(root, "--no-cache"))


def test_a_function_of_host_tensors_returns_a_host_tensor(tmp_path):
    items = _lint(tmp_path)
    assert READ not in items
    assert ("val.py", 11, "GPU102") in items  # `pred.tolist()` of the model's output: a real read


def test_a_function_that_moves_or_names_a_device_is_not_known(tmp_path):
    assert READ in _lint(tmp_path / "a", "return y.cuda()")
    assert READ in _lint(tmp_path / "b", "return y.to(DEVICE)")
    assert READ in _lint(tmp_path / "c", "return MODEL(y)")


LENGTHS = '''import torch
from torch.utils.data import DataLoader


def test_det(model, dataloader):
    for batch_i, (imgs, targets, targets_len) in enumerate(dataloader):
        output = model(imgs.cuda())
        targets = [targets[i][:int(l)] for i, l in enumerate(targets_len)]
        best = [int(s) for i, s in enumerate(output.max(1).values)]
        print(targets, best)
'''


def test_the_elements_of_an_enumerated_host_tensor_are_host_values(tmp_path):
    # FairMOT `test_det.py:109`: `targets_len`, a loader element never moved, read per element through `enumerate`
    items = found(check(write_project(tmp_path, {"test_det.py": LENGTHS}), "--no-cache"))
    assert ("test_det.py", 8, "GPU105") not in items
    assert ("test_det.py", 9, "GPU105") in items  # elements of the model's output: device values
