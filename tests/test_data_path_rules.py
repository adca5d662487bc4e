"""The GPU204 fix and the behaviour a user would notice: the fixed program trains on the same data.

The data-path rules' own VALID/INVALID examples run in tests/test_rule_examples.py."""

from __future__ import annotations

import pytest

from gpulint.runner import FixMode, lint_source

def _lint(code: str, text: str, fix: FixMode = FixMode.NONE):
    result = lint_source(text, "example.py", frozenset({code}), fix=fix)
    assert not result.errors
    return result


# -- GPU204's fix keeps the training data: run the original and the fixed program on the CPU ----------------------
LOADER_PROGRAM = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
X = torch.randn(103, 4)
Y = torch.arange(103)
loader = DataLoader(TensorDataset(X, Y), batch_size=10, shuffle={shuffle}, drop_last={drop_last})
seen = []
for epoch in range(3):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        seen.append((epoch, x.cpu(), y.cpu()))
"""


def _run(source: str):
    namespace: dict = {}
    exec(compile(source, "program.py", "exec"), namespace)
    return namespace["seen"]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_gpu204_fix_trains_on_the_same_batches(shuffle, drop_last):
    torch = pytest.importorskip("torch")
    original = LOADER_PROGRAM.format(shuffle=shuffle, drop_last=drop_last)
    fixed = _lint("GPU204", original, FixMode.UNSAFE).source
    assert "DataLoader(TensorDataset" not in fixed
    assert ("torch.randperm" if shuffle else "torch.arange") in fixed
    before, after = _run(original), _run(fixed)
    assert [(e, len(y)) for e, _, y in before] == [(e, len(y)) for e, _, y in after]  # same batch sizes
    if not shuffle:  # bit-identical batches
        for (_, xb, yb), (_, xa, ya) in zip(before, after):
            assert torch.equal(xb, xa) and torch.equal(yb, ya)
        return
    for epoch in range(3):  # the same samples each epoch, each row still paired with its label
        got_b = torch.cat([y for e, _, y in before if e == epoch]).sort().values
        got_a = torch.cat([y for e, _, y in after if e == epoch]).sort().values
        if not drop_last:
            assert torch.equal(got_a, torch.arange(103)) and torch.equal(got_b, got_a)
        else:
            assert len(got_a) == len(got_b) == 100 and len(set(got_a.tolist())) == 100
    xs = {int(y): x for _, xb, yb in before for x, y in zip(xb, yb)}
    assert all(torch.equal(xs[int(y)], x) for _, xa, ya in after for x, y in zip(xa, ya))


# -- GPU204 on a dataset class that is a TensorDataset by another name (rows of tensors it holds) ----------------
CLASS_PROGRAM = """\
import torch
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "cpu"


class Rows(Dataset):
    def __init__(self, n):
        generator = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 50, (n, 6), generator=generator)
        self.mask = torch.zeros(n, 6, dtype=torch.long)
        for i in range(n):
            self.mask[i, : 1 + i % 6] = 1
        self.labels = torch.arange(n)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {getitem}


seen = []
loader = DataLoader({dataset}, batch_size=8, shuffle={shuffle})
for epoch in range(2):
    for batch in loader:
        {move}
        seen.append((epoch, ({rows})))
