"""GPU105 `tensor-to-python-scalar`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.analysis.host_reads import inside_nan_check
from gpulint.analysis.project import SINK_MATH


class TensorToPythonScalar(GpuRule):
    """`float()`, `int()` or `bool()` of a tensor every iteration.

    ## What it does
    Flags `float(t)`, `int(t)` and `bool(t)` where `t` is a tensor, on every iteration of a training/eval loop;
    also `math.isnan(t)`, `math.isinf(t)`, `math.isfinite(t)` and the other one-number `math` functions, which
    convert a tensor with `float()` first (tacotron2's `math.isnan(grad_norm)` of `clip_grad_norm_`'s result).

    ## Why it is slow
    Converting a tensor to a Python number reads its value on the host: the same blocking sync as `.item()`.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        history.append(float(loss))
    ```
    Keep the tensor (`history.append(loss.detach())`) and convert once when you report.

    ## Fix
    None in general; `running += float(loss)` is rewritten by GPU302.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging, end-of-epoch metrics, numbers that are not tensors (only names known to be tensors are
    flagged).
    """

    code = "GPU105"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "tensor-to-python-scalar"
    message = "`{fn}()` of a tensor every iteration blocks the CPU until the GPU catches up"
    family = Family.HOST_SYNC
    defers_to = ("GPU302", "GPU303")  # `total += loss.item()`: their finding carries the fix
    VALID = [TRAIN_STEP + "value = float(loss)\n"]
    INVALID = [
        Example(TRAIN_STEP + "    value = float(loss)\n",
                message="`float()` of a tensor every iteration blocks the CPU until t"),
        Example("import math\n" + TRAIN_STEP + "    skip = math.isnan(loss)\n",
                message="`math.isnan()` of a tensor every iteration"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) is cst.Name and node.func.value in ("float", "int", "bool"):
            fn = node.func.value
        elif type(node.func) is cst.Attribute and (self.analysis.qualified(node.func) or "") in SINK_MATH:
            fn = self.analysis.qualified(node.func)
        else:
            return
        if len(node.args) != 1 or node.args[0].keyword is not None:
            return
        if not self.analysis.is_device_tensor(node.args[0].value) or inside_nan_check(self, node):
            return
        where = self.where(node)
        if where:
            self.report(node, self.message.format(fn=fn), where=where)
