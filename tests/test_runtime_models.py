"""Model code reached every step that no training file names (issue 11, ninth set, branch recall20).

- A network or loss module picked at run time: `net_module = importlib.import_module(args.arch)`, then
  `net_module.Net(...)` and `net_module.Criterion()`; every module the script can import by that name defines
  the class. In the run that picks a module, its class's `forward` runs every step.
- A top-level helper that another module's per-step `forward` imports and calls (`from geometry import
  orthogonality_penalty`, called in the loss's `forward`): the helper runs every step too.
- GPU203 inside such per-step functions: a constant built on the host and copied in the same call
  (`ident = torch.eye(k)[None]`, then `if x.is_cuda: ident = ident.cuda()`), an identity from `np.eye` through
  `torch.from_numpy`, and a one-hot helper whose CPU path (`if labels.is_cuda: return t.cuda()`, `return t`)
  keeps the host tensor. Reported without a fix: the copy is conditional, and `device=` would break the CPU path.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

TRAIN = """\
import importlib
import os
import sys

import torch
from torch.utils.data import DataLoader

sys.path.append(os.path.join(os.path.dirname(__file__), "nets"))


def run(args):
    net_module = {chooser}
    net = net_module.Net(8).cuda()
    crit = net_module.Criterion().cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loader = DataLoader(torch.randn(64, 3), batch_size=8, pin_memory=True)
    for x in loader:
        x = x.cuda(non_blocking=True)
        out, feats = net(x)
        loss = crit(out, feats)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

GEOMETRY = """\
import numpy as np
import torch


def orthogonality_penalty(m):
    k = m.shape[1]
    ident = torch.eye(k)[None, :, :]
    if m.is_cuda:
        ident = ident.cuda()
    return ((m @ m.transpose(1, 2)) - ident).pow(2).mean()


def first_rows(points, n):
    start = torch.zeros(points.shape[0], n).to(points.device)
    fine = torch.arange(n, device=points.device)
    return start + fine


def rarely_called(points):
    return torch.ones(3).cuda() + points
"""

NET_A = """\
import numpy as np
import torch
import torch.nn as nn
from geometry import first_rows, orthogonality_penalty


class Align(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 9)

    def forward(self, x):
        eye = torch.from_numpy(np.eye(3).flatten().astype(np.float32)).view(1, 9)
        if x.is_cuda:
            eye = eye.cuda()
        return (self.fc(x) + eye).view(-1, 3, 3)


class Net(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.align = Align()
        self.head = nn.Linear(3, k)

    def forward(self, x):
        m = self.align(x)
        return self.head(first_rows(x, 3)), m


class Criterion(nn.Module):
    def forward(self, out, m, step=0):
        loss = out.mean() + orthogonality_penalty(m)
        return loss
"""

NET_B = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.head = nn.Linear(3, k)

    def forward(self, x):
        return self.head(x), None


class Criterion(nn.Module):
    def forward(self, out, m):
        return out.mean()
"""

ONE_HOT = """\
import torch
from torch.utils.data import DataLoader


def one_hot(labels, n):
    t = torch.eye(n)[labels.cpu().numpy()]
    if labels.is_cuda:
        return t.cuda()
    return t


def cpu_one_hot(labels, n):
    t = torch.eye(n)[labels.numpy()]
    t.cuda()
    return t


model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randint(0, 4, (64,)), batch_size=8, pin_memory=True)
for y in loader:
    y = y.cuda(non_blocking=True)
    target = one_hot(y, 4)
    kept = cpu_one_hot(y.cpu(), 4)
    loss = (model(target) - kept.cuda()).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _project(tmp_path: Path, chooser: str) -> Path:
    return write_project(tmp_path, {"train.py": TRAIN.format(chooser=chooser), "nets/geometry.py": GEOMETRY,
                                    "nets/net_a.py": NET_A, "nets/net_b.py": NET_B})


CHOSEN = {("nets/net_a.py", 15, "GPU203"),  # `eye.cuda()` of an identity from np.eye, in Align.forward
          ("nets/geometry.py", 9, "GPU203"),  # `ident.cuda()` in the helper the loss's forward calls
          ("nets/geometry.py", 14, "GPU203")}  # `torch.zeros(...).to(points.device)` in a helper of Net.forward


def test_a_network_from_a_module_chosen_at_run_time_is_per_step_model_code(tmp_path: Path):
    keys = found(check(_project(tmp_path, "importlib.import_module(args.arch)"), "--no-cache", "--select",
                       "GPU203", "."))
    assert keys == CHOSEN  # `torch.arange(n, device=...)` (built on the device) and the uncalled helper: quiet


def test_a_package_prefix_picks_the_modules_of_that_package(tmp_path: Path):
    root = _project(tmp_path, 'importlib.import_module("nets." + args.arch)')
    (root / "nets" / "__init__.py").write_text("")
    keys = found(check(root, "--no-cache", "--select", "GPU203", "."))
    assert keys == CHOSEN


def test_a_module_the_name_cannot_pick_is_not_per_step(tmp_path: Path):
    """A constant module name picks that module only: `net_b` is built, `net_a`'s code never runs."""
    keys = found(check(_project(tmp_path, 'importlib.import_module("net_b")'), "--no-cache", "--select",
                       "GPU203", "."))
    assert keys == set()


