"""GPU106 `tensor-in-control-flow`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.analysis.host_reads import nan_check


class TensorInControlFlow(GpuRule):
    """Python control flow on a tensor's value (`if loss > x:`, `while t.any():`, `assert t`).

    ## What it does
    Flags `if`, `elif`, `while`, `assert`, conditional expressions, a comprehension's `if` filter and
    `and`/`or`/`not` whose condition is a tensor, on every iteration of a training/eval loop; also a chained
    comparison with a tensor before its last operator (`S_min <= t_cur <= S_max`: Python calls `bool()` on
    `S_min <= t_cur` to decide whether to go on).

    ## Why it is slow
    Python must know the value to pick a branch, so it calls `bool()` on the tensor: a blocking copy to the host
    that waits for the GPU to finish all queued work.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        if loss > best:
            best = loss
    ```
    Keep the decision on the device: `best = torch.minimum(best, loss.detach())`, or decide periodically.

    ## Fix
    None: the branch needs a host value; restructure with `torch.where`, `torch.minimum`, or a periodic check.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic checks, early-stopping decisions once per epoch, conditions on Python numbers.
    NaN/Inf checks have their own rule with a fix (GPU108).
    """

    code = "GPU106"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "tensor-in-control-flow"
    message = "branching on a tensor's value calls `bool()` on it every iteration: the CPU waits for the GPU"
    family = Family.HOST_SYNC
    VALID = [TRAIN_STEP + "if loss > 0:\n    pass\n",
             # torch's settings and flags are not tensors
             "import torch\nfor x in loader:\n    dtype = torch.get_autocast_gpu_dtype()\n"
             "    if dtype == torch.bfloat16 and torch.is_autocast_cache_enabled():\n        x = x.cuda()\n"
             "    model(x).sum().backward()\n",
             # a chained comparison of a batch object's counts (PyG's `num_graphs`, Python ints)
             "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nfor batch in loader:\n    batch = batch.cuda()\n"
             "    assert batch.num_graphs == len(batch) == 2\n    model(batch.x).sum().backward()\n",
             # a comprehension filtering a Python list: host values
             TRAIN_STEP + "    sizes = [3, 0, 2]\n    kept = [i for i, n in enumerate(sizes) if n > 0]\n"]
    INVALID = [
        Example(TRAIN_STEP + "    if loss > 0:\n        pass\n",
                message="branching on a tensor's value calls `bool()` on it every ite"),
        # a chained comparison decides on `0 < loss` before it compares `loss < 10`
        Example(TRAIN_STEP + "    scale = 2 if 0 < loss < 10 else 1\n",
                message="branching on a tensor's value calls `bool()` on it every ite"),
        # a comprehension over a device tensor filters on each element's value: one `bool()` per element
        Example(TRAIN_STEP + "    picked = [i for i, v in enumerate(loss.view(-1)) if v > 0]\n",
                message="branching on a tensor's value calls `bool()` on it every ite"),
    ]

    def _check(self, test: cst.BaseExpression) -> None:
        if not self.analysis.is_device_tensor(test) and not self._truthiness_of_tensor(test):
            return
        if nan_check(self.analysis, test) is not None:
            return
        where = self.where(test)
        if where:
            self.report(test, where=where)

    def _truthiness_of_tensor(self, test: cst.BaseExpression) -> bool:
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            return self.analysis.is_device_tensor(test.expression)
        if type(test) is cst.BooleanOperation:
            return self.analysis.is_device_tensor(test.left) or self._truthiness_of_tensor(test.left)
        return False

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        # `[i for i, w in enumerate(next_words) if w != end]`: the filter calls `bool()` on each element's test
        self._check(node.test)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `lo <= t <= hi` is `(lo <= t) and (t <= hi)`: every link but the last goes through `bool()`
        if len(node.comparisons) < 2 or any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn)
                                            for c in node.comparisons[:-1]):
            return
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        # not an attribute of a batch object (`batch.num_graphs == len(batch) == 2`: PyG's counts are Python ints)
        if not any(type(o) is not cst.Attribute and self.analysis.is_device_tensor(o) for o in operands[:-1]):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)
