"""A function's parameter that holds one of several project classes (issue 11, sixth set): the scripts build a
label codec by option (`codec = GreedyCodec(...)` or `BeamCodec(...)`) and pass it to an evaluation function,
directly or through another function's parameter; the evaluation loop's `codec.decode(preds)` costs what every
candidate's `decode` costs. Reported (GPU112) when each candidate reads the device tensor on the host; quiet when
one candidate does not, or when a call site passes something unknown.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

CODECS = """\
class GreedyCodec:
    def __init__(self, alphabet):
        self.chars = list(alphabet)

    def decode(self, indices):
        out = []
        for k in range(len(indices)):
            row = indices[k, :]
            out.append([i for i in range(len(row)) if row[i] != 0])
        return out


class BeamCodec:
    def __init__(self, alphabet):
        self.chars = list(alphabet)

    def decode(self, indices):
        out = []
        for k in range(len(indices)):
            row = indices[k, :]
            out.append("".join([self.chars[i] for i in row]))
        return out


class QuietCodec:
    def __init__(self, alphabet):
        self.chars = list(alphabet)

    def decode(self, indices):
        return len(indices)
"""

EVALUATE = """\
import torch


def evaluate(model, loader, codec):
    texts = []
    with torch.no_grad():
        for x in loader:
            scores = model(x.cuda(non_blocking=True))
            _, best = scores.max(2)
            texts.append(codec.decode(best))
    return texts


def run_all(model, loaders, codec):
    for loader in loaders:
        evaluate(model, loader, codec)
"""

MAIN = """\
import torch
from torch.utils.data import DataLoader
from codecs_ import {second}, GreedyCodec
from evaluate import evaluate, run_all


def main(opt):
    model = torch.nn.Linear(16, 8).cuda()
    if opt.greedy:
        codec = GreedyCodec(opt.alphabet)
    else:
        codec = {second}(opt.alphabet)
    loader = DataLoader(opt.data, batch_size=8, pin_memory=True)
    evaluate(model, loader, codec)
    run_all(model, [loader], codec)
"""


def _keys(tmp_path: Path, second: str) -> set:
    root = write_project(tmp_path, {"codecs_.py": CODECS, "evaluate.py": EVALUATE,
                                    "main.py": MAIN.format(second=second)})
    return found(check(root, "--no-cache", "--select", "GPU112", "."))


def test_a_parameter_holding_one_of_several_paying_classes_is_reported(tmp_path: Path):
    assert ("evaluate.py", 10, "GPU112") in _keys(tmp_path, "BeamCodec")


def test_one_candidate_that_does_not_pay_keeps_the_call_quiet(tmp_path: Path):
    assert ("evaluate.py", 10, "GPU112") not in _keys(tmp_path, "QuietCodec")
