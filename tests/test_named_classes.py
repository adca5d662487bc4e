"""Classes built by name (issue 11, branch recall26): a registry, a module's namespace or a dict picks the class.

- `@ARCHS.register()` on a class and `ARCHS.get(cfg.name)(cfg)` in a factory: the registered class's `forward`
  runs every step in the run that names it; an unregistered class of the same module does not.
- `get_algorithm_class(name)` returning `globals()[name]`: every class of the module is a candidate, so each one's
  `update` that the loop calls is per-step code (one candidate is enough: the run naming it builds it).
- `getattr(module, opt["model_type"], None)` over modules imported by `importlib.import_module(f"pkg.{n}")`.
- a dict of builders (`models = {"GCN": GCN}; return models[name](params)`) whose result another module's loop
  receives as a parameter (the loop's function imported under another name inside the caller's function).
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

FILES = {
    "main_gnn.py": """\
import torch
from torch.utils.data import DataLoader

from nets.load_net import gnn_model


def pipeline(name, params):
    model = gnn_model(name, params).to("cuda")
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    loader = DataLoader(list(zip(torch.randn(64, 4), torch.randint(0, 2, (64,)))), batch_size=8, pin_memory=True)
    from train.epoch import train_epoch_sparse as train_epoch
    for epoch in range(3):
        train_epoch(model, optimizer, "cuda", loader)
""",
    "nets/__init__.py": """\
""",
    "nets/gcn.py": """\
import torch
import torch.nn as nn


