"""Optimizers whose class a configuration file names (analysis/configured_names.py): pytorch-template's
`config.init_obj('optimizer', torch.optim, params)` with `"optimizer": {"type": "Adam"}` in config.json (heldout33a),
and `getattr(torch.optim, cfg.optimizer.type)` with `optimizer: type: Adam` in a YAML file (heldout33b's
nerf-pytorch). GPU402 judges them by the names the files give; a file that sets `fused` itself, or names a class
without a fused implementation, keeps it quiet. The device may come from a project helper returning a CUDA
device (`device, ids = prepare_device(n_gpu)`), and the trainer may keep the optimizer in its base class."""

from __future__ import annotations

import json

from projects import check, found, write_project

TRAIN = """\
import torch

import model.model as module_arch
from parse_config import ConfigParser
from trainer import Trainer
from utils import prepare_device


def main(config):
    model = config.init_obj('arch', module_arch)
    device, device_ids = prepare_device(config['n_gpu'])
    model = model.to(device)
    trainable_params = filter(lambda p: p.requires_grad, model.parameters())
    optimizer = config.init_obj('optimizer', torch.optim, trainable_params)
    trainer = Trainer(model, optimizer, config=config, device=device, data_loader=config.init_obj('data', None))
    trainer.train()
"""

UTILS = """\
import torch


def prepare_device(n_gpu_use):
    n_gpu = torch.cuda.device_count()
    if n_gpu_use > n_gpu:
        n_gpu_use = n_gpu
    device = torch.device('cuda:0' if n_gpu_use > 0 else 'cpu')
    list_ids = list(range(n_gpu_use))
    return device, list_ids
"""

TRAINER = """\
class BaseTrainer:
    def __init__(self, model, optimizer, config):
        self.model = model
        self.optimizer = optimizer


class Trainer(BaseTrainer):
    def __init__(self, model, optimizer, config, device, data_loader):
        super().__init__(model, optimizer, config)
        self.device = device
        self.data_loader = data_loader

    def train(self):
        for data, target in self.data_loader:
            data, target = data.to(self.device), target.to(self.device)
            self.optimizer.zero_grad()
            loss = (self.model(data) - target).square().mean()
            loss.backward()
            self.optimizer.step()
"""


def _config(args: dict, kind: str = "Adam") -> str:
    return json.dumps({"n_gpu": 1, "arch": {"type": "Net", "args": {}},
                       "optimizer": {"type": kind, "args": args}}, indent=4)


def _lint(tmp_path, config: str):
    root = write_project(tmp_path, {"train.py": TRAIN, "utils.py": UTILS, "trainer.py": TRAINER,
                                    "config.json": config})
    return check(root, "--no-cache", "--exit-zero", "--select", "GPU402", ".")


def test_an_optimizer_named_by_config_json_is_judged_by_that_name(tmp_path):
    items = _lint(tmp_path, _config({"lr": 0.001, "amsgrad": True}))
    assert found(items) == {("train.py", 14, "GPU402")}, items
    assert items[0]["fix"] is None  # the project's own factory: no keyword is added to it


def test_a_config_that_chooses_the_implementation_is_left_alone(tmp_path):
    assert _lint(tmp_path, _config({"lr": 0.001, "foreach": False})) == []


def test_a_configured_class_without_a_fused_implementation_is_left_alone(tmp_path):
    assert _lint(tmp_path, _config({"lr": 1.0}, kind="LBFGS")) == []


NERF = """\
import torch
import yaml


def main(cfg, model):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    optimizer = getattr(torch.optim, cfg.optimizer.type)(model.parameters(), lr=cfg.optimizer.lr)
    for it in range(cfg.experiment.train_iters):
        loss = model(torch.rand(1024, 3, device=device)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_getattr_of_torch_optim_reads_the_yaml_files(tmp_path):
    root = write_project(tmp_path, {"train_nerf.py": NERF, "config/lego.yml":
                                    "experiment:\n  train_iters: 200000\noptimizer:\n  type: Adam\n  lr: 5.0E-3\n"})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU402", ".")
    assert found(items) == {("train_nerf.py", 8, "GPU402")}, items
    root = write_project(tmp_path / "other", {"train_nerf.py": NERF, "config/lego.yml":
                                              "optimizer:\n  type: Adam\n  fused: false\n"})
    assert check(root, "--no-cache", "--exit-zero", "--select", "GPU402", ".") == []
