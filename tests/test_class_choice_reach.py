"""Helper reachability through objects whose class is chosen (branch recall38).

- A conditional expression on a command-line option of known default (`MSELoss() if opt.mse_loss else
  FocalLoss()`, `--mse_loss` a `store_true` flag) builds one class in the default run: a call on the object pays
  what that class's method pays, and the message says the cost depends on the choice. A class built only when an
  option is turned on never makes a finding on its own.
- A module stored on `self` (`self.crit = FocalLoss()`) and called (`self.crit(out, y)`) runs its `forward`; a
  module function stored on `self` (`self.neg_loss = _neg_loss`) runs where it is called.
- A name bound to a reduction of a parameter (`num_pos = gt.eq(1).float().sum()`) is a device value when the
  caller passes a device tensor: `if num_pos == 0:` reads it back.
- A class picked from a registry imported from another module (`Detector = detector_factory[opt.task]`, then
  `Detector(opt)`) is one of the registry's classes; a method they all inherit resolves.
- A launcher module imported for its side effect (`import _init_paths`, whose `add_path(osp.join(this_dir,
  'lib'))` puts `lib` on `sys.path`) and a package folder above the importer's make the project's imports resolve.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

LOSSES = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    def _neg_loss(pred, gt):
        pos = gt.eq(1).float()
        num_pos = pos.sum()
        loss = (torch.log(pred) * pos).sum()
        if num_pos == 0:
            return -loss
        return -loss / num_pos


    class FocalLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.neg_loss = _neg_loss

        def forward(self, out, target):
            return self.neg_loss(out, target)
""")

TRAIN = textwrap.dedent("""\
    import argparse
    import torch
    from losses import FocalLoss

    parser = argparse.ArgumentParser()
    parser.add_argument("--mse_loss", action="store_true")
    opt = parser.parse_args()

    model = torch.nn.Conv2d(3, 1, 1).cuda()
    loader = torch.utils.data.DataLoader(list(range(10)), pin_memory=True, num_workers=2)
    crit = torch.nn.MSELoss() if opt.mse_loss else FocalLoss()
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = crit(model(x), y)
        loss.backward()
""")

CALL = ("train.py", 14, "GPU112")


def _items(root: Path) -> dict:
    return {(d["filename"], d["location"]["row"], d["code"]): d for d in check(root, "--no-cache", ".")}


def test_the_default_runs_class_pays_at_the_call(tmp_path: Path):
    items = _items(write_project(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN}))
    assert CALL in items
    message = items[CALL]["message"]
    assert "FocalLoss.forward" in message and "--mse_loss" in message and "depends on that choice" in message


def test_a_class_built_only_under_an_option_turned_on_is_no_finding(tmp_path: Path):
    train = TRAIN.replace("torch.nn.MSELoss() if opt.mse_loss else FocalLoss()",
                          "FocalLoss() if opt.mse_loss else torch.nn.MSELoss()")
    assert train != TRAIN
    assert CALL not in found(check(write_project(tmp_path, {"losses.py": LOSSES, "train.py": train}),
                                   "--no-cache", "."))


def test_an_option_of_unknown_default_chooses_nothing(tmp_path: Path):
    train = TRAIN.replace('parser.add_argument("--mse_loss", action="store_true")\n', "")
    assert train != TRAIN
    assert CALL not in found(check(write_project(tmp_path, {"losses.py": LOSSES, "train.py": train}),
                                   "--no-cache", "."))


def test_a_count_tested_after_it_is_bound_is_a_read(tmp_path: Path):
    """Without following `num_pos = pos.sum()` to `if num_pos == 0:` the loss pays nothing."""
    losses = LOSSES.replace("    if num_pos == 0:\n", "    if num_pos is None:\n")
    assert losses != LOSSES
    assert CALL not in found(check(write_project(tmp_path, {"losses.py": losses, "train.py": TRAIN}),
                                   "--no-cache", "."))
    train = TRAIN.replace("torch.nn.MSELoss() if opt.mse_loss else FocalLoss()", "FocalLoss()")
    root = write_project(tmp_path / "plain", {"losses.py": LOSSES, "train.py": train})
    assert CALL in found(check(root, "--no-cache", "."))


TRAINER = textwrap.dedent("""\
    import torch
    from losses import FocalLoss


    class Criterion(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.crit = FocalLoss()

        def forward(self, out, y):
            return self.crit(out, y)


    def train(model, loader, optimizer):
        criterion = Criterion()
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()


    class Trainer(object):
        def __init__(self, model):
            self.model = model
            self.crit = FocalLoss()

        def step(self, x, y):
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            return self.crit(self.model(x), y)


    def fit(model, loader):
        trainer = Trainer(model)
        for x, y in loader:
            trainer.step(x, y).backward()
""")


