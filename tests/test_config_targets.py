"""Objects built from configuration files (branch recall30): `instantiate(cfg.K)` with YAML `_target_:` keys.

- a trainer builds `self.model = instantiate(self.model_conf)` and
  `self.loss = {k: v for k, v in instantiate(self.loss_conf).items()}`; the step calls `self.loss[key](...)` and
  `model(batch)` (a parameter its caller fills with `self.model`): the configured classes' forwards run every step.
- only the shallowest `_target_` under the key: a submodule nested inside the model's configuration is not the
  model; a class the configuration never names (or names under another key) stays quiet.
- the line-based reader: nesting by indentation, list items, comments, a config group's top-level target.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

from gpulint.analysis.config_targets import config_key, read_targets

import ast

FILES = {
    "training/__init__.py": "",
    "training/trainer.py": """\
import torch
from hydra.utils import instantiate


class Trainer:
    def __init__(self, model, loss, data):
        self.model_conf = model
        self.loss_conf = loss
        self.model = instantiate(self.model_conf, _convert_="all")
        self.model = torch.nn.parallel.DistributedDataParallel(self.model)
        self.loss = {key: el for (key, el) in instantiate(self.loss_conf, _convert_="all").items()}
        self.loader = torch.utils.data.DataLoader(instantiate(data), batch_size=8, pin_memory=True)
        self.optim = torch.optim.SGD(self.model.parameters(), lr=0.1, fused=True)

    def _step(self, batch, model, key):
        outputs = model(batch)
        return self.loss[key](outputs, batch)

    def train_epoch(self):
        for batch in self.loader:
            batch = batch.cuda(non_blocking=True)
            loss = self._step(batch, self.model, "all")
            loss.backward()
            self.optim.step()
            self.optim.zero_grad()
""",
    "training/model.py": """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, x):
        labels = torch.unique(x)
        return self.encoder(x) * labels.numel()


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * torch.unique(x).numel()


class Unused(nn.Module):
    def forward(self, x):
        return x.sum().item()
""",
    "training/loss_fns.py": """\
import torch
import torch.nn as nn


class MultiLoss(nn.Module):
    def forward(self, outputs, targets):
        num = torch.clamp(outputs.sum(), min=1).item()
        return outputs.mean() / num
""",
    "configs/train.yaml": """\
# a training configuration
trainer:
  model:
    _target_: training.model.Net   # the model
    encoder:
      _target_: training.model.Encoder
  optim:
    - scheduler:
        _target_: torch.optim.lr_scheduler.StepLR
  loss:
    all:
      _target_: 'training.loss_fns.MultiLoss'
      weight: 1
""",
}


def _project(tmp_path: Path) -> Path:
    return write_project(tmp_path, FILES)


def test_configured_classes_run_every_step(tmp_path: Path):
    keys = found(check(_project(tmp_path), "--no-cache", "--select", "GPU101,GPU111", "."))
    assert ("training/loss_fns.py", 7, "GPU101") in keys  # self.loss[key](...) of instantiate(self.loss_conf)
    assert ("training/model.py", 11, "GPU111") in keys  # model(batch), model = self.model of instantiate(...)


def test_nested_and_unnamed_classes_stay_quiet(tmp_path: Path):
    keys = found(check(_project(tmp_path), "--no-cache", "--select", "GPU101,GPU111", "training/model.py"))
    assert ("training/model.py", 21, "GPU111") not in keys  # Encoder: nested inside the model's configuration
    assert ("training/model.py", 26, "GPU101") not in keys  # Unused: no configuration names it


def test_an_unknown_key_stays_unknown(tmp_path: Path):
    root = _project(tmp_path)
    trainer = root / "training/trainer.py"
    trainer.write_text(trainer.read_text().replace("instantiate(self.loss_conf", "instantiate(self.cfg"))
    keys = found(check(root, "--no-cache", "--select", "GPU101", "training/loss_fns.py"))
    assert ("training/loss_fns.py", 7, "GPU101") not in keys


def test_reader_nesting_lists_comments_and_groups():
    text = FILES["configs/train.yaml"]
    targets = read_targets(text)
    assert targets["model"] == {"training.model.Net": 0, "training.model.Encoder": 1}
    assert targets["loss"] == {"training.loss_fns.MultiLoss": 1}
    assert "trainer" in targets and "encoder" in targets
    assert targets["scheduler"] == {"torch.optim.lr_scheduler.StepLR": 0}
    assert read_targets("_target_: pkg.models.ResNet\ndepth: 50\n", "model") == {"model": {"pkg.models.ResNet": 0}}
    assert read_targets("model:\n  _target_: not a dotted name\n") == {}


def test_config_keys():
    def key(code):
        return config_key(ast.parse(code, mode="eval").body)
    assert key("self.model_conf") == "model"
    assert key("cfg.model") == "model"
    assert key('cfg["loss"]') == "loss"
    assert key("model_cfg") == "model"
    assert key("cfg_loss") == "loss"
    assert key("cfg") is None and key("self.config") is None and key("f(x)") is None


TIMM_FILES = {
    "train.py": """\
import torch
from timm.models import create_model

import models  # registers the project's models


def main(args):
    model = create_model(args.model, pretrained=False).cuda()
    loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    for x in loader:
        x = x.cuda(non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
""",
    "models.py": """\
import torch
import torch.nn as nn
from timm.models.registry import register_model


class Pretrain(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x) * torch.unique(x).numel()


class NotRegistered(nn.Module):
    def forward(self, x):
        return x * torch.unique(x).numel()


@register_model
def pretrain_small(pretrained=False, **kwargs):
    model = Pretrain(4)
    return model
""",
}


def test_timm_create_model_builds_the_registered_models(tmp_path: Path):
    root = write_project(tmp_path, TIMM_FILES)
    keys = found(check(root, "--no-cache", "--select", "GPU111", "models.py"))
    assert ("models.py", 12, "GPU111") in keys  # Pretrain, built by the @register_model function
    assert ("models.py", 17, "GPU111") not in keys  # no registered function builds it
