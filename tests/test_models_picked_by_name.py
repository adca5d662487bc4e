"""Syncs inside models, losses and postprocessors a loop reaches through `model(...)` / `criterion(...)` where the
model or loss is picked by name or handed down as a parameter (branch recall66; heldout19's doctr, mace,
pytorch-metric-learning, YOLOP and self-critical misses).

- A model zoo: `def _crnn(...): model = CRNN(...); return model`, the reference script picks the factory by
  name (`recognition.__dict__[args.arch](...)`): the constructor call in the factory does not put the instance
  in sight of any route, so the network's `forward` is assumed per batch (analysis/trained_modules.py).
- A loss built by `get_loss_fn(args)` and handed on (`train(model, loss_fn=loss_fn)`) to another module's step
  function: the same.
- A postprocessor object a per-step `forward` calls through an attribute it built in `__init__`
  (`self.postprocessor(logits)`) runs its `__call__` as often (analysis/forward.py `_submodule_site`).
- A loss hook (`compute_loss`) a base's per-step `forward` dispatches to, calling a helper module imported as
  `from ..utils import loss_utils as lmu`: the helper's `torch.where(cond)` is per-step code (helper_sites).
- A base `forward` dispatching `getattr(self, "_" + mode)(...)` runs the subclass's `_sample` (overrides.py).
- Helper summaries: one-argument `torch.where` reads a count; a read in the `else` of `if size is not None:`
  runs only at calls that leave `size` None.
- GPU111: `torch.repeat_interleave(w, ptr[1:] - ptr[:-1])`: a slice is a sequence, so `repeats` is a tensor.
"""

from __future__ import annotations

from projects import check, found, write_project


def _lint(tmp_path, modules):
    return check(write_project(tmp_path, modules), "--no-cache", "--exit-zero")


ZOO_MODEL = """\
import torch
from torch import nn


class CTCDecoder:
    def __init__(self, vocab):
        self.vocab = vocab

    def __call__(self, logits):
        best = logits.argmax(-1).cpu().numpy()
        return ["".join(self.vocab[i] for i in row) for row in best]


class CRNN(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.linear = nn.Linear(8, len(vocab))
        self.postprocessor = CTCDecoder(vocab)

    def forward(self, x, lengths=None, return_preds=False):
        logits = self.linear(x)
        out = {"logits": logits}
        if lengths is not None:
            out["longest"] = int(lengths.max().item())
        if return_preds:
            out["preds"] = self.postprocessor(logits)
        return out


def _crnn(arch, vocab):
    model = CRNN(vocab)
    return model


def crnn_small(vocab="abc"):
    return _crnn("crnn_small", vocab)
"""

ZOO_INIT = "from .crnn import *\n"

ZOO_TRAIN = """\
import argparse
import torch
from zoo import recognition


def fit_one_epoch(model, loader, optimizer):
    for x, lengths in loader:
        x = x.cuda(non_blocking=True)
        loss = model(x, lengths)["logits"].mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(args, loader):
    model = recognition.__dict__[args.arch]().cuda()
    optimizer = torch.optim.Adam(model.parameters())
    fit_one_epoch(model, loader, optimizer)
"""

ZOO = {"zoo/__init__.py": "", "zoo/recognition/__init__.py": ZOO_INIT, "zoo/recognition/crnn.py": ZOO_MODEL,
       "train.py": ZOO_TRAIN}
ITEM = ("zoo/recognition/crnn.py", 24, "GPU101")  # int(lengths.max().item()) in CRNN.forward
DECODE = ("zoo/recognition/crnn.py", 10, "GPU104")  # .cpu() in CTCDecoder.__call__


def test_a_model_built_by_a_factory_picked_by_name_runs_every_batch(tmp_path):
    items = _lint(tmp_path, ZOO)
    got = found(items)
    assert ITEM in got
    item = next(d for d in items if (d["filename"], d["location"]["row"]) == ITEM[:2] and d["code"] == "GPU101")
    assert "(in `CRNN.forward`, which runs on every forward pass)" in item["message"]


def test_a_postprocessor_a_per_step_forward_calls_runs_its_call_every_batch(tmp_path):
    items = _lint(tmp_path, ZOO)
    assert DECODE in found(items)
    decode = next(d for d in items if (d["filename"], d["location"]["row"]) == DECODE[:2] and d["code"] == "GPU104")
    assert "CTCDecoder.__call__" in decode["message"]


