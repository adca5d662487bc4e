"""Objects chosen between project classes (issue 11, recall): `converter = CTCLabelConverter(...)` on one
branch of an `if`, `AttnLabelConverter(...)` on the other (or a conditional expression). Each class is a
configuration the project ships, so

- a method of one of them runs every step where a hot loop calls it on the chosen object (per-step model code:
  the in-file rules report inside each class's method, with the call as related location);
- the call site itself is reported (GPU112) only when the method of *every* candidate class pays a cost: a call
  that is free for one configuration is not called a per-step sync.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

UTILS = textwrap.dedent("""\
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    class CTCConverter(object):
        def encode(self, text):
            lengths = [len(s) for s in text]
            return torch.IntTensor(lengths).to(device)

        def score(self, logits):
            return logits.max().item()


    class AttnConverter(object):
        def encode(self, text):
            lengths = [len(s) + 1 for s in text]
            return torch.IntTensor(lengths).to(device)

        def score(self, logits):
            return float(logits.sum())
""")

TRAIN = textwrap.dedent("""\
    import torch
    from utils import CTCConverter, AttnConverter


    def train(opt, model, loader, optimizer):
        if "CTC" in opt.prediction:
            converter = CTCConverter()
        else:
            converter = AttnConverter()
        for images, labels in loader:
            text = converter.encode(labels)
            logits = model(images.cuda(non_blocking=True))
            score = converter.score(logits)
            loss = torch.nn.functional.cross_entropy(logits, text)
            loss.backward()
            optimizer.step()
""")

CTC_ENCODE = ("utils.py", 8, "GPU203")
ATTN_ENCODE = ("utils.py", 17, "GPU203")
SCORE_CALL = ("train.py", 13, "GPU112")


def _project(root: Path, utils: str = UTILS, train: str = TRAIN) -> Path:
    return write_project(root, {"utils.py": utils, "train.py": train})


def test_the_method_of_each_candidate_class_runs_every_step(tmp_path: Path):
    results = found(check(_project(tmp_path), "--no-cache", "."))
    assert {CTC_ENCODE, ATTN_ENCODE} <= results


def test_a_conditional_expression_chooses_the_same_way(tmp_path: Path):
    train = TRAIN.replace('    if "CTC" in opt.prediction:\n        converter = CTCConverter()\n    else:\n'
                          '        converter = AttnConverter()\n',
                          '    converter = CTCConverter() if "CTC" in opt.prediction else AttnConverter()\n')
    assert train != TRAIN
    results = found(check(_project(tmp_path, train=train), "--no-cache", "."))
    assert {CTC_ENCODE, ATTN_ENCODE} <= results


def test_the_call_is_reported_when_every_candidate_syncs(tmp_path: Path):
    items = {(d["filename"], d["location"]["row"], d["code"]): d for d in check(_project(tmp_path), "--no-cache", ".")}
    assert SCORE_CALL in items
    assert "CTCConverter.score" in items[SCORE_CALL]["message"]


def test_the_call_is_not_reported_when_one_candidate_is_free(tmp_path: Path):
    utils = UTILS.replace("        return float(logits.sum())", "        return logits.sum()")
    assert utils != UTILS
    assert SCORE_CALL not in found(check(_project(tmp_path, utils=utils), "--no-cache", "."))


def test_an_unknown_candidate_keeps_everything_quiet(tmp_path: Path):
    """A third branch builds something the project does not define: the object is unknown."""
    train = TRAIN.replace("    else:\n        converter = AttnConverter()\n",
                          "    elif opt.other:\n        converter = AttnConverter()\n"
                          "    else:\n        converter = opt.make_converter()\n")
    assert train != TRAIN
    results = found(check(_project(tmp_path, train=train), "--no-cache", "."))
    assert not {CTC_ENCODE, ATTN_ENCODE, SCORE_CALL} & results


MEMORY = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class MemoryMoCo(nn.Module):
        def __init__(self, K):
            super().__init__()
            self.register_buffer("params", torch.tensor([K, -1.0]))

        def forward(self, q, k):
            Z = self.params[1].item()
            return q @ k.t() / (Z if Z > 0 else 1.0)


    class MemoryInsDis(nn.Module):
        def __init__(self, K):
            super().__init__()
            self.register_buffer("params", torch.tensor([K, -1.0]))

        def forward(self, q, k):
            K = int(self.params[0].item())
            return q @ k.t() / K
""")

CONTRAST = textwrap.dedent("""\
    import torch

    from memory import MemoryInsDis, MemoryMoCo


    def train(loader, model, contrast, optimizer):
        for x, index in loader:
            feat = model(x.cuda(non_blocking=True))
            out = contrast(feat, feat)
            loss = out.mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def main(args, loader, model, optimizer):
        if args.moco:
            contrast = MemoryMoCo(4096).cuda()
        else:
            contrast = MemoryInsDis(4096).cuda()
        for epoch in range(100):
            train(loader, model, contrast, optimizer)
""")


def test_calling_an_object_chosen_between_module_classes_runs_each_forward(tmp_path: Path):
    # CMC's `contrast(feat, index)`: MemoryMoCo or MemoryInsDis by option, both reading a buffer with `.item()`
    root = write_project(tmp_path / "paying", {"memory.py": MEMORY, "train.py": CONTRAST})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU112", "train.py")
    assert found(items) == {("train.py", 9, "GPU112")}, items
    free = MEMORY.replace("        K = int(self.params[0].item())\n", "        K = 4096\n")
    root = write_project(tmp_path / "free", {"memory.py": free, "train.py": CONTRAST})
    assert check(root, "--no-cache", "--exit-zero", "--select", "GPU112", "train.py") == []
