"""An option a class never turns on (analysis/unset_options.py): `if self.autobalance:` in a loss class whose
`__init__` takes `autobalance=False`, where no construction in the project passes it (YOLOv7's `ComputeLoss`)."""

from __future__ import annotations

from tests.projects import check, found, write_project

LOSS = '''import torch
import torch.nn as nn


class ComputeLoss:
    def __init__(self, model, autobalance=False):
        super(ComputeLoss, self).__init__()
        self.balance = [4.0, 1.0, 0.4]
        self.BCEobj, self.autobalance = nn.BCEWithLogitsLoss(), autobalance
        for k in 'na', 'nc':
            setattr(self, k, getattr(model, k))

    def __call__(self, p, targets):
        lobj = torch.zeros(1, device=targets.device)
        for i, pi in enumerate(p):
            obji = self.BCEobj(pi, targets)
            lobj += obji * self.balance[i]
            if self.autobalance:
                self.balance[i] = self.balance[i] * 0.9999 + 0.0001 / obji.detach().item()
        return lobj
'''

TRAIN = '''import torch
from utils.loss import ComputeLoss


def train(model, loader, optimizer):
    device = torch.device("cuda")
    compute_loss = {build}
    for imgs, targets in loader:
        imgs = imgs.to(device, non_blocking=True)
        pred = model(imgs)
        loss = compute_loss(pred, targets.to(device, non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''

ITEM = ("utils/loss.py", 19, "GPU101")


def _lint(tmp_path, build="ComputeLoss(model)", loss=LOSS, extra=None):
    modules = {"utils/loss.py": loss, "train.py": TRAIN.format(build=build)}
    modules.update(extra or {})
    return found(check(write_project(tmp_path, modules), "--no-cache"))


def test_an_option_no_construction_passes_is_quiet(tmp_path):
    assert ITEM not in _lint(tmp_path)


def test_an_option_passed_false_is_quiet(tmp_path):
    assert ITEM not in _lint(tmp_path, "ComputeLoss(model, autobalance=False)")


def test_an_option_turned_on_by_position_or_keyword_is_reported(tmp_path):
    assert ITEM in _lint(tmp_path / "a", "ComputeLoss(model, True)")
    assert ITEM in _lint(tmp_path / "b", "ComputeLoss(model, autobalance=opt.balance)")
    assert ITEM in _lint(tmp_path / "c", "ComputeLoss(*args)")


def test_an_option_named_in_another_file_is_reported(tmp_path):
    # a config that may turn it on (`ComputeLoss(model, **cfg)` elsewhere, a hyperparameter file)
    assert ITEM in _lint(tmp_path, extra={"cfg.py": "LOSS = dict(autobalance=True)\n"})


def test_an_option_set_outside_init_is_reported(tmp_path):
    loss = LOSS + "\n    def enable(self):\n        self.autobalance = True\n"
    assert ITEM in _lint(tmp_path, loss=loss)


def test_a_class_used_other_than_called_is_reported(tmp_path):
    # a registry entry may be built with other arguments
    extra = {"registry.py": "from utils.loss import ComputeLoss\nLOSSES = {'yolo': ComputeLoss}\n"}
    assert ITEM in _lint(tmp_path, extra=extra)


def test_an_option_a_setattr_may_set_is_reported(tmp_path):
    loss = LOSS.replace("for k in 'na', 'nc':", "for k in model.names:")
    assert ITEM in _lint(tmp_path, loss=loss)


def test_another_class_of_the_module_storing_the_same_name_is_its_own(tmp_path):
    # YOLOv7's four loss classes each store their own `self.autobalance`
    loss = LOSS + "\n\nclass ComputeLossOTA:\n    def __init__(self, autobalance=False):\n" \
                  "        self.autobalance = autobalance\n"
    assert ITEM not in _lint(tmp_path, loss=loss)


# -- blocks a training run never (or only once) enters: `hasattr(self, "X")` of an attribute no training code sets,
# a first-step test (latent-diffusion's `get_fold_unfold`, reached only through both)
NET = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def fold(self, x):
        unfold = torch.nn.Unfold(kernel_size=2)
        return unfold(x)

    def forward(self, x, batch_idx):
        if {forward_guard}:
            x = self.fold(x)
        return self.lin(x)

    def first(self, x, batch_idx):
        if {first_guard}:
            x = self.fold(x)
        return x
'''

NET_TRAIN = '''import torch
from model import Net


def train(loader, optimizer):
    device = torch.device("cuda")
    model = Net().to(device)
    for i, (x, y) in enumerate(loader):
        x = x.to(device, non_blocking=True)
        x = model.first(x, i)
        loss = model(x, i).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''

BUILT = ("model.py", 11, "GPU408")
NEVER = "hasattr(self, 'split_params')"
FIRST = "self.global_step == 0 and batch_idx == 0"


HELPER = "def run(model, x):\n    model.split_params = {'ks': 2}\n    return model(x, 0)\n"


def _lint_net(tmp_path, forward_guard=NEVER, first_guard=FIRST, extra=None):
    modules = {"model.py": NET.format(forward_guard=forward_guard, first_guard=first_guard), "train.py": NET_TRAIN,
               "notebook_helpers.py": HELPER}
    modules.update(extra or {})
    return found(check(write_project(tmp_path, modules), "--no-cache"))


def test_blocks_of_an_unset_attribute_and_of_the_first_step_are_quiet(tmp_path):
    assert BUILT not in _lint_net(tmp_path)


def test_another_test_than_the_first_step_is_reported(tmp_path):
    # the same program with a test of the batch's shape instead of the first-step test: the per-step call of
    # `first` reaches `fold` (so the program above is quiet by both guards)
    assert BUILT in _lint_net(tmp_path, first_guard="x.dim() == 3")
    assert BUILT in _lint_net(tmp_path / "b", first_guard="self.mode == 0 and x.dim() == 3")


def test_an_attribute_set_by_the_module_or_a_training_file_is_reported(tmp_path):
    set_here = NET.replace("self.lin = nn.Linear(4, 4)",
                           "self.lin = nn.Linear(4, 4)\n        self.split_params = dict()")
    modules = {"model.py": set_here.format(forward_guard=NEVER, first_guard="False"), "train.py": NET_TRAIN}
    assert ("model.py", 12, "GPU408") in found(check(write_project(tmp_path / "a", modules), "--no-cache"))
    trains = NET_TRAIN.replace("model = Net().to(device)", "model = Net().to(device)\n    model.split_params = {}")
    assert BUILT in _lint_net(tmp_path / "b", first_guard="False", extra={"train.py": trains})


def test_an_attribute_no_project_file_sets_may_be_a_librarys(tmp_path):
    # (Lightning sets `self.trainer`): without the inference helper that sets it, the block may run
    assert BUILT in _lint_net(tmp_path, first_guard="False", extra={"notebook_helpers.py": "X = 1\n"})
