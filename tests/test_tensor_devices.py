"""Tensors whose device the kinds used not to know (analysis/tensor_params.py, `KindInference._kind_at_read`,
`ModuleAnalysis.is_bool_tensor`): masks held in variables, batches moved to a parameter device, parameters whose
callers pass device tensors. Masks over host tensors, and values whose device is not known, stay quiet."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

MASKS = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    out = {source}
    keep = (out.sum(1) > 0.0).to(out.device)
    picked = out[keep]
    j, k = ((out % 1.0 < 0.5) & (out > 0.1)).T[:2]
    rows = out.T[:2][j]
    both = torch.stack((torch.ones_like(j), j, k))
    again = out.T[:3][both]
    conf = (out[:, 0] > 0.5).squeeze()
    chosen = out[conf]
    flags = out.to(torch.bool)
    flagged = out[flags]
    model(x.cuda()).sum().backward()
    opt.step()
"""


def _codes(root: Path, name: str) -> set:
    return {(row, code) for path, row, code in found(check(root, "--no-cache", name)) if path.endswith(name)}


def test_masks_held_in_variables_are_masks(tmp_path: Path) -> None:
    root = write_project(tmp_path / "device", {"train.py": MASKS.format(source="model(x.cuda())")})
    codes = _codes(root, "train.py")
    # `.to(device)` of a mask, rows of a mask unpacked, a stack of masks, `.squeeze()`, `.to(torch.bool)`
    for row in (9, 11, 13, 15, 17):
        assert (row, "GPU111") in codes, row


def test_masks_over_host_tensors_stay_quiet(tmp_path: Path) -> None:
    root = write_project(tmp_path / "host", {"train.py": MASKS.format(source="model(x.cuda()).cpu()")})
    assert not {c for c in _codes(root, "train.py") if c[1] == "GPU111"}


GATHER = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    out = model(x.cuda())
    parts = []
    for i in range(2):
        parts.append(out[i])
    if parts:
        pass
    parts = torch.cat(parts)
    parts = parts[out.sum(1)[:8] > 0]
    out.sum().backward()
    opt.step()
"""


def test_a_list_then_its_concatenation_is_a_tensor_where_read(tmp_path: Path) -> None:
    root = write_project(tmp_path / "gather", {"train.py": GATHER})
    codes = _codes(root, "train.py")
    assert (14, "GPU111") in codes  # `parts` is the tensor `torch.cat` made when it is indexed
    assert (11, "GPU106") not in codes  # `if parts:` tests the list, before the concatenation


ENGINE = """import torch
from einops import rearrange


def train_one_epoch(model, data_loader, optimizer, device):
    for step, batch in enumerate(data_loader):
        videos, masks = batch
        videos = videos.to(device, non_blocking=True)
        masks = masks{move}.flatten(1).to(torch.bool)
        patches = rearrange(videos, "b c t -> b t c")
        labels = patches[masks]
        loss = model(videos, masks).sum()
        loss.backward()
        optimizer.step()
"""


def test_a_batch_moved_to_a_parameter_device(tmp_path: Path) -> None:
    root = write_project(tmp_path / "moved", {"engine.py": ENGINE.format(move=".to(device, non_blocking=True)")})
    assert (11, "GPU111") in _codes(root, "engine.py")
    # the masks left where the loader put them: a host mask, the device is not known, no finding
    root = write_project(tmp_path / "unmoved", {"engine.py": ENGINE.format(move="")})
    assert (11, "GPU111") not in _codes(root, "engine.py")


LOSS = """import torch


class Loss:
    def __init__(self, model):
        self.model = model

    def __call__(self, p, targets):
        picked = self.build(p, targets)
        return picked.sum()

    def build(self, p, targets):
        keep = targets[:, 0] == 0
        return targets[keep]
"""

TRAIN = """import torch
from torch.utils.data import DataLoader
from loss import Loss

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
compute_loss = Loss(model)
for x, y in DataLoader(list(zip(torch.randn(64, 4), torch.randn(64, 4))), batch_size=8):
    loss = compute_loss(model(x.cuda()), {targets})
    loss.backward()
    opt.step()
"""


def test_parameters_given_device_tensors_by_their_callers(tmp_path: Path) -> None:
    root = write_project(tmp_path / "device", {"loss.py": LOSS, "train.py": TRAIN.format(targets="y.to('cuda')")})
    # `targets` of `__call__` is a device copy at the per-step call; `build` is called only with it
    assert (14, "GPU111") in _codes(root, "loss.py")
    # a host tensor (or a value of unknown device) for `targets`: not a device tensor, quiet
    root = write_project(tmp_path / "host", {"loss.py": LOSS, "train.py": TRAIN.format(targets="y")})
    assert (14, "GPU111") not in _codes(root, "loss.py")


HELPER = """import numpy as np
import torch
from torch.utils.data import DataLoader


def similarity(embeds):
    return np.mean(embeds.detach().numpy())


model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_device = torch.device("cpu")
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    embeds = model(x.cuda())
    on_host = embeds.to(loss_device)
    score = similarity(on_host)
    embeds.sum().backward()
    opt.step()
"""


def test_a_helper_reading_a_value_already_on_the_host_stays_quiet(tmp_path: Path) -> None:
    root = write_project(tmp_path / "host", {"train.py": HELPER})
    assert (16, "GPU112") not in _codes(root, "train.py")
    # the same helper given the device tensor reads it back every step
    root = write_project(tmp_path / "device", {"train.py": HELPER.replace("similarity(on_host)", "similarity(embeds)")})
    assert (16, "GPU112") in _codes(root, "train.py")


TRAINER = """import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(4, 4).cuda()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.loader = DataLoader(torch.randn(64, 4), batch_size=8)

    def train_step(self, batch):
        index = int(batch[0, 0])
        batch = batch.cuda()
        self.model(batch).sum().backward()
        self.opt.step()

    def fit(self):
        for batch in self.loader:
            self.train_step({arg})
"""


def test_a_batch_as_the_loader_drew_it_is_not_a_device_tensor(tmp_path: Path) -> None:
    root = write_project(tmp_path / "raw", {"train.py": TRAINER.format(arg="batch")})
    assert (12, "GPU105") not in _codes(root, "train.py")  # the helper moves the batch itself, after the read
    # the caller moves it, the helper reads it: a device tensor
    moved = TRAINER.format(arg="batch.cuda()").replace("batch = batch.cuda()", "batch = batch * 2")
    root = write_project(tmp_path / "moved", {"train.py": moved})
    assert (12, "GPU105") in _codes(root, "train.py")


RECORD = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step(batch):
    key = batch.dict_key
    name = f"loss_{key}"
    keep = batch[:, 0] > 0
    return model(batch[keep]).sum()


for x in DataLoader(torch.randn(64, 4), batch_size=8):
    step(x.cuda()).backward()
    opt.step()
"""


def test_a_record_with_fields_is_not_a_tensor_parameter(tmp_path: Path) -> None:
    root = write_project(tmp_path / "record", {"train.py": RECORD})
    assert (10, "GPU107") not in _codes(root, "train.py")  # `batch.dict_key`: a field no tensor has
    root = write_project(tmp_path / "tensor", {"train.py": RECORD.replace("batch.dict_key", "batch.shape")})
    assert (12, "GPU111") in _codes(root, "train.py")
