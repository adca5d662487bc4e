"""Batches of pinned loaders built away from the loop that copies them (branch recall65, heldout19's misses).

- A device bound in `main()` under `global cuda; cuda = torch.device('cuda')` and read by the loop's function
  (`input_seq.to(cuda)` in `train(data_loader, ...)`): the copy goes to the GPU, so GPU202 judges it by the loader
  `main()` hands over (a factory of the module that pins it).
- A factory whose loader pins only under its CUDA flag (`**({"pin_memory": True} if cuda else {})`), called with
  the caller's own CUDA flag (`cuda=cuda` of `cuda = model.is_on_cuda()`, `torch.cuda.is_available()`): pinned on
  every run that copies to the GPU. A flag not named for CUDA stays unknown.
- `data_loader = iter(get_data_loader(...))` inside a step loop, drawn with `next(data_loader)`: the factory call
  under `iter(...)` is a loader (analysis/loader_calls.py), so the loop takes one batch per iteration.
- GPU201 at `DataLoader(..., pin_memory=cfg.PIN_MEMORY)` where the yacs default is `False` and no YAML sets it:
  unpinned in every shipped run, reported like a loader passing no `pin_memory`, also when the loader is handed
  to another module's training function (`pin_memory=False` written out, and an argparse flag off by default that
  a shell recipe may pass, are still reported only where a loop of the module is seen copying their batches).
- A loop over a method's parameter (`def train_loop(self, epoch, train_loader, optimizer)`) resolved through the
  calls of the method by name in the project's other files (`model.train_loop(epoch, base_loader, optimizer)`),
  a loader handed on by the script's own top-level `train(base_loader, ...)` and built by a method of a project
  class instance on either branch of an `if` (`manager.loader(...)`, `DataLoader(ds, **options)` with `options =
  dict(..., pin_memory=True)`); the batch handed on through two of the class's methods (`forward_loss(x, y)` ->
  `self.forward(x)`) before its copy.
- `DataLoader(..., pin_memory=args.pin_memory)` handed to another module's loop, where the project's parser
  declares `--pin_memory` with `default=True` (`type=str2bool`): pinned in the default run.
"""

from __future__ import annotations

from pathlib import Path

from projects import lint_script

GLOBAL_DEVICE = """\
import torch
from torch.utils import data


def main():
    global cuda; cuda = torch.device('cuda')
    model = torch.nn.Linear(4, 4).to(cuda)
    optimizer = torch.optim.Adam(model.parameters())
    train_loader = get_data('train')
    for epoch in range(10):
        train(train_loader, model, optimizer)


def train(data_loader, model, optimizer):
    for idx, (input_seq, target) in enumerate(data_loader):
        input_seq = input_seq.to(cuda)
        loss = model(input_seq).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def get_data(mode='train'):
    dataset = list(range(10))
    if mode == 'train':
        data_loader = data.DataLoader(dataset, batch_size=4, pin_memory=True, num_workers=4)
    elif mode == 'val':
        data_loader = data.DataLoader(dataset, batch_size=4, pin_memory=True, num_workers=4)
    return data_loader


if __name__ == '__main__':
    main()
"""


def test_a_global_device_bound_in_main_is_the_gpu(tmp_path: Path) -> None:
    assert (16, "GPU202") in lint_script(tmp_path, GLOBAL_DEVICE)


def test_a_global_bound_to_the_cpu_is_not(tmp_path: Path) -> None:
    cpu = GLOBAL_DEVICE.replace("torch.device('cuda')", "torch.device('cpu')")
    assert not {f for f in lint_script(tmp_path, cpu) if f[1] == "GPU202"}


UTILS = """\
from torch.utils.data import DataLoader


def get_data_loader(dataset, batch_size, cuda=False, drop_last=False):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=drop_last,
                      **({'num_workers': 0, 'pin_memory': True} if cuda else {}))
"""

TRAIN_CL = """\
import torch
from utils import get_data_loader


def train_cl(model, dataset, iters, batch_size):
    cuda = model.is_on_cuda()
    device = model.device()
    iters_left = 1
    for batch_index in range(1, iters + 1):
        iters_left -= 1
        if iters_left == 0:
            data_loader = iter(get_data_loader(dataset, batch_size, cuda=cuda, drop_last=True))
            iters_left = len(data_loader)
        x, y = next(data_loader)
        x, y = x.to(device), y.to(device)
        model.train_a_batch(x, y)


def test_acc(model, dataset, batch_size=128):
    device = model.device()
    data_loader = get_data_loader(dataset, batch_size, cuda=torch.cuda.is_available())
    correct = 0
    for x, y in data_loader:
        with torch.no_grad():
            scores = model(x.to(device))
        correct += (scores.argmax(1).cpu() == y).sum()
    return correct
"""


