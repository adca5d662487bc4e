"""A framework's step loop over a dataset-or-loader argument (issue 11, heldout8: SpeechBrain's `Brain.fit`).

`fit(train_set)` accepts a dataset or a loader and converts the first under a type test
(`if not isinstance(train_set, DataLoader): train_set = self.make_loader(train_set)`); after that statement the
name holds a loader, whatever the caller passed, so the helper it is handed to (`self._run_epoch(train_set)`,
iterating `with tqdm(train_set) as bar: for batch in bar:`) loops over batches: the per-batch method's host read
(`return loss.detach().cpu()`) is reported at its call too (GPU112), and so is a helper that tests its argument
with `if not torch.isfinite(loss):`. A test that the name *is* a loader, or an assignment in the `else` branch,
or a class that is not a loader, says nothing.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

FRAMEWORK = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from tqdm import tqdm


    class Trainer:
        def __init__(self, modules, opt):
            self.modules = modules.to("cuda")
            self.opt = opt

        def make_loader(self, dataset):
            return DataLoader(dataset, batch_size=8)

        def step_batch(self, batch):
            loss = self.modules(batch).mean()
            self.check_finite(loss)
            loss.backward()
            self.opt.step()
            return loss.detach().cpu()

        def check_finite(self, loss):
            if not torch.isfinite(loss):
                self.bad += 1

        def _run_epoch(self, train_set):
            with tqdm(train_set) as bar:
                for batch in bar:
                    loss = self.step_batch(batch)

        def fit(self, epochs, train_set):
            {guard}
            for epoch in range(epochs):
                self._run_epoch(train_set)
""")

GUARD = ("if not isinstance(train_set, DataLoader):\n"
         "            train_set = self.make_loader(train_set)")


def _findings(tmp_path, guard):
    root = write_project(tmp_path / "p", {"framework.py": FRAMEWORK.format(guard=guard)})
    return found(check(root))


def test_argument_converted_under_a_type_test_is_a_loader(tmp_path):
    findings = _findings(tmp_path, GUARD)
    assert ("framework.py", 28, "GPU112") in findings  # self.step_batch(batch): .cpu() of its loss
    assert ("framework.py", 16, "GPU112") in findings  # self.check_finite(loss): `if not torch.isfinite(loss)`


def test_several_loader_classes_and_a_none_test(tmp_path):
    guard = ("if train_set is not None and not (isinstance(train_set, DataLoader) or\n"
             "                                               isinstance(train_set, RepeatingLoader)):\n"
             "            train_set = self.make_loader(train_set)")
    findings = _findings(tmp_path, guard)
    assert ("framework.py", 28, "GPU112") in findings


def test_assignment_where_the_name_is_a_loader_says_nothing(tmp_path):
    guard = ("if isinstance(train_set, DataLoader):\n"
             "            train_set = self.make_loader(train_set)")
    assert ("framework.py", 28, "GPU112") not in _findings(tmp_path, guard)


def test_a_class_that_is_not_a_loader_says_nothing(tmp_path):
    guard = ("if not isinstance(train_set, list):\n"
             "            train_set = self.make_loader(train_set)")
    assert ("framework.py", 28, "GPU112") not in _findings(tmp_path, guard)