def test_a_factory_called_by_its_name_in_a_periodic_branch_stays_decided(tmp_path):
    """The factory is called by a name that resolves to it, in a file whose loop the routes follow: they decide
    (the model runs only every 100 steps), and the fallback keeps out."""
    train = """\
import torch
from zoo.recognition.crnn import crnn_small


def main(loader):
    probe = crnn_small().cuda()
    for step, (x, lengths) in enumerate(loader):
        x = x.cuda(non_blocking=True)
        if step % 100 == 0:
            probe(x, lengths)
"""
    got = found(_lint(tmp_path, {**ZOO, "train.py": train}))
    assert ITEM not in got and DECODE not in got


LOSSES = """\
import torch
from torch import nn


def forces_error(ref, pred):
    weight = torch.repeat_interleave(ref.weight, ref.ptr[1:] - ref.ptr[:-1]).unsqueeze(-1)
    return (weight * (ref.forces - pred["forces"]) ** 2).mean()


class ForcesLoss(nn.Module):
    def forward(self, ref, pred):
        return forces_error(ref, pred)
"""

SCRIPTS = """\
import losses


def get_loss_fn(args):
    if args.loss == "forces":
        loss_fn = losses.ForcesLoss()
    else:
        loss_fn = None
    return loss_fn
"""

RUN = """\
import argparse
import torch
from scripts import get_loss_fn
from engine import train


def main(args, model, loader):
    loss_fn = get_loss_fn(args)
    model = model.to("cuda")
    train(model, loader, loss_fn=loss_fn)
"""

ENGINE = """\
def take_step(model, batch, loss_fn, optimizer):
    loss = loss_fn(batch, model(batch))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def train(model, loader, loss_fn, optimizer=None):
    for batch in loader:
        take_step(model, batch, loss_fn, optimizer)
"""

REPEATS = ("losses.py", 6, "GPU111")


def test_a_loss_built_by_a_factory_and_handed_on_runs_every_step(tmp_path):
    items = _lint(tmp_path, {"losses.py": LOSSES, "scripts.py": SCRIPTS, "run.py": RUN, "engine.py": ENGINE})
    got = found(items)
    assert REPEATS in got
    message = next(d["message"] for d in items if (d["filename"], d["location"]["row"], d["code"]) == REPEATS)
    assert "`repeat_interleave without output_size` has a data-dependent output shape" in message


def test_a_loss_built_and_used_in_sight_stays_decided(tmp_path):
    """Built and kept in a file that hands it to nothing: the existing routes decide (here: never called)."""
    run = """\
import torch
from losses import ForcesLoss


def main(model, ref):
    loss_fn = ForcesLoss()
    model = model.to("cuda")
    print(loss_fn(ref, model(ref)))
"""
    got = found(_lint(tmp_path, {"losses.py": LOSSES, "run.py": run}))
    assert REPEATS not in got


SCATTER = """\
import torch


def scatter_sum(src, index, dim_size=None):
    size = list(src.size())
    if dim_size is not None:
        size[0] = dim_size
    elif index.numel() == 0:
        size[0] = 0
    else:
        size[0] = int(index.max()) + 1
    out = torch.zeros(size, dtype=src.dtype, device=src.device)
    return out.index_add_(0, index, src)
"""

def test_a_read_only_when_a_parameter_is_left_none_is_not_paid_by_a_call_passing_it(tmp_path):
    """`scatter_sum(..., dim_size=n)` skips the `else` of `if dim_size is not None:`; a call leaving it out (or
    handing down a parameter that may be None) pays `int(index.max())`."""
    from gpulint.analysis.project import _UNKNOWN, project_for

    root = write_project(tmp_path, {"scatter.py": SCATTER, "use.py": "from scatter import scatter_sum\n"})
    project = project_for(root / "use.py")
    summary = project.lookup(root / "use.py", "scatter_sum")
    sink = summary.sink_params["index"]
    assert sink.when == ("dim_size", (None,), True)
    assert not sink.runs_with(_UNKNOWN, True)  # `dim_size=x.shape[0]`
    assert sink.runs_with(None, True) and sink.runs_with(_UNKNOWN, False)  # `dim_size=None`, or left out


LMU = """\
import torch


def matches_of(labels):
    return labels.unsqueeze(0) == labels.unsqueeze(1)


def all_pairs(labels):
    matches = matches_of(labels)
    a, p = torch.where(matches)
    return a, p


def convert_to_pairs(indices, labels):
    if indices is None:
        return all_pairs(labels)
    return indices


def per_label_counts(labels, n):
    counts = []
    for label in range(n):
        counts.append((labels == label).sum())
    return torch.stack(counts)
"""

