"""Loader factories that return a tuple (issue 11, ninth set): `data_provider(args, flag)` builds a dataset and a
`DataLoader` and returns both (`return data_set, data_loader`); a trainer method hands the pair on
(`def _get_data(self, flag): data_set, data_loader = data_provider(...); return data_set, data_loader`) and the
step loops iterate the second element (`train_data, train_loader = self._get_data("train")`), directly or through
a method's parameter (`self.vali(vali_data, vali_loader, criterion)`). The batches' copies to the GPU are per-step
copies from that loader; the dataset beside it in the tuple is not a loader.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

FACTORY = """\
from torch.utils.data import DataLoader


def data_provider(args, flag):
    data_set = make_dataset(args, flag)
    data_loader = DataLoader(data_set, batch_size=args.batch_size, shuffle=flag == "train"{pin})
    return data_set, data_loader
"""

EXP = """\
import torch
from data_provider.factory import data_provider


class Exp:
    def __init__(self, args, model):
        self.args = args
        self.device = torch.device("cuda")
        self.model = model.to(self.device)

    def _get_data(self, flag):
        data_set, data_loader = data_provider(self.args, flag)
        return data_set, data_loader

    def vali(self, vali_data, vali_loader, criterion):
        total = []
        with torch.no_grad():
            for i, (batch_x, batch_y) in enumerate(vali_loader):
                batch_x = batch_x.to(self.device)
                batch_y = batch_y.to(self.device)
                total.append(criterion(self.model(batch_x), batch_y))
        return torch.stack(total).mean()

    def train(self):
        train_data, train_loader = self._get_data(flag="train")
        vali_data, vali_loader = self._get_data(flag="val")
        opt = torch.optim.Adam(self.model.parameters(), fused=True)
        criterion = torch.nn.MSELoss()
        for epoch in range(10):
            for i, (batch_x, batch_y) in enumerate(train_loader):
                batch_x = batch_x.to(self.device)
                batch_y = batch_y.to(self.device)
                loss = criterion(self.model(batch_x), batch_y)
                loss.backward()
                opt.step()
            for sample in train_data:
                x = sample.to(self.device)
            self.vali(vali_data, vali_loader, criterion)
"""

MOVES = {("exp.py", 19, "GPU202"), ("exp.py", 20, "GPU202"), ("exp.py", 31, "GPU202"), ("exp.py", 32, "GPU202")}


def _project(tmp_path: Path, pin: str) -> Path:
    return write_project(tmp_path, {"data_provider/__init__.py": "", "data_provider/factory.py": FACTORY.format(pin=pin),
                                    "exp.py": EXP})


def test_moves_of_a_tuple_factorys_unpinned_loader_are_reported_beside_gpu201(tmp_path: Path):
    keys = found(check(_project(tmp_path, ""), "--no-cache", "--select", "GPU201,GPU202", "."))
    assert ("exp.py", 12, "GPU201") in keys  # at the factory's call, naming the DataLoader
    assert MOVES <= keys
    assert not any(path == "exp.py" and row == 36 for path, row, _ in keys)  # the dataset is not a loader


def test_moves_of_a_tuple_factorys_pinned_loader_are_reported(tmp_path: Path):
    items = check(_project(tmp_path, ", pin_memory=True"), "--no-cache", "--select", "GPU201,GPU202", ".")
    assert found(items) == MOVES
    assert all(d["message"].startswith("copy of a pinned batch") for d in items)


def test_nothing_is_reported_where_the_factorys_loader_is_another_element(tmp_path: Path):
    """`return data_loader, data_set` swapped: the loops iterate the dataset element, not the loader."""
    factory = FACTORY.format(pin=", pin_memory=True").replace("return data_set, data_loader",
                                                              "return data_loader, data_set")
    root = write_project(tmp_path, {"data_provider/__init__.py": "", "data_provider/factory.py": factory,
                                    "exp.py": EXP})
    assert not {k for k in found(check(root, "--no-cache", "--select", "GPU202", ".")) if k[1] in (19, 20, 31, 32)}


def test_every_loader_of_a_factory_returning_several_is_still_a_loader(tmp_path: Path):
    """`return train_loader, valid_loader, test_loader`: each position holds a loader, so the validation loop over
    the second one copies pinned batches (a place is remembered only for one loader among other values)."""
    factory = """\
