"""GPU402 where the model's CUDA placement is reached by routes the rule did not follow (thirty-first landing, from
heldout26's misses):

- a placeholder binding before the real one (`criterion = None`, later `if not criterion: criterion = Loss()`,
  then `criterion = criterion.cuda()`): `None` is no model that stays on the CPU;
- a device name rebound through itself (`device = f"cuda:{i}" if ... else "cpu"; device = torch.device(device)`);
- a trainer class whose `_select_optimizer` method builds the optimizer over `self.model` into a local name and
  returns it, the model moved in a base class to `self.device = self._acquire_device()`, a method returning
  `torch.device('cuda:{}'.format(gpu))` on one branch and the CPU on the other.

Each has a quiet twin (a CPU device, a model that is never moved, a device method that can return anything).
"""

from __future__ import annotations

from projects import lint_files

PLACEHOLDER = """\
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10))
    criterion = None
    if not criterion:
        criterion = torch.nn.CrossEntropyLoss()
    if args.cuda:
        model = model.cuda()
        criterion = criterion.cuda()
    params = list(model.parameters()) + list(criterion.parameters())


    def train():
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    optimizer = torch.optim.Adam(params, lr=1e-3)
    for epoch in range(10):
        train()
"""


def test_a_criterion_bound_to_none_first_is_still_moved_to_cuda(tmp_path):
    assert ("train.py", 21, "GPU402") in lint_files(tmp_path, {"train.py": PLACEHOLDER}, "GPU402")


def test_a_criterion_that_stays_none_keeps_the_optimizer_quiet(tmp_path):
    text = PLACEHOLDER.replace("if not criterion:\n    criterion = torch.nn.CrossEntropyLoss()\n", "")
    text = text.replace("        criterion = criterion.cuda()\n", "")
    assert not lint_files(tmp_path, {"train.py": text}, "GPU402")


REBOUND = """\
    import torch
    from model import Net


    def train(model, data, optimizer):
        optimizer.zero_grad()
        loss = model(data).sum()
        loss.backward()
        optimizer.step()
        return loss


    def main(args):
        device = f"cuda:{args.device}" if torch.cuda.is_available() else "cpu"
        device = torch.device(device)
        data = torch.randn(100, 8).to(device)
        model = Net().to(device)
        for run in range(10):
            optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
            for epoch in range(100):
                train(model, data, optimizer)
"""


def test_a_device_name_rebound_through_torch_device(tmp_path):
    assert ("train.py", 19, "GPU402") in lint_files(tmp_path, {"train.py": REBOUND}, "GPU402")


def test_a_device_name_rebound_from_the_cpu_stays_quiet(tmp_path):
    text = REBOUND.replace('f"cuda:{args.device}" if torch.cuda.is_available() else "cpu"', '"cpu"')
    assert not lint_files(tmp_path, {"train.py": text}, "GPU402")


BASIC = """\
    import torch


    class Exp_Basic(object):
        def __init__(self, args):
            self.args = args
            self.device = self._acquire_device()
            self.model = self._build_model().to(self.device)

        def _build_model(self):
            raise NotImplementedError

        def _acquire_device(self):
            if self.args.use_gpu:
                device = torch.device('cuda:{}'.format(self.args.gpu))
            else:
                device = torch.device('cpu')
            return device
"""

EXP = """\
    import torch
    from torch import optim
    from exp_basic import Exp_Basic
    from models import Informer


    class Exp_Forecast(Exp_Basic):
        def _build_model(self):
            return Informer.Model(self.args).float()

        def _select_optimizer(self):
            model_optim = optim.Adam(self.model.parameters(), lr=self.args.learning_rate)
            return model_optim

        def train(self, loader):
            model_optim = self._select_optimizer()
            for batch_x, batch_y in loader:
                model_optim.zero_grad()
                outputs = self.model(batch_x.float().to(self.device))
                loss = torch.nn.functional.mse_loss(outputs, batch_y.float().to(self.device))
                loss.backward()
                model_optim.step()
"""


def test_an_optimizer_a_trainer_method_returns_over_a_model_moved_by_a_device_method(tmp_path):
    hits = lint_files(tmp_path, {"exp_basic.py": BASIC, "exp_forecast.py": EXP}, "GPU402")
    assert ("exp_forecast.py", 12, "GPU402") in hits


def test_a_device_method_returning_an_unknown_device_stays_quiet(tmp_path):
    basic = BASIC.replace("torch.device('cuda:{}'.format(self.args.gpu))", "torch.device(self.args.device)")
    assert not lint_files(tmp_path, {"exp_basic.py": basic, "exp_forecast.py": EXP}, "GPU402")


def test_a_returned_optimizer_over_a_model_never_moved_stays_quiet(tmp_path):
    basic = BASIC.replace("self._build_model().to(self.device)", "self._build_model()")
    assert not lint_files(tmp_path, {"exp_basic.py": basic, "exp_forecast.py": EXP}, "GPU402")


HANDED_IN = """\
    import torch
    from torch import optim


    def train(model, device, loader, epochs=5):
        optimizer = optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(epochs):
            for images, labels in loader:
                loss = model(images.to(device)).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()


    if __name__ == "__main__":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10))
        model.to(device=device)
        train(model=model, device=device, loader=None)
"""


def test_a_model_handed_to_the_training_function_after_its_move_is_on_cuda(tmp_path):
    """YOLOv4's `train(model, device, config)` builds `optim.Adam(model.parameters())` over its parameter; the
    script's one call hands it the model it moved with `model.to(device=device)`."""
    assert ("train.py", 6, "GPU402") in lint_files(tmp_path, {"train.py": HANDED_IN}, "GPU402")


def test_a_model_handed_in_that_was_never_moved_stays_unknown(tmp_path):
    quiet = HANDED_IN.replace("        model.to(device=device)\n", "")
    assert ("train.py", 6, "GPU402") not in lint_files(tmp_path, {"train.py": quiet}, "GPU402")


SET_OPTIMIZER = """\
    from torch import optim


    def set_optimizer(opt, model):
        optimizer = optim.SGD(model.parameters(), lr=opt.learning_rate, momentum=opt.momentum)
        return optimizer
"""

SET_MODEL = """\
    import torch
    import torchvision
    from util import set_optimizer


    def set_model(opt):
        model = torchvision.models.resnet50()
        criterion = torch.nn.CrossEntropyLoss()
        if torch.cuda.is_available():
            model = model.cuda()
            criterion = criterion.cuda()
        return model, criterion


    def main(opt, loader):
        model, criterion = set_model(opt)
        optimizer = set_optimizer(opt, model)
        for images, labels in loader:
            loss = criterion(model(images.cuda(non_blocking=True)), labels.cuda(non_blocking=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_a_model_handed_back_in_a_tuple_after_its_move_reaches_the_optimizer_factory(tmp_path):
    """SupContrast's `model, criterion = set_model(opt)` (the function moves the model with `model.cuda()`), then
    `set_optimizer(opt, model)` of util.py building a plain SGD over it."""
    assert ("util.py", 5, "GPU402") in lint_files(tmp_path, {"util.py": SET_OPTIMIZER, "train.py": SET_MODEL},
                                                  "GPU402")


def test_a_tuple_element_never_moved_stays_unknown(tmp_path):
    quiet = SET_MODEL.replace("            model = model.cuda()\n", "")
    assert lint_files(tmp_path, {"util.py": SET_OPTIMIZER, "train.py": quiet}, "GPU402") == set()
