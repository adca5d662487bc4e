"""Throughput levers and loader placement on the shapes real trainers take (branch recall78).

- GPU402 reports `torch.optim.Adam` a module class builds over its own submodules (`self.G.parameters()`,
  `self.nets[name].parameters()`) in the method that moves the whole module to CUDA (`self.cuda(rank)`,
  `self.to(self.device)`), stored on `self` and stepped by a function of the module that runs a backward pass.
- A project fetcher class (`InputFetcher`, a `DataPrefetcher`) whose `__next__` hands on what it draws from an
  iterator over a loader given to `__init__` (`self.iter = iter(self.loader)`, `next(self.iter)`, also in a method
  `__next__` calls) is a loader: `next(fetcher)` draws one batch, so the loop around it is the step loop (not an
  epoch loop because it also calls a function with a loop of its own).

Each has its quiet twin.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project


def _lint(root: Path, files: dict[str, str], *only: str) -> set:
    write_project(root, {k: textwrap.dedent(v) for k, v in files.items()})
    items = check(root, "--no-cache", "--exit-zero", *(("--select", ",".join(only)) if only else ()), ".")
    return {(Path(p).name, row, code) for p, row, code in found(items)}


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