def test_the_findings_carry_no_fix_where_the_copy_is_conditional(tmp_path: Path):
    items = check(_project(tmp_path, "importlib.import_module(args.arch)"), "--no-cache", "--select", "GPU203",
                  ".")
    conditional = [d for d in items if d["location"]["row"] in (9, 15)]
    assert len(conditional) == 2 and all(d.get("fix") is None for d in conditional)
    moved = [d for d in items if d["location"]["row"] == 14]
    assert moved and moved[0].get("fix") is not None  # `torch.zeros(..., device=points.device)`: safe


def test_a_one_hot_helper_with_a_cpu_path_is_reported_without_a_fix(tmp_path: Path):
    root = write_project(tmp_path, {"train.py": ONE_HOT})
    items = check(root, "--no-cache", "--select", "GPU203", ".")
    # `cpu_one_hot` keeps its tensor on the host (its own `t.cuda()` is discarded: quiet); the loop then copies
    # what it returns with `kept.cuda()` every step, at a script's top level (reported since the thirty-seventh
    # landing, as inside a function)
    assert found(items) == {("train.py", 8, "GPU203"), ("train.py", 25, "GPU203")}
    by_row = {d["location"]["row"]: d for d in items}
    assert by_row[8].get("fix") is None and by_row[25].get("fix") is None
    assert "`t` is built on the host by `torch.eye`" in by_row[8]["message"]
    assert "cpu_one_hot" in by_row[25]["message"]


METRICS = """\
import numpy as np


def pixel_accuracy(pred, target):
    correct = (pred == target).sum()
    total = target.numel()
    return correct.cpu().numpy(), total


def summarise(values):
    return np.mean(values)
"""

TRAINER = """\
import torch
from torch.utils.data import DataLoader

from metrics import pixel_accuracy, summarise

device = torch.device("cuda")
model = torch.nn.Linear(4, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
scores = []
for x in loader:
    x = x.to(device, non_blocking=True)
    out = model(x)
    scores.append(pixel_accuracy(out.argmax(1), torch.zeros(8, dtype=torch.long, device=device)))
    out.sum().backward()
    opt.step()
print(summarise([s[0] for s in scores]))
"""


def test_a_helper_module_that_names_no_device_runs_on_the_gpu_of_its_callers_loop(tmp_path: Path):
    """`metrics.py` never names a device; the trainer's loop calls its helper every step with CUDA tensors."""
    root = write_project(tmp_path, {"metrics.py": METRICS, "trainer.py": TRAINER})
    keys = found(check(root, "--no-cache", "--select", "GPU104", "metrics.py"))
    assert keys == {("metrics.py", 7, "GPU104")}
    cpu_trainer = "\n".join(line for line in TRAINER.replace(", device=device", "").splitlines()
                            if "device" not in line).replace(
        "model(x)", "model(x.float())")
    cpu_only = write_project(tmp_path / "cpu", {"metrics.py": METRICS, "trainer.py": cpu_trainer})
    assert not found(check(cpu_only, "--no-cache", "--select", "GPU104", "metrics.py"))  # a CPU-only project
    # the loop hands the helper copies it already made on the host: the helper's `.cpu()` copies nothing
    host_args = write_project(tmp_path / "host", {"metrics.py": METRICS, "trainer.py": TRAINER.replace(
        "pixel_accuracy(out.argmax(1), torch.zeros(8, dtype=torch.long, device=device))",
        "pixel_accuracy(*[out.argmax(1).cpu()], target=[torch.zeros(8, dtype=torch.long)])")})
    assert not found(check(host_args, "--no-cache", "--select", "GPU104", "metrics.py"))


SCATTER = """\
import torch


def group_sum(src, index, size=None):
    if size is None:
        size = int(torch.max(index)) + 1
    out = src.new_zeros(size)
    return out.index_add_(0, index, src)


def dense_rows(x, groups, count=None, width=None):
    if count is None:
        count = int(torch.max(groups)) + 1
    sizes = group_sum(torch.ones_like(groups), groups, size=count)
    if width is None:
        width = 16
    elif int(torch.max(sizes)) > width:
        x = x[:width]
    return x, sizes
"""

POOL_MODEL = """\
import torch
import torch.nn as nn
from ops import dense_rows


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, groups):
        rows, sizes = dense_rows(self.fc(x), groups)
        return rows.sum() + sizes.sum()
"""

POOL_TRAIN = """\
import torch
from torch.utils.data import DataLoader
from pool import Pool

model = Pool().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
for x in loader:
    x = x.cuda(non_blocking=True)
    loss = model(x, torch.zeros(8, dtype=torch.long, device="cuda"))
    loss.backward()
    opt.step()
"""


def test_a_helper_branch_on_a_parameter_being_none_follows_the_per_step_call(tmp_path: Path):
    """`dense_rows(x, groups)` leaves `count` and `width` at None: the `if count is None:` read runs every step;
    the `elif` of `if width is None:` never does. (`group_sum(..., size=count)` is reached through `dense_rows`:
    its own `if size is None:` read is still reported, the call's arguments are not followed that far.)"""
    root = write_project(tmp_path, {"ops.py": SCATTER, "pool.py": POOL_MODEL, "train.py": POOL_TRAIN})
    keys = found(check(root, "--no-cache", "--select", "GPU105,GPU106,GPU111,GPU112", "ops.py"))
    assert ("ops.py", 13, "GPU105") in keys and ("ops.py", 17, "GPU105") not in keys
