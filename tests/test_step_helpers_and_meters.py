"""Per-step functions, meters held in lists and attributes, and syncs the loop analysis missed (branch recall67).

Each test builds a small project with the shape, asserts the finding a user sees at its line, and a quiet
variant beside it. The shapes: an optimizer closure whose returned loss a step helper hands to `to_numpy`;
an optional loss (`None if y is None else F.cross_entropy(...)`) read with `.item()`; a trainer's loss entry
`self.losses["total_loss"]` formatted every iteration; `torch.cuda.synchronize()` in a `while True:` loop that
draws `loader.get_batch(...)`; a meter helper module with no device of its own whose `update` gets device
tensors; meters kept in `self.metrics` from the trainer's constructor; torch_ema's `ExponentialMovingAverage`
(annotated `Optional[...]`); and the fp32 finding placed on the training branch's forward pass.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

HELPERS = textwrap.dedent("""\
    import torch


    def to_numpy(t):
        return t.cpu().detach().numpy()
""")

CLOSURE_STEP = textwrap.dedent("""\
    import torch
    from helpers import to_numpy


    def train(model, loss_fn, loader, optimizer, device):
        for batch in loader:
            take_step(model, loss_fn, batch, optimizer, device)


    def take_step(model, loss_fn, batch, optimizer, device):
        batch = batch.to(device)

        def closure():
            optimizer.zero_grad()
            loss = loss_fn(model(batch), batch)
            loss.backward()
            return loss

        loss = closure()
        optimizer.step()
        return {"loss": to_numpy(loss)}
""")


def test_loss_returned_by_an_optimizer_closure_is_a_tensor(tmp_path):
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": CLOSURE_STEP})
    assert ("train.py", 21, "GPU112") in found(check(root))


def test_closure_returning_a_number_stays_quiet(tmp_path):
    numbers = CLOSURE_STEP.replace("        return loss\n", "        return loss.item()\n")
    assert numbers != CLOSURE_STEP
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": numbers})
    assert ("train.py", 21, "GPU112") not in found(check(root))


OPTIONAL_LOSS = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F

    model = torch.nn.Linear(4, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        out = model(x)
        pred_loss = None if y is None else F.cross_entropy(out, y)
        total = pred_loss
        total.backward()
        opt.step()
        logs = {"total": total.item()}
""")


