"""Device tensors on their way through a project's records and conversion helpers (branch recall76).

- a comprehension over a parameter (`{k: scalar(v) for k, v in losses._asdict().items()}`) reads the parameter's
  values: a call handing it device tensors syncs;
- a named tuple, `Munch`, `EasyDict` or `dict(...)` built from tensors (`return LossTuple(*losses)`) is a record
  of tensors, and so is what a sibling method returning one hands back (`losses = self.forward(...)`);
- a method that only one class of the project defines is followed at its `obj.method(...)` calls in other files:
  the device copies they pass make its parameters device tensors (`at.tonumpy(bbox)` inside it syncs);
- a loader element the loop never moves stays in host memory when the statement rebinds it
  (`scale = at.scalar(scale)`): the conversion helper's `.item()` branch waits for no GPU.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

ARRAY_TOOL = """\
import numpy as np
import torch as t


def tonumpy(data):
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, t.Tensor):
        return data.detach().cpu().numpy()


def scalar(data):
    if isinstance(data, np.ndarray):
        return data.reshape(1)[0]
    if isinstance(data, t.Tensor):
        return data.item()
"""

TRAINER = """\
from collections import namedtuple

import torch
from torch import nn
from torch.nn import functional as F

import array_tool as at

LossTuple = namedtuple("LossTuple", ["cls_loss", "total_loss"])


def target_of(boxes):
    return boxes


