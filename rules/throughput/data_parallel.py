"""GPU407 `data-parallel`."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.node_types import of_types
from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, GpuRule

DATA_PARALLEL = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                 "torch.nn.parallel.data_parallel.DataParallel"}
# A script that also wraps its model in one of these (on another branch: `if args.distributed: model = DDP(...)`
# ... `elif n_gpu > 1: model = DataParallel(model)`) already offers the fast path; DataParallel is its fallback mode.
DISTRIBUTED = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
               "apex.parallel.DistributedDataParallel", "apex.parallel.distributed.DistributedDataParallel"}


class DataParallel(GpuRule):
    """`nn.DataParallel(model)` in a training script: single-process multi-GPU, slower than DDP.

    ## What it does
    Flags `torch.nn.DataParallel(...)` in a training script: a module that trains (a loop running `backward()`
    every step) and is an entry point (an `if __name__ == "__main__":` block or a top-level training loop).

    ## Why it is slow
    DataParallel runs one Python process that, every step, scatters the batch from GPU 0, replicates the model
    to every GPU, runs the replicas in threads under the GIL, and gathers the outputs (and the loss) back on
    GPU 0: GPU 0 does more work and holds more memory than the others, and the GIL serialises the launch of
    every kernel. PyTorch's docs recommend `DistributedDataParallel` instead, even on one machine: one process
    per GPU, gradients all-reduced in buckets overlapped with backward (PyTorch "CUDA semantics", *Use
    nn.parallel.DistributedDataParallel instead of multiprocessing or nn.DataParallel*; `DataParallel` docs).

    ## Example
    ```python
    model = nn.DataParallel(Net()).cuda()
    ```
    Use instead (launched with `torchrun --nproc_per_node=<gpus> train.py`):
    ```python
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(Net().cuda(local_rank), device_ids=[local_rank])
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset), batch_size=per_gpu_batch)
    ```

    ## Fix
    None: moving to DDP changes how the script is launched, how data is split and how metrics and checkpoints
    are gathered.

    ## Fix safety
    No automatic fix.

    ## When it is fine
    Scripts that also wrap the model in `DistributedDataParallel` (torch's or apex's) on another branch (`if
    args.distributed: model = DDP(model) ... elif n_gpu > 1: model = DataParallel(model)`): the fast path is one
    launch option away, and DataParallel is the fallback for a single-process run. Library modules and tests (they do not decide how a job is launched), inference or evaluation scripts, quick experiments on a single GPU (DataParallel over one device is a
    no-op wrapper), and environments where only one process can be started: suppress with `# noqa: GPU407`.
    """

    code = "GPU407"
    # Every spelling of the class names it as a whole word (not `DistributedDataParallel`, not
    # `FullyShardedDataParallel`), and a report needs a training loop (gpulint/prefilter.py).
    needs_text = re.compile(r"\bDataParallel")
    reports_in = ("hot-loop",)
    name = "data-parallel"
    message = "`nn.DataParallel` replicates the model and gathers on GPU 0 every step; use DistributedDataParallel"
    family = Family.THROUGHPUT
    added_in = "0.2.0"
    preview = False  # default-on: 100% precise on the labelled repositories (docs/rules/preview-decisions.md)
    VALID = (
        "import torch\nmodel = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2).cuda())\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
        "import torch\nmodel = torch.nn.DataParallel(torch.nn.Linear(4, 2).cuda())\n"
        "with torch.no_grad():\n    for x in loader:\n        print(model(x))\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = torch.nn.Linear(4, 2).cuda()\nif distributed:\n    model = DDP(model)\n"
        "elif torch.cuda.device_count() > 1:\n    model = torch.nn.DataParallel(model)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
        # the wrapper of the branch taken without CUDA (the CUDA branch's own wrapper is reported)
        "import torch\nmodel = torch.nn.Linear(4, 2)\nif not torch.cuda.is_available():\n"
        "    model = torch.nn.DataParallel(model)\nelse:\n    model = model.cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
    )
    INVALID = (
        Example("import torch\nmodel = torch.nn.DataParallel(torch.nn.Linear(4, 2)).cuda()\n"
                "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
                message="DistributedDataParallel"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.analysis.targets_gpu or self.analysis.qualified(node.func) not in DATA_PARALLEL:
            return
        facts = training_facts(self.analysis)
        if facts.training_loops() and facts.entry_point() and not self._offers_ddp() and \
                not facts.without_cuda(node):
            # `else: model = nn.DataParallel(model)` of `if torch.cuda.is_available():` runs only without a GPU
            self.report(node)

    def _offers_ddp(self) -> bool:
        return self.analysis.fact(_offers_ddp)


def _offers_ddp(analysis) -> bool:
    """The module also wraps a model in DistributedDataParallel (torch's or apex's), anywhere."""
    return any(analysis.qualified(call.func) in DISTRIBUTED for call in of_types(analysis.index, cst.Call))
