"""Periodic guards that leave early (analysis/skip_guards.py, `LoopAnalysis._skip_guard`): a helper called every
step whose body starts `if step % N != 0: return` (or a nest of such guards, every way through which passes a
periodic test) runs its syncs every N steps only; without the guard, or with a guard that is not periodic, the
same sync is reported."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

LOOP = """import torch
from torch.utils.data import DataLoader
{imports}

{helper}

model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 8), batch_size=4, pin_memory=True)
for step, x in enumerate(loader):
    loss = model(x.cuda(non_blocking=True)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    log_loss(step, loss)
"""

GUARDED = """def log_loss(step, loss):
    if step % 100 != 0:
        return
    print("loss", loss.item())
"""

UNGUARDED = """def log_loss(step, loss):
    if loss.dim() != 0:
        return
    print("loss", loss.item())
"""

# a sampling helper's nest: the first step (when asked for), else every N steps or epochs
NESTED = """def log_loss(step, loss, every=None, every_epochs=None, epoch=None, at_first=False):
    if step == 0:
        if not at_first:
            return
    else:
        if every is None and every_epochs is None:
            return
        if every_epochs is not None:
            if epoch is None or epoch % every_epochs != 0:
                return
        else:
            if step % every != 0 or epoch is not None:
                return
    torch.cuda.empty_cache()
    print("loss", loss.item())
"""

# one way through does not pass the periodic test: `if step % 100 == 0: note()` falls through either way
FALLS_THROUGH = """def note():
    pass


def log_loss(step, loss):
    if step % 100 == 0:
        note()
    print("loss", loss.item())
"""


def _codes(root: Path, name: str) -> set:
    return {code for path, row, code in found(check(root, "--no-cache", name)) if path.endswith(name)}


def test_guard_in_the_same_module(tmp_path: Path) -> None:
    for name, helper in (("guarded", GUARDED), ("nested", NESTED)):
        root = write_project(tmp_path / name, {"train.py": LOOP.format(imports="", helper=helper)})
        assert not _codes(root, "train.py") & {"GPU101", "GPU110"}, name
    for name, helper in (("unguarded", UNGUARDED), ("falls", FALLS_THROUGH)):
        root = write_project(tmp_path / name, {"train.py": LOOP.format(imports="", helper=helper)})
        assert "GPU101" in _codes(root, "train.py"), name


def test_guard_in_a_helper_module(tmp_path: Path) -> None:
    """The call site's GPU112 (the project summary of `log_loss`) and the helper's own findings agree."""
    for name, helper in (("guarded", GUARDED), ("nested", NESTED)):
        root = write_project(tmp_path / name, {
            "train.py": LOOP.format(imports="from utils import log_loss", helper=""),
            "utils.py": "import torch\n\n\n" + helper})
        codes = {(p, c) for p, _, c in found(check(root, "--no-cache", "."))}
        assert not {c for _, c in codes} & {"GPU112", "GPU101", "GPU110"}, (name, codes)
    root = write_project(tmp_path / "unguarded", {
        "train.py": LOOP.format(imports="from utils import log_loss", helper=""),
        "utils.py": "import torch\n\n\n" + UNGUARDED})
    assert "GPU112" in {c for _, _, c in found(check(root, "--no-cache", "."))}


def test_guard_before_an_optimizer_step_stays_hot(tmp_path: Path) -> None:
    """Gradient accumulation's `if (step + 1) % accum != 0: return` before `opt.step()`: every optimizer step."""
    helper = """def log_loss(step, loss):
    if (step + 1) % 4 != 0:
        return
    opt.step()
    print("loss", loss.item())
"""
    root = write_project(tmp_path / "accum", {"train.py": LOOP.format(imports="", helper=helper)})
    assert "GPU101" in _codes(root, "train.py")


def test_negated_disjunction_is_periodic(tmp_path: Path) -> None:
    """`not (a or step % N != 0)` is `not a and step % N == 0`: periodic (De Morgan); the `else` of
    `if step % N == 0 and verbose:` runs on most steps."""
    body = """def log_loss(step, loss, quiet=False):
    if not (quiet or step % 100 != 0):
        print("loss", loss.item())
"""
    root = write_project(tmp_path / "demorgan", {"train.py": LOOP.format(imports="", helper=body)})
    assert "GPU101" not in _codes(root, "train.py")
    body = """def log_loss(step, loss, verbose=True):
    if step % 100 == 0 and verbose:
        pass
    else:
        print("loss", loss.item())
"""
    root = write_project(tmp_path / "else", {"train.py": LOOP.format(imports="", helper=body)})
    assert "GPU101" in _codes(root, "train.py")


DEVICE_BRANCH = """import torch
from torch.utils.data import DataLoader


class Prefetcher:
    def __init__(self, loader, device="cuda"):
        self.loader = loader
        self.device = device

    def __iter__(self):
        for x, y in self.loader:
            if {test}:
                x = x.cuda(non_blocking=True)
                y = y.cuda(non_blocking=True)
            else:
                x = x.to(self.device)
                y = y.to(self.device)
            yield x, y


model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 2)), batch_size=4,
                    pin_memory=True)
for x, y in Prefetcher(loader):
    loss = (model(x) - y).pow(2).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
"""


def test_else_of_a_cuda_device_test_runs_off_the_gpu(tmp_path: Path) -> None:
    """`if self.device == "cuda": <non_blocking copies> else: <plain .to(self.device)>`: the `else` is the CPU
    path (GPU202 there is noise); under a test that is not about the device the plain copy is reported."""
    for name, test in (("eq", 'self.device == "cuda"'), ("not", 'not self.device != "cuda"'),
                       ("cpu", 'self.device != "cpu"')):
        root = write_project(tmp_path / name, {"train.py": DEVICE_BRANCH.format(test=test)})
        rows = {(row, code) for _, row, code in found(check(root, "--no-cache", "train.py"))}
        assert not {r for r in rows if r[1] == "GPU202" and r[0] in (16, 17)}, (name, rows)
    root = write_project(tmp_path / "other", {"train.py": DEVICE_BRANCH.format(test="len(x) > 1")})
    rows = {(row, code) for _, row, code in found(check(root, "--no-cache", "train.py"))}
    assert (16, "GPU202") in rows, rows


def test_device_enumeration_member_and_mps_branches_run_off_cuda(tmp_path: Path) -> None:
    """`if self.device == Device.CUDA: ... else: <plain copy>` (an enumeration of device types, not a string) and
    the body of `if on_mps:` after `on_mps = x.device.type == "mps"` (an Apple-GPU fallback) run only off CUDA:
    their CUDA costs are not reported (a `torch.mps.synchronize()` there, the MPS device's own sync, still is).
    The same copy under a test of something else still is reported."""
    enum = DEVICE_BRANCH.replace("import torch\n", "import enum\nimport torch\n\n\nclass Device(enum.Enum):\n"
                                 "    CPU = 'cpu'\n    CUDA = 'cuda'\n", 1)
    root = write_project(tmp_path / "enum", {"train.py": enum.format(test="self.device == Device.CUDA")})
    rows = {(row, code) for _, row, code in found(check(root, "--no-cache", "train.py"))}
    assert not {r for r in rows if r[1] == "GPU202" and r[0] in (22, 23)}, rows
    root = write_project(tmp_path / "enum_other", {"train.py": enum.format(test="self.device == Device.cuda_ok")})
    rows = {(row, code) for _, row, code in found(check(root, "--no-cache", "train.py"))}
    assert (22, "GPU202") in rows, rows
    mps = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 8)), batch_size=4, pin_memory=True)
