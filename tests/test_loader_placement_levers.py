"""Throughput levers and loader placement on the shapes real trainers take (branch recall78).

- GPU402 reports `torch.optim.Adam` a module class builds over its own submodules (`self.G.parameters()`,
  `self.nets[name].parameters()`) in the method that moves the whole module to CUDA (`self.cuda(rank)`,
  `self.to(self.device)`), stored on `self` and stepped by a function of the module that runs a backward pass.
- GPU402 reports the optimizer a script hands to a project trainer class (`Solver(data, model, optimizer, args)`)
  one of whose methods runs a backward pass and steps the `self.<attr>` its `__init__` keeps it as, also through
  a project wrapper class whose `step` steps the optimizer it wraps (a learning-rate schedule written as a class:
  `TransformerOptimizer(torch.optim.Adam(model.parameters()), warmup)`).
- A project fetcher class (`InputFetcher`, a `DataPrefetcher`) whose `__next__` hands on what it draws from an
  iterator over a loader given to `__init__` (`self.iter = iter(self.loader)`, `next(self.iter)`, also in a method
  `__next__` calls) is a loader: `next(fetcher)` draws one batch, so the loop around it is the step loop (not an
  epoch loop because it also calls a function with a loop of its own).
- `for loader in loaders:` over `loaders = [get_loader(path) for path in paths]` (or a written-out list of loaders):
  the loop's name is one of those loaders, so its batches are pinned when the factory pins them (GPU202).

Each has its quiet twin.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, lint_files, write_project


_lint = lint_files


# -- GPU402: the optimizer of a module class that moves itself -----------------------------------------------------
GAN = """\
import torch
from torch import nn
from torch.optim import Adam


class GAN(nn.Module):
    def __init__(self, lr, rank=0):
        super().__init__()
        self.G = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512))
        self.D = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
        params = list(self.G.parameters())
        self.G_opt = Adam(params, lr=lr, betas=(0.5, 0.9))
        self.D_opt = Adam(self.D.parameters(), lr=lr)
        self.{move}


def backwards(loss, optimizer):
    loss.backward()


class Trainer:
    def __init__(self, lr):
        self.GAN = GAN(lr)

    def train(self, batch):
        self.GAN.D_opt.zero_grad()
        loss = self.GAN.D(batch.cuda()).mean()
        backwards(loss, self.GAN.D_opt)
        self.GAN.D_opt.step()
        self.GAN.G_opt.zero_grad()
        loss = -self.GAN.D(self.GAN.G(batch.cuda())).mean()
        loss.backward()
        self.GAN.G_opt.step()
"""


def test_optimizer_of_a_module_class_that_moves_itself_to_cuda(tmp_path):
    found = _lint(tmp_path, {"gan.py": GAN.format(move="cuda(rank)")}, "GPU402")
    assert {("gan.py", 12, "GPU402"), ("gan.py", 13, "GPU402")} <= found


SOLVER = """\
import torch
from torch import nn


class Solver(nn.Module):
    def __init__(self, nets, args):
        super().__init__()
        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        self.nets = nets
        self.optims = {}
        for net in self.nets.keys():
            self.optims[net] = torch.optim.Adam(params=self.nets[net].parameters(), lr=args.lr)
        self.to(self.device)

    def train(self, fetcher, iters):
        optims = self.optims
        for i in range(iters):
            x = next(fetcher)
            loss = self.nets['generator'](x).mean()
            loss.backward()
            optims['generator'].step()
"""


def test_optimizers_of_a_module_class_kept_in_a_dict(tmp_path):
    assert ("solver.py", 12, "GPU402") in _lint(tmp_path, {"solver.py": SOLVER}, "GPU402")


def test_module_class_that_stays_on_the_cpu_or_is_never_stepped_is_quiet(tmp_path):
    # moved to a device the module cannot tell (an argument): unknown, quiet
    assert not _lint(tmp_path / "a", {"gan.py": GAN.format(move="to(torch.device('cpu'))")}, "GPU402")
    # never moved at all
    assert not _lint(tmp_path / "b", {"gan.py": GAN.format(move="eval()")}, "GPU402")
    # moved to CUDA, but no function of the module steps the optimizers after a backward pass
    never_stepped = GAN.format(move="cuda(rank)").replace("loss.backward()", "pass").replace(
        "backwards(loss, self.GAN.D_opt)", "pass")
    assert not _lint(tmp_path / "c", {"gan.py": never_stepped}, "GPU402")
    # an optimizer over parameters of something that is not the module's own (a function argument)
    foreign = SOLVER.replace("params=self.nets[net].parameters()", "params=nets[net].parameters()")
    assert not _lint(tmp_path / "d", {"solver.py": foreign}, "GPU402")


# -- a fetcher class is a loader: `next(fetcher)` draws a batch ----------------------------------------------------
FETCHER = """\
import torch


class Fetcher:
    def __init__(self, {param}, device):
        self.loader = {param}
        self.device = device

    def _fetch(self):
        try:
            x, y = next(self.iter)
        except (AttributeError, StopIteration):
            self.iter = iter(self.loader)
            x, y = next(self.iter)
        return x, y

    def __next__(self):
        x, y = self._fetch()
        return x.to(self.device), y.to(self.device)


def evaluate(model, loader):
    for x, y in loader:
        print(model(x.cuda()).mean().item())


def train(model, optimizer, src, val, iters):
    fetcher = Fetcher({arg}, torch.device("cuda"))
    for i in range(iters):
        x, y = next(fetcher)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.item())
        evaluate(model, val)
