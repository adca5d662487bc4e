"""A model the training script reaches as `pkg.mod.Sub(...)` after `import pkg.mod` (the package has an
`__init__.py` that does not name `mod`), where `Sub` is a subclass that inherits `forward` from a base class of
the same module: the base's `forward` is per-step model code (issue 11, recall; MoCo v3's
`moco.builder.MoCo_ViT(...)` runs `MoCo.forward`). Its momentum update loop is GPU411's, its label tensor built
on the host and copied is GPU203's. A subclass that overrides `forward` without `super().forward(...)` keeps the
base's quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_model_code import check, found  # the same CLI run and finding keys

MODELS = textwrap.dedent("""\
    import torch
    from torch import nn


    class TwoTower(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.online = nn.Linear(width, width)
            self.target = nn.Linear(width, width)

        @torch.no_grad()
        def _follow(self, rate):
            for o, t in zip(self.online.parameters(), self.target.parameters()):
                t.data = t.data * rate + o.data * (1.0 - rate)

        def forward(self, a, b, rate):
            self._follow(rate)
            logits = self.online(a) @ self.target(b).t()
            n = logits.shape[0]
            labels = (torch.arange(n) + n * 0).cuda()
            return nn.functional.cross_entropy(logits, labels)


    class SmallTowers(TwoTower):
        pass


    class WideTowers(SmallTowers):
        def describe(self):
            return "wide"
""")

OWN_FORWARD = textwrap.dedent("""\


    class Replaced(TwoTower):
        def forward(self, a, b, rate):
            return self.online(a).sum()
""")

TRAIN = textwrap.dedent("""\
    import torch
    import towers.models
    import towers.data


    def main(wide):
        if wide:
            net = towers.models.WideTowers(16)
        else:
            net = towers.models.SmallTowers(16)
        net = torch.nn.parallel.DistributedDataParallel(net.cuda())
        opt = torch.optim.SGD(net.parameters(), lr=0.1, fused=True)
        loader = torch.utils.data.DataLoader(towers.data.pairs(), pin_memory=True, num_workers=4)
        for a, b in loader:
            a, b = a.cuda(non_blocking=True), b.cuda(non_blocking=True)
            loss = net(a, b, 0.99)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
""")


def _project(root: Path, models: str, train: str) -> Path:
    (root / ".git").mkdir()
    (root / "towers").mkdir()
    (root / "towers" / "__init__.py").write_text("")
    (root / "towers" / "data.py").write_text("def pairs():\n    return []\n")
    (root / "towers" / "models.py").write_text(models)
    (root / "train.py").write_text(train)
    return root


def test_base_forward_of_subclasses_built_through_a_package_submodule(tmp_path: Path):
    root = _project(tmp_path, MODELS, TRAIN)
    model_findings = {f for f in found(check(root, "--no-cache", ".")) if f[0] == "towers/models.py"}
    assert ("towers/models.py", 13, "GPU411") in model_findings
    assert ("towers/models.py", 20, "GPU203") in model_findings
    item = next(d for d in check(root, "--no-cache", "--jobs", "1", ".")
                if d["code"] == "GPU411" and d["filename"].endswith("models.py"))
    assert "`TwoTower.forward`, which `net(...)` runs every step" in item["message"]


def test_subclass_with_its_own_forward_keeps_the_base_quiet(tmp_path: Path):
    train = TRAIN.replace("towers.models.WideTowers(16)", "towers.models.Replaced(16)").replace(
        "towers.models.SmallTowers(16)", "towers.models.Replaced(16)")
    root = _project(tmp_path, MODELS + OWN_FORWARD, train)
    assert {f for f in found(check(root, "--no-cache", ".")) if f[0] == "towers/models.py"} == set()
