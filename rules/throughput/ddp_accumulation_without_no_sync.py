"""GPU415 `ddp-accumulation-without-no-sync`."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from gpulint.analysis import Kind
from gpulint.analysis.data_facts import _walk
from gpulint.rule import Example, Family, GpuRule

# Ways to skip the all-reduce of the micro-steps that do not step (or a wrapper that manages it).
_HANDLED = re.compile(r"no_sync|require_backward_grad_sync|\.accumulate\(|deepspeed|lightning|"
                      r"gradient_accumulation_steps\s*=\s*1\b")


class DdpAccumulationWithoutNoSync(GpuRule):
    """Gradient accumulation on a `DistributedDataParallel` model without `no_sync()`.

    ## What it does
    Flags `loss.backward()` run every micro-step in a module that wraps its model in `DistributedDataParallel`,
    when the optimizer steps only every N micro-steps (`if (step + 1) % accum == 0: optimizer.step()`, or an
    inner `for micro_step in range(accum):` loop with the step after it), and nothing in the module skips the
    gradient synchronisation of the other micro-steps (`model.no_sync()`, `model.require_backward_grad_sync`,
    Accelerate's `accelerator.accumulate(model)`, DeepSpeed, Lightning). A preview rule: it runs when selected
    (`--select GPU4`).

    ## Why it is slow
    DDP all-reduces every gradient bucket across all ranks during each `backward()`. With accumulation, only
    the gradients of the last micro-step before `optimizer.step()` need reducing: the others are summed locally
    anyway. Without `no_sync()` a run with accumulation N communicates N times the gradient volume it needs,
    and on a slow interconnect backward waits on the network each micro-step (PyTorch DDP docs,
    `DistributedDataParallel.no_sync`: "to disable gradient synchronizations across DDP processes ... the
    gradients will be accumulated ... and synchronized in the first forward-backward pass exiting the
    context").

    ## Example
    ```python
    model = DDP(model, device_ids=[rank])
    for step, (x, y) in enumerate(loader):
        loss_fn(model(x), y).backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```
    Use instead:
    ```python
    for step, (x, y) in enumerate(loader):
        if (step + 1) % accum == 0:
            loss_fn(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
        else:
            with model.no_sync():
                loss_fn(model(x), y).backward()
    ```
    (or, as nanoGPT does, `model.require_backward_grad_sync = (micro_step == accum - 1)` before the forward).

    ## Fix
    None: the forward pass must move into the `no_sync()` block too (DDP prepares the reduction in forward),
    which restructures the loop.

    ## Fix safety
    No automatic fix.

    ## When it is fine
    Single-process runs (the DDP wrapper present but world size 1), accumulation of 1, models whose
    `find_unused_parameters=True` forward differs between micro-steps (check `no_sync` docs), and training
    frameworks that already handle it (Accelerate's `accumulate`, DeepSpeed, Lightning: the module mentioning
    them keeps the rule silent).
    """

    code = "GPU415"
    name = "ddp-accumulation-without-no-sync"
    message = ("backward every micro-step of a DDP model whose optimizer steps every N: each backward "
               "all-reduces the gradients; run the micro-steps that do not step under `model.no_sync()`")
    family = Family.THROUGHPUT
    added_in = "0.2.0"
    preview = True
    VALID = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(torch.nn.Linear(4, 2).cuda())\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step, x in enumerate(loader):\n    if (step + 1) % 4 == 0:\n        model(x).sum().backward()\n"
        "        opt.step()\n    else:\n        with model.no_sync():\n            model(x).sum().backward()\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(torch.nn.Linear(4, 2).cuda())\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step, x in enumerate(loader):\n    model(x).sum().backward()\n    if (step + 1) % 4 == 0:\n"
        "        opt.step()\n",
    )
    INVALID = (
        Example("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "model = DDP(torch.nn.Linear(4, 2).cuda())\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for step, x in enumerate(loader):\n    model(x).sum().backward()\n    if (step + 1) % 4 == 0:\n"
                "        opt.step()\n        opt.zero_grad()\n",
                message="no_sync()"),
        Example("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "model = DDP(torch.nn.Linear(4, 2).cuda())\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "batches = iter(loader)\nfor it in range(1000):\n    for micro in range(8):\n"
                "        model(next(batches)).sum().backward()\n    opt.step()\n    opt.zero_grad()\n",
                message="no_sync()"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not (type(node.func) is cst.Attribute and node.func.attr.value == "backward"):
            return
        source = self.analysis.source or ""
        if "DistributedDataParallel" not in source or _HANDLED.search(source):
            return
        if not self.analysis.targets_gpu or not self.analysis.execution(node).every_iteration:
            return
        if self._steps_less_often(node):
            self.report(node)

    def _steps_less_often(self, backward: cst.Call) -> bool:
        loop = _enclosing_for(self.analysis, backward)
        if loop is None or self.analysis.loops.accumulation_guard(backward):
            return False  # (backward and step under the same guard: each backward is stepped)
        for outer in [loop, *_outer_fors(self.analysis, loop)]:
            for step in self._optimizer_steps(outer):
                step_loop = _enclosing_for(self.analysis, step)
                if step_loop is loop and self.analysis.loops.accumulation_guard(step):
                    return True  # `if (step + 1) % accum == 0: optimizer.step()`
                if step_loop is outer and outer is not loop and _counts(loop):
                    return True  # `for micro in range(accum): ...backward()` then `optimizer.step()`
        return False

    def _optimizer_steps(self, loop: cst.For):
        for node in _walk(loop.body):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    node.func.attr.value == "step" and (
                        self.analysis.kind(node.func.value) is Kind.OPTIMIZER or
                        any(self.analysis.kind(a.value) is Kind.OPTIMIZER for a in node.args)):
                yield node


def _enclosing_for(analysis, node: cst.CSTNode) -> Optional[cst.For]:
    for ancestor in analysis.index.ancestors(node):
        if type(ancestor) is cst.For:
            return ancestor
        if type(ancestor) in (cst.FunctionDef, cst.Lambda):
            return None
    return None


def _outer_fors(analysis, loop: cst.For):
    outer = _enclosing_for(analysis, loop)
    while outer is not None:
        yield outer
        outer = _enclosing_for(analysis, outer)


def _counts(loop: cst.For) -> bool:
    """`for micro in range(n):`: a fixed number of micro-steps."""
    return type(loop.iter) is cst.Call and type(loop.iter.func) is cst.Name and \
        loop.iter.func.value == "range"