def _project(tmp_path: Path, utils: str = UTILS, train: str = TRAIN_CL) -> set:
    from projects import check, found, write_project

    root = write_project(tmp_path, {"utils.py": utils, "train.py": train})
    return {(p, row, code) for p, row, code in found(check(root, "--no-cache", "--exit-zero", "train.py"))}


def test_a_factory_pinning_on_its_cuda_flag_pins_for_a_cuda_caller(tmp_path: Path) -> None:
    # `**({"pin_memory": True} if cuda else {})` with `cuda=cuda` of `cuda = model.is_on_cuda()`: pinned on every run
    # that copies to the GPU; the loader drawn with `next(iter(get_data_loader(...)))` makes the loop a step loop
    found = _project(tmp_path)
    assert ("train.py", 15, "GPU202") in found
    assert ("train.py", 25, "GPU202") in found


def test_a_flag_not_named_for_cuda_leaves_pinning_unknown(tmp_path: Path) -> None:
    utils = UTILS.replace("cuda", "fast")
    train = TRAIN_CL.replace("cuda=cuda", "fast=cuda").replace("cuda=torch.cuda", "fast=torch.cuda")
    assert not {f for f in _project(tmp_path, utils, train) if f[2] in ("GPU202", "GPU201")}


CONFIG = """\
from yacs.config import CfgNode as CN

_C = CN()
_C.WORKERS = 8
_C.PIN_MEMORY = False
cfg = _C
"""

FUNCTION = """\
def train(cfg, train_loader, model, optimizer, device):
    for i, (x, y) in enumerate(train_loader):
        loss = model(x.to(device)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

YACS_TRAIN = """\
import torch
from torch.utils.data import DataLoader
from config import cfg
from function import train


def main(dataset):
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = DataLoader(dataset, batch_size=8, num_workers=cfg.WORKERS, pin_memory=cfg.PIN_MEMORY)
    for epoch in range(10):
        train(cfg, train_loader, model, optimizer, device)
"""


def _yacs(tmp_path: Path, config: str = CONFIG, extra: dict = {}) -> list:
    from projects import check, write_project

    root = write_project(tmp_path, {"config.py": config, "function.py": FUNCTION, "train.py": YACS_TRAIN, **extra})
    return [d for d in check(root, "--no-cache", "--exit-zero", "train.py") if d["code"] == "GPU201"]


def test_a_yacs_pin_memory_off_by_default_is_reported(tmp_path: Path) -> None:
    # `pin_memory=cfg.PIN_MEMORY` with `_C.PIN_MEMORY = False`: unpinned in the default run, and the loader goes
    # to another module's training function (no loop of this module copies it)
    found = _yacs(tmp_path)
    assert [d["location"]["row"] for d in found] == [11]
    assert "a configuration setting that is off by default" in found[0]["message"]


def test_a_yacs_setting_on_or_set_by_a_recipe_is_not(tmp_path: Path) -> None:
    assert not _yacs(tmp_path / "on", CONFIG.replace("PIN_MEMORY = False", "PIN_MEMORY = True"))
    assert not _yacs(tmp_path / "yaml", extra={"experiments/run.yaml": "PIN_MEMORY: true\n"})


def test_pin_memory_false_written_out_still_needs_a_copy_in_sight(tmp_path: Path) -> None:
    from projects import check, write_project

    train = YACS_TRAIN.replace("pin_memory=cfg.PIN_MEMORY", "pin_memory=False")
    root = write_project(tmp_path, {"config.py": CONFIG, "function.py": FUNCTION, "train.py": train})
    assert not [d for d in check(root, "--no-cache", "--exit-zero", "train.py") if d["code"] == "GPU201"]


MANAGERS = """\
import torch


class PlainManager:
    def __init__(self, batch_size):
        self.batch_size = batch_size

    def loader(self, dataset):
        options = dict(batch_size=self.batch_size, shuffle=True, num_workers=4, pin_memory=True)
        return torch.utils.data.DataLoader(dataset, **options)


class EpisodeManager:
    def __init__(self, episodes):
        self.episodes = episodes

    def loader(self, dataset):
        options = dict(batch_size=self.episodes, num_workers=4, pin_memory=PIN)
        return torch.utils.data.DataLoader(dataset, **options)
"""

LEARNER = """\
import torch.nn as nn


