"""Class hierarchy analysis (issue 11, recall; heldout11's PyTorch-VAE): a trainer stores its model from a
parameter annotated with a project base class (`vae_model: BaseVAE`) and calls `self.model.loss_function(...)`
every step; each project subclass overrides `loss_function`, so every override is a possible callee and its
per-step host-built tensor is GPU203's. A class that does not derive from the declared base, a method the base
does not have, and a base built by construction (not declared) stay quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_model_code import check, found  # the same CLI run and finding keys

BASE = textwrap.dedent("""\
    from abc import abstractmethod
    from torch import nn


    class BaseNet(nn.Module):
        @abstractmethod
        def loss_function(self, out, x):
            pass
""")

NETS = textwrap.dedent("""\
    import torch
    from torch import nn
    from nets.base import BaseNet


    class WideNet(BaseNet):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(8, 8)

        def forward(self, x):
            return self.layer(x)

        def loss_function(self, out, x):
            n = out.shape[0]
            labels = (torch.arange(n) + n * 0).cuda()
            return nn.functional.cross_entropy(out, labels)

        def report(self, out):
            n = out.shape[0]
            return (torch.arange(n) + n * 0).cuda()


    class Unrelated(nn.Module):
        def loss_function(self, out, x):
            n = out.shape[0]
            labels = (torch.arange(n) + n * 0).cuda()
            return nn.functional.cross_entropy(out, labels)
""")

TRAIN = textwrap.dedent("""\
    import torch
    from nets.base import BaseNet
    from nets.wide import WideNet, Unrelated


    class Runner:
        def __init__(self, model: BaseNet):
            self.model = model

        def fit(self, loader, opt):
            for x in loader:
                x = x.cuda(non_blocking=True)
                out = self.model(x)
                loss = self.model.loss_function(out, x)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()


    def main():
        net = WideNet().cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.1, fused=True)
        loader = torch.utils.data.DataLoader(list(range(8)), pin_memory=True, num_workers=4)
        Runner(net).fit(loader, opt)
""")


def _project(root: Path, train: str) -> Path:
    (root / ".git").mkdir()
    (root / "nets").mkdir()
    (root / "nets" / "__init__.py").write_text("")
    (root / "nets" / "base.py").write_text(BASE)
    (root / "nets" / "wide.py").write_text(NETS)
    (root / "train.py").write_text(train)
    return root


def _wide(root: Path) -> set:
    return {f for f in found(check(root, "--no-cache", ".")) if f[0] == "nets/wide.py"}


def test_override_of_a_declared_base_class_method_runs_every_step(tmp_path: Path):
    findings = _wide(_project(tmp_path, TRAIN))
    assert ("nets/wide.py", 16, "GPU203") in findings
    assert ("nets/wide.py", 21, "GPU203") not in findings  # `report` is never called per step
    assert ("nets/wide.py", 27, "GPU203") not in findings  # `Unrelated` does not derive from `BaseNet`


def test_a_method_the_declared_base_lacks_is_not_dispatched(tmp_path: Path):
    train = TRAIN.replace("self.model.loss_function(out, x)", "self.model.report(out).sum()")
    findings = _wide(_project(tmp_path, train))
    assert ("nets/wide.py", 21, "GPU203") not in findings
    assert ("nets/wide.py", 16, "GPU203") not in findings


def test_an_undeclared_parameter_is_not_dispatched(tmp_path: Path):
    train = TRAIN.replace("def __init__(self, model: BaseNet):", "def __init__(self, model):").replace(
        "Runner(net).fit(loader, opt)", "Runner(BaseNet()).fit(loader, opt)")
    assert ("nets/wide.py", 16, "GPU203") not in _wide(_project(tmp_path, train))


LIGHTNING = textwrap.dedent("""\
    import pytorch_lightning as pl
    import torch
    from nets.base import BaseNet


    class Experiment(pl.LightningModule):
        def __init__(self, model: BaseNet, params: dict):
            super().__init__()
            self.model = model
            self.params = params

        def training_step(self, batch, batch_idx):
            out = self.model(batch)
            return self.model.loss_function(out, batch)

        def configure_optimizers(self):
            return torch.optim.Adam(self.model.parameters())
