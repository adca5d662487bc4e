"""Loops that run inside something rarer than a step (branch precision26).

- A loop nested in a periodic block of its function (`if g_it == 0 or (g_it + 1) % 500 == 0:` then
  `for si, (bg, ed) in enumerate(self.scales):` computing a per-scale loss with a loss module) runs only when the
  block runs: its `.item()`s are periodic, not per step (`LoopAnalysis._under_periodic_guard`).
- `x == 0 or (x + 1) % N == 0` is periodic: the first iteration, then every N (`_fixed_value_of_tested`).
- `for part in parts: preds = torch.cat([model(X[part][idx]) for idx in make_batches(...)]).cpu()`: the
  comprehension is the pass over the batches; the loop around it runs once per split, and the `.cpu()` of the
  concatenated predictions is once per split (`_built_iterable` in `_body_trains`).
- `while bs: try: <evaluate with bs> except RuntimeError: bs //= 2 else: break`: an out-of-memory retry runs its
  body once per success (`_retry_until_success`).
- A project helper returning arithmetic of host numbers (`return correct / len(y)` of `correct = x.sum().item()`)
  returns a host value: `if val_acc >= best_val_acc:` is no device branch (GPU106), and the helper's call site is
  the sync (GPU112) (`_host_number` in analysis/project.py).
"""

from __future__ import annotations

from tests.projects import lint_files


def _row(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


TRAINER = '''\
import torch


class Trainer:
    def __init__(self, model, opt, scales):
        self.model = model
        self.opt = opt
        self.scales = scales
        self.val_loss = torch.nn.CrossEntropyLoss()

    def train_step(self, g_it, x, y):
        out = self.model(x)
        loss = self.val_loss(out, y)
        loss.backward()
        self.opt.step()
        if (g_it + 1) % 500 == 0:
            kw = {}
            for si, (bg, ed) in enumerate(self.scales):
                pred = out[:, bg:ed]
                kw[si] = self.val_loss(pred, y).item()
        if g_it == 0 or (g_it + 1) % 100 == 0:
            usage = out.float().mean().item()
        every = out.sum().item()
        return loss


def main(loader, model, opt):
    tr = Trainer(model.cuda(), opt, [(0, 1), (1, 5)])
    for g_it, (x, y) in enumerate(loader):
        tr.train_step(g_it, x.cuda(non_blocking=True), y.cuda(non_blocking=True))
'''


def test_a_loop_nested_in_a_periodic_block_is_periodic(tmp_path):
    found = lint_files(tmp_path, {"trainer.py": TRAINER}, "GPU101")
    rows = {row for name, row, code in found}
    assert _row(TRAINER, "kw[si] = self.val_loss(pred, y).item()") not in rows
    assert _row(TRAINER, "usage = out.float().mean().item()") not in rows
    # the same read outside the blocks is still every step
    assert _row(TRAINER, "every = out.sum().item()") in rows


SPLITS = '''\
import torch


def make_batches(n, size, device):
    return torch.randperm(n, device=device).split(size)


def evaluate(model, X, parts, device):
    predictions = {}
    for part in parts:
        predictions[part] = torch.cat([model(X[part][idx]) for idx in make_batches(len(X[part]), 256, device)]).cpu()
    return predictions


def evaluate_with_retry(model, X, device):
    batch_size = 1024
    while batch_size:
        try:
            out = model(X[:batch_size]).cpu()
        except RuntimeError:
            batch_size //= 2
        else:
            break
    return out


def main(loader, model, opt, X, device):
    model = model.cuda()
    for epoch in range(10):
        for x, y in loader:
            loss = model(x.cuda(non_blocking=True)).sum()
            loss.backward()
            opt.step()
        evaluate(model, X, ["val", "test"], device)
        evaluate_with_retry(model, X["val"], device)
'''


def test_a_loop_over_splits_around_a_comprehension_pass_is_no_step_loop(tmp_path):
    found = lint_files(tmp_path, {"train.py": SPLITS}, "GPU104")
    rows = {row for name, row, code in found}
    assert _row(SPLITS, "predictions[part] = torch.cat(") not in rows


def test_an_out_of_memory_retry_loop_runs_once_per_success(tmp_path):
    found = lint_files(tmp_path, {"train.py": SPLITS}, "GPU104")
    rows = {row for name, row, code in found}
    assert _row(SPLITS, "out = model(X[:batch_size]).cpu()") not in rows


STEP_RETRY = '''\
import torch


def main(loader, model, opt):
    model = model.cuda()
    for x, y in loader:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        opt.step()
        print(loss.cpu())
        while True:
            try:
                out = model(x.cuda(non_blocking=True)).cpu()
            except RuntimeError:
                continue
            else:
                break
'''


def test_a_retry_inside_the_step_loop_still_runs_every_step(tmp_path):
    # the retry loop is no step loop of its own, but the batch loop around it is
    found = lint_files(tmp_path, {"train.py": STEP_RETRY}, "GPU104")
    rows = {row for name, row, code in found}
    assert _row(STEP_RETRY, "print(loss.cpu())") in rows
    assert _row(STEP_RETRY, "out = model(x.cuda(non_blocking=True)).cpu()") in rows


UTILS = '''\
def accuracy(y_pred, y_true):
    y_true = y_true.squeeze().long()
    preds = y_pred.max(1)[1].type_as(y_true)
    correct = preds.eq(y_true).double()
    correct = correct.sum().item()
    return correct / len(y_true)


def device_accuracy(y_pred, y_true):
    correct = y_pred.argmax(1).eq(y_true).double()
    return correct.sum() / len(y_true)
'''

PROBE = '''\
import torch
from utils import accuracy, device_accuracy


def probe(model, x, labels, val_mask, optimizer, max_epoch, device):
    model = model.to(device)
    x = x.to(device)
    labels = labels.to(device)
    criterion = torch.nn.CrossEntropyLoss()
    best_val_acc = 0
    best_dev_acc = 0
    for epoch in range(max_epoch):
        model.train()
        out = model(x)
        loss = criterion(out, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            pred = model(x)
            val_acc = accuracy(pred, labels)
            dev_acc = device_accuracy(pred, labels)
        if val_acc >= best_val_acc:
            best_val_acc = val_acc
        if dev_acc >= best_dev_acc:
            best_dev_acc = dev_acc
'''


def test_a_helper_returning_host_arithmetic_returns_no_device_value(tmp_path):
    found = lint_files(tmp_path, {"utils.py": UTILS, "probe.py": PROBE}, "GPU106", "GPU112")
    probe = {(row, code) for name, row, code in found if name == "probe.py"}
    assert (_row(PROBE, "if val_acc >= best_val_acc:"), "GPU106") not in probe
    assert (_row(PROBE, "val_acc = accuracy(pred, labels)"), "GPU112") in probe
    # a helper returning a device tensor still makes the branch a sync
    assert (_row(PROBE, "if dev_acc >= best_dev_acc:"), "GPU106") in probe
