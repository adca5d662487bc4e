"""GPU204 `tensordataset-loader-on-gpu`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT, Kind
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety
from gpulint.rules._examples import CPU_ONLY_SCRIPTS, DATASET_HEAD
from gpulint.analysis.data_facts import TENSOR_DATASETS, data_facts, is_dataloader
from gpulint.analysis.data import _dataset, accelerator_loops, whole_batches
from gpulint.analysis.data_path import data_path_facts, resident_loader

_PROGRAM = """import torch
from torch.utils.data import DataLoader, TensorDataset

device = "cuda"
X, Y = torch.randn(1024, 8), torch.randint(0, 2, (1024,))
{loader}
for epoch in range(3):
    {loop}
        loss = model(x.to(device)).sum()
        loss.backward()
"""

_ROWS = """import torch
from torch.utils.data import DataLoader, Dataset

device = "cuda"


class Encoded(Dataset):
    def __init__(self, ids, labels):
        self.ids = torch.tensor(ids)
        self.labels = torch.tensor(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {{"input_ids": self.ids[i], "labels": self.labels[i]}}


{loader}
{loop}
    batch = {{k: v.to(device) for k, v in batch.items()}}
    model(**batch).loss.backward()
"""


class TensorDatasetLoaderOnGpu(Rule):
    """A `DataLoader` over an in-memory `TensorDataset` feeding a GPU training loop.

    ## What it does
    Flags `DataLoader(TensorDataset(x, y), ...)` when a training or evaluation loop iterates the loader and the
    batches go to an accelerator. Also a `DataLoader` over a map-style dataset class of the same file that is a
    `TensorDataset` by another name: its `__getitem__(self, i)` only returns rows of tensors it holds
    (`return self.x[i], self.y[i]`, or a dict of them, the shape of pre-tokenized fine-tuning data), each built
    on the host in `__init__` and set nowhere else, and its `__len__` is the length of one of them.

    ## Why it is slow
    The tensors are already in memory, yet the loader fetches every sample with its own `__getitem__` call and
    stacks them with `default_collate` on the CPU, one Python call per sample, then copies the batch across
    PCIe. On an H100 (torch 2.11, 3-layer MLP, batch 256, 400 steps) the tutorial loop took 1.48 s; pinning and
    removing its syncs, 1.21 s; the same training with the tensors on the GPU and batches indexed by a device
    `torch.randperm`, 0.40 s (docs/measurements-gpu204.md).

    ## Example
    ```python
    loader = DataLoader(TensorDataset(X, Y), batch_size=256, shuffle=True)
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            ...
    ```
    If the data fits in GPU memory, move it once and index batches on the device:
    ```python
    X, Y = X.to(device), Y.to(device)
    for epoch in range(epochs):
        perm = torch.randperm(len(X), device=device)
        for i in range(0, len(X), 256):
            idx = perm[i:i + 256]
            x, y = X[idx], Y[idx]
            ...
    ```
    If it does not, index whole batches on the host: `DataLoader(ds, sampler=BatchSampler(RandomSampler(ds),
    256, drop_last=False), batch_size=None, pin_memory=True)` (0.64 s in the same measurement).

    ## Fix
    Where the rewrite is exact, moves the tensors to the device once in place of the loader
    (`train_loader_tensors = (X.to(device), Y.to(device))`) and makes the loop iterate batches indexed there:
    `for x, y in ([t[i] for t in train_loader_tensors] for i in torch.randperm(len(train_loader_tensors[0]),
    device=device).split(256)):` (`torch.arange` for `shuffle=False`, the last partial batch sliced off for
    `drop_last=True`). For a tensor-row dataset class the instance's tensors are moved instead
    (`train_loader_tensors = {"input_ids": ds.input_ids.to(device), ...}`, the instance bound first as
    `train_loader_dataset = MyDataset(...)` where the loader built it inline), and each batch keeps the
    class's shape: a dict with the same keys, or a list as `default_collate` makes of tuples. The loop's body stays as it was; its `.to(device)` becomes a no-op. Only when the loader is
    `name = DataLoader(TensorDataset(a, b, ...), ...)` with tensors named in this file, its other arguments are
    `batch_size`/`shuffle`/`drop_last` given as names or literals (and `pin_memory`, `num_workers=0`), exactly
    one loop uses the name (no `len(loader)`, no second loop), the loop copies its batch to a device named by a
    variable defined before the loader (or a string), and the module does `import torch`.

    ## Fix safety
    Unsafe: the whole dataset must fit in GPU memory (only the author knows), and with `shuffle=True` the order
    comes from the device's generator: each epoch still visits every sample exactly once, in batches of the same
    sizes, but not in the order the CPU generator would have drawn. With `shuffle=False` the batches are the same
    tensors, bit for bit.

    ## When it is fine
    Datasets too large for GPU memory, loaders that already fetch whole batches (`batch_size=None` with a
    batch sampler), datasets that do per-sample work in `__getitem__` (files, decoding, augmentation: GPU409's
    domain), and CPU-only modules.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text.
    needs_text = GPU_HINT
    code = "GPU204"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "tensordataset-loader-on-gpu"
    message = "`DataLoader` over an in-memory `TensorDataset` collates every batch sample by sample on the CPU; " \
              "keep the tensors on the GPU and index batches with a device `torch.randperm`"
    family = Family.TRANSFERS
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "the data must fit in GPU memory, and a shuffled order comes from the "
                                          "device's generator (same samples per epoch, different order)")
    VALID = (
        _PROGRAM.format(loader="loader = DataLoader(TensorDataset(X.to(device), Y.to(device)), batch_size=64)",
                        loop="for x, y in loader:"),
        _PROGRAM.format(loader="loader = DataLoader(TensorDataset(X, Y), batch_size=None, sampler=sampler)",
                        loop="for x, y in loader:"),
        # a dataset class that works per sample (here a cast) is not a TensorDataset by another name
        _ROWS.format(loader="loader = DataLoader(Encoded(ids, labels), batch_size=32, shuffle=True)",
                     loop="for batch in loader:").replace("self.labels[i]}", "self.labels[i].float()}"),
        *CPU_ONLY_SCRIPTS,
    )
    INVALID = (
        Example(_PROGRAM.format(loader="loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)",
                                loop="for x, y in loader:"),
                message="TensorDataset",
                fixed=_PROGRAM.format(
                    loader="loader_tensors = (X.to(device), Y.to(device))",
                    loop="for x, y in ([t[i] for t in loader_tensors] for i in torch.randperm("
                         "len(loader_tensors[0]), device=device).split(64)):")),
        Example(_PROGRAM.format(loader="loader = DataLoader(TensorDataset(X, Y), batch_size=64, drop_last=True)",
                                loop="for x, y in loader:\n        print(len(loader))"),
                message="TensorDataset", fixed=None),
        # a dataset class that only returns rows of tensors it holds: a TensorDataset by another name
        Example(_ROWS.format(loader="loader = DataLoader(Encoded(ids, labels), batch_size=32, shuffle=True)",
                             loop="for batch in loader:"),
                message="`Encoded`",
                fixed=_ROWS.format(
                    loader="loader_dataset = Encoded(ids, labels)\nloader_tensors = {\"input_ids\": "
                           "loader_dataset.ids.to(device), \"labels\": loader_dataset.labels.to(device)}",
                    loop="for batch in ({k: t[i] for k, t in loader_tensors.items()} for i in torch.randperm("
                         "len(loader_tensors[\"labels\"]), device=device).split(32)):")),
        # a loader used across epochs: reported once, without a fix
        Example(DATASET_HEAD + "loader = DataLoader(dataset, batch_size=8, pin_memory=True)\nfor epoch in range(2):\n"
                "    for x, y in loader:\n        model(x.to(device, non_blocking=True)).sum().backward()\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_dataloader(self.analysis, node):
            return
        facts = data_facts(self.analysis)
        dataset, columns, cls = self._tensor_dataset(_dataset(node)), None, None
        if dataset is None:  # a dataset class of this file that only returns rows of the tensors it holds
            dataset = _dataset(node)
            cls = data_path_facts(self.analysis).dataset_class(dataset)
            columns = data_path_facts(self.analysis).tensor_columns(cls) if cls is not None else None
            if columns is None:
                return
        elif facts.on_device(dataset):
            return
        if whole_batches(node):
            return  # a batch sampler feeds whole batches: no per-sample indexing
        if accelerator_loops(self, node):
            message = None if columns is None else (
                f"`DataLoader` over `{self.analysis.code(cls.name)}`, whose `__getitem__` only returns rows of "
                "tensors it holds in memory, collates every batch sample by sample on the CPU; keep the tensors "
                "on the GPU and index batches with a device `torch.randperm`")
            self.report(node, message, fix=self._fix(node, dataset, columns))

    def _fix(self, loader: cst.Call, dataset: cst.BaseExpression, columns):
        plan = resident_loader(self.analysis, loader, dataset, columns)
        if plan is None or not data_path_facts(self.analysis).imports("torch"):
            return None
        return self.fix("Keep the tensors on the device and index batches with a device `torch.randperm`",
                        plan, safe=False)

    def _tensor_dataset(self, expr: Optional[cst.BaseExpression], depth: int = 0) -> Optional[cst.Call]:
        if expr is None or depth > 4:
            return None
        if type(expr) is cst.Call and self.analysis.qualified(expr.func) in TENSOR_DATASETS:
            if all(self.analysis.kind(a.value) in (Kind.TENSOR, Kind.UNKNOWN) for a in expr.args):
                return expr
            return None
        if type(expr) is cst.Name:
            values = [b.value for b in data_facts(self.analysis).bindings(expr)]
            found = [self._tensor_dataset(v, depth + 1) for v in values]
            if found and all(found):
                return found[0]
        return None
