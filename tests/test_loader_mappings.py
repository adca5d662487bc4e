"""Loaders held in a dict (branch recall81): `dataloaders = {x: DataLoader(..., pin_memory=True) for x in splits}`
read as `dataloaders[phase]`, with more loaders stored by key (`dataloaders["extra"] = DataLoader(...)`), and an
iterator over one drawn with `it.__next__()` inside the step loop: the blocking copies of their batches are GPU202;
a dict holding anything but loaders tells nothing (quiet).
"""

from __future__ import annotations

from projects import check, found, write_project

SCRIPT = """\
import torch
from torch.utils.data import DataLoader


def main(sets, model, opt, extra):
    dataloaders = {{x: DataLoader(sets[x], batch_size=32, num_workers=4, pin_memory=True) for x in ["train", "val"]}}
    if extra:
        dataloaders["extra"] = DataLoader(sets["extra"], batch_size=8, num_workers=2{extra_pin})
        extra_iter = enumerate(dataloaders["extra"])
    for epoch in range(10):
        for phase in ["train", "val"]:
            for i, data in enumerate(dataloaders[phase]):
                inputs, labels = data
                inputs = inputs.cuda()
                labels = labels.cuda()
                loss = torch.nn.functional.cross_entropy(model(inputs), labels)
                if extra:
                    try:
                        _, batch = extra_iter.__next__()
                    except StopIteration:
                        extra_iter = enumerate(dataloaders["extra"])
                        _, batch = extra_iter.__next__()
                    more, _ = batch
                    more = more.cuda()
                    loss = loss + model(more).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
"""


def _lint(tmp_path, extra_pin=", pin_memory=True"):
    return check(write_project(tmp_path, {"train.py": SCRIPT.format(extra_pin=extra_pin)}),
                 "--no-cache", "--exit-zero", "--select", "GPU202", ".")


def test_copies_of_batches_from_a_dict_of_pinned_loaders_are_reported(tmp_path):
    items = _lint(tmp_path)
    assert found(items) == {("train.py", 14, "GPU202"), ("train.py", 15, "GPU202"), ("train.py", 24, "GPU202")}
    assert all("non_blocking=True" in str(item["fix"]) for item in items)


def test_an_unpinned_loader_stored_into_the_dict_is_pinned_by_gpu201_and_counted(tmp_path):
    # the stance of every loader: GPU201 reports the unpinned one and its fix pins it, so the copies block then
    root = write_project(tmp_path, {"train.py": SCRIPT.format(extra_pin="")})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU201,GPU202", ".")
    assert ("train.py", 8, "GPU201") in found(items) and ("train.py", 24, "GPU202") in found(items)


def test_a_dict_of_settings_is_not_a_dict_of_loaders(tmp_path):
    text = SCRIPT.format(extra_pin=", pin_memory=True").replace(
        'dataloaders = {{x: DataLoader', 'dataloaders = {{x: dict').replace(
        "    dataloaders = {x: DataLoader(sets[x], batch_size=32, num_workers=4, pin_memory=True) for x in",
        "    dataloaders = {x: sets[x] for x in")
    items = check(write_project(tmp_path, {"train.py": text}), "--no-cache", "--exit-zero", "--select", "GPU202", ".")
    assert ("train.py", 14, "GPU202") not in found(items)


PROCESSOR = """\
import torch


class Processor:
    def load_data(self):
        self.data_loader = dict()
        if self.arg.phase == "train":
            self.data_loader["train"] = torch.utils.data.DataLoader(
                dataset=Feeder(**self.arg.train_feeder_args), batch_size=64, shuffle=True, num_workers=4{pin})
        self.data_loader["test"] = torch.utils.data.DataLoader(
            dataset=Feeder(**self.arg.test_feeder_args), batch_size=64, shuffle=False, num_workers=4{pin})

    def train(self, epoch):
        self.model.train()
        for data, label in self.data_loader["train"]:
            data = data.cuda(self.output_device)
            label = label.cuda(self.output_device)
            loss = self.loss(self.model(data), label)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""


def test_a_dict_of_loaders_held_on_self_hands_out_its_loaders(tmp_path):
    # the skeleton-action trainers' `Processor` (st-gcn, MS-G3D): `self.data_loader = dict()`, loaders stored by key
    root = write_project(tmp_path, {"main.py": PROCESSOR.format(pin=", pin_memory=True")})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU201,GPU202", ".")
    assert found(items) == {("main.py", 16, "GPU202"), ("main.py", 17, "GPU202")}


def test_a_dict_on_self_holding_something_else_tells_nothing(tmp_path):
    text = PROCESSOR.format(pin=", pin_memory=True").replace(
        "        self.data_loader = dict()\n", "        self.data_loader = dict()\n"
        "        self.data_loader[\"meta\"] = load_meta()\n")
    root = write_project(tmp_path, {"main.py": text})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU202", ".")
    assert found(items) == set()
