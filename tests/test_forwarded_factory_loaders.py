"""GPU201 at the `DataLoader(...)` of a loader factory whose loaders reach the training script through another
function (recall50; heldout15's mdistiller: `get_dataset(cfg)` calls `get_cifar100_dataloaders(...)` in one
branch and `get_tinyimagenet_dataloader(...)` in another, unpacks each into `train_loader, val_loader, n` and
returns those names). The module calling the factory targets no GPU itself, so the factory was never reported;
now the function that hands the loaders on is followed to its callers, which decide as a direct caller does.

- Reported: the unpinned loaders of each factory the forwarding function calls.
- Quiet: a pinned loader, a forwarding function whose callers never use a GPU, a function that calls the
  factory but returns something else.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

SMALL = textwrap.dedent("""\
    from torch.utils.data import DataLoader


    def small_loaders(train_set, test_set, workers):
        train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=workers)
        test_loader = DataLoader(test_set, batch_size=64, num_workers=workers)
        return train_loader, test_loader, len(train_set)
""")

LARGE = textwrap.dedent("""\
    from torch.utils.data import DataLoader


    def large_loaders(train_set, test_set, workers):
        train_loader = DataLoader(train_set, batch_size=256, num_workers=workers, pin_memory=True)
        test_loader = DataLoader(test_set, batch_size=256, num_workers=workers, pin_memory=True)
        return train_loader, test_loader, len(train_set)
""")

DATASET = textwrap.dedent("""\
    from data.small import small_loaders
    from data.large import large_loaders


    def get_dataset(cfg, train_set, test_set):
        if cfg.kind == "small":
            train_loader, val_loader, num_data = small_loaders(train_set, test_set, cfg.workers)
        else:
            train_loader, val_loader, num_data = large_loaders(train_set, test_set, cfg.workers)
        return train_loader, val_loader, num_data, cfg.classes
""")

TRAIN = textwrap.dedent("""\
    import torch
    from data import get_dataset


    def main(cfg, net, train_set, test_set):
        train_loader, val_loader, num_data, num_classes = get_dataset(cfg, train_set, test_set)
        net = net.cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for image, target in train_loader:
            image = image.cuda(non_blocking=True)
            target = target.cuda(non_blocking=True)
            loss = torch.nn.functional.cross_entropy(net(image), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")


def _gpu201(tmp_path: Path, dataset: str = DATASET, train: str = TRAIN) -> set:
    root = write_project(tmp_path / "p", {"data/__init__.py": dataset, "data/small.py": SMALL,
                                          "data/large.py": LARGE, "train.py": train})
    return {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero", "."))
            if code == "GPU201"}


def test_unpinned_loaders_of_a_forwarded_factory_are_reported(tmp_path: Path):
    assert {("data/small.py", 5), ("data/small.py", 6)} <= _gpu201(tmp_path)


def test_pinned_loaders_of_a_forwarded_factory_stay_quiet(tmp_path: Path):
    assert not {path for path, _ in _gpu201(tmp_path)} & {"data/large.py"}


def test_forwarding_function_whose_callers_use_no_gpu_stays_quiet(tmp_path: Path):
    cpu = TRAIN.replace("net = net.cuda()\n", "").replace(".cuda(non_blocking=True)", "")
    assert not _gpu201(tmp_path, train=cpu)


def test_function_returning_something_else_stays_quiet(tmp_path: Path):
    other = DATASET.replace("return train_loader, val_loader, num_data, cfg.classes", "return num_data")
    assert ("data/small.py", 5) not in _gpu201(tmp_path, dataset=other)
