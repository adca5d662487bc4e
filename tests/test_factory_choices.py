"""Objects whose class a factory picks from a configuration string (branch recall55).

A model-wrapper factory imports one of several classes inside the branch its option selects and returns an
instance (`if opt['model'] == 'plain': from models.model_plain import ModelPlain as M` ... `return M(opt)`,
KAIR's `define_Model`). Each class a branch imports is a candidate: the run whose option names it builds it, so
the methods the training loop calls on the result (`model.optimize_parameters(step)`) run every step.
Precision: a class the factory does not import stays silent, and so does a method the loop never calls.
"""

from __future__ import annotations

from projects import check, found, write_project

FACTORY = """\
def define_Model(opt):
    model = opt['model']
    if model == 'plain':
        from models.model_plain import ModelPlain as M
    elif model == 'gan':
        from models.model_gan import ModelGAN as M
    else:
        raise NotImplementedError(model)
    m = M(opt)
    return m
"""

PLAIN = """\
import torch


class ModelPlain:
    def __init__(self, opt):
        self.device = torch.device('cuda')
        self.netG = torch.nn.Linear(4, 4).to(self.device)
        self.log_dict = {}

    def optimize_parameters(self, step):
        loss = self.netG(self.L).abs().mean()
        loss.backward()
        self.log_dict['G_loss'] = loss.item()

    def save(self, step):
        self.log_dict['saved'] = self.netG.weight.sum().item()

    def feed_data(self, data):
        self.L = data['L'].to(self.device, non_blocking=True)
        self.sf = data['sf'][0].squeeze().cpu().numpy()
"""

GAN = """\
import torch
from models.model_plain import ModelPlain


class ModelGAN(ModelPlain):
    def __init__(self, opt):
        super().__init__(opt)
        self.netD = torch.nn.Linear(4, 1).to(self.device)

    def optimize_parameters(self, step):
        loss = self.netD(self.L).mean()
        loss.backward()
        self.log_dict['D_loss'] = loss.item()
"""

OTHER = """\
import torch


class ModelOther:
    def __init__(self, opt):
        self.net = torch.nn.Linear(4, 1).cuda()

    def optimize_parameters(self, step):
        loss = self.net(self.L).mean()
        loss.backward()
        self.loss = loss.item()
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from models.select_model import define_Model


def main(opt, train_set):
    train_loader = DataLoader(train_set, batch_size=16, num_workers=8, pin_memory=True)
    model = define_Model(opt)
    for epoch in range(100):
        for i, train_data in enumerate(train_loader):
            model.feed_data(train_data)
            model.optimize_parameters(i)
"""


def _lint(root, factory=FACTORY):
    write_project(root, {"models/__init__.py": "", "models/select_model.py": factory,
                         "models/model_plain.py": PLAIN, "models/model_gan.py": GAN,
                         "models/model_other.py": OTHER, "main_train.py": TRAIN})
    return found(check(root, "--no-cache", "--exit-zero"))


def test_every_class_a_branch_imports_runs_the_called_method(tmp_path):
    keys = _lint(tmp_path)
    assert ("models/model_plain.py", 13, "GPU101") in keys
    assert ("models/model_gan.py", 13, "GPU101") in keys


def test_classes_the_factory_does_not_import_and_methods_not_called_stay_silent(tmp_path):
    keys = _lint(tmp_path)
    assert not any(path == "models/model_other.py" for path, _row, _code in keys)
    assert ("models/model_plain.py", 16, "GPU101") not in keys  # `save` is never called by the loop


def test_the_loaders_batch_handed_to_a_per_step_method_is_in_host_memory(tmp_path):
    keys = _lint(tmp_path)
    assert ("models/model_plain.py", 20, "GPU104") not in keys  # `data['sf'].cpu()` of the collated batch


