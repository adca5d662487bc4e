"""A pass over the first few batches of a loader, stopped by a `break` under a test of its own `enumerate` counter
(`if i == args.n_test_samples - 1: break`), that trains nothing and is nested in no loop, beside the scope's real
training loop: a one-off dump before training (reference samples saved), not a per-step loop
(`loops.LoopAnalysis._capped_dump`). The same capped pass inside the epoch loop, or one that trains, stays hot."""

from __future__ import annotations

from tests.projects import lint_script

TRAIN = '''import torch
from torch.utils.data import DataLoader


def main(args, train_set, test_set, model, opt):
    train_loader = DataLoader(train_set, batch_size=16, pin_memory=True)
    test_loader = DataLoader(test_set, batch_size=1, pin_memory=True)
    references = []
    for i, x_t in enumerate(test_loader):
        x_t = x_t.cuda()
        references.append(x_t)
        audio = x_t.squeeze().cpu()
        save_sample(i, audio)
        if i == args.n_test_samples - 1:
            break
    for epoch in range(args.epochs):
        for x in train_loader:
            x = x.cuda(non_blocking=True)
            loss = model(x).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
{extra}
'''

IN_EPOCH = '''        for i, x_t in enumerate(test_loader):
            x_t = x_t.cuda()
            audio = x_t.squeeze().cpu()
            save_sample(i, audio)
            if i >= args.n_test_samples:
                break
'''


def test_a_capped_dump_before_training_is_not_a_step_loop(tmp_path):
    keys = lint_script(tmp_path, TRAIN.format(extra=""))
    assert not {k for k in keys if k[0] in (10, 12)}, keys  # the dump's copies run a handful of times


def test_the_same_pass_every_epoch_is_reported(tmp_path):
    keys = lint_script(tmp_path, TRAIN.format(extra=IN_EPOCH))
    assert not {k for k in keys if k[0] in (10, 12)}, keys
    assert (24, "GPU202") in keys and (25, "GPU104") in keys, keys  # inside the epoch loop: every epoch's pass


def test_a_capped_loop_that_trains_is_the_step_loop(tmp_path):
    text = TRAIN.format(extra="").replace("        save_sample(i, audio)\n",
                                          "        save_sample(i, audio)\n        model(x_t).mean().backward()\n")
    keys = lint_script(tmp_path, text)
    assert (12, "GPU104") in keys, keys


def test_a_loader_only_a_capped_dump_reads_is_not_asked_to_pin(tmp_path):
    # precision24: heldout21's melgan `test_loader = DataLoader(test_set, batch_size=1)` read only by the dump
    text = TRAIN.format(extra="").replace("test_loader = DataLoader(test_set, batch_size=1, pin_memory=True)",
                                          "test_loader = DataLoader(test_set, batch_size=1)")
    keys = lint_script(tmp_path, text)
    assert (7, "GPU201") not in keys, keys
    # the same loader also handed to an evaluation in the epoch loop: its batches are read every epoch
    handed = text + "        evaluate(model, test_loader)\n"
    assert (7, "GPU201") in lint_script(tmp_path / "handed", handed)
