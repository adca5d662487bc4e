"""Per-parameter update loops in project helpers (GPU411, issue 11):

- `zip(params, target_params, strict=True)`: zip's keyword is an option, not a sequence, so the soft target
  update is still a loop over parameters;
- `for k in par.keys():` / `for k in par:` over `dict(m.named_parameters())`, the body indexing the dicts by the
  key (an EMA written over two dicts of named parameters);
- the per-step call of a project helper whose every call runs such a loop is reported at the call too (where the
  cost is paid), in the same module or another, with the loop as related location; not when the call passes
  something other than parameters where the loop iterates its argument (a list of batch-norm statistics), not
  when the loop sits under a condition, not for a call made once before training.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

UTILS = textwrap.dedent("""\
    import torch


    def soft_update(params, target_params, tau):
        with torch.no_grad():
            for p, tp in zip(params, target_params, strict=True):
                tp.data.mul_(1 - tau)
                torch.add(tp.data, p.data, alpha=tau, out=tp.data)


    def maybe_update(params, target_params, tau, enabled):
        if enabled:
            for p, tp in zip(params, target_params):
                tp.data.mul_(1 - tau).add_(p.data, alpha=tau)


    class Ema:
        def __init__(self, model, every=10):
            self.model, self.every, self.step = model, every, 0

        def update(self, params):
            self.step += 1
            if self.step % self.every:
                return
            for e, p in zip(self.model.parameters(), params):
                e.data.mul_(0.99).add_(p.data, alpha=0.01)


    class SoftTarget:
        def __init__(self, target):
            self.target = target

        @torch.no_grad()
        def update(self, online, tau=0.005):
            for t, o in zip(self.target.parameters(), online.parameters()):
                t.lerp_(o, tau)


    def to_device(x, device):
        return x.to(device)
""")

TRAIN = textwrap.dedent("""\
    import torch
    from utils import Ema, SoftTarget, soft_update, maybe_update

    critic = torch.nn.Linear(4, 1).cuda()
    target = torch.nn.Linear(4, 1).cuda()
    stats, target_stats = [], []
    ema = Ema(target)
    soft = SoftTarget(target)
    opt = torch.optim.SGD(critic.parameters(), lr=0.1)
    soft_update(critic.parameters(), target.parameters(), 1.0)
    for x in loader:
        loss = critic(x.cuda(non_blocking=True)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        soft_update(critic.parameters(), target.parameters(), 0.005)
        soft_update(stats, target_stats, 1.0)
        maybe_update(critic.parameters(), target.parameters(), 0.005, True)
        ema.update(critic.parameters())
        soft.update(critic)
""")


def _gpu411(root: Path) -> set:
    return {(f, line) for f, line, code in found(check(root, "--no-cache", "--select", "GPU411"))}


def test_soft_update_with_strict_zip_is_reported_at_the_loop_and_the_per_step_call(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"utils.py": UTILS, "train.py": TRAIN, "tests/test_train.py": TRAIN})
    got = _gpu411(root)
    assert not {f for f, _ in got if f.startswith("tests/")}  # a test's loop steps a toy model
    assert ("utils.py", 6) in got  # the loop of the helper, zip(..., strict=True)
    assert ("train.py", 16) in got  # the per-step call
    assert ("train.py", 10) not in got  # once, before training
    assert ("train.py", 17) not in got  # batch-norm statistics, not parameters, at this call
    assert ("train.py", 18) not in got  # the helper's loop runs only under a condition
    assert ("train.py", 19) not in got  # the method returns early on most steps
    assert ("train.py", 20) in got  # a project class's `update` whose loop runs on every call
    # the message of the call names the helper and points at its loop
    items = [d for d in check(root, "--no-cache", "--select", "GPU411") if d["location"]["row"] == 16]
    assert "soft_update" in items[0]["message"]


EMA = textwrap.dedent("""\
    import torch


    def accumulate(model1, model2, decay=0.999):
        par1 = dict(model1.named_parameters())
        par2 = dict(model2.named_parameters())
        for k in par1.keys():
            par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


    def accumulate_plain(model1, model2, decay=0.999):
        par1 = dict(model1.named_parameters())
        par2 = dict(model2.named_parameters())
        for k in par1:
            par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


    def names(model):
        par = dict(model.named_parameters())
        for k in par.keys():
            print(k)


    g = torch.nn.Linear(4, 4).cuda()
    g_ema = torch.nn.Linear(4, 4).cuda()
    opt = torch.optim.Adam(g.parameters(), fused=True)
    accumulate(g_ema, g, 0)
    for x in loader:
        g(x.cuda(non_blocking=True)).mean().backward()
        opt.step()
        accumulate(g_ema, g, 0.999)
        accumulate_plain(g_ema, g)
        names(g)
""")


def test_ema_over_dicts_of_named_parameters_iterated_by_key(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"train.py": EMA})
    got = _gpu411(root)
    assert ("train.py", 7) in got and ("train.py", 14) in got  # `.keys()` and the dict itself
    assert ("train.py", 31) in got and ("train.py", 32) in got  # the per-step calls
    assert ("train.py", 20) not in got and ("train.py", 33) not in got  # reading the names updates nothing
    assert ("train.py", 27) not in got  # once, before training