def test_optional_loss_with_a_none_branch_is_a_tensor(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": OPTIONAL_LOSS})
    assert ("train.py", 14, "GPU101") in found(check(root))


def test_optional_number_with_a_none_branch_is_a_number(tmp_path):
    number = OPTIONAL_LOSS.replace("    total = pred_loss\n    total.backward()\n",
                                   "    pred_loss.backward()\n    total = None if y is None else 3.0\n")
    assert number != OPTIONAL_LOSS
    root = write_project(tmp_path / "p", {"train.py": number})
    assert not [f for f in found(check(root)) if f[2] in ("GPU101", "GPU105")]


TRAINER = textwrap.dedent("""\
    import torch
    import tqdm


    class Trainer:
        def __init__(self, model, optimizer, loader):
            self.model = model.cuda()
            self.optimizer = optimizer
            self.loader = loader
            self.losses = {"total_loss": 0}

        def train(self, iterations):
            it = iter(self.loader)
            pbar = tqdm.tqdm(range(iterations))
            for i in pbar:
                x, y = next(it)
                self.losses["total_loss"] = self.compute(x.cuda(), y.cuda())
                self.optimizer.zero_grad()
                self.losses["total_loss"].backward()
                self.optimizer.step()
                pbar.set_description("total_loss=%.5f" % self.losses["total_loss"])
                pbar.set_postfix(lr="%.5f" % self.lr["base"])

        def compute(self, x, y):
            return torch.nn.functional.mse_loss(self.model(x), y)
""")


def test_loss_entry_the_class_backpropagates_is_a_tensor(tmp_path):
    root = write_project(tmp_path / "p", {"trainer.py": TRAINER})
    findings = found(check(root))
    assert ("trainer.py", 21, "GPU107") in findings
    assert ("trainer.py", 22, "GPU107") not in findings  # `self.lr["base"]`: never backpropagated


def test_loss_entry_under_a_periodic_guard_stays_quiet(tmp_path):
    periodic = TRAINER.replace('            pbar.set_description(',
                               '            if i % 100 == 0:\n                pbar.set_description(')
    assert periodic != TRAINER
    root = write_project(tmp_path / "p", {"trainer.py": periodic})
    assert not [f for f in found(check(root)) if f[2] == "GPU107"]


BATCH_METHOD_LOOP = textwrap.dedent("""\
    import time
    import torch
    from data import DataLoader

    model = torch.nn.Linear(4, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(opt)
    try:
        while True:
            data = loader.get_batch("train")
            torch.cuda.synchronize()
            start = time.time()
            loss = model(data["x"].cuda()).sum()
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            end = time.time()
    except KeyboardInterrupt:
        pass
""")

DATA = textwrap.dedent("""\
    class DataLoader:
        def __init__(self, opt):
            self.opt = opt

        def get_batch(self, split):
            return {"x": None}
""")


def test_synchronize_in_a_loop_drawing_a_loader_batch_is_reported(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": BATCH_METHOD_LOOP, "data.py": DATA})
    findings = found(check(root))
    assert ("train.py", 11, "GPU109") in findings
    assert ("train.py", 16, "GPU109") in findings


def test_synchronize_beside_a_timer_in_a_benchmark_loop_stays_quiet(tmp_path):
    bench = BATCH_METHOD_LOOP.replace('        data = loader.get_batch("train")\n', '        data = fixed\n')
    assert bench != BATCH_METHOD_LOOP
    root = write_project(tmp_path / "p", {"train.py": bench, "data.py": DATA})
    assert not [f for f in found(check(root)) if f[2] == "GPU109"]


METERS = textwrap.dedent("""\
    import numpy as np


    class ConfusionMeter(object):
        def __init__(self, num_class):
            self.mat = np.zeros((num_class, num_class))

        def update(self, pred, tar):
            pred, tar = pred.cpu().numpy(), tar.cpu().numpy()
            for p, t in zip(pred.flat, tar.flat):
                self.mat[p][t] += 1


    class AverageMeter(object):
        def __init__(self):
            self.sum = 0

        def update(self, val, n=1):
            self.sum += val * n
""")

EVAL = textwrap.dedent("""\
    import torch
    from meters import AverageMeter, ConfusionMeter

    cuda = torch.device("cuda")


    def test(data_loader, model):
        confusion = ConfusionMeter(10)
        losses = AverageMeter()
        with torch.no_grad():
            for x, target in data_loader:
                x, target = x.to(cuda), target.to(cuda)
                output = model(x)
                losses.update(output.mean().item(), x.size(0))
                _, pred = torch.max(output, 1)
                confusion.update(pred, target.view(-1).byte())
""")


def test_meter_module_handed_device_tensors_reports_its_copy(tmp_path):
    root = write_project(tmp_path / "p", {"meters.py": METERS, "test.py": EVAL})
    findings = found(check(root))
    assert ("meters.py", 9, "GPU104") in findings
    assert not [f for f in findings if f[0] == "meters.py" and f[1] > 12]  # AverageMeter gets numbers


def test_meter_module_handed_host_copies_stays_quiet(tmp_path):
    host = EVAL.replace("confusion.update(pred, target.view(-1).byte())",
                        "confusion.update(pred.cpu(), target.view(-1).byte().cpu())")
    root = write_project(tmp_path / "p", {"meters.py": METERS, "test.py": host})
    assert not [f for f in found(check(root)) if f[0] == "meters.py"]


METRIC_TRAINER = textwrap.dedent("""\
    import numpy as np
    import torch


    class PSNRMeter:
        def __init__(self):
            self.V = 0

        def prepare_inputs(self, *inputs):
            outputs = []
            for inp in inputs:
                if torch.is_tensor(inp):
                    inp = inp.detach().cpu().numpy()
                outputs.append(inp)
            return outputs

        def update(self, preds, truths):
            preds, truths = self.prepare_inputs(preds, truths)
            self.V += -10 * np.log10(np.mean((preds - truths) ** 2))


    class Trainer:
        def __init__(self, model, metrics=[]):
            self.model = model.cuda()
            self.metrics = metrics

        def evaluate(self, loader):
            for metric in self.metrics:
                metric.clear()
            with torch.no_grad():
                for x, truths in loader:
                    preds = self.model(x.cuda())
                    for metric in self.metrics:
                        metric.update(preds, truths.cuda())
            for metric in self.metrics:
                print(metric.measure())
""")

MAIN = textwrap.dedent("""\
    import torch
    from utils import PSNRMeter, Trainer

    if opt.test:
        metrics = [PSNRMeter()]
        trainer = Trainer(torch.nn.Linear(4, 3), metrics=metrics)
    else:
        metrics = [PSNRMeter()]
        trainer = Trainer(torch.nn.Linear(4, 3), metrics=metrics)
    trainer.evaluate(loader)
""")


def test_meters_held_in_a_list_attribute_report_the_update_call(tmp_path):
    root = write_project(tmp_path / "p", {"utils.py": METRIC_TRAINER, "main.py": MAIN})
    assert ("utils.py", 34, "GPU112") in found(check(root))


def test_meters_of_sites_that_disagree_stay_unknown(tmp_path):
    other = MAIN.replace("    metrics = [PSNRMeter()]\n    trainer", "    metrics = [object()]\n    trainer", 1)
    assert other != MAIN
    root = write_project(tmp_path / "p", {"utils.py": METRIC_TRAINER, "main.py": other})
    assert ("utils.py", 34, "GPU112") not in found(check(root))


EMA = textwrap.dedent("""\
    from typing import Optional

    import torch
    from torch_ema import ExponentialMovingAverage


    def train(model, loader, optimizer, ema):
        for x in loader:
            take_step(model, x, optimizer, ema)


    def take_step(model, x, optimizer, ema: Optional[ExponentialMovingAverage]):
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
        if ema is not None:
            ema.update()
""")


def test_torch_ema_update_every_step_is_a_per_parameter_loop(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": EMA})
    assert ("train.py", 17, "GPU411") in found(check(root))


def test_torch_ema_update_once_per_epoch_stays_quiet(tmp_path):
    epoch = EMA.replace("        take_step(model, x, optimizer, ema)\n",
                        "        take_step(model, x, optimizer, None)\n    ema.update()\n")
    epoch = epoch.replace("    if ema is not None:\n        ema.update()\n", "")
    epoch = epoch.replace("def train(model, loader, optimizer, ema):",
                          "def train(model, loader, optimizer, ema: ExponentialMovingAverage):")
    assert epoch.count("ema.update()") == 1
    root = write_project(tmp_path / "p", {"train.py": epoch})
    assert not [f for f in found(check(root)) if f[2] == "GPU411"]


BRANCHED_FORWARD = textwrap.dedent("""\
    import torch
    from torch import nn

    model = nn.Sequential(nn.Conv3d(3, 64, 3), nn.ReLU(), nn.Conv3d(64, 64, 3)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    for phase in ["train", "val"]:
        for inputs, labels in loaders[phase]:
            inputs = inputs.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True)
            optimizer.zero_grad()
            if phase == "train":
                outputs = model(inputs)
            else:
                with torch.no_grad():
                    outputs = model(inputs)
            probs = nn.Softmax(dim=1)(outputs)
            loss = criterion(outputs, labels)
            if phase == "train":
                loss.backward()
                optimizer.step()
""")


def test_fp32_finding_is_on_the_training_branch_forward(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": BRANCHED_FORWARD})
    gpu403 = [f for f in found(check(root)) if f[2] == "GPU403"]
    assert gpu403 == [("train.py", 13, "GPU403")]


LEARNER = textwrap.dedent("""\
    import torch
    from torch import nn


    class Learner(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2).cuda()
            self.param_list = [self.named_parameters]

        def update_importance_estimates(self, W, p_old):
            for gen_params in self.param_list:
                for n, p in gen_params():
                    if p.requires_grad and p.grad is not None:
                        W[n].add_(-p.grad * (p.detach() - p_old[n]))
                        p_old[n] = p.detach().clone()
""")

CL_TRAIN = textwrap.dedent("""\
    import torch
    from learner import Learner

    model = Learner().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = model.fc(x.cuda()).sum()
        loss.backward()
        opt.step()
        model.update_importance_estimates(W, p_old)
""")


def test_loop_over_stored_parameter_methods_is_a_per_parameter_loop(tmp_path):
    root = write_project(tmp_path / "p", {"learner.py": LEARNER, "train.py": CL_TRAIN})
    assert ("learner.py", 13, "GPU411") in found(check(root))


def test_loop_over_stored_other_methods_stays_quiet(tmp_path):
    other = LEARNER.replace("[self.named_parameters]", "[self.named_modules]")
    assert other != LEARNER
    root = write_project(tmp_path / "p", {"learner.py": other, "train.py": CL_TRAIN})
    assert ("learner.py", 13, "GPU411") not in found(check(root))