def test_a_factory_importing_one_class_at_module_level_is_unchanged(tmp_path):
    plain_only = "from models.model_plain import ModelPlain\n\n\ndef define_Model(opt):\n    return ModelPlain(opt)\n"
    keys = _lint(tmp_path, plain_only)
    assert ("models/model_plain.py", 13, "GPU101") in keys
    assert not any(path == "models/model_gan.py" for path, _row, _code in keys)


# A detector built from a dict of architectures (`build_detection_model(cfg)`) in a loop-free script and handed
# to the training function of another module, whose head comes from a registry filled by a decorator
# (`@registry.BOX_HEADS.register("SSDBoxHead")`, `registry.BOX_HEADS[cfg.NAME](cfg)`), and whose loss is a
# submodule of the head: the loss's `forward` runs every step.
DETECTOR = {
    "ssd/__init__.py": "",
    "ssd/utils/__init__.py": "",
    "ssd/utils/registry.py": """\
class Registry(dict):
    def register(self, name, module=None):
        def wrap(fn):
            self[name] = fn
            return fn
        return wrap
""",
    "ssd/modeling/__init__.py": "",
    "ssd/modeling/registry.py": """\
from ssd.utils.registry import Registry

BOX_HEADS = Registry()
""",
    "ssd/modeling/box_head/__init__.py": """\
from ssd.modeling import registry
from .box_head import SSDBoxHead


def build_box_head(cfg):
    return registry.BOX_HEADS[cfg.MODEL.BOX_HEAD.NAME](cfg)
""",
    "ssd/modeling/box_head/loss.py": """\
import torch
import torch.nn as nn


class MultiBoxLoss(nn.Module):
    def forward(self, confidence, labels):
        loss = nn.functional.cross_entropy(confidence, labels)
        self.last = loss.item()
        return loss
""",
    "ssd/modeling/box_head/box_head.py": """\
import torch.nn as nn

from ssd.modeling import registry
from .loss import MultiBoxLoss


@registry.BOX_HEADS.register('SSDBoxHead')
class SSDBoxHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.predictor = nn.Linear(4, 3)
        self.loss_evaluator = MultiBoxLoss()

    def forward(self, features, targets=None):
        logits = self.predictor(features)
        return self.loss_evaluator(logits, targets)


class UnusedHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.predictor = nn.Linear(4, 3)

    def forward(self, features, targets=None):
        logits = self.predictor(features)
        self.last = logits.sum().item()
        return logits
""",
    "ssd/modeling/detector/__init__.py": """\
from .ssd_detector import SSDDetector

_DETECTION_META_ARCHITECTURES = {
    "SSDDetector": SSDDetector
}


def build_detection_model(cfg):
    meta_arch = _DETECTION_META_ARCHITECTURES[cfg.MODEL.META_ARCHITECTURE]
    return meta_arch(cfg)
""",
    "ssd/modeling/detector/ssd_detector.py": """\
from torch import nn

from ssd.modeling.box_head import build_box_head


class SSDDetector(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.box_head = build_box_head(cfg)

    def forward(self, images, targets=None):
        return self.box_head(images, targets)
""",
    "ssd/engine/__init__.py": "",
    "ssd/engine/trainer.py": """\
import torch


def do_train(cfg, model, data_loader, optimizer, device):
    model.train()
    for iteration, (images, targets) in enumerate(data_loader):
        images = images.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        loss = model(images, targets=targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model
""",
    "train.py": """\
import torch
from torch.utils.data import DataLoader

from ssd.engine.trainer import do_train
from ssd.modeling.detector import build_detection_model


def train(cfg, dataset):
    model = build_detection_model(cfg)
    device = torch.device("cuda")
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
    return do_train(cfg, model, loader, optimizer, device)
""",
}


def test_a_registry_built_head_of_a_dict_built_detector_runs_its_loss_every_step(tmp_path):
    write_project(tmp_path, DETECTOR)
    keys = found(check(tmp_path, "--no-cache", "--exit-zero"))
    assert ("ssd/modeling/box_head/loss.py", 8, "GPU101") in keys
    assert not any(row == 27 and path.endswith("box_head.py") for path, row, _code in keys)  # UnusedHead