class Trainer(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.meters = {}

    def forward(self, imgs, bboxes, labels):
        bbox = bboxes[0]
        target = target_of(at.tonumpy(bbox))
        cls_loss = F.cross_entropy(self.model(imgs), labels)
        losses = [cls_loss]
        losses = losses + [sum(losses)]
        return LossTuple(*losses)

    def train_step(self, imgs, bboxes, labels):
        self.optimizer.zero_grad()
        losses = self.forward(imgs, bboxes, labels)
        losses.total_loss.backward()
        self.optimizer.step()
        self.update_meters(losses)
        return losses

    def update_meters(self, losses):
        loss_d = {k: at.scalar(v) for k, v in losses._asdict().items()}
        for key, meter in self.meters.items():
            meter.add(loss_d[key])
"""

TRAIN = """\
import torch

import array_tool as at
from trainer import Trainer


def train(loader, model):
    trainer = Trainer(model).cuda()
    for img, bbox_, label_, scale in loader:
        scale = at.scalar(scale)
        img, bbox, label = img.cuda().float(), bbox_.cuda(), label_.cuda()
        trainer.train_step(img, bbox, label)
"""


def _lint(root: Path, files: dict[str, str]) -> tuple[set, list]:
    items = check(write_project(root, files), "--no-cache", "--exit-zero")
    return {(Path(name).name, row, code) for name, row, code in found(items)}, items


def test_record_of_losses_read_by_a_meter_helper_is_reported_at_its_call(tmp_path):
    got, items = _lint(tmp_path, {"array_tool.py": ARRAY_TOOL, "trainer.py": TRAINER, "train.py": TRAIN})
    assert ("trainer.py", 36, "GPU112") in got  # self.update_meters(losses)
    message = next(d["message"] for d in items if d["location"]["row"] == 36 and d["filename"].endswith("trainer.py"))
    assert "`self.update_meters(...)` syncs every step" in message and "`.item()`" in message


def test_conversion_helper_of_a_method_parameter_passed_device_copies(tmp_path):
    got, _ = _lint(tmp_path, {"array_tool.py": ARRAY_TOOL, "trainer.py": TRAINER, "train.py": TRAIN})
    assert ("trainer.py", 25, "GPU112") in got  # at.tonumpy(bbox) of the device bbox


def test_conversion_helper_of_a_host_loader_element_rebound_by_it_is_quiet(tmp_path):
    got, _ = _lint(tmp_path, {"array_tool.py": ARRAY_TOOL, "trainer.py": TRAINER, "train.py": TRAIN})
    assert not any(name == "train.py" and row == 10 for name, row, _ in got)  # scale = at.scalar(scale)


def test_a_method_another_class_also_defines_is_not_followed_at_other_files_calls(tmp_path):
    other = "class Other:\n    def train_step(self, imgs, bboxes, labels):\n        return imgs\n"
    got, _ = _lint(tmp_path, {"array_tool.py": ARRAY_TOOL, "trainer.py": TRAINER, "train.py": TRAIN,
                              "other.py": other})
    assert ("trainer.py", 25, "GPU112") not in got
    assert ("trainer.py", 36, "GPU112") in got  # the losses are device tensors whatever the caller passes


META = """\
import torch
from munch import Munch

import helpers

model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    out = model(x.cuda(non_blocking=True))
    loss = torch.nn.functional.mse_loss(out, y.cuda(non_blocking=True))
    loss.backward()
    opt.step()
    {call}
"""

HELPERS = """\
def log_losses(losses):
    return {k: v.item() for k, v in losses.items()}


def log_fields(record):
    return [float(v) for v in record.values()]
"""


def test_comprehension_over_a_dict_parameter_reads_its_device_values(tmp_path):
    got, _ = _lint(tmp_path, {"helpers.py": HELPERS,
                              "train.py": META.replace("{call}", "helpers.log_losses(Munch(mse=loss))")})
    assert ("train.py", 13, "GPU112") in got


def test_comprehension_over_a_dict_of_host_numbers_is_quiet(tmp_path):
    got, _ = _lint(tmp_path, {"helpers.py": HELPERS,
                              "train.py": META.replace("{call}", "helpers.log_losses(dict(n=len(out)))")})
    assert ("train.py", 13, "GPU112") not in got


def test_a_slice_before_the_comprehension_in_the_same_expression(tmp_path):
    helpers = "def log_rows(rows):\n    return rows[1:], [v.item() for v in rows]\n"
    got, items = _lint(tmp_path, {"helpers.py": helpers,
                                  "train.py": META.replace("{call}", "helpers.log_rows(out)")})
    assert ("train.py", 13, "GPU112") in got
    assert not any("internal error" in d.get("message", "") for d in items)


def test_a_package_module_named_torch_does_not_shadow_the_library(tmp_path):
    """`import torch` in `pkg/comm.py` next to `pkg/torch.py` is the library (Python 3 imports are absolute):
    `torch.cat(v)` is not the sibling's `cat`, whose boolean-mask indexing would be read as the helper's."""
    files = {
        "pkg/__init__.py": "",
        "pkg/torch.py": "def cat(xs):\n    return xs[xs > 0]\n",
        "pkg/comm.py": "import torch\n\n\ndef gather(d):\n    return {k: torch.cat(v) for k, v in d.items()}\n",
        "train.py": META.replace("import helpers", "from pkg import comm").replace(
            "{call}", "comm.gather({'out': [out]})"),
    }
    got, _ = _lint(tmp_path, files)
    assert ("train.py", 13, "GPU112") not in got


DISPATCH = """\
import numpy as np
import torch


def to_torch(x):
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x).float(), True
    return x, False


def rotate(points, angle):
    points, is_numpy = to_torch(points)
    out = points * torch.cos(angle)
    return out.numpy() if is_numpy else out


def rotate_to_host(points, angle):
    out = points * torch.cos(angle)
    return out.cpu().numpy() if angle is not None else out
"""


def test_a_bare_numpy_branch_of_a_type_dispatching_helper_is_quiet(tmp_path):
    """`out.numpy() if is_numpy else out`: `.numpy()` of a CUDA tensor raises, so only host input takes it."""
    call = "helpers.rotate(out, y.cuda())\n    helpers.rotate_to_host(out, y.cuda())"
    got, _ = _lint(tmp_path, {"helpers.py": DISPATCH, "train.py": META.replace("{call}", call)})
    assert ("train.py", 13, "GPU112") not in got
    assert ("train.py", 14, "GPU112") in got  # `.cpu().numpy()` on that branch is a device read
