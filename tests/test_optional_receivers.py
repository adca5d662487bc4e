"""A per-step method call on an object that is `None` on another branch (`ema_helper = EMAHelper(...)` when EMA
is on, `ema_helper = None` otherwise; `self.ema = None` in `__init__`, set to an instance later): the call would
raise where the name holds `None`, so when it runs, the object is the instance. The method's own per-parameter
loop is then per-step code in its module (GPU411 where the loop is written, not only at the call). A name that
is only ever `None`, or that may hold an object of another class, still proves nothing; a call every 100 steps
stays periodic.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

EMA = textwrap.dedent("""\
    class ShadowEMA:
        def __init__(self, decay=0.999):
            self.decay = decay
            self.shadow = {}

        def register(self, net):
            for key, weight in net.named_parameters():
                self.shadow[key] = weight.data.clone()

        def update(self, net):
            for key, weight in net.named_parameters():
                if weight.requires_grad:
                    self.shadow[key].data = (1. - self.decay) * weight.data + self.decay * self.shadow[key].data
""")

TRAIN = textwrap.dedent("""\
    import torch
    from ema import ShadowEMA


    def main(loader, use_ema):
        device = torch.device("cuda")
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
        if use_ema:
            helper = ShadowEMA(0.999)
            helper.register(model)
        else:
            helper = None
        for step, x in enumerate(loader):
            loss = model(x.to(device)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if use_ema:
                helper.update(model)
""")

TRAINER = textwrap.dedent("""\
    import torch
    from ema import ShadowEMA


    class Trainer:
        def __init__(self, use_ema):
            self.model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()
            self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3, fused=True)
            self.ema = None
            if use_ema:
                self.ema = ShadowEMA(0.999)

        def fit(self, loader):
            for x in loader:
                loss = self.model(x.cuda()).sum()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                if self.ema is not None:
                    self.ema.update(self.model)
""")


def _hits(tmp_path, train: str) -> set:
    root = write_project(tmp_path, {"ema.py": EMA, "train.py": train})
    return {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU411"}


def test_loop_of_a_helper_bound_to_none_on_the_other_branch(tmp_path):
    hits = _hits(tmp_path, TRAIN)
    assert ("ema.py", 11) in hits  # the loop where it is written, run by `helper.update(model)` every step
    assert ("ema.py", 7) not in hits  # `register`: once, before training


def test_loop_of_a_helper_attribute_set_to_none_in_init(tmp_path):
    assert ("ema.py", 11) in _hits(tmp_path, TRAINER)


def test_name_only_ever_none_or_another_class_proves_nothing(tmp_path):
    only_none = TRAIN.replace("helper = ShadowEMA(0.999)", "helper = None")
    assert ("ema.py", 11) not in _hits(tmp_path / "a", only_none)
    other = TRAIN.replace("helper = None", "helper = copy.deepcopy(model)")
    other = other.replace("import torch\n", "import copy\nimport torch\n")
    assert other.count("copy") == 3
    assert ("ema.py", 11) not in _hits(tmp_path / "b", other)


def test_periodic_call_stays_periodic(tmp_path):
    periodic = TRAIN.replace("if use_ema:\n            helper.update", "if step % 100 == 0:\n            helper.update")
    assert periodic != TRAIN
    assert ("ema.py", 11) not in _hits(tmp_path, periodic)