"""


def test_next_of_a_fetcher_class_draws_a_batch_every_step(tmp_path):
    found = _lint(tmp_path, {"train.py": FETCHER.format(param="loader", arg="src")}, "GPU101")
    assert ("train.py", 35, "GPU101") in found


def test_next_of_a_fetcher_given_a_dataloader_draws_a_batch(tmp_path):
    source = FETCHER.format(param="source", arg="torch.utils.data.DataLoader(src, batch_size=32)")
    assert ("train.py", 35, "GPU101") in _lint(tmp_path, {"train.py": source}, "GPU101")


def test_next_of_a_class_over_something_else_is_not_a_batch(tmp_path):
    # the parameter is not named for a loader and gets no loader: a counter, a sampler of indices
    source = FETCHER.format(param="source", arg="src")
    found = _lint(tmp_path, {"train.py": source}, "GPU101")
    assert ("train.py", 24, "GPU101") in found and ("train.py", 35, "GPU101") not in found


# -- GPU402: the optimizer handed to a trainer class, possibly wrapped --------------------------------------------
WRAPPED = {
    "optim.py": """\
class ScheduledOptimizer:
    def __init__(self, optimizer, warmup):
        self.optimizer = optimizer
        self.warmup = warmup
        self.steps = 0

    def zero_grad(self):
        self.optimizer.zero_grad()

    def step(self):
        self.steps += 1
        for group in self.optimizer.param_groups:
            group["lr"] = min(1.0, self.steps / self.warmup)
        self.optimizer.{step}()
""",
    "solver.py": """\
class Solver:
    def __init__(self, data, model, optimizer, epochs):
        self.loader = data["train"]
        self.model = model
        self.optimizer = optimizer
        self.epochs = epochs

    def train(self):
        for epoch in range(self.epochs):
            self._run_one_epoch()

    def _run_one_epoch(self):
        for x, y in self.loader:
            loss = self.model(x.cuda(), y.cuda())
            self.optimizer.zero_grad()
            loss.{backward}()
            self.optimizer.step()
""",
    "train.py": """\
import torch
from torch.utils.data import DataLoader

from model import Net
from optim import ScheduledOptimizer
from solver import Solver


def main(dataset):
    model = Net()
    model.cuda()
    optimizer = {optimizer}
    solver = Solver({{"train": DataLoader(dataset, batch_size=32)}}, model, optimizer, 10)
    solver.train()
""",
    "model.py": """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512))

    def forward(self, x, y):
        return torch.nn.functional.mse_loss(self.body(x), y)
""",
}


def _wrapped(step="step", backward="backward",
             optimizer="ScheduledOptimizer(torch.optim.Adam(model.parameters(), lr=1e-3), 4000)") -> dict:
    files = dict(WRAPPED)
    files["optim.py"] = files["optim.py"].format(step=step)
    files["solver.py"] = files["solver.py"].format(backward=backward)
    files["train.py"] = files["train.py"].format(optimizer=optimizer)
    return files


def test_optimizer_wrapped_and_handed_to_a_trainer_class(tmp_path):
    assert ("train.py", 12, "GPU402") in _lint(tmp_path, _wrapped(), "GPU402")


def test_optimizer_handed_to_a_trainer_class(tmp_path):
    files = _wrapped(optimizer="torch.optim.Adam(model.parameters(), lr=1e-3)")
    assert ("train.py", 12, "GPU402") in _lint(tmp_path, files, "GPU402")


def test_wrapper_or_trainer_that_does_not_step_is_quiet(tmp_path):
    # the wrapper's `step` does not step the wrapped optimizer (it only schedules)
    assert not _lint(tmp_path / "a", _wrapped(step="zero_grad"), "GPU402")
    # the trainer class runs no backward pass (an evaluator holding the optimizer for its state)
    assert not _lint(tmp_path / "b", _wrapped(backward="detach"), "GPU402")


# -- a loader drawn from a list of loaders built by a factory --------------------------------------------------------
LISTED = """\
import torch
from torch.utils.data import DataLoader


def get_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, num_workers=4, pin_memory={pin})


@torch.no_grad()
def statistics(datasets, batch_size=50):
    device = torch.device("cuda")
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3), torch.nn.ReLU()).eval().to(device)
    loaders = [get_loader(d, batch_size) for d in datasets]
    means = []
    for loader in loaders:
        feats = []
        for x in loader:
            feats.append(net(x.to(device)))
        means.append(torch.cat(feats).mean(0))
    return means
"""


def _messages(root: Path, text: str) -> dict:
    write_project(root, {"stats.py": text})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU202", ".")
    return {d["location"]["row"]: d["message"] for d in items}


def test_copy_of_a_batch_of_a_listed_pinned_loader(tmp_path):
    assert "pinned batch" in _messages(tmp_path, LISTED.format(pin="True")).get(18, "")


def test_copy_of_a_batch_of_a_listed_unpinned_loader_is_not_a_pinned_copy(tmp_path):
    # the loader does not pin: the copy is reported with GPU201's pairing, not as a pinned batch's copy
    assert "pinned batch" not in _messages(tmp_path, LISTED.format(pin="False")).get(18, "")
    # a list of tensors, not loaders: iterating one gives its rows, no loader's batches
    tensors = LISTED.format(pin="True").replace("get_loader(d, batch_size) for d", "torch.randn(8, 3, 32, 32) for d")
    assert 18 not in _messages(tmp_path / "t", tensors)
