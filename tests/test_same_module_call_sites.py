"""A helper of the linted module that reads a tensor back, called every step from a loop of the same module: the
call site is reported (GPU112, where the cost is paid every step) with the read as its related location, as a call
into another module is; the read itself keeps its own finding where it is written. The labelled sets count both
(open_clip's `accuracy(...)` in its zero-shot loop, YOLOv3's `to_cpu(x[i])`, OLMo's `self.train_step(...)`).

Each case has its quiet twin: the call under `if step % 100 == 0:`, a helper given a host number, a helper whose
read is itself periodic, and a recursive helper's call of itself.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project


def _project(root: Path, text: str) -> Path:
    return write_project(root, {"train.py": text}, pyproject="", dedent=True)


HELPERS = """\
import torch


def accuracy(output, target):
    pred = output.argmax(1)
    return float((pred == target).float().mean())


def to_cpu(t):
    return t.detach().cpu()


def log_every(step, loss):
    if step % 100 == 0:
        print(loss.item())


"""

LOOP = HELPERS + """\
def main(model, loader):
    model = model.cuda()
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        out = model(x)
{body}
"""


def _body(*lines: str) -> str:
    return "\n".join("        " + line for line in lines)


def _gpu112(items) -> dict[int, dict]:
    return {d["location"]["row"]: d for d in items if d["code"] == "GPU112"}


def test_call_of_a_same_module_helper_every_step_is_reported_with_the_read_as_related(tmp_path):
    root = _project(tmp_path, LOOP.format(body=_body("acc = accuracy(out, y)", "kept = to_cpu(out)",
                                                     "print(acc, kept.shape)")))
    items = check(root, "--no-cache", "train.py")
    calls = _gpu112(items)
    assert set(calls) == {23, 24}
    assert calls[23]["message"] == ("`accuracy(...)` syncs every step: `accuracy` calls `float()` on what it is "
                                    "given")
    assert calls[23]["related"] == [{"filename": "train.py", "location": {"row": 6, "column": 1},
                                     "message": "`float()` here"}]
    assert calls[24]["related"][0]["location"]["row"] == 10
    # the read inside the helper keeps its own finding where it is written
    assert ("train.py", 10, "GPU104") in found(items)


def test_concise_output_names_the_read(tmp_path):
    import subprocess
    import sys

    root = _project(tmp_path, LOOP.format(body=_body("kept = to_cpu(out)", "print(kept.shape)")))
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--output-format", "concise",
                          "train.py"], cwd=root, capture_output=True, text=True, timeout=120)
    assert "train.py:23:16: GPU112 `to_cpu(...)` syncs every step: `to_cpu` calls `.cpu()` on what it is given " \
           "(via train.py:10)" in out.stdout


def test_periodic_call_host_argument_and_periodic_read_are_quiet(tmp_path):
    body = _body("if step % 100 == 0:", "    print(accuracy(out, y))", "n = accuracy(out.shape[0], 3)",
                 "log_every(step, out.sum())")
    root = _project(tmp_path, LOOP.format(body=body))
    assert _gpu112(check(root, "--no-cache", "train.py")) == {}


TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, loader, optimizer):
        self.model = model.cuda()
        self.loader = loader
        self.optimizer = optimizer

    def train_step(self, x, y):
        loss = torch.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def eval_step(self, x):
        return self.model(x)

    def fit(self):
        for x, y in self.loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = self.train_step(x, y)
            out = self.eval_step(x)
            print(loss, out.shape)
"""


def test_a_trainer_method_called_through_self_every_step_is_reported(tmp_path):
    root = _project(tmp_path, TRAINER)
    calls = _gpu112(check(root, "--no-cache", "train.py"))
    assert set(calls) == {22}  # `self.eval_step(x)` reads nothing back
    assert "`Trainer.train_step` calls `.item()`" in calls[22]["message"]
    assert calls[22]["related"][0]["location"]["row"] == 14


def test_a_recursive_helper_is_reported_at_its_loop_call_only(tmp_path):
    text = HELPERS + textwrap.dedent("""\
        def walk(t, depth):
            if depth:
                walk(t, depth - 1)
            return t.cpu()


        def main(model, loader):
            model = model.cuda()
            for x in loader:
                out = model(x.cuda(non_blocking=True))
                walk(out, 2)
        """)
    root = _project(tmp_path, text)
    assert set(_gpu112(check(root, "--no-cache", "train.py"))) == {28}