for (x,) in loader:
    out = model(x.cuda(non_blocking=True))
    {flag} = out.device.type == "{kind}"
    if {flag}:
        out = out.cpu()
        torch.mps.synchronize()
    loss = out.pow(2).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
"""
    root = write_project(tmp_path / "mps", {"train.py": mps.format(flag="on_mps", kind="mps")})
    rows = {(row, code) for _, row, code in found(check(root, "--no-cache", "train.py"))}
    assert (11, "GPU104") not in rows, rows
    assert (12, "GPU109") in rows, rows  # the Apple GPU's own sync, paid where the branch runs: still reported
    root = write_project(tmp_path / "cuda", {"train.py": mps.format(flag="on_gpu", kind="cuda")})
    rows = {(row, code) for _, row, code in found(check(root, "--no-cache", "train.py"))}
    assert (11, "GPU104") in rows, rows


def test_assert_message_is_built_only_on_failure(tmp_path: Path) -> None:
    """`assert cond, f"{tensor}"`: the condition runs every step (its `.item()` is reported), the message only when
    the assertion fails (its formatting and `.item()` are not)."""
    helper = """def log_loss(step, loss):
    assert loss.isfinite().item(), f"loss {loss} at {step} ({loss.item()})"
"""
    root = write_project(tmp_path / "assert", {"train.py": LOOP.format(imports="", helper=helper)})
    rows = {(row, col, code) for row, col, code in (
        (d["location"]["row"], d["location"]["column"], d["code"]) for d in check(root, "--no-cache", "train.py"))}
    assert (6, 12, "GPU101") in rows, rows
    assert not {r for r in rows if r[0] == 6 and r[1] > 30}, rows