class GCNNet(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.device = p["device"]

    def forward(self, x):
        return self.fc(x)

    def loss(self, pred, label):
        counts = torch.bincount(label)
        present = counts[counts.nonzero()]
        sizes = torch.zeros(2).long().to(self.device)
        return nn.functional.cross_entropy(pred, label) + present.sum() * 0
""",
    "nets/load_net.py": """\
from nets.gcn import GCNNet


def GCN(params):
    return GCNNet(params)


def gnn_model(name, params):
    models = {"GCN": GCN}
    return models[name](params)
""",
    "proj/__init__.py": """\
""",
    "proj/algorithms.py": """\
import torch
import torch.nn as nn


def get_algorithm_class(name):
    if name not in globals():
        raise NotImplementedError(name)
    return globals()[name]


class ERM(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.net = nn.Linear(n, 1)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def update(self, x, y):
        loss = (self.net(x) - y).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return {"loss": loss.item()}


class Mixup(ERM):
    def update(self, x, y):
        torch.cuda.synchronize()
        lam = 0.5
        loss = (self.net(lam * x) - y).pow(2).mean()
        return {"loss": loss.item()}
""",
    "proj/models/__init__.py": """\
import importlib

_model_modules = [importlib.import_module(f"proj.models.{n}") for n in ["sr_model"]]


def create_model(opt):
    for module in _model_modules:
        model_cls = getattr(module, opt["model_type"], None)
        if model_cls is not None:
            break
    model = model_cls(opt)
    return model
""",
    "proj/models/sr_model.py": """\
import torch


class SRModel:
    def __init__(self, opt):
        self.net = torch.nn.Linear(4, 4).cuda()
        self.opt = torch.optim.Adam(self.net.parameters())

    def feed_data(self, data):
        self.lq = data.cuda()

    def optimize_parameters(self, step):
        loss = self.net(self.lq).mean()
        loss.backward()
        self.opt.step()
        return loss.item()
""",
    "proj/nets/__init__.py": """\
""",
    "proj/nets/heads.py": """\
import torch
import torch.nn as nn

from proj.registry import ARCHS


@ARCHS.register()
class BoxHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        keep = x.sum().item()
        return self.fc(x), keep


class Unregistered(nn.Module):
    def forward(self, x):
        return x[x > 0].nonzero()
""",
    "proj/registry.py": """\
class Registry:
    def __init__(self, name):
        self.name = name
        self.table = {}

    def register(self):
        def wrap(cls):
            self.table[cls.__name__] = cls
            return cls
        return wrap

    def get(self, name):
        return self.table[name]


ARCHS = Registry("arch")


def build_arch(cfg):
    arch = ARCHS.get(cfg.name)(cfg)
    arch.to(cfg.device)
    return arch
""",
    "train/__init__.py": """\
""",
    "train/epoch.py": """\
import torch


def train_epoch_sparse(model, optimizer, device, loader):
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = model.loss(model(x), y)
        loss.backward()
        optimizer.step()
""",
    "train_alg.py": """\
import torch
from torch.utils.data import DataLoader

from proj import algorithms


def main(args):
    algorithm_class = algorithms.get_algorithm_class(args.algorithm)
    algorithm = algorithm_class(4)
    algorithm.cuda()
    loader = DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
    for x in loader:
        x = x.cuda(non_blocking=True)
        algorithm.update(x, x.sum(1))
""",
    "train_arch.py": """\
import torch
from torch.utils.data import DataLoader

from proj.registry import build_arch


def main(cfg):
    model = build_arch(cfg)
    loader = DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
    for x in loader:
        x = x.cuda(non_blocking=True)
        out, keep = model(x)
        out.mean().backward()
""",
    "train_sr.py": """\
import torch
from torch.utils.data import DataLoader

from proj.models import create_model


def main(opt):
    model = create_model(opt)
    loader = DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
    for data in loader:
        model.feed_data(data)
        model.optimize_parameters(0)
""",
}


EXPECTED = {
    ("proj/nets/heads.py", 14, "GPU101"),  # `x.sum().item()` in the registered BoxHead.forward
    ("proj/algorithms.py", 22, "GPU101"),  # ERM.update, a candidate of globals()[name]
    ("proj/algorithms.py", 27, "GPU109"),  # Mixup.update, another candidate
    ("proj/algorithms.py", 30, "GPU101"),
    ("proj/models/sr_model.py", 16, "GPU101"),  # SRModel.optimize_parameters, picked by getattr(module, name)
    ("nets/gcn.py", 16, "GPU111"),  # GCNNet.loss, built through a dict of builders, run by train/epoch.py
    ("nets/gcn.py", 17, "GPU203"),
}


def _project(tmp_path: Path, changes: dict | None = None) -> Path:
    files = dict(FILES)
    for name, (old, new) in (changes or {}).items():
        assert old in files[name]
        files[name] = files[name].replace(old, new)
    return write_project(tmp_path, files)


def test_classes_picked_by_name_run_every_step(tmp_path: Path):
    keys = found(check(_project(tmp_path), "--no-cache", "--select", "GPU101,GPU109,GPU111,GPU203", "."))
    assert EXPECTED <= keys
    assert not any(path == "proj/nets/heads.py" and row == 20 for path, row, _ in keys)  # Unregistered: never built


def test_an_unregistered_class_is_not_a_candidate(tmp_path: Path):
    root = _project(tmp_path, {"proj/nets/heads.py": ("@ARCHS.register()\n", "")})
    keys = found(check(root, "--no-cache", "--select", "GPU101", "proj/nets/heads.py"))
    assert keys == set()


def test_a_constant_name_is_not_a_choice(tmp_path: Path):
    """`getattr(module, "Other")` names one class, looked up as usual: SRModel is not built."""
    root = _project(tmp_path, {"proj/models/__init__.py": ('opt["model_type"]', '"Other"')})
    keys = found(check(root, "--no-cache", "--select", "GPU101", "proj/models/sr_model.py"))
    assert keys == set()


def test_a_name_no_call_site_passes_stays_unknown(tmp_path: Path):
    """The loop's function is never called with the built model: GCNNet.loss is not per-step."""
    root = _project(tmp_path, {"main_gnn.py": ("train_epoch(model, optimizer", "train_epoch(None, optimizer")})
    keys = found(check(root, "--no-cache", "--select", "GPU111,GPU203", "nets/gcn.py"))
    assert keys == set()
