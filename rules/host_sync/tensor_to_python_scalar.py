"""GPU105 `tensor-to-python-scalar`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.analysis.host_reads import inside_nan_check, int_reads
from gpulint.analysis.project import SINK_MATH


class TensorToPythonScalar(GpuRule):
    """`float()`, `int()` or `bool()` of a tensor every iteration.

    ## What it does
    Flags `float(t)`, `int(t)` and `bool(t)` where `t` is a tensor, on every iteration of a training/eval loop;
    also `math.isnan(t)`, `math.isinf(t)`, `math.isfinite(t)` and the other one-number `math` functions, which
    convert a tensor with `float()` first (tacotron2's `math.isnan(grad_norm)` of `clip_grad_norm_`'s result).
    Also the places that convert a device tensor to a Python number without saying so: a slice bound
    (`x[:, :self.r]`, `x[i, start:end]` with `start` an element of a device tensor), an argument of `range()`,
    a size or bound given to a torch factory (`torch.arange(lengths.max())`, `torch.zeros(n, d)`), an argument
    of the builtin `max`/`min` given two or more values (`max(0, limit - lengths.max())` compares on the host),
    the `k` of `topk`/`kthvalue` (`torch.topk(cost[i], k=ks[i])`), the bounds of `torch.randint` and the
    amounts of `F.pad`'s `pad` list, the index of a Python list or tuple (`self.label_name[pred.argmax()]`,
    where every store of `self.label_name` is a list: a literal, a comprehension, `f.readlines()`): such a place
    takes a 0-dim tensor only, and converts it with `__index__`; and `t in (a, b)` / `t in ids` (each `==` tested with `bool()`; a set or a dict hashes instead).
    What a project `torch.autograd.Function` hands back is a tensor: `float(AllReduce.apply(loss))` reads it.

    ## Why it is slow
    Converting a tensor to a Python number reads its value on the host: the same blocking sync as `.item()`.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        history.append(float(loss))
    ```
    Keep the tensor (`history.append(loss.detach())`) and convert once when you report. For sizes and bounds,
    compute them on the host (`lengths.tolist()` once per batch, a Python int kept beside a buffer), or keep the
    shape static (a mask instead of a slice of data-dependent length).

    ## Fix
    None in general; `running += float(loss)` is rewritten by GPU302.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging, end-of-epoch metrics, numbers that are not tensors (only names known to be tensors are
    flagged), tensors in host memory used as bounds (`lengths = batch["lengths"]` never moved: no wait; the
    elements of a CPU `torch.randint(...)` iterated in a comprehension, `[data[i:i + n] for i in ix]`), and
    keys of a mapping tested with `in` (`for key in batch: assert key not in end_points`, where the function
    reads `batch["points"]`: iterating a dict yields its keys, and a dict hashes).
    """

    code = "GPU105"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "tensor-to-python-scalar"
    message = "`{fn}()` of a tensor every iteration blocks the CPU until the GPU catches up"
    implicit_message = ("{what} reads a device tensor as a Python value every iteration (`__index__`/`bool()`): "
                        "the CPU waits for the GPU")
    family = Family.HOST_SYNC
    defers_to = ("GPU302", "GPU303")  # `total += loss.item()`: their finding carries the fix
    VALID = [TRAIN_STEP + "value = float(loss)\n"]
    INVALID = [
        Example(TRAIN_STEP + "    value = float(loss)\n",
                message="`float()` of a tensor every iteration blocks the CPU until t"),
        Example("import math\n" + TRAIN_STEP + "    skip = math.isnan(loss)\n",
                message="`math.isnan()` of a tensor every iteration"),
        # a slice bound read from a device tensor (a buffer kept on the GPU)
        Example(TRAIN_STEP + "    r = torch.tensor(2, device='cuda')\n    head = x[:, :r]\n",
                message="A slice bound reads a device tensor as a Python value"),
        Example(TRAIN_STEP + "    ks = torch.clamp(loss.detach().int(), min=1)\n"
                "    _, idx = torch.topk(x.flatten(), k=ks)\n",
                message="The `k` of `topk` reads a device tensor"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        self._implicit(node)
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

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._implicit(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._implicit(node)

    def _implicit(self, node: cst.CSTNode) -> None:
        """A device tensor taken as a Python number where the code never converts it (analysis/host_reads)."""
        for what, tensor in int_reads(self.analysis, node):
            where = self.where(tensor)
            if where:
                self.report(tensor, self.implicit_message.format(what=what[0].upper() + what[1:]), where=where)
