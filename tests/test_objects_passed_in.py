"""Project objects and network outputs handed to per-step code through parameters (branch recall35; heldout11
VideoMAE's `mixup_fn: Optional[Mixup]`, heldout12 VITS's `discriminator_loss(y_d_hat_r, y_d_hat_g)`).

- A loop that calls a parameter annotated with a project class (`mixup_fn(samples, targets)` in
  `def train_one_epoch(..., mixup_fn: Optional[Mixup] = None)`) runs that class's `__call__` every step, although
  the loop's file never calls the class by name (the script that builds it calls `train_one_epoch` once per
  epoch). The callers of a class were only the files whose hot loops call its name.
- A helper module that names no device, whose function a GPU training loop calls every step with what a network
  returned, unpacked (`y_d_hat_r, y_d_hat_g, _, _ = net_d(y, y_hat.detach())`, `net_d` handed in by the caller),
  handles device tensors: its `.item()`s are per-step syncs. Only arguments known to be device tensors counted.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

MIXUP = textwrap.dedent("""\
    import numpy as np
    import torch


    class Mixup:
        def __init__(self, mode="batch"):
            self.mode = mode

        def _mix_pair(self, x):
            lam = np.random.beta(1.0, 1.0, size=len(x) // 2)
            lam = np.concatenate((lam, lam[::-1]))
            return torch.tensor(lam, device=x.device, dtype=x.dtype).unsqueeze(1)

        def __call__(self, x, target):
            if self.mode == "pair":
                lam = self._mix_pair(x)
            else:
                lam = 1.0
            return x * lam, target
""")

ENGINE = textwrap.dedent("""\
    from typing import Optional

    import torch
    from mixup import Mixup


    def train_one_epoch(model, loader, optimizer, device, mixup_fn: Optional[Mixup] = None):
        for samples, targets in loader:
            samples = samples.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            if mixup_fn is not None:
                samples, targets = mixup_fn(samples, targets)
            loss = model(samples).sum()
            loss.backward()
            optimizer.step()
""")

MAIN = textwrap.dedent("""\
    import torch
    from engine import train_one_epoch
    from mixup import Mixup


    def main(args, model, loader):
        device = torch.device("cuda")
        model.to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        mixup_fn = Mixup(mode=args.mode) if args.mixup else None
        for epoch in range(args.epochs):
            train_one_epoch(model, loader, optimizer, device, mixup_fn)
""")


def test_annotated_parameter_runs_the_class_call_every_step(tmp_path):
    root = write_project(tmp_path, {"mixup.py": MIXUP, "engine.py": ENGINE, "main.py": MAIN})
    items = check(root, "--no-cache")
    assert ("mixup.py", 12, "GPU203") in found(items)
    related = [d for d in items if d["filename"].endswith("mixup.py") and d["location"]["row"] == 12]
    assert "which `mixup_fn(...)` runs every step" in related[0]["message"]  # the per-step call named


def test_unannotated_parameter_of_another_class_stays_quiet(tmp_path):
    # the loop's parameter is annotated with another class: nothing says it holds a Mixup
    engine = ENGINE.replace("mixup_fn: Optional[Mixup] = None", "mixup_fn: Optional[Cutter] = None").replace(
        "from mixup import Mixup", "from mixup import Mixup\n\n\nclass Cutter:\n    pass")
    root = write_project(tmp_path, {"mixup.py": MIXUP, "engine.py": engine, "main.py": MAIN})
    assert not any(path == "mixup.py" for path, _, _ in found(check(root, "--no-cache")))


def test_annotated_parameter_called_periodically_stays_quiet(tmp_path):
    engine = ENGINE.replace("        if mixup_fn is not None:\n",
                            "        if step % 100 == 0 and mixup_fn is not None:\n").replace(
        "for samples, targets in loader:", "for step, (samples, targets) in enumerate(loader):")
    assert "step % 100 == 0" in engine
    root = write_project(tmp_path, {"mixup.py": MIXUP, "engine.py": engine, "main.py": MAIN})
    assert not any(path == "mixup.py" for path, _, _ in found(check(root, "--no-cache")))


LOSSES = textwrap.dedent("""\
    import torch


    def discriminator_loss(real_outputs, fake_outputs):
        loss = 0
        r_losses = []
        for dr, dg in zip(real_outputs, fake_outputs):
            r_loss = torch.mean((1 - dr) ** 2)
            g_loss = torch.mean(dg ** 2)
            loss += r_loss + g_loss
            r_losses.append(r_loss.item())
        return loss, r_losses
""")

TRAIN = textwrap.dedent("""\
    import torch
    from losses import discriminator_loss


    def train(nets, optim_d, loader):
        net_g, net_d = nets
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            y_hat = net_g(x)
            y_d_hat_r, y_d_hat_g = net_d(y, y_hat.detach())
            loss_disc, losses_disc_r = discriminator_loss(y_d_hat_r, y_d_hat_g)
            optim_d.zero_grad()
            loss_disc.backward()
            optim_d.step()
""")


def test_helper_given_a_network_s_unpacked_outputs_feeds_the_gpu(tmp_path):
    root = write_project(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN})
    assert ("losses.py", 11, "GPU101") in found(check(root, "--no-cache"))


def test_helper_given_unpacked_host_values_stays_quiet(tmp_path):
    # the pair comes from a function of the script (not a network handed in): nothing says it is on the device
    train = TRAIN.replace("    net_g, net_d = nets\n", "    net_g, net_d = nets\n\n    def split(a, b):\n"
                          "        return a.tolist(), b.tolist()\n\n").replace(
        "y_d_hat_r, y_d_hat_g = net_d(y, y_hat.detach())", "y_d_hat_r, y_d_hat_g = split(y, y_hat.detach())")
    root = write_project(tmp_path, {"losses.py": LOSSES, "train.py": train})
    assert not any(path == "losses.py" for path, _, _ in found(check(root, "--no-cache")))
