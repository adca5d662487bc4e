"""GPU201 at loaders a factory hands on inside a container (recall41; pytorch-3dunet `get_train_loaders` returns
`{"train": DataLoader(...), "val": DataLoader(...)}` and `get_test_loaders` yields one `DataLoader` per test set):
the factory module names no device, but a CUDA script calling it trains on the loaders' batches. The loaders'
`**loader_kwargs` come from a project function returning a dict of literal keys (no `pin_memory` among them):
they pass no pinning. A factory only CPU scripts call, and options that may carry `pin_memory`, stay quiet."""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

CONFIG = textwrap.dedent("""\
    import platform


    def loader_options():
        kwargs = {}
        if platform.system() == "Darwin":
            kwargs = {"multiprocessing_context": "forkserver", "persistent_workers": True}
        return kwargs
""")

LOADERS = textwrap.dedent("""\
    from torch.utils.data import DataLoader

    from config import loader_options


    def get_train_loaders(train_set, val_set):
        loader_kwargs = loader_options()
        return {
            "train": DataLoader(train_set, batch_size=8, shuffle=True, **loader_kwargs),
            "val": DataLoader(val_set, batch_size=8, **loader_kwargs),
        }


    def get_test_loaders(test_sets):
        for test_set in test_sets:
            yield DataLoader(test_set, batch_size=8, **loader_options())
""")

TRAIN = textwrap.dedent("""\
    import torch

    from loaders import get_test_loaders, get_train_loaders


    def main(net, train_set, val_set, test_sets):
        device = torch.device("cuda")
        net = net.to(device)
        loaders = get_train_loaders(train_set, val_set)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in loaders["train"]:
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        for test_loader in get_test_loaders(test_sets):
            for x, _ in test_loader:
                net(x.to(device))
""")

AT_FACTORY = {("loaders.py", 9, "GPU201"), ("loaders.py", 10, "GPU201"), ("loaders.py", 16, "GPU201")}


def _lint(root: Path, *args: str, config: str = CONFIG, train: str = TRAIN) -> list:
    write_project(root, {"config.py": config, "loaders.py": LOADERS, "train.py": train})
    return check(root, "--no-cache", *args)


def test_loaders_in_a_returned_dict_or_yielded_are_reported_at_the_factory(tmp_path: Path):
    items = _lint(tmp_path, "loaders.py")
    assert AT_FACTORY <= found(items)
    [train] = [d for d in items if d["location"]["row"] == 9]
    assert [r["location"]["row"] for r in train["related"]] == [9]  # `get_train_loaders(...)` in train.py
    [test] = [d for d in items if d["location"]["row"] == 16]
    assert "yielded by `get_test_loaders(...)`" in test["message"]


def test_a_factory_only_cpu_scripts_call_is_quiet(tmp_path: Path):
    train = TRAIN.replace('torch.device("cuda")', 'torch.device("cpu")').replace(".to(device)", "")
    assert not AT_FACTORY & found(_lint(tmp_path, ".", train=train))


def test_options_that_may_carry_pin_memory_keep_it_quiet(tmp_path: Path):
    config = CONFIG.replace('"persistent_workers": True}', '"persistent_workers": True}\n'
                            '    kwargs.update(extra_options())')
    assert not AT_FACTORY & found(_lint(tmp_path, "loaders.py", config=config))


SCRIPT = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    from config import loader_options


    def main(net, train_set):
        net = net.cuda()
        loader = DataLoader(train_set, batch_size=8, shuffle=True, **loader_options())
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(net(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
""")


def test_options_from_a_project_function_without_pin_memory_pass_none(tmp_path: Path):
    write_project(tmp_path, {"config.py": CONFIG, "train.py": SCRIPT})
    assert ("train.py", 9, "GPU201") in found(check(tmp_path, "--no-cache", "."))
    pinned = CONFIG.replace("kwargs = {}", 'kwargs = {"pin_memory": True}').replace(
        '"persistent_workers": True}', '"persistent_workers": True, "pin_memory": True}')
    write_project(tmp_path, {"config.py": pinned, "train.py": SCRIPT})
    assert ("train.py", 9, "GPU201") not in found(check(tmp_path, "--no-cache", "."))
