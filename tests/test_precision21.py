"""Wrong findings of the twenty-fourth landing and a stance it changed (branch precision21,
benchmarks/labels/README.md "Branch precision21"). Each test lints a small project as a user does."""

from __future__ import annotations

from pathlib import Path

from tests.projects import lint_script

# -- an option off by default that picks between two versions of the step (`if args.use_amp: ... else: ...`) ------

AMP_SWITCH = """import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--use_amp", action="store_true", default=False)
args = parser.parse_args()


def train(model, loader, optimizer, scaler):
    losses = []
    for x in loader:
        x = x.cuda(non_blocking=True)
        if args.use_amp:
            with torch.autocast("cuda"):
                loss = model(x).sum()
                losses.append(loss.item())
            scaler.scale(loss).backward()
        {other}
        optimizer.step()


model = torch.nn.Linear(4, 4).cuda()
loader = torch.utils.data.DataLoader(range(4), pin_memory=True)
train(model, loader, torch.optim.Adam(model.parameters(), fused=True), torch.cuda.amp.GradScaler())
"""

ELSE = """else:
            loss = model(x).sum()
            losses.append(loss.item())
            loss.backward()"""


def test_an_option_choosing_between_two_versions_of_the_step_keeps_its_branch(tmp_path: Path) -> None:
    """`--use_amp` is off by default and nothing the project ships names it, but its `if` has an `else`: the option
    picks which version of the training step runs, so the AMP branch is the step for whoever turns AMP on and its
    per-step `.item()` is reported like the default branch's."""
    found = lint_script(tmp_path, AMP_SWITCH.format(other=ELSE))
    assert (16, "GPU101") in found
    assert (20, "GPU101") in found


def test_an_unshipped_extra_under_an_option_without_else_stays_quiet(tmp_path: Path) -> None:
    """The same block with no `else` is an extra a user asks for by hand (precision20's stance, kept)."""
    found = lint_script(tmp_path, AMP_SWITCH.format(other="loss = None"))
    assert (16, "GPU101") not in found


# -- a test suite's module: loops over toy inputs, not training steps ---------------------------------------------

TEST_MODULE = """import torch
from mylib.losses import memory_loss


def test_memory_loss():
    for i in range(10):
        x = torch.randn(4, 3).cuda()
        loss = memory_loss(x)
        assert loss.item() >= 0
"""

LIB = """import torch


def memory_loss(x):
    return x.sum()
"""


def _found(root: Path, path: str) -> set:
    from tests.projects import check, found
    return {(row, code) for _, row, code in found(check(root, "--no-cache", "--exit-zero", path))}


def test_a_module_of_the_test_suite_is_not_a_training_loop(tmp_path: Path) -> None:
    """`tests/losses/test_memory.py`: a test's loop over toy inputs is no training step, so its `.item()` per
    iteration is not reported; the same code as a `test_*.py` evaluation script at the top is still checked."""
    from tests.projects import write_project
    root = write_project(tmp_path, {"mylib/__init__.py": "", "mylib/losses.py": LIB,
                                    "tests/__init__.py": "", "tests/losses/__init__.py": "",
                                    "tests/losses/test_memory.py": TEST_MODULE, "test_eval.py": TEST_MODULE})
    assert (9, "GPU101") not in _found(root, "tests/losses/test_memory.py")
    assert (9, "GPU101") in _found(root, "test_eval.py")


# -- data-dependent shapes of tensors built in host memory ----------------------------------------------------------

CROPS = """import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(3, 3)

    def forward(self, inputs, counts):
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in inputs]), return_counts=True)[1], 0)
        rows = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
        kept = torch.nonzero(self.body(inputs[0]) > 0)
        return idx_crops, rows, kept


model = Net().cuda()
loader = torch.utils.data.DataLoader(range(4), pin_memory=True)
for x in loader:
    model([x.cuda(non_blocking=True)], [1, 2])
"""


def test_a_data_dependent_shape_of_a_host_built_tensor_is_no_sync(tmp_path: Path) -> None:
    """`torch.unique_consecutive(torch.tensor(sizes))` and `torch.repeat_interleave(torch.arange(n),
    torch.tensor(counts))` in a forward: both inputs are built in host memory (no `device=`), so sizing the
    result reads nothing from the GPU; `torch.nonzero` of the model's output still syncs."""
    found = lint_script(tmp_path, CROPS)
    assert (10, "GPU111") not in found
    assert (12, "GPU111") not in found
    assert (13, "GPU111") in found


# -- a live-plot option off by default (`--visdom`) -------------------------------------------------------------

VISDOM = """import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--visdom", default=False, type=bool)
args = parser.parse_args()


def update_vis_plot(step, loss):
    return step, loss.cpu()


def train(model, loader, optimizer):
    for step, x in enumerate(loader):
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        optimizer.step()
        if args.{flag}:
            update_vis_plot(step, loss)


model = torch.nn.Linear(4, 4).cuda()
loader = torch.utils.data.DataLoader(range(4), pin_memory=True)
train(model, loader, torch.optim.Adam(model.parameters(), fused=True))
"""


def test_a_live_plot_option_off_by_default_is_no_step(tmp_path: Path) -> None:
    """`if args.visdom: update_vis_plot(...)` plots the loss only when the user starts a visdom server and
    passes `--visdom`: a visualisation option off by default, even where the README names the visdom package."""
    from tests.projects import check, found, write_project
    root = write_project(tmp_path, {"train.py": VISDOM.replace("{flag}", "visdom"),
                                    "README.md": "pip install visdom\npython -m visdom.server\n"})
    assert (19, "GPU112") not in {(row, code) for _, row, code in found(check(root, "--no-cache", "--exit-zero",
                                                                              "train.py"))}
    shipped = write_project(tmp_path / "b", {"train.py": VISDOM.replace("{flag}", "plot_loss").replace(
        '"--visdom"', '"--plot_loss"'), "README.md": "python train.py --plot_loss True\n"})
    assert (19, "GPU112") in {(row, code) for _, row, code in found(check(shipped, "--no-cache", "--exit-zero",
                                                                          "train.py"))}


# -- an early exit for an empty input ----------------------------------------------------------------------------

EMPTY_EXIT = """import torch


class PairLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(3, 1)

    def forward(self, queries, docs, device):
        pairs = [(q, d) for q, d in zip(queries, docs) if d is not None]
        if not pairs:
            return torch.tensor(0.0, device=device, requires_grad=True)
        {twin}
        return self.body(torch.stack([d for _, d in pairs]).to(device)).sum()


model = PairLoss().cuda()
loader = torch.utils.data.DataLoader(range(4), pin_memory=True)
for x in loader:
    x = x.cuda(non_blocking=True)
    model([x], [x], x.device).backward()
"""


def test_an_early_exit_for_an_empty_input_is_no_step(tmp_path: Path) -> None:
    """`if not pairs: return torch.tensor(0.0, device=...)`: the loss builds its zero only for a batch without
    pairs, not every step; the same constant built on every call is still reported."""
    found = lint_script(tmp_path, EMPTY_EXIT.format(twin="pass"))
    assert (12, "GPU203") not in found
    twin = lint_script(tmp_path / "b", EMPTY_EXIT.format(
        twin="scale = torch.tensor(0.5, device=device)"))
    assert (13, "GPU203") in twin
