"""`for i, p in enumerate(params):` is the for-loop shape of torch's own optimizers (`_single_tensor_sgd`), and
of project optimizers copied from them: each iteration updates one parameter, one or more kernels each (GPU411).
It is read like `for p in params:`, the index aside, in the rule (where the loop is written) and in its `ast`
twin (`analysis/param_loops.py`, the helper's per-step call reported at the call). An enumerated loop over
something else (batches, a list of numbers), or one that runs once before training, stays silent.
"""

from __future__ import annotations

import textwrap

from projects import check, found, lint_script, write_project

SCRIPT = textwrap.dedent("""\
    import torch


    def main(loader):
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()
        params = list(model.parameters())
        bufs = [torch.zeros_like(p) for p in params]
        for i, p in enumerate(params):
            p.data.mul_(0.5)
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            for i, p in enumerate(params):
                bufs[i].mul_(0.9).add_(p.grad)
                p.add_(bufs[i], alpha=-0.1)
            for i, x in enumerate(loader):
                x.mul_(2)
""")


def test_enumerated_update_every_step(tmp_path):
    rows = {row for row, code in lint_script(tmp_path, SCRIPT) if code == "GPU411"}
    assert rows == {13}  # not the one-off scaling before training (8), not the loop over batches (16)


def test_enumerated_zip_every_step(tmp_path):
    text = SCRIPT.replace("for i, p in enumerate(params):\n            bufs[i]",
                          "for i, (b, p) in enumerate(zip(bufs, params)):\n            bufs[i]")
    assert text != SCRIPT
    assert {row for row, code in lint_script(tmp_path, text) if code == "GPU411"} == {13}


OPT = textwrap.dedent("""\
    import torch


    def sgd(params, lr):
        for i, p in enumerate(params):
            p.add_(p.grad, alpha=-lr)
""")

TRAIN = textwrap.dedent("""\
    import torch
    from opt import sgd


    def main(loader):
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            sgd(list(model.parameters()), 0.1)
""")


def test_helper_with_enumerated_loop_reported_at_its_call(tmp_path):
    root = write_project(tmp_path, {"opt.py": OPT, "train.py": TRAIN})
    hits = {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU411"}
    assert ("train.py", 10) in hits


def test_helper_loop_over_a_models_parameters_reported_where_written(tmp_path):
    # (a helper module whose only loop iterates a list argument is not parsed at all: gpulint/prefilter.py's
    # HOT_LOOP sees no loop there that may train; one iterating `model.parameters()` is)
    # (and a module naming no device at all is GPU code only as model classes: a utilities module moves batches)
    opt = OPT.replace("def sgd(params, lr):", "def sgd(model, lr):").replace("enumerate(params)",
                                                                             "enumerate(model.parameters())")
    opt += "\n\ndef to_device(batch, device):\n    return batch.to(device)\n"
    train = TRAIN.replace("sgd(list(model.parameters()), 0.1)", "sgd(model, 0.1)")
    root = write_project(tmp_path, {"opt.py": opt, "train.py": train})
    hits = {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU411"}
    assert ("opt.py", 5) in hits and ("train.py", 10) in hits
