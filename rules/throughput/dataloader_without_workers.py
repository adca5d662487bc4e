"""GPU409 `dataloader-without-workers`."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data import _dataset, accelerator_loops, loader_workers, no_workers, whole_batches
from gpulint.analysis.data_facts import append_keyword, keyword
from gpulint.analysis.data_path import data_path_facts
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety

_WORKERS = "min(8, os.cpu_count() or 1)"
_PROGRAM = """import os

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, images):
        self.images = images

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return torch.from_numpy(np.flip(self.images[i], 1).copy()).float() / 255


def main():
    loader = DataLoader(Images(np.zeros((64, 8, 8), np.uint8)), batch_size=16{extra})
    for x in loader:
        model(x.cuda()).sum().backward()


if __name__ == "__main__":
    main()
"""


class DataLoaderWithoutWorkers(Rule):
    """A `DataLoader` with no worker processes over a dataset that does per-sample work, feeding a GPU.

    ## What it does
    Flags `DataLoader(dataset, ...)` without `num_workers` (or with `num_workers=0`) when `dataset` is an
    instance of a map-style dataset class of the same module whose `__getitem__` does work per sample
    (decoding, transforms, file reads, numpy or PIL operations: any call beyond `int`/`len`/indexing), and a
    training or evaluation loop iterates the loader with its batches going to an accelerator.

    ## Why it is slow
    With `num_workers=0` the main process runs `__getitem__` for every sample and collates the batch between
    two training steps, while the GPU waits: the data path and the step run one after the other instead of
    side by side. Worker processes prepare the next batches during the step (PyTorch's data loading docs,
    "Single- and Multi-process Data Loading"; performance tuning guide, "Enable async data loading").
    `persistent_workers=True` keeps them alive between epochs instead of starting them again each epoch.

    ## Example
    ```python
    loader = DataLoader(ImageFolderDataset(root), batch_size=128, shuffle=True)
    ```
    Use instead:
    ```python
    loader = DataLoader(ImageFolderDataset(root), batch_size=128, shuffle=True,
                        num_workers=min(8, os.cpu_count() or 1), persistent_workers=True)
    ```

    ## Fix
    Adds `num_workers=min(8, os.cpu_count() or 1)` (replacing `num_workers=0`) and `persistent_workers=True`,
    and `import os` if the module lacks it. Only in scripts with an `if __name__ == "__main__":` guard: on
    platforms that start workers by spawning (Windows, macOS) each worker imports the main module again, and
    without the guard it would run the training again. Without the guard the finding has no fix.

    ## Fix safety
    Unsafe: `__getitem__` then runs in other processes. Random augmentations draw from each worker's own seed
    (different numbers than before, and `numpy.random` is seeded identically in every worker unless a
    `worker_init_fn` reseeds it), changes `__getitem__` makes to the dataset object are not seen by the main
    process, and the dataset must be picklable on spawn platforms.

    ## When it is fine
    Datasets whose `__getitem__` only indexes tensors (`TensorDataset` is GPU204's), loaders whose batches stay
    on the CPU, datasets whose `__getitem__` moves each sample to the GPU itself (`return seq.cuda()`: workers
    cannot use CUDA in a forked process, so the advice would break the program), `IterableDataset`s (each worker would replay the whole stream unless it shards it), and cases
    where worker start-up or memory cost more than they save (tiny datasets, few steps).
    """

    needs_text = GPU_HINT
    code = "GPU409"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "dataloader-without-workers"
    message = "`DataLoader` without workers over `{cls}`, whose `__getitem__` does per-sample work (`{work}`): " \
              "the GPU waits while the main process prepares every batch; add `num_workers` and " \
              "`persistent_workers=True`"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "`__getitem__` runs in worker processes: random augmentations draw "
                                          "different numbers and the dataset must be picklable")
    added_in = "0.2.0"
    VALID = (
        _PROGRAM.format(extra=", num_workers=4, persistent_workers=True"),
        _PROGRAM.format(extra="").replace("torch.from_numpy(np.flip(self.images[i], 1).copy()).float() / 255",
                                          "self.images[i]"),
        # samples moved to the GPU in `__getitem__`: workers cannot use CUDA after a fork
        _PROGRAM.format(extra="").replace("copy()).float() / 255", "copy()).float().cuda() / 255"),
    )
    INVALID = (
        Example(_PROGRAM.format(extra=""), message="per-sample work",
                fixed=_PROGRAM.format(extra=f", num_workers={_WORKERS}, persistent_workers=True")),
        Example(_PROGRAM.format(extra="").replace('if __name__ == "__main__":\n    main()', "main()"),
                message="per-sample work", fixed=None),
    )

    def visit_Call(self, node: cst.Call) -> None:
        options = loader_workers(self.analysis, node)
        if options is None or not no_workers(options[0]) or whole_batches(node):
            return  # workers, or a batch sampler handing whole batches (its dataset fetches them at once)
        paths = data_path_facts(self.analysis)
        dataset = paths.dataset_class(_dataset(node))
        work = paths.per_sample_work(dataset) if dataset is not None else None
        if work is None or paths.device_items(dataset):
            return  # samples moved to the device in `__getitem__`: workers cannot use CUDA after a fork
        if not accelerator_loops(self, node):
            return
        message = self.message.format(cls=dataset.name.value, work=work)
        self.report(node, message, fix=self._fix(node, options[0]) if paths.main_guard else None)

    def _fix(self, node: cst.Call, workers):
        paths = data_path_facts(self.analysis)
        count = cst.parse_expression(_WORKERS)

        def rewrite(updated: cst.Call) -> cst.Call:
            if workers is not None:
                args = [a.with_changes(value=count) if a.keyword is not None and a.keyword.value == "num_workers"
                        else a for a in updated.args]
                updated = updated.with_changes(args=args)
            else:
                updated = append_keyword(updated, "num_workers", count)
            if keyword(updated, "persistent_workers") is None:
                updated = append_keyword(updated, "persistent_workers", cst.Name("True"))
            return updated

        changes = {node: rewrite}
        if not paths.imports("os"):
            anchor = paths.import_anchor
            if anchor is None:
                return None
            changes[anchor] = cst.FlattenSentinel([cst.parse_statement("import os\n"), anchor])
        return self.fix("Add worker processes (`num_workers`, `persistent_workers=True`)", changes, safe=False)
