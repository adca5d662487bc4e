"""Lists of loaders (issue 11, tenth set): multi-domain training builds one loader per environment
(`loaders = [DataLoader(env, ...) for env in splits]`) and draws one batch of each per step with
`batches = zip(*loaders)` and `next(batches)` inside a `for step in range(n_steps):` loop; single loaders are
taken out of the list by index (`loaders[0]`). That step loop is a training loop, so what a project method called
in it pays every step is reported, and the batches of `loaders[0]` are a loader's batches.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

ALGORITHMS = """\
import torch


class ERM(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.optimizer = torch.optim.Adam(self.net.parameters(), fused=True)

    def update(self, minibatches):
        x = torch.cat([x for x, y in minibatches])
        y = torch.cat([y for x, y in minibatches])
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"loss": loss.item()}
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from algorithms import ERM


def main(envs, net, n_steps, device="cuda"):
    loaders = {loaders}
    batches = zip(*loaders)
    algorithm = ERM(net)
    algorithm.to(device)
    for step in range(n_steps):
        minibatches = [(x.to(device, non_blocking=True), y.to(device, non_blocking=True)) for x, y in next(batches)]
        values = algorithm.update(minibatches)
        if step % 100 == 0:
            print(values)
"""

LIST_OF_LOADERS = "[DataLoader(env, batch_size=32, num_workers=2, pin_memory=True) for env in envs]"


def _check(tmp_path: Path, loaders: str, train: str = TRAIN, algorithms: str = ALGORITHMS) -> set:
    root = write_project(tmp_path, {"algorithms.py": algorithms, "train.py": train.format(loaders=loaders)})
    return found(check(root, "--no-cache", "."))


def test_a_step_loop_drawing_from_zip_of_a_list_of_loaders_trains(tmp_path: Path):
    """`next(zip(*loaders))` each iteration: the loop is a step loop, and `algorithm.update(...)`'s `.item()`
    is paid every step (GPU112 at the call, naming the method)."""
    assert ("train.py", 13, "GPU112") in _check(tmp_path, LIST_OF_LOADERS)


def test_a_written_out_list_of_loaders_counts_too(tmp_path: Path):
    loaders = ("[DataLoader(envs[0], batch_size=32, pin_memory=True), "
               "DataLoader(envs[1], batch_size=32, pin_memory=True)]")
    assert ("train.py", 13, "GPU112") in _check(tmp_path, loaders)


def test_zip_of_a_list_that_is_not_all_loaders_is_not_a_step_loop(tmp_path: Path):
    """A list of anything else (here plain tensors' rows) gives no batches: the loop is not known to train from
    the list. (The method it calls must not train either: a loop calling a method that runs `backward()` every
    iteration is a step loop whatever it iterates, tests/test_step_methods.py.)"""
    scoring = ALGORITHMS.replace("        self.optimizer.zero_grad()\n        loss.backward()\n        self.optimizer.step()\n", "")
    assert "backward" not in scoring
    keys = _check(tmp_path, "[torch.arange(4) for env in envs]", algorithms=scoring)
    assert not any(code == "GPU112" for _, _, code in keys)
    assert ("train.py", 13, "GPU112") in _check(tmp_path / "loaders", LIST_OF_LOADERS, algorithms=scoring)


def test_a_loader_taken_from_the_list_by_index_yields_batches(tmp_path: Path):
    train = """\
import torch
from torch.utils.data import DataLoader


def main(envs, model, opt, device="cuda"):
    loaders = {loaders}
    for x, y in loaders[0]:
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
"""
    keys = _check(tmp_path, "[DataLoader(env, batch_size=32) for env in envs]", train)
    assert {("train.py", 8, "GPU202"), ("train.py", 6, "GPU201")} <= keys
