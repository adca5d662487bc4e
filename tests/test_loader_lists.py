"""Loaders that reach the loop through a list, a tuple or a project generator (issue 11, recall):

- a project factory building one loader per dataset in a loop (`loaders.append(loader)`; `return loaders`),
  unpacked at the call (`train_loader, val_loader = create_loader(...)`) or indexed (`create_loader(...)[0]`),
  hands on what those loaders pin;
- a project generator that yields the items of a parameter (`MetricLogger.log_every(iterable, ...)`:
  `for obj in iterable: ... yield obj`), called through an instance, yields the batches of the loader it is given.

So `image.to(device)` of such a batch without `non_blocking=True` is reported (GPU202), as for a loader built in
the loop's own file.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

DATA = textwrap.dedent("""\
    from torch.utils.data import DataLoader


    def create_loader(datasets, batch_sizes, pins):
        loaders = []
        for dataset, bs, pin in zip(datasets, batch_sizes, pins):
            loader = DataLoader(dataset, batch_size=bs, num_workers=4, pin_memory=True)
            loaders.append(loader)
        return loaders
""")

UTILS = textwrap.dedent("""\
    import time


    class MetricLogger(object):
        def __init__(self, delimiter=" "):
            self.delimiter = delimiter

        def log_every(self, iterable, print_freq, header=None):
            start = time.time()
            i = 0
            for obj in iterable:
                yield obj
                if i % print_freq == 0:
                    print(header, i, time.time() - start)
                i += 1
""")

TRAIN = textwrap.dedent("""\
    import torch
    from data import create_loader
    from utils import MetricLogger


    def train(model, data_loader, optimizer, device):
        metric_logger = MetricLogger(delimiter="  ")
        for i, (image, target) in enumerate(metric_logger.log_every(data_loader, 50, "Train")):
            image = image.to(device)
            loss = torch.nn.functional.cross_entropy(model(image), target.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def main(args, model, datasets):
        device = torch.device("cuda")
        model = model.to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        train_loader, val_loader = create_loader(datasets, [8, 8], [True, False])
        for epoch in range(10):
            train(model, train_loader, optimizer, device)
""")

COPY = ("train.py", 9, "GPU202")


def _project(root: Path, data: str = DATA, utils: str = UTILS, train: str = TRAIN) -> Path:
    return write_project(root, {"data.py": data, "utils.py": utils, "train.py": train})


def test_a_loader_unpacked_from_a_factorys_list_through_a_logging_generator(tmp_path: Path):
    assert COPY in found(check(_project(tmp_path), "--no-cache", "."))


def test_an_element_of_the_factorys_list_by_index(tmp_path: Path):
    train = TRAIN.replace("train_loader, val_loader = create_loader(datasets, [8, 8], [True, False])",
                          "train_loader = create_loader(datasets, [8, 8], [True, False])[0]")
    assert train != TRAIN
    assert COPY in found(check(_project(tmp_path, train=train), "--no-cache", "."))


def test_loaders_that_disagree_on_pinning_are_unknown(tmp_path: Path):
    """One pinned loader and one not: the list's pinning is unknown, and so is the copy's cost."""
    data = DATA.replace("pin_memory=True", "pin_memory=pin").replace(
        "        loaders.append(loader)\n",
        "        loaders.append(loader)\n    loaders.append(DataLoader(datasets[0], pin_memory=False))\n")
    assert data.count("pin_memory=False") == 1
    assert COPY not in found(check(_project(tmp_path, data=data), "--no-cache", "."))


def test_a_generator_that_yields_something_else_hands_on_nothing(tmp_path: Path):
    utils = UTILS.replace("            yield obj", "            yield i, i + 1")
    assert utils != UTILS
    assert COPY not in found(check(_project(tmp_path, utils=utils), "--no-cache", "."))


def test_a_list_of_loaders_chosen_between_a_dataloader_and_another_class_is_unknown(tmp_path: Path):
    """`loader = HybridLoader(...)` on one branch, `DataLoader(...)` on the other, then appended: the list may
    hold either, so nothing is known of its pinning (and the function that unpacks it is no loader factory)."""
    data = DATA.replace("        loader = DataLoader(dataset, batch_size=bs, num_workers=4, pin_memory=True)\n",
                        "        if pin:\n            loader = HybridLoader(dataset)\n        else:\n"
                        "            loader = DataLoader(dataset, batch_size=bs, num_workers=4)\n")
    assert data != DATA
    train = TRAIN.replace("image = image.to(device)", "image = image.to(device, non_blocking=True)")
    assert train != TRAIN
    results = found(check(_project(tmp_path, data=data, train=train), "--no-cache", "."))
    assert not any(code == "GPU201" for _, _, code in results)
