"""A training step in a module that never names a device (recall60): an RL implementation class whose
`update(batch)` runs the network, `loss.backward()` and the optimizer step, and returns `loss.item()`, built and
called every step by an algorithm file that put the network on CUDA (d3rlpy's `*_impl.py` layout, and every
project whose losses are computed away from the file that says "cuda").

The module's own text has no `.cuda()`, `device` or `.to(`, and the per-step call hands it a batch (not only
modules and optimizers), so it used to be linted as CPU code. A method that itself runs `.backward()` trains the
network its caller built: what it computes is on that network's device, whatever it was handed. The same project
with a CPU caller stays quiet, and a helper method that does not train (a logger handed the batch) stays quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

IMPL = textwrap.dedent("""\
    import torch


    class QImpl:
        def __init__(self, q, opt):
            self._q = q
            self._opt = opt

        def compute_loss(self, batch):
            return self._q(batch.obs).pow(2).mean()

        def update(self, batch):
            loss = self.compute_loss(batch)
            self._opt.zero_grad()
            loss.backward()
            self._opt.step()
            return {"loss": loss.item()}

        def describe(self, batch):
            return batch.obs.sum().item()
""")

ALGO = textwrap.dedent("""\
    import torch
    from torch import nn
    from impl import QImpl


    def fit(batches, n_steps):
        q = nn.Linear(4, 2).to("cuda:0")
        opt = torch.optim.Adam(q.parameters())
        impl = QImpl(q, opt)
        for step in range(n_steps):
            batch = batches.sample()
            metrics = impl.update(batch)
        return metrics
""")


def test_training_method_called_from_a_gpu_file_reports_its_sync(tmp_path):
    root = write_project(tmp_path / "p", {"impl.py": IMPL, "algo.py": ALGO})
    assert ("impl.py", 17, "GPU101") in found(check(root))


def test_training_method_of_a_cpu_project_stays_quiet(tmp_path):
    cpu = ALGO.replace('nn.Linear(4, 2).to("cuda:0")', "nn.Linear(4, 2)")
    root = write_project(tmp_path / "p", {"impl.py": IMPL, "algo.py": cpu})
    assert not [f for f in found(check(root)) if f[0] == "impl.py"]


def test_method_handed_the_batch_that_does_not_train_stays_quiet(tmp_path):
    # a per-step method that reads what it is handed and runs no backward: the batch may be on the host
    describing = ALGO.replace("metrics = impl.update(batch)", "metrics = impl.describe(batch)\n"
                              "        q(batch.obs).sum().backward()\n        opt.step()")
    root = write_project(tmp_path / "p", {"impl.py": IMPL, "algo.py": describing})
    assert not [f for f in found(check(root)) if f[0] == "impl.py"]


LOSS_DICT = textwrap.dedent("""\
    import torch
    from torch import nn

    model = nn.Linear(4, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    for x in loader:
        x = x.cuda()
        out = model(x)
        losses = {"mse": out.pow(2).mean(), "l1": out.abs().mean()}
        sum(losses.values()).backward()
        opt.step()
        stats = {k: float(v) for k, v in losses.items()}
        total = float(losses["l1"])
""")


def test_entries_of_a_loss_dict_are_device_tensors(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": LOSS_DICT})
    findings = found(check(root))
    assert ("train.py", 13, "GPU105") in findings  # iterated with .items()
    assert ("train.py", 14, "GPU105") in findings  # read by key


def test_host_entries_and_entries_rewritten_by_key_stay_quiet(tmp_path):
    host = LOSS_DICT.replace('"l1": out.abs().mean()}', '"l1": out.abs().mean().item()}')
    rewritten = LOSS_DICT.replace("    stats =", '    losses["l1"] = losses["l1"].item()\n    stats =')
    assert host != LOSS_DICT and rewritten != LOSS_DICT
    for name, text, line in (("host", host, 14), ("rewritten", rewritten, 15)):
        root = write_project(tmp_path / name, {"train.py": text})
        findings = found(check(root))
        assert ("train.py", line, "GPU105") not in findings
        assert ("train.py", line - 1, "GPU105") not in findings  # `.items()` of a dict with a host entry
