"""Pinned loaders that reach a copying loop out of sight of the loader's own module (branch recall88, heldout25):

- through a project generator that hands on the items of its argument (`for samples, targets in
  metric_logger.log_every(data_loader, 10, header):` in an evaluation function another module calls with a pinned
  loader);
- built with an explicit `pin_memory=True` beside `**loader_kwargs` of unknown content (`DataLoader(ds,
  pin_memory=True, **kwargs)`: options holding `pin_memory` too would raise a TypeError, so the keyword decides);
- a name bound to None and, under an option, to a pinned loader (`eval_loader = None` ... `eval_loader =
  DataLoader(...)`), handed on by the training function to an evaluation function of its own module.

GPU202 reports the blocking copies; a caller passing an unpinned or unknown loader keeps them quiet (or, for
unpinned loaders, reports them as GPU201's to pin).
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

ENGINE = """\
import torch


class MetricLogger:
    def log_every(self, iterable, print_freq, header=None):
        for obj in iterable:
            yield obj


def evaluate(model, data_loader, device):
    metric_logger = MetricLogger()
    for samples, targets in metric_logger.log_every(data_loader, 10, "Test:"):
        samples = samples.to(device)
        targets = targets.to(device)
        loss = model(samples, targets)
"""

MAIN = """\
import torch
from torch.utils.data import DataLoader
from engine import evaluate


def main(args):
    device = torch.device("cuda")
    model = torch.nn.Linear(3, 3).to(device)
    loader = {loader}
    for epoch in range(10):
        evaluate(model, loader, device)


if __name__ == "__main__":
    main(None)
"""


def _generator(tmp_path: Path, loader: str) -> set:
    root = write_project(tmp_path, {"engine.py": ENGINE, "main.py": MAIN.format(loader=loader)})
    return found(check(root, "--no-cache", "--exit-zero", "."))


def test_a_pinned_loader_through_a_project_generator_is_copied_blocking(tmp_path: Path):
    keys = _generator(tmp_path, "DataLoader(args.ds, batch_size=4, pin_memory=True)")
    assert ("engine.py", 13, "GPU202") in keys
    assert ("engine.py", 14, "GPU202") in keys


def test_an_unknown_loader_through_a_project_generator_stays_quiet(tmp_path: Path):
    keys = _generator(tmp_path, "make_loader(args)")
    assert not any(code == "GPU202" for _, _, code in keys)


def test_a_call_that_is_not_a_generator_of_its_argument_stays_quiet(tmp_path: Path):
    engine = ENGINE.replace("for obj in iterable:\n            yield obj", "return [1, 2, 3]")
    root = write_project(tmp_path, {"engine.py": engine, "main.py": MAIN.format(
        loader="DataLoader(args.ds, batch_size=4, pin_memory=True)")})
    keys = found(check(root, "--no-cache", "--exit-zero", "."))
    assert ("engine.py", 13, "GPU202") not in keys


UTILS = """\
import torch


def evaluation(model, eval_dataloader):
    for step, batch in enumerate(eval_dataloader):
        for key in batch.keys():
            batch[key] = batch[key].to('cuda:0')
        with torch.no_grad():
            loss = model(**batch).loss


def train(model, train_dataloader, eval_dataloader, optimizer):
    for epoch in range(3):
        for step, batch in enumerate(train_dataloader):
            for key in batch.keys():
                batch[key] = batch[key].to('cuda:0')
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
        evaluation(model, eval_dataloader)
"""

FINETUNE = """\
import torch
from torch.utils.data import DataLoader
from utils import train


def main(args):
    model = torch.nn.Linear(3, 3).to("cuda")
    kw = get_kwargs(args)
    train_dataloader = DataLoader(args.ds, num_workers=2, pin_memory={pin}, **kw)
    eval_dataloader = None
    if args.val:
        eval_dataloader = DataLoader(args.ds, num_workers=2, pin_memory={pin}, **kw)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, train_dataloader, eval_dataloader, optimizer)


if __name__ == "__main__":
    main(None)
"""


def _finetune(tmp_path: Path, pin: str) -> set:
    root = write_project(tmp_path, {"utils.py": UTILS, "main.py": FINETUNE.format(pin=pin)})
    return found(check(root, "--no-cache", "--exit-zero", "."))


def test_an_explicit_pin_memory_beside_unknown_options_pins(tmp_path: Path):
    keys = _finetune(tmp_path, "True")
    assert ("utils.py", 16, "GPU202") in keys


def test_an_optional_loader_handed_on_within_its_module_pins(tmp_path: Path):
    keys = _finetune(tmp_path, "True")
    assert ("utils.py", 7, "GPU202") in keys


def test_an_unknown_pin_memory_beside_options_stays_quiet(tmp_path: Path):
    keys = _finetune(tmp_path, "args.pin")
    assert ("utils.py", 7, "GPU202") not in keys
    assert ("utils.py", 16, "GPU202") not in keys
