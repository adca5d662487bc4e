"""GPU411 `per-parameter-loop`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.data_facts import _walk
from gpulint.rule import Example, Family, GpuRule

# In-place tensor methods that update a parameter, its `.data` or its `.grad` (an optimizer or EMA step by hand).
_UPDATES = {"mul_", "add_", "sub_", "div_", "lerp_", "copy_", "addcmul_", "addcdiv_", "clamp_", "clip_",
            "mul", "add", "sub"}
_ITERATORS = {"parameters", "named_parameters"}


class PerParameterLoop(GpuRule):
    """A hand-written update that loops over the model's parameters in Python every step.

    ## What it does
    Flags, on every iteration of a training loop, a `for` loop over `model.parameters()` /
    `named_parameters()` (or `zip(...)` of two of them, the EMA shape) whose body updates each parameter in
    place: `p.data.mul_(m).add_(...)`, `p.add_(p.grad, alpha=-lr)`, `p.grad.clamp_(-c, c)`,
    `ema_p.copy_(...)`. A preview rule: it runs when selected (`--select GPU4`).

    ## Why it is slow
    Each in-place call is at least one kernel launch per parameter: a model with 200 parameter tensors runs 200
    to 600 tiny kernels (and as many Python dispatches) per step, each too small to fill the GPU. The
    `torch._foreach_*` functions take the whole list and launch a handful of multi-tensor kernels instead; this
    is how `torch.optim` runs by default on CUDA (GPU MODE lecture 6, "Optimizing Optimizers in PyTorch", in the
    project's guides: the for-loop implementation is the slowest of for-loop, foreach and fused).

    ## Example
    ```python
    for x, y in loader:
        loss_fn(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            for ema_p, p in zip(ema.parameters(), model.parameters()):
                ema_p.mul_(0.999).add_(p, alpha=0.001)
    ```
    Use instead:
    ```python
    ema_params, params = list(ema.parameters()), list(model.parameters())
    for x, y in loader:
        loss_fn(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            torch._foreach_mul_(ema_params, 0.999)
            torch._foreach_add_(ema_params, params, alpha=0.001)
    ```
    Gradient clipping by hand: `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm, foreach=True)` or
    `clip_grad_value_(..., foreach=True)`; SGD or weight decay by hand: a `torch.optim` optimizer
    (`torch.optim.swa_utils.AveragedModel(..., use_buffers=True)` or `get_ema_multi_avg_fn` for EMA).

    ## Fix
    None: the loop body is free-form (conditions on `p.grad is None`, per-name exclusions, buffers copied
    alongside); the foreach shape is written by hand.

    ## Fix safety
    No automatic fix.

    ## When it is fine
    Loops that run once (initialisation, freezing with `requires_grad_(False)`), periodically (an EMA updated
    every N steps, with `--report-periodic` off), or outside the training loop; CPU-only code; and tiny models
    with a few parameter tensors where the launches cost microseconds. Zeroing gradients in such a loop is
    GPU405's finding.
    """

    code = "GPU411"
    name = "per-parameter-loop"
    message = ("parameters updated one by one in a Python loop every step: one kernel per parameter; "
               "`torch._foreach_*` (or `clip_grad_norm_(..., foreach=True)`) updates them all at once")
    family = Family.THROUGHPUT
    added_in = "0.2.0"
    preview = True
    VALID = (
        # once, before training
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor p in model.parameters():\n"
        "    p.data.mul_(0.5)\nfor x in loader:\n    model(x).sum().backward()\n",
        # reading the parameters is not updating them
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor x in loader:\n    model(x).sum().backward()\n"
        "    norms = [p.grad.norm() for p in model.parameters()]\n",
        # zeroing is GPU405's
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor x in loader:\n"
        "    for p in model.parameters():\n        p.grad.zero_()\n    model(x).sum().backward()\n",
    )
    INVALID = (
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nema = torch.nn.Linear(4, 2).cuda()\n"
                "for x in loader:\n    model(x).sum().backward()\n    with torch.no_grad():\n"
                "        for e, p in zip(ema.parameters(), model.parameters()):\n"
                "            e.mul_(0.99).add_(p, alpha=0.01)\n",
                message="torch._foreach_"),
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor x in loader:\n"
                "    model(x).sum().backward()\n    for p in model.parameters():\n"
                "        p.data.add_(p.grad.data, alpha=-0.1)\n",
                message="one kernel per parameter"),
    )

    def visit_For(self, node: cst.For) -> None:
        names = _parameter_names(node)
        if not names or _update(node, names) is None:
            return
        where = self.where(node)
        if where is not None:
            self.report(node, where=where)


def _is_parameters_call(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
        expr.func.attr.value in _ITERATORS


def _parameter_names(loop: cst.For) -> set[str]:
    """The loop variables that stand for one parameter each (`p`, `name, p`, or the pairs of a zip)."""
    it, target = loop.iter, loop.target
    if _is_parameters_call(it):
        assert isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)
        if it.func.attr.value == "named_parameters":
            if isinstance(target, cst.Tuple) and len(target.elements) == 2:
                target = target.elements[1].value
            else:
                return set()
        return {target.value} if isinstance(target, cst.Name) else set()
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "zip" and \
            it.args and all(_is_parameters_call(a.value) and
                            a.value.func.attr.value == "parameters" for a in it.args) and \
            isinstance(target, cst.Tuple):
        return {e.value.value for e in target.elements if isinstance(e.value, cst.Name)}
    return set()


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    """`p` for `p`, `p.data`, `p.grad`, `p.grad.data`, and chained in-place calls on them."""
    while True:
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("data", "grad"):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                expr.func.attr.value in _UPDATES:
            expr = expr.func.value
        else:
            break
    return expr.value if isinstance(expr, cst.Name) else None


def _update(loop: cst.For, names: set[str]) -> Optional[cst.CSTNode]:
    """The first in-place update of a loop variable (or its `.data`/`.grad`) in the loop's body."""
    for node in _walk(loop.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value.endswith("_") and node.func.attr.value in _UPDATES and \
                _root_name(node.func.value) in names:
            return node
        if isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(t, cst.Attribute) and t.attr.value == "data" and _root_name(t.value) in names
                   for t in targets):
                return node
            if isinstance(node, cst.AugAssign) and _root_name(node.target) in names:
                return node  # `p -= lr * p.grad` (under no_grad), `p.grad *= scale`
    return None