from torch.utils.data import DataLoader


def load_dataset(args):
    train_loader = DataLoader(args.train, batch_size=8, pin_memory=True)
    valid_loader = DataLoader(args.valid, batch_size=8, pin_memory=True)
    return train_loader, valid_loader
"""
    train = """\
import torch
from data_utils import load_dataset


def validate(model, dataloader):
    for batch in dataloader:
        batch = {k: v.cuda() for k, v in batch.items()}
        model(batch)


def main(args, model, opt):
    train_loader, valid_loader = load_dataset(args)
    for batch in train_loader:
        batch = {k: v.cuda() for k, v in batch.items()}
        model(batch).sum().backward()
        opt.step()
    validate(model, valid_loader)
"""
    root = write_project(tmp_path, {"data_utils.py": factory, "train.py": train})
    keys = found(check(root, "--no-cache", "--select", "GPU202", "."))
    assert {("train.py", 7, "GPU202"), ("train.py", 14, "GPU202")} <= keys


def test_a_batch_moved_earlier_in_the_loop_is_not_copied_again(tmp_path: Path):
    """`batch_y = batch_y.float().to(device)`, then `batch_y[:, -n:].to(device)`: the second `.to()` copies
    nothing, so no GPU202 there (the first copy, after a dtype conversion, is left alone too)."""
    exp = EXP.replace("                batch_y = batch_y.to(self.device)\n                loss = criterion",
                      "                batch_y = batch_y.float().to(self.device)\n"
                      "                batch_y = batch_y[:, -4:].to(self.device)\n                loss = criterion")
    root = write_project(tmp_path, {"data_provider/__init__.py": "",
                                    "data_provider/factory.py": FACTORY.format(pin=", pin_memory=True"),
                                    "exp.py": exp})
    items = check(root, "--no-cache", "--select", "GPU202", ".")
    keys = found(items)
    assert ("exp.py", 31, "GPU202") in keys
    assert ("exp.py", 32, "GPU202") in keys  # the first copy, after the host conversion
    assert ("exp.py", 33, "GPU202") not in keys


def test_a_batch_converted_on_the_host_before_its_copy_is_copied_first_by_the_unsafe_fix(tmp_path: Path):
    """`batch_x.float().to(device)`: the conversion makes a pageable tensor, so the copy blocks even from a pinned
    loader; the unsafe fix copies first and converts on the device, and the safe `--fix` leaves it alone."""
    import subprocess
    import sys

    exp = EXP.replace("batch_x = batch_x.to(self.device)", "batch_x = batch_x.float().to(self.device)")
    root = write_project(tmp_path, {"data_provider/__init__.py": "",
                                    "data_provider/factory.py": FACTORY.format(pin=", pin_memory=True"),
                                    "exp.py": exp})
    items = check(root, "--no-cache", "--select", "GPU202", ".")
    converted = [d for d in items if "converted on the host (`.float()`)" in d["message"]]
    assert {d["location"]["row"] for d in converted} == {19, 31}
    run = [sys.executable, "-m", "gpulint", "check", "--no-cache", "--select", "GPU202", "exp.py"]
    subprocess.run([*run, "--fix"], cwd=root, capture_output=True, text=True, timeout=120)
    assert "batch_x = batch_x.float().to(self.device)" in (root / "exp.py").read_text()
    subprocess.run([*run, "--fix", "--unsafe-fixes"], cwd=root, capture_output=True, text=True, timeout=120)
    text = (root / "exp.py").read_text()
    assert text.count("batch_x = batch_x.to(self.device, non_blocking=True).float()") == 2
    assert text.count("batch_y = batch_y.to(self.device, non_blocking=True)") == 2
