"""GPU204 `tensordataset-loader-on-gpu`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT, Kind, LoopRole
from gpulint.rule import Rule, Example, Family
from gpulint.analysis.data_facts import TENSOR_DATASETS, data_facts, is_dataloader, keyword
from gpulint.analysis.data import _dataset, _feeds_a_step


class TensorDatasetLoaderOnGpu(Rule):
    """A `DataLoader` over an in-memory `TensorDataset` feeding a GPU training loop.

    ## What it does
    Flags `DataLoader(TensorDataset(x, y), ...)` when a training or evaluation loop iterates the loader and the
    batches go to an accelerator.

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
    None: the rewrite changes the loop's structure, and only the author knows whether the data fits on the GPU.

    ## Fix safety
    No fix.

    ## When it is fine
    Datasets too large for GPU memory, loaders that already fetch whole batches (`batch_size=None` with a
    batch sampler), datasets other than `TensorDataset` (files, augmentation), and CPU-only modules.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text.
    needs_text = GPU_HINT
    code = "GPU204"
    name = "tensordataset-loader-on-gpu"
    message = "`DataLoader` over an in-memory `TensorDataset` collates every batch sample by sample on the CPU; " \
              "keep the tensors on the GPU and index batches with a device `torch.randperm`"
    family = Family.TRANSFERS
    VALID = [
        """\
import torch
model = torch.nn.Linear(2, 2).cuda()
X = torch.randn(100, 2)
for x in X.split(8):
    model(x.cuda()).sum().backward()
""",
    ]
    INVALID = [
        Example("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
X = torch.randn(100, 2)
loader = DataLoader(TensorDataset(X), batch_size=8)
model = torch.nn.Linear(2, 2).cuda()
for (x,) in loader:
    model(x.cuda()).sum().backward()
""",
                message="`DataLoader` over an in-memory `TensorDataset` collates ever"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not is_dataloader(self.analysis, node):
            return
        facts = data_facts(self.analysis)
        dataset = self._tensor_dataset(_dataset(node))
        if dataset is None or facts.on_device(dataset):
            return
        batch_size = keyword(node, "batch_size")
        if batch_size is not None and isinstance(batch_size.value, cst.Name) and batch_size.value.value == "None":
            return  # a batch sampler feeds whole batches: no per-sample indexing
        loops = [loop for loop in facts.loops_over(node) if self.analysis.loops.role(loop) is LoopRole.HOT]
        if any(facts.moves_batches(loop) for loop in loops) or \
                facts.clearly_cuda() and any(_feeds_a_step(self, loop) for loop in loops):
            self.report(node)

    def _tensor_dataset(self, expr: Optional[cst.BaseExpression], depth: int = 0) -> Optional[cst.Call]:
        if expr is None or depth > 4:
            return None
        if isinstance(expr, cst.Call) and self.analysis.qualified(expr.func) in TENSOR_DATASETS:
            if all(self.analysis.kind(a.value) in (Kind.TENSOR, Kind.UNKNOWN) for a in expr.args):
                return expr
            return None
        if isinstance(expr, cst.Name):
            values = [b.value for b in data_facts(self.analysis).bindings(expr)]
            found = [self._tensor_dataset(v, depth + 1) for v in values]
            if found and all(found):
                return found[0]
        return None