def test_a_module_stored_on_self_runs_its_forward(tmp_path: Path):
    items = _items(write_project(tmp_path, {"losses.py": LOSSES, "trainer.py": TRAINER}))
    # the wrapper's summary follows `self.crit(out, y)` into FocalLoss.forward
    assert ("trainer.py", 18, "GPU112") in items
    assert "Criterion.forward" in items[("trainer.py", 18, "GPU112")]["message"]
    # a per-step method calling the stored module with device tensors pays at that call
    assert ("trainer.py", 30, "GPU112") in items
    assert "FocalLoss.forward" in items[("trainer.py", 30, "GPU112")]["message"]


FACTORY = textwrap.dedent("""\
    from .base import BaseDetector


    class CtDetector(BaseDetector):
        def process(self, images):
            return images * 2


    class PoseDetector(BaseDetector):
        def process(self, images):
            return images + 1


    detector_factory = {"ctdet": CtDetector, "pose": PoseDetector}
""")

BASE = textwrap.dedent("""\
    import torch


    class BaseDetector(object):
        def __init__(self, opt):
            self.opt = opt

        def run(self, images):
            images = images.to(self.opt.device)
            torch.cuda.synchronize()
            return self.process(images)
""")

INIT_PATHS = textwrap.dedent("""\
    import os.path as osp
    import sys


    def add_path(path):
        if path not in sys.path:
            sys.path.insert(0, path)


    this_dir = osp.dirname(__file__)
    add_path(osp.join(this_dir, 'lib'))
""")

TEST = textwrap.dedent("""\
    import os
    import _init_paths
    import torch
    from detectors.factory import detector_factory


    def test(opt, loader):
        os.environ['CUDA_VISIBLE_DEVICES'] = opt.gpus
        Detector = detector_factory[opt.task]
        detector = Detector(opt)
        for images in loader:
            ret = detector.run(images)
""")


def _detectors(root: Path, test: str = TEST) -> Path:
    return write_project(root, {"src/_init_paths.py": INIT_PATHS, "src/test.py": test,
                                "src/lib/detectors/__init__.py": "", "src/lib/detectors/factory.py": FACTORY,
                                "src/lib/detectors/base.py": BASE})


def test_a_registry_of_another_module_picks_the_class_of_a_launched_script(tmp_path: Path):
    results = found(check(_detectors(tmp_path), "--no-cache", "."))
    assert ("src/test.py", 12, "GPU112") in results  # the call: every candidate inherits `run`
    assert ("src/lib/detectors/base.py", 10, "GPU109") in results  # `run` is per-step code


def test_without_the_launcher_nothing_resolves(tmp_path: Path):
    test = TEST.replace("import _init_paths\n", "")
    assert test != TEST
    results = found(check(_detectors(tmp_path, test), "--no-cache", "."))
    assert ("src/test.py", 12, "GPU112") not in results


def test_visible_cuda_devices_say_the_script_uses_the_gpu(tmp_path: Path):
    test = TEST.replace("    os.environ['CUDA_VISIBLE_DEVICES'] = opt.gpus\n", "")
    assert test != TEST
    results = found(check(_detectors(tmp_path, test), "--no-cache", "."))
    assert ("src/test.py", 11, "GPU112") not in results


TRAINS = textwrap.dedent("""\
    import torch
    from models.losses import FocalLoss


    def train(model, loader, optimizer):
        crit = FocalLoss()
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = crit(model(x), y)
            loss.backward()
            optimizer.step()
""")


def test_an_import_resolves_from_a_folder_above_the_importer(tmp_path: Path):
    """`lib/trains/loop.py` imports `models.losses`, a package of `lib/` (which a launcher puts on the path)."""
    root = write_project(tmp_path, {"lib/models/__init__.py": "", "lib/models/losses.py": LOSSES,
                                    "lib/trains/__init__.py": "", "lib/trains/loop.py": TRAINS})
    assert ("lib/trains/loop.py", 9, "GPU112") in found(check(root, "--no-cache", "."))


FACTORY_LOADER = textwrap.dedent("""\
    import torch


    def create_loader(data, batch_size=4):
        return torch.utils.data.DataLoader(data, batch_size=batch_size, num_workers=0)
""")

LOADER_TEST = textwrap.dedent("""\
    import torch
    from mypkg.data import create_loader


    def test_train():
        loader = create_loader(list(range(8)))
        model = torch.nn.Linear(1, 1).cuda()
        for x in loader:
            model(x.float().cuda().unsqueeze(1)).sum().backward()
""")


def test_a_test_module_calling_a_loader_factory_is_no_training_run(tmp_path: Path):
    """The ancestor-folder imports resolve `mypkg.data` from `pkg/mypkg/tests/`: its test's loader is no finding."""
    root = write_project(tmp_path, {"pkg/mypkg/__init__.py": "", "pkg/mypkg/data.py": FACTORY_LOADER,
                                    "pkg/mypkg/tests/test_train.py": LOADER_TEST})
    assert ("pkg/mypkg/tests/test_train.py", 6, "GPU201") not in found(check(root, "--no-cache", "."))
