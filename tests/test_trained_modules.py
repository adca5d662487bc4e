"""A network's `forward` is per-batch code even when no loop is seen to reach it (analysis/trained_modules.py).

The model is built from a registry by a config (`build_model(cfg)`, `@MODELS.register`), so no loop gpulint can
follow calls it. In a project that moves models or tensors to CUDA, the `forward` of an instantiated project
`nn.Module` runs on every batch; what it reaches (its submodules' forwards) follows. Quiet: CPU-only projects,
classes nobody names (dead code), classes only an export script names, test modules, and classes a training loop's
file names (the existing route decided them: tests/test_model_code.py's periodic `Probe`).
"""

from __future__ import annotations

from projects import check, found, write_project

REGISTRY = """\
MODELS = {}


def register(cls):
    MODELS[cls.__name__] = cls
    return cls


def build_model(cfg):
    return MODELS[cfg["name"]](**cfg["args"])
"""

KGE = """\
import torch
from torch import nn
from registry import register


class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.margin = nn.Parameter(torch.tensor([6.0]), requires_grad=False)

    def forward(self, x):
        return self.margin.item() - x.norm(dim=-1)


@register
class KGE(nn.Module):
    def __init__(self, n, dim):
        super().__init__()
        self.emb = nn.Embedding(n, dim)
        self.gamma = nn.Parameter(torch.tensor([12.0]), requires_grad=False)
        self.scorer = Scorer(dim)

    def forward(self, x):
        score = self.gamma.item() - self.emb(x).norm(dim=-1)
        return score + self.scorer(self.emb(x))


class Dead(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return x * self.w.item()
"""

RUN = """\
import torch
import yaml
import models
from registry import build_model
from engine import fit


def main(path):
    cfg = yaml.safe_load(open(path))
    model = build_model(cfg["model"]).cuda()
    fit(model, cfg)
"""

ENGINE = """\
def fit(model, cfg):
    return model
"""

GAMMA = ("models.py", 24, "GPU101")  # self.gamma.item() in KGE.forward
SCORER = ("models.py", 12, "GPU101")  # a submodule's forward that KGE.forward calls
DEAD = ("models.py", 34, "GPU101")


def _project(tmp_path, run=RUN, extra=None):
    modules = {"registry.py": REGISTRY, "models.py": KGE, "run.py": run, "engine.py": ENGINE}
    modules.update(extra or {})
    return check(write_project(tmp_path, modules), "--no-cache", "--exit-zero")


def test_forward_of_a_registered_model_of_a_gpu_project_runs_every_batch(tmp_path):
    items = _project(tmp_path)
    got = found(items)
    assert GAMMA in got and SCORER in got
    assert DEAD not in got  # a class nobody names or registers is dead code
    gamma = next(d for d in items if (d["filename"], d["location"]["row"]) == GAMMA[:2])
    assert "(in `KGE.forward`, which runs on every forward pass)" in gamma["message"]
    assert not gamma.get("related")  # no invented call site


def test_a_cpu_only_project_stays_silent(tmp_path):
    got = found(_project(tmp_path, run=RUN.replace(".cuda()", "")))
    assert GAMMA not in got and SCORER not in got


def test_a_class_only_an_export_script_names_is_not_per_batch(tmp_path):
    models = KGE.replace("@register\n", "")
    export = """\
import torch
from models import KGE

model = KGE(10, 4).cuda().eval()
torch.onnx.export(model, torch.zeros(2, dtype=torch.long).cuda(), "kge.onnx")
"""
    got = found(check(write_project(tmp_path, {"registry.py": REGISTRY, "models.py": models, "run.py": RUN,
                                               "engine.py": ENGINE, "export.py": export}), "--no-cache",
                      "--exit-zero"))
    assert GAMMA not in got


def test_model_classes_of_test_modules_are_not_per_batch(tmp_path):
    got = found(_project(tmp_path, extra={"tests/test_models.py": KGE}))
    assert ("tests/test_models.py", GAMMA[1], "GPU101") not in got


DISPATCH = """\
import torch
from torch import nn


class Scores(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name
        self.gamma = nn.Parameter(torch.tensor([12.0]), requires_grad=False)

    def forward(self, h, t):
        table = {"transe": self.transe, "dot": self.dot}
        return table[self.name](h, t)

    def transe(self, h, t):
        return self.gamma.item() - (h - t).norm(dim=-1)

    def dot(self, h, t):
        return (h * t).sum(-1)

    def describe(self):
        return self.gamma.item()
"""

DISPATCH_TRAIN = """\
import torch
from scores import Scores


def main(loader):
    model = Scores("transe").cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for h, t in loader:
        loss = model(h.cuda(), t.cuda()).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_method_forward_picks_from_a_dispatch_table_runs_with_it(tmp_path):
    got = found(check(write_project(tmp_path, {"scores.py": DISPATCH, "train.py": DISPATCH_TRAIN}), "--no-cache",
                      "--exit-zero"))
    assert ("scores.py", 16, "GPU101") in got  # `self.transe`, a value of the table `forward` calls through
    assert ("scores.py", 22, "GPU101") not in got  # `describe` is in no table and no call of forward


def test_a_loss_module_built_in_an_assumed_forward_is_not_reported(tmp_path):
    """GPU408 (a module built every step) is advice whose worth depends on how often a call runs: only where a
    loop is seen to call the network, not in a forward assumed per batch; the sync beside it still is."""
    models = KGE.replace("        score = self.gamma.item() - self.emb(x).norm(dim=-1)\n",
                         "        score = self.gamma.item() - self.emb(x).norm(dim=-1)\n"
                         "        score = nn.SmoothL1Loss()(score, score.detach())\n")
    got = found(_project(tmp_path, extra={"models.py": models}))
    assert GAMMA in got
    assert ("models.py", GAMMA[1] + 1, "GPU408") not in got
    loop = DISPATCH_TRAIN.replace("        loss = model(h.cuda(), t.cuda()).mean()\n",
                                  "        loss = nn.SmoothL1Loss()(model(h.cuda(), t.cuda()), t.cuda())\n"
                                  ).replace("from scores import Scores\n", "from torch import nn\nfrom scores import Scores\n")
    got = found(check(write_project(tmp_path / "seen", {"scores.py": DISPATCH, "train.py": loop}), "--no-cache",
                      "--exit-zero"))
    assert ("train.py", 10, "GPU408") in got  # built in a loop that is seen: reported as before


COPY_ARGS = """\
def copy_args(obj, ignore=()):
    def wrapper(cls):
        return cls
    return wrapper
"""


def test_a_class_named_only_by_a_decorator_argument_is_still_assumed(tmp_path):
    # `@copy_args(KGE)` on a subclass copies KGE's signature once, at definition: no instance is in sight of the
    # routes that follow one, so the fallback still assumes KGE's forward runs per batch (branch recall69); the
    # module has a loop of its own, so its names count as a hot file's
    models = KGE + (
        "\n\nfrom helpers import copy_args\n\n\n"
        "@register\n@copy_args(KGE, ignore=(\"n\",))\nclass PairKGE(KGE):\n"
        "    def score(self, x):\n        return x\n\n\n"
        "def evaluate(model, loader):\n    for x in loader:\n        model(x.cuda())\n")
    got = found(_project(tmp_path, extra={"models.py": models, "helpers.py": COPY_ARGS}))
    assert GAMMA in got