"""
_DICT = dict(getitem='{"input_ids": self.ids[i], "attention_mask": self.mask[i], "labels": self.labels[i]}',
             move="batch = {k: v.to(device) for k, v in batch.items()}",
             rows='batch["input_ids"].cpu(), batch["attention_mask"].cpu(), batch["labels"].cpu()')
_TUPLE = dict(getitem="self.ids[i], self.mask[i], self.labels[i]",
              move="batch = [t.to(device) for t in batch]",
              rows="batch[0].cpu(), batch[1].cpu(), batch[2].cpu()")


@pytest.mark.parametrize("shape", [_DICT, _TUPLE], ids=["dict", "tuple"])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("dataset", ["Rows(45)", "named"])
def test_gpu204_fix_of_a_tensor_row_dataset_class_trains_on_the_same_rows(shape, shuffle, dataset):
    torch = pytest.importorskip("torch")
    original = CLASS_PROGRAM.format(dataset="rows" if dataset == "named" else dataset, shuffle=shuffle, **shape)
    if dataset == "named":
        original = original.replace("seen = []\n", "seen = []\nrows = Rows(45)\n")
    findings = _lint("GPU204", original).diagnostics
    assert [d.code for d in findings] == ["GPU204"] and "`Rows`" in findings[0].message
    fixed = _lint("GPU204", original, FixMode.UNSAFE).source
    assert "DataLoader(" not in fixed and "loader_tensors" in fixed
    compile(fixed, "fixed.py", "exec")
    before, after = _run(original), _run(fixed)
    assert [(e, len(b[2])) for e, b in before] == [(e, len(a[2])) for e, a in after]  # same batch sizes
    if not shuffle:
        assert all(torch.equal(x, y) for (_, b), (_, a) in zip(before, after) for x, y in zip(b, a))
        return
    rows = {int(label): (ids, mask) for _, (i, m, l) in before for ids, mask, label in zip(i, m, l)}
    for epoch in range(2):  # every row once per epoch, each still paired with its label
        labels = torch.cat([a[2] for e, a in after if e == epoch]).sort().values
        assert torch.equal(labels, torch.arange(45))
    assert all(torch.equal(rows[int(label)][0], ids) and torch.equal(rows[int(label)][1], mask)
               for _, (i, m, l) in after for ids, mask, label in zip(i, m, l))


@pytest.mark.parametrize("getitem,extra", [
    ('{"input_ids": self.ids[i] + 1, "labels": self.labels[i]}', ""),  # per-sample work
    ('{"input_ids": self.ids[i], "labels": self.labels[i]}', "\n    def mutate(self):\n        self.ids = None\n"),
    ('{"input_ids": self.ids[i], "labels": self.labels[i].item()}', ""),
    ('{"input_ids": self.ids[i], "labels": self.names[i]}', ""),  # a list, not a tensor
    ('{"input_ids": self.ids[i], "labels": self.labels[0]}', ""),  # not a row of the index
])
def test_gpu204_leaves_dataset_classes_that_do_more_than_return_tensor_rows(getitem, extra):
    source = CLASS_PROGRAM.format(dataset="Rows(45)", shuffle=True, **{**_DICT, "getitem": getitem})
    source = source.replace("        self.labels = torch.arange(n)\n",
                            "        self.labels = torch.arange(n)\n        self.names = [str(k) for k in range(n)]\n")
    source = source.replace("\n\nseen = []", extra + "\n\nseen = []")
    assert _lint("GPU204", source).diagnostics == []


# -- GPU409 and GPU420 read a loader's worker options the same way (analysis/data.loader_workers) ----------------
WORKERS_PROGRAM = """\
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.from_numpy(np.flip(np.zeros((8, 8)), 1).copy()).float()


def main(model, options):
    loader = DataLoader(Images(){extra})
    for epoch in range(10):
        for x in loader:
            model(x.cuda()).sum().backward()


if __name__ == "__main__":
    main(None, {{}})
"""


@pytest.mark.parametrize("extra, without_workers, restarted", [
    ("", True, False),  # no workers: GPU409's
    (", num_workers=0", True, False),
    (", num_workers=4", False, True),  # workers shut down each epoch: GPU420's
    (", num_workers=4, persistent_workers=True", False, False),
    (", num_workers=4, **options", False, False),  # options that cannot be read: neither
    (", **options", False, False),
    (", batch_size=None, sampler=options", False, False),  # whole batches from a batch sampler: no per-sample work
])
def test_worker_options_read_alike_by_gpu409_and_gpu420(extra, without_workers, restarted):
    text = WORKERS_PROGRAM.format(extra=extra)
    assert bool(_lint("GPU409", text).diagnostics) is without_workers
    assert bool(_lint("GPU420", text).diagnostics) is restarted