class Learner(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x):
        x = x.cuda()
        return self.net(x)

    def forward_loss(self, x, y):
        scores = self.forward(x)
        y = y.cuda()
        return self.loss_fn(scores, y)

    def train_loop(self, epoch, train_loader, optimizer):
        for i, (x, y) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = self.forward_loss(x, y)
            loss.backward()
            optimizer.step()
"""

SCRIPT = """\
import torch
from managers import PlainManager, EpisodeManager
from learner import Learner


def train(base_loader, model, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        model.train()
        model.train_loop(epoch, base_loader, optimizer)


if __name__ == "__main__":
    import sys
    if sys.argv[1] == "plain":
        manager = PlainManager(16)
        base_loader = manager.loader(list(range(64)))
    else:
        manager = EpisodeManager(5)
        base_loader = manager.loader(list(range(64)))
    model = Learner(torch.nn.Linear(4, 4)).cuda()
    train(base_loader, model, 10)
"""


def _managed(tmp_path: Path, pin: str) -> set:
    from projects import check, found, write_project

    root = write_project(tmp_path, {"managers.py": MANAGERS.replace("PIN", pin), "learner.py": LEARNER,
                                    "train.py": SCRIPT})
    return {(p, row, code) for p, row, code in found(check(root, "--no-cache", "--exit-zero", "learner.py"))
            if code == "GPU202"}


def test_a_method_loop_over_a_loader_the_script_builds_with_a_manager_class(tmp_path: Path) -> None:
    # `model.train_loop(epoch, base_loader, optimizer)` in `train()`, called by the script's own `train(base_loader,
    # ...)`, whose `base_loader` comes from the `loader()` method of one of two manager classes (both pinning through
    # `**dict(..., pin_memory=True)`); the batch goes to `forward_loss(x, y)` and on to `forward(x)`, which copy it
    assert _managed(tmp_path, "True") == {("learner.py", 11, "GPU202"), ("learner.py", 16, "GPU202")}


def test_managers_that_disagree_on_pinning_leave_it_unknown(tmp_path: Path) -> None:
    assert _managed(tmp_path, "False") == set()


PARSER = """\
import argparse


def str2bool(value):
    return value.lower() in ("yes", "true", "1")


def build_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pin_memory", help="Pin memory", default=DEFAULT, type=str2bool)
    parser.add_argument("--epochs", type=int, default=10)
    return parser
"""

TOOLS = """\
def train_one_epoch(model, optimizer, data_loader, device):
    for x, y in data_loader:
        loss = model(x.to(device)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

RUN = """\
import torch
from torch.utils.data import DataLoader
from arg_parser import build_parser
from tools import train_one_epoch


def main(dataset):
    args = build_parser().parse_args()
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=args.pin_memory)
    for epoch in range(args.epochs):
        train_one_epoch(model, optimizer, train_loader, device)
"""


def _parsed(tmp_path: Path, default: str) -> set:
    from projects import check, found, write_project

    root = write_project(tmp_path, {"arg_parser.py": PARSER.replace("DEFAULT", default), "tools.py": TOOLS,
                                    "run.py": RUN})
    return {(p, row, code) for p, row, code in found(check(root, "--no-cache", "--exit-zero", "tools.py"))
            if code == "GPU202"}


def test_a_loader_pinned_by_a_project_parser_default(tmp_path: Path) -> None:
    # `pin_memory=args.pin_memory` where another module's parser declares `--pin_memory` with `default=True`
    assert _parsed(tmp_path, "True") == {("tools.py", 3, "GPU202")}


def test_a_parser_default_not_a_boolean_leaves_pinning_unknown(tmp_path: Path) -> None:
    assert _parsed(tmp_path, "None") == set()


def test_a_parser_flag_off_by_default_still_needs_a_copy_in_sight(tmp_path: Path) -> None:
    # wenet's `--pin_memory` (`action="store_true"`), passed by its run.sh recipes: a loader handed elsewhere
    from projects import check, write_project

    train = YACS_TRAIN.replace("from config import cfg\n", "import argparse\n").replace(
        "    device = torch.device(\"cuda\")\n",
        "    parser = argparse.ArgumentParser()\n    parser.add_argument(\"--pin_memory\", action=\"store_true\")\n"
        "    args = parser.parse_args()\n    device = torch.device(\"cuda\")\n").replace(
        "pin_memory=cfg.PIN_MEMORY", "pin_memory=args.pin_memory").replace("num_workers=cfg.WORKERS", "num_workers=4")
    assert "args.pin_memory" in train and "cfg." not in train.replace("train(cfg", "")
    root = write_project(tmp_path, {"function.py": FUNCTION, "train.py": train})
    assert not [d for d in check(root, "--no-cache", "--exit-zero", "train.py") if d["code"] == "GPU201"]
