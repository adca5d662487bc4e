"""A project's own optimizer class runs its `step` every iteration (issue 11, recall): `scaler.step(opt)` of a
`GradScaler` calls `opt.step()`, so a hand-written LARS whose `step` loops over each parameter group's tensors
is per-step code (GPU411 at its loop), whether the class is written beside the loop (`opt = Lars(...)`, then
`opt.step()` or `scaler.step(opt)`) or in another module of optimizers that names no device (the loop's file
does), and also where the script picks it or a torch optimizer by a flag and hands it to a `train` function.
A `step` nobody runs every iteration, an optimizer class never stepped, and a loop over groups that only reads
stay quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_model_code import check, found  # the same CLI run and finding keys

OPTIMIZERS = textwrap.dedent("""\
    import torch


    class Lars(torch.optim.Optimizer):
        def __init__(self, params, lr=0.1, trust=0.001):
            super().__init__(params, dict(lr=lr, trust=trust))

        @torch.no_grad()
        def step(self):
            for grp in self.param_groups:
                for w in grp["params"]:
                    if w.grad is None:
                        continue
                    scale = grp["trust"] * torch.norm(w) / torch.norm(w.grad)
                    w.add_(w.grad * scale, alpha=-grp["lr"])

        def describe(self):
            for grp in self.param_groups:
                for w in grp["params"]:
                    w.add_(0.0)
""")

# The optimizer is chosen by a flag (the project class or torch's AdamW) and stepped through a GradScaler in
# a function the script calls with it.
TRAIN_FLAG = textwrap.dedent("""\
    import argparse
    import torch
    import optimizers

    parser = argparse.ArgumentParser()
    parser.add_argument("--optimizer", default="lars")


    def run_epoch(loader, net, opt, scaler):
        for x in loader:
            x = x.cuda(non_blocking=True)
            with torch.autocast("cuda"):
                loss = net(x).sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()


    def main():
        args = parser.parse_args()
        net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8)).cuda()
        if args.optimizer == "lars":
            opt = optimizers.Lars(net.parameters())
        else:
            opt = torch.optim.AdamW(net.parameters(), fused=True)
        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
        scaler = torch.cuda.amp.GradScaler()
        for epoch in range(10):
            run_epoch(loader, net, opt, scaler)
""")

# Everything in one script: the class beside the loop, stepped through the scaler.
ONE_FILE = OPTIMIZERS + textwrap.dedent("""\


    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8)).cuda()
    opt = Lars(net.parameters())
    scaler = torch.cuda.amp.GradScaler()
    loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
    for x in loader:
        x = x.cuda(non_blocking=True)
        with torch.autocast("cuda"):
            loss = net(x).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
""")


def _write(root: Path, files: dict) -> Path:
    (root / ".git").mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _gpu411(root: Path) -> set:
    return {f for f in found(check(root, "--no-cache", ".")) if f[2] == "GPU411"}


def test_optimizer_module_stepped_through_a_scaler_in_another_file(tmp_path: Path):
    """The module of optimizers names no device; the training script does. Only `step`'s loop is reported:
    `describe` never runs every step."""
    root = _write(tmp_path, {"optimizers.py": OPTIMIZERS, "train.py": TRAIN_FLAG})
    assert _gpu411(root) == {("optimizers.py", 11, "GPU411")}
    item = next(d for d in check(root, "--no-cache", ".") if d["code"] == "GPU411")
    assert "`Lars.step`, which `scaler.step(...)` runs every step" in item["message"]


def test_optimizer_stepped_directly_in_another_file(tmp_path: Path):
    train = TRAIN_FLAG.replace("scaler.step(opt)", "opt.step()")
    root = _write(tmp_path, {"optimizers.py": OPTIMIZERS, "train.py": train})
    assert _gpu411(root) == {("optimizers.py", 11, "GPU411")}


def test_optimizer_class_beside_the_loop(tmp_path: Path):
    """`opt = Lars(...)` in the same script: `scaler.step(opt)` and `opt.step()` both run `Lars.step`."""
    root = _write(tmp_path, {"train.py": ONE_FILE})
    assert _gpu411(root) == {("train.py", 11, "GPU411")}
    (root / "train.py").write_text(ONE_FILE.replace("scaler.step(opt)", "opt.step()"))
    assert _gpu411(root) == {("train.py", 11, "GPU411")}


def test_quiet_where_the_class_is_not_stepped_every_iteration(tmp_path: Path):
    """Stepped once after the loop (a final averaging step), or built and never stepped: nothing. (A step
    under `if i % k == 0:` stays per-step code: that is gradient accumulation, every optimizer step pays.)"""
    once = ONE_FILE.replace("    scaler.step(opt)\n", "").replace("    scaler.update()\n",
                                                                     "    scaler.update()\nscaler.step(opt)\n")
    root = _write(tmp_path, {"train.py": once})
    assert _gpu411(root) == set()
    (root / "train.py").write_text(ONE_FILE.replace("    scaler.step(opt)\n", ""))
    assert _gpu411(root) == set()


def test_choice_with_an_unknown_alternative_is_reported_at_the_class(tmp_path: Path):
    """The other branch builds something the project cannot see (`timm.create_optimizer`): which one the loop steps
    is unknown, so the choice is not followed through the parameter; but a hand-written `torch.optim.Optimizer` the
    project names outside its imports is stepped every iteration whenever it is the one chosen (here the flag's
    default), like a network's `forward` once per batch (`trained_modules.stepped_optimizer`, recall73), so its
    per-parameter loop is reported at the class."""
    train = TRAIN_FLAG.replace("torch.optim.AdamW(net.parameters(), fused=True)",
                               "timm.optim.create_optimizer_v2(net, 'lamb')").replace(
        "import optimizers\n", "import optimizers\nimport timm.optim\n")
    root = _write(tmp_path, {"optimizers.py": OPTIMIZERS, "train.py": train})
    assert _gpu411(root) == {("optimizers.py", 11, "GPU411")}