""")


def _lightning(root: Path, experiment: str) -> set:
    _project(root, "")
    (root / "experiment.py").write_text(experiment)
    return _wide(root)


def test_a_framework_step_dispatches_to_the_override(tmp_path: Path):
    findings = _lightning(tmp_path, LIGHTNING)
    assert ("nets/wide.py", 16, "GPU203") in findings
    assert ("nets/wide.py", 27, "GPU203") not in findings  # `Unrelated` does not derive from `BaseNet`
    item = next(d for d in check(tmp_path, "--no-cache", "--jobs", "1", ".")
                if d["code"] == "GPU203" and d["filename"].endswith("wide.py"))
    assert "`self.model.loss_function(...)` runs every step" in item["message"]


def test_a_periodic_framework_call_is_not_per_step(tmp_path: Path):
    periodic = LIGHTNING.replace("        return self.model.loss_function(out, batch)",
                                 "        if batch_idx % 100 == 0:\n"
                                 "            return self.model.loss_function(out, batch)\n"
                                 "        return out.sum()")
    assert periodic != LIGHTNING
    assert ("nets/wide.py", 16, "GPU203") not in _lightning(tmp_path, periodic)


def test_an_attribute_reassigned_outside_init_is_not_dispatched(tmp_path: Path):
    reassigned = LIGHTNING.replace("    def configure_optimizers(self):",
                                   "    def swap(self, other):\n"
                                   "        self.model = other\n\n"
                                   "    def configure_optimizers(self):")
    assert reassigned != LIGHTNING
    assert ("nets/wide.py", 16, "GPU203") not in _lightning(tmp_path, reassigned)


# The two walks of hierarchy.py every reader of a class's bases shares: breadth first (`project_bases`, `any_class`:
# is any class up there an `nn.Module`?) and the chain of first bases (`first_bases`: `super()` chains, annotations
# a base declares, the `torch.optim` class under a project optimizer).

CHAIN = textwrap.dedent("""\
    from torch import nn
    from lib import Mixin


    class Root(nn.Module):
        pass


    class Middle(Mixin, Root):
        pass


    class Leaf(Middle):
        pass


    class Loop(Cycle):
        pass


    class Cycle(Loop):
        pass


    class Plain(Mixin):
        pass
""")


def _classes(tmp_path: Path):
    from gpulint.analysis.project import project_for
    from projects import write_project

    path = (write_project(tmp_path, {"nets.py": CHAIN}) / "nets.py").resolve()
    project = project_for(path)
    return project, project.module(path).classes


def test_the_chain_of_first_bases_passes_over_library_bases_unless_asked_for_the_written_first(tmp_path: Path):
    from gpulint.analysis.hierarchy import first_bases

    project, classes = _classes(tmp_path)
    assert [c.name for c in first_bases(project, classes["Leaf"], 5)] == ["Leaf", "Middle", "Root"]
    assert [c.name for c in first_bases(project, classes["Leaf"], 2)] == ["Leaf", "Middle"]
    # `Middle`'s first written base is the library's `Mixin`: the chain ends there
    assert [c.name for c in first_bases(project, classes["Leaf"], 5, written_first=True)] == ["Leaf", "Middle"]
    assert [c.name for c in first_bases(project, classes["Loop"], 5)] == ["Loop", "Cycle"]  # a cycle ends it


def test_a_class_is_a_module_class_through_any_project_base(tmp_path: Path):
    from gpulint.analysis.hierarchy import any_class

    project, classes = _classes(tmp_path)
    assert project.is_module_class(classes["Leaf"])  # Leaf -> Middle -> (Mixin, Root(nn.Module))
    assert not project.is_module_class(classes["Plain"])
    assert not project.is_module_class(classes["Loop"])  # a cycle of project classes ends the walk
    assert any_class(project, classes["Leaf"], lambda c: c.name == "Root")
    assert not any_class(project, classes["Leaf"], lambda c: c.name == "Root", depth=1)
