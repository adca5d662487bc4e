"""GPU405 `zero-grad-not-set-to-none`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.data_facts import _walk
from gpulint.rule import Example, Family, FixAvailability, FixSafety, GpuRule, Safety
from gpulint.syntax import argument


class ZeroGradNotSetToNone(GpuRule):
    """Gradients zeroed by writing zeros every step instead of being set to `None`.

    ## What it does
    Flags, on every iteration of a training loop, `optimizer.zero_grad(set_to_none=False)` /
    `model.zero_grad(set_to_none=False)`, and hand-written loops over `model.parameters()` (or a sequence named
    for parameters: `model_params`, `self.master_params`, as an fp16 helper's `zero_grad(model_params)` takes) that run
    `p.grad.zero_()` (or `p.grad.data.zero_()`) or assign `p.grad = torch.zeros_like(p)`.

    ## Why it is slow
    Writing zeros is one memset kernel per parameter (or one more allocation per parameter for `zeros_like`),
    and the next backward then reads those zeros to add the new gradient into them. With `set_to_none=True`
    (the default since PyTorch 2.0) the gradients are dropped and backward writes fresh ones: no memset, less
    memory traffic (PyTorch "Performance Tuning Guide", *Use parameter.grad = None instead of
    model.zero_grad()*; TorchTidy's `zero_grad` pattern).

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        optimizer.step()
    ```
    Use instead:
    ```python
    for x, y in loader:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        optimizer.step()
    ```

    ## Fix
    For `zero_grad(set_to_none=False)`: writes `set_to_none=True`. Hand-written zeroing loops are reported
    without a fix (replace them with `optimizer.zero_grad()`; which optimizer owns the parameters is not
    visible in the loop).

    ## Fix safety
    Unsafe, although the values are the same whenever every parameter receives a gradient in every step
    (tests/test_throughput_rules.py runs this rule's example both ways on CPU and compares the weights bit for
    bit). Two things can differ, and neither is visible in the source: code that reads `.grad` between the
    zeroing and `backward()` (or of parameters backward does not reach) sees `None` instead of zeros, and
    `torch.optim` optimizers skip a parameter whose gradient is `None` while they still apply momentum and
    weight decay to one whose gradient is zero (PyTorch `Optimizer.zero_grad` docs). Writing
    `set_to_none=False` is usually the deliberate choice of one of these behaviours: check before applying.

    ## When it is fine
    `zero_grad()` with no argument (already `set_to_none=True`), zeroing outside the training loop or
    periodically (gradient accumulation every N steps), and code that needs zero gradients for parameters
    backward does not reach (some optimizers' momentum on unused parameters).
    """

    code = "GPU405"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "zero-grad-not-set-to-none"
    message = "gradients zeroed with memsets every step; `zero_grad(set_to_none=True)` drops them instead"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "`.grad` reads None instead of zeros, and optimizers skip parameters "
                                          "without a gradient where zeros still got momentum and weight decay")
    added_in = "0.2.0"
    preview = False  # default-on: 100% precise on the labelled repositories (docs/rules/preview-decisions.md)
    VALID = (
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n",
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "opt.zero_grad(set_to_none=False)\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
    )
    INVALID = (
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
                "opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n"
                "for x in loader:\n    opt.zero_grad(set_to_none=False)\n    model(x).sum().backward()\n"
                "    opt.step()\n",
                message="set_to_none=True",
                fixed="import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
                      "opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n"
                      "for x in loader:\n    opt.zero_grad(set_to_none=True)\n    model(x).sum().backward()\n"
                      "    opt.step()\n"),
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
                "for x in loader:\n    for p in model.parameters():\n        p.grad.zero_()\n"
                "    model(x).sum().backward()\n",
                message="zeroed", fixed=None),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) is not cst.Attribute or node.func.attr.value != "zero_grad":
            return
        arg = argument(node, "set_to_none", 0)
        if arg is None or not (type(arg.value) is cst.Name and arg.value.value == "False"):
            return
        where = self.where(node)
        if where is not None and not self.analysis.loops.accumulation_guard(node):
            fix = self.fix("Write `set_to_none=True`", {arg.value: cst.Name("True")}, safe=False)
            self.report(node, where=where, fix=fix)

    def visit_For(self, node: cst.For) -> None:
        if not _over_parameters(node.iter) or type(node.target) is not cst.Name:
            return
        zeroing = _zeroing(node, node.target.value)
        if zeroing is None:
            return
        where = self.where(node)
        if where is not None:
            self.report(node, "gradients zeroed by a loop over the parameters every step: one memset per "
                              "parameter; `optimizer.zero_grad()` sets them to None", where=where)


def _over_parameters(iterable: cst.BaseExpression) -> bool:
    """`model.parameters()`, or a sequence named for parameters (`model_params`, `self.master_params`,
    `list(params)`; not `num_params`): an fp16 helper's `def zero_grad(model_params): for p in model_params:`."""
    if type(iterable) is cst.Call and type(iterable.func) is cst.Name and iterable.func.value in ("list", "tuple") \
            and len(iterable.args) == 1:
        iterable = iterable.args[0].value
    if type(iterable) is cst.Call:
        return type(iterable.func) is cst.Attribute and iterable.func.attr.value == "parameters"
    name = iterable.value if type(iterable) is cst.Name else (
        iterable.attr.value if type(iterable) is cst.Attribute else "")
    lowered = name.lower()
    return lowered.endswith(("params", "parameters")) and not lowered.startswith("num_")


def _zeroing(loop: cst.For, var: str) -> Optional[cst.CSTNode]:
    """The `p.grad.zero_()` / `p.grad.data.zero_()` / `p.grad = torch.zeros_like(p)` in the loop's body."""
    for node in _walk(loop.body):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "zero_":
            if _is_grad_of(node.func.value, var):
                return node
        if type(node) is cst.Assign and any(_is_grad_of(t.target, var) for t in node.targets) and \
                type(node.value) is cst.Call and type(node.value.func) is cst.Attribute and \
                node.value.func.attr.value == "zeros_like":
            return node
    return None


def _is_grad_of(expr: cst.BaseExpression, var: str) -> bool:
    if type(expr) is cst.Attribute and expr.attr.value == "data":
        expr = expr.value
    return type(expr) is cst.Attribute and expr.attr.value == "grad" and \
        type(expr.value) is cst.Name and expr.value.value == var


