"""An EMA that keeps its shadow copies in a dict keyed by parameter name (GPU411): the body of
`for name, p in model.named_parameters():` rewrites `shadow[name]` from itself and `p` (in place, through
`.data`, or rebound), one or more kernels per parameter every step. Reported in the loop's own module and, for a
project helper method, at its per-step call in another module. A dict filled from the parameters alone (a
snapshot of the gradients), a statistic read back to the host, and the one-off registration stay silent.

A regularisation or gradient norm summed parameter by parameter into an accumulator every step
(`grad_norm += p.grad.data.norm() ** 2`) is the same cost, reported with its own message; not where each term
is read back to the host (`.item()`: GPU101's sync) nor in a loop that runs every 100 steps.
"""

from __future__ import annotations

import textwrap

from projects import check, found, lint_script, write_project

SCRIPT = textwrap.dedent("""\
    import torch


    def main(loader):
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
        shadow = {k: p.detach().clone() for k, p in model.named_parameters()}
        grads, norms = {}, {}
        for x in loader:
            loss = model(x.cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for k, p in model.named_parameters():
                    shadow[k] = 0.999 * shadow[k] + 0.001 * p
                for k, p in model.named_parameters():
                    grads[k] = p.grad.clone()
                for k, p in model.named_parameters():
                    norms[k] += p.grad.norm().item()
""")


def test_shadow_dict_rewritten_from_itself_every_step(tmp_path):
    assert {row for row, code in lint_script(tmp_path, SCRIPT) if code == "GPU411"} == {15}


def test_in_place_and_data_updates_of_the_shadow(tmp_path):
    text = SCRIPT.replace("shadow[k] = 0.999 * shadow[k] + 0.001 * p",
                          "shadow[k].mul_(0.999).add_(p, alpha=0.001)")
    assert {row for row, code in lint_script(tmp_path / "a", text) if code == "GPU411"} == {15}
    text = SCRIPT.replace("shadow[k] = 0.999", "shadow[k].data = 0.999")
    assert {row for row, code in lint_script(tmp_path / "b", text) if code == "GPU411"} == {15}


EMA = textwrap.dedent("""\
    import torch.nn as nn


    class ShadowEMA:
        def __init__(self, decay=0.999):
            self.decay = decay
            self.shadow = {}

        def register(self, net):
            for key, weight in net.named_parameters():
                if weight.requires_grad:
                    self.shadow[key] = weight.data.clone()

        def update(self, net):
            if isinstance(net, nn.DataParallel):
                net = net.module
            for key, weight in net.named_parameters():
                if weight.requires_grad:
                    self.shadow[key].data = (1. - self.decay) * weight.data + self.decay * self.shadow[key].data

        def snapshot(self, net):
            for key, weight in net.named_parameters():
                self.shadow[key] = weight.detach().clone()
""")

TRAIN = textwrap.dedent("""\
    import torch
    from ema import ShadowEMA


    def main(loader, use_ema=True):
        device = torch.device("cuda")
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
        helper = ShadowEMA(0.999)
        helper.register(model)
        for x in loader:
            loss = model(x.to(device)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            helper.update(model)
            helper.snapshot(model)
""")


def test_helper_method_call_reported_every_step(tmp_path):
    root = write_project(tmp_path, {"ema.py": EMA, "train.py": TRAIN})
    hits = {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU411"}
    # the per-step `update` (its loop rewrites the shadow from itself); not `register` (once, before training)
    # nor `snapshot` (a copy of the parameters, no recurrence)
    assert ("train.py", 16) in hits
    assert ("train.py", 10) not in hits and ("train.py", 17) not in hits


BUFFERS = textwrap.dedent("""\
    import copy
    import torch
    import misc


    def main(loader):
        G = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.BatchNorm1d(512), torch.nn.Linear(512, 10)).cuda()
        G_ema = copy.deepcopy(G).eval()
        opt = torch.optim.Adam(G.parameters(), lr=1e-3, fused=True)
        for b_ema, b in zip(G_ema.buffers(), G.buffers()):
            b_ema.copy_(b)
        for x in loader:
            loss = G(x.cuda()).sum()
            opt.zero_grad()
            loss.backward()
            for param in G.parameters():
                if param.grad is not None:
                    misc.nan_to_num(param.grad, nan=0, out=param.grad)
            opt.step()
            for b_ema, b in zip(G_ema.buffers(), G.buffers()):
                b_ema.copy_(b)
            for b_ema, b in zip(G_ema.buffers(), G.buffers()):
                b_ema.lerp_(b, 0.5)
""")

MISC = textwrap.dedent("""\
    import torch


    def nan_to_num(x, nan=0.0, out=None):
        return torch.clamp(x.unsqueeze(0).nansum(0), min=-1e5, max=1e5, out=out)
""")


def test_buffers_copied_every_step_and_gradients_written_through_a_wrappers_out(tmp_path):
    root = write_project(tmp_path, {"train.py": BUFFERS, "misc.py": MISC})
    items = [d for d in check(root, "--no-cache", "--exit-zero", "--select", "GPU411") if d["code"] == "GPU411"]
    # the per-step buffer copies (an EMA generator's BN statistics) and the gradient clean-up through a project
    # wrapper's `out=`; not the copy made once before training
    assert {d["location"]["row"] for d in items} == {16, 20, 22}
    # buffers may hold integers (`num_batches_tracked`): the foreach fix is never offered over them
    assert all(d["fix"] is None for d in items if d["location"]["row"] in (20, 22))


REDUCTIONS = textwrap.dedent("""\
import torch


def main(loader, log):
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    for step, x in enumerate(loader):
        loss = model(x.cuda()).sum()
        reg = 0
        for name, p in model.named_parameters():
            if "weight" in name:
                reg += torch.sum(p ** 2)
        (loss + 1e-4 * reg).backward()
        grad_norm = 0
        for p in model.parameters():
            if p.grad is not None:
                grad_norm += p.grad.data.norm() ** 2
        log["grad"] = grad_norm ** 0.5
        total = 0.0
        for p in model.parameters():
            total += p.grad.norm().item() ** 2
        opt.step()
        opt.zero_grad()
        if step % 100 == 0:
            n = 0
            for p in model.parameters():
                n += p.grad.norm() ** 2
            log["n"] = n
""")


def test_norms_and_sums_accumulated_per_parameter_every_step(tmp_path):
    items = check(write_project(tmp_path, {"train.py": REDUCTIONS}), "--no-cache", "--exit-zero", "train.py")
    rows = {d["location"]["row"]: d["message"] for d in items if d["code"] == "GPU411"}
    assert set(rows) == {10, 15}  # the L2 penalty and the logged gradient norm; not `.item()`'s, not periodic
    assert all("torch._foreach_norm" in m for m in rows.values())
