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
            model.L = train_data['L'].to('cuda', non_blocking=True)
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


def test_a_factory_importing_one_class_at_module_level_is_unchanged(tmp_path):
    plain_only = "from models.model_plain import ModelPlain\n\n\ndef define_Model(opt):\n    return ModelPlain(opt)\n"
    keys = _lint(tmp_path, plain_only)
    assert ("models/model_plain.py", 13, "GPU101") in keys
    assert not any(path == "models/model_gan.py" for path, _row, _code in keys)