BASE_LOSS = """\
import torch
from torch import nn


class BaseLoss(nn.Module):
    def compute_loss(self, emb, labels, indices):
        raise NotImplementedError

    def forward(self, emb, labels, indices=None):
        return self.compute_loss(emb, labels, indices)
"""

PAIR_LOSS = """\
import torch
from .base import BaseLoss
from ..utils import lmu


class PairLoss(BaseLoss):
    def compute_loss(self, emb, labels, indices):
        a, p = lmu.convert_to_pairs(indices, labels)
        return (emb[a] - emb[p]).pow(2).mean()
"""

LOSS_TRAIN = """\
import torch
from lib.losses import pair


def main(name, loader):
    model = torch.nn.Linear(4, 4).cuda()
    loss_fn = getattr(pair, name)()
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss_fn(model(x), y).backward()
"""


def test_a_helper_a_dispatched_loss_hook_calls_through_a_package_module_alias_is_per_step(tmp_path):
    """`PairLoss.compute_loss` runs every step (the base's assumed `forward` calls `self.compute_loss`); the
    helper it calls as `lmu.convert_to_pairs` (`from ..utils import lmu`) is per-step code there."""
    from gpulint.analysis.helper_sites import imported_helper_site
    from gpulint.analysis.project import project_for

    root = write_project(tmp_path, {"lib/__init__.py": "", "lib/utils/__init__.py": "", "lib/utils/lmu.py": LMU,
                                    "lib/losses/__init__.py": "", "lib/losses/base.py": BASE_LOSS,
                                    "lib/losses/pair.py": PAIR_LOSS, "train.py": LOSS_TRAIN})
    helper = root / "lib/utils/lmu.py"
    site = imported_helper_site(project_for(helper), helper, "convert_to_pairs")
    assert site is not None and site.code == "lmu.convert_to_pairs(...)" and site.owner == "PairLoss"
    assert site.line == 8


def test_torch_where_of_one_argument_in_a_helper_syncs_at_the_call(tmp_path):
    loss = """\
import torch
from torch import nn
import lmu


class PairLoss(nn.Module):
    def forward(self, emb, labels):
        a, p = lmu.convert_to_pairs(None, labels)
        return (emb[a] - emb[p]).pow(2).mean()
"""
    train = """\
import torch
from loss import PairLoss

model = torch.nn.Linear(4, 4).cuda()
crit = PairLoss()
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    crit(model(x), y).backward()
"""
    items = _lint(tmp_path, {"lmu.py": LMU, "loss.py": loss, "train.py": train})
    call = [d for d in items if (d["filename"], d["location"]["row"], d["code"]) == ("train.py", 8, "GPU112")]
    assert call and "calls `torch.where(cond)` on what it is given" in call[0]["message"]


CAPTION_BASE = """\
from torch import nn


class CaptionModel(nn.Module):
    def __init__(self):
        super(CaptionModel, self).__init__()

    def forward(self, *args, **kwargs):
        mode = kwargs.pop("mode", "forward")
        return getattr(self, "_" + mode)(*args, **kwargs)
"""

CAPTION_MODEL = """\
import torch
from caption_model import CaptionModel


class AttModel(CaptionModel):
    def __init__(self):
        super(AttModel, self).__init__()
        self.logit = torch.nn.Linear(4, 4)

    def _forward(self, x):
        return self.logit(x)

    def _sample(self, x):
        seq = []
        for t in range(16):
            it = self.logit(x).argmax(-1)
            seq.append(it.tolist())
        return seq

    def describe(self):
        return self.logit.weight.sum().item()


def setup(opt):
    return AttModel()
"""

CAPTION_TRAIN = """\
import torch
import models


def main(opt, loader, model):
    model = model.cuda()
    for x in loader:
        x = x.cuda(non_blocking=True)
        model(x).sum().backward()
"""


def test_a_forward_dispatching_getattr_self_prefix_mode_runs_the_subclass_methods(tmp_path):
    """`CaptionModel.forward` (assumed per batch: its subclasses are built by a factory picked by name) runs
    `getattr(self, "_" + mode)(...)`: the subclass's `_sample` runs every step; `describe` (no such prefix)
    does not."""
    from gpulint.analysis.overrides import override_site
    from gpulint.analysis.project import project_for

    root = write_project(tmp_path, {"caption_model.py": CAPTION_BASE, "models.py": CAPTION_MODEL,
                                    "train.py": CAPTION_TRAIN})
    project = project_for(root / "models.py")
    site = override_site(project, root / "models.py", "AttModel", "_sample")
    assert site is not None and site.code == "getattr(self, '_' + ...)(...)" and site.line == 10
    assert override_site(project, root / "models.py", "AttModel", "describe") is None
