"""A DataLoader's options passed as `**kwargs` from a dict the script builds (PyTorch's MNIST example:
`train_kwargs.update(accel_kwargs)` with `'pin_memory': True`, then `DataLoader(dataset1, **train_kwargs)`).

Where every key the dict can hold is written in the module, the loader's `pin_memory` is known: its batches are
pinned (so a blocking `.to(device)` is GPU202) or not (GPU201, fixed by adding the keyword after `**kwargs`).
Where the dict may hold keys nobody can read (a parameter, `update` of an unknown dict, handed to a function),
nothing is reported, as before.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from projects import check, found

HEAD = """\
import torch
from torch.utils.data import DataLoader


def train(model, device, loader, optimizer):
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


"""

CASES = {
    # PyTorch's MNIST example: the keys come from two literal dicts, one merged into the other under a flag
    "mnist.py": """\
        def main(args, model, optimizer, dataset):
            device = torch.device("cuda" if args.cuda else "cpu")
            train_kwargs = {"batch_size": args.batch_size}
            if args.cuda:
                cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
                train_kwargs.update(cuda_kwargs)
            loader = DataLoader(dataset, **train_kwargs)
            train(model, device, loader, optimizer)
        """,
    # every key known, none of them pin_memory
    "unpinned.py": """\
        def main(args, model, optimizer, dataset):
            kw = dict(batch_size=args.batch_size)
            kw["num_workers"] = 2
            loader = DataLoader(dataset, **kw)
            train(model, "cuda", loader, optimizer)
        """,
    # keys nobody can read: options from the caller, an unknown update, a dict handed to a function
    "unknown.py": """\
        def main(args, model, optimizer, dataset, options):
            kw = {"batch_size": 8}
            kw.update(options)
            loader = DataLoader(dataset, **kw)
            train(model, "cuda", loader, optimizer)


        def other(args, model, optimizer, dataset):
            kw = {"batch_size": 8}
            configure(kw)
            loader = DataLoader(dataset, **kw)
            train(model, "cuda", loader, optimizer)


        def third(args, model, optimizer, dataset, **kw):
            loader = DataLoader(dataset, **kw)
            train(model, "cuda", loader, optimizer)
        """,
    # pin_memory decided by the script's own flag: GPU201 has nothing to say, and the batches are pinned
    "decided.py": """\
        def main(args, model, optimizer, dataset):
            kw = {"batch_size": 8}
            kw["pin_memory"] = args.pin_memory
            loader = DataLoader(dataset, **kw)
            train(model, "cuda", loader, optimizer)
        """,
}


def write(root: Path) -> None:
    for name, body in CASES.items():
        (root / name).write_text(HEAD + textwrap.dedent(body))


def test_options_dict_built_in_the_module_tells_whether_the_loader_pins(tmp_path: Path):
    write(tmp_path)
    assert found(check(tmp_path, "--no-cache", "--select", "GPU2", ".")) == {
        ("mnist.py", 7, "GPU202"),  # twice: data and target
        ("unpinned.py", 17, "GPU201"),
        ("unpinned.py", 7, "GPU202"),  # pinned once GPU201's fix is applied (same --fix run)
        ("decided.py", 7, "GPU202"),
    }
    by_line = [d for d in check(tmp_path, "--no-cache", "mnist.py") if d["code"] == "GPU202"]
    assert [d["location"]["column"] for d in by_line] == [24, 41]


def test_the_fix_adds_pin_memory_after_the_options(tmp_path: Path):
    write(tmp_path)
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--fix", "unpinned.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    fixed = (tmp_path / "unpinned.py").read_text()
    assert "loader = DataLoader(dataset, **kw, pin_memory=True)" in fixed
    assert "data.to(device, non_blocking=True), target.to(device, non_blocking=True)" in fixed
    ast.parse(fixed)
    assert found(check(tmp_path, "--no-cache", "--select", "GPU2", "unpinned.py")) == set()
