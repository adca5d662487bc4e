"""GPU414 `graph-break-in-compiled`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.compiled import compiled_functions
from gpulint.rule import Example, Family, GpuRule

_HOST_READS = {"item": "`.item()`", "tolist": "`.tolist()`", "numpy": "`.numpy()`"}
_CASTS = {"bool", "int", "float"}
# Tensor reductions: `if y.sum() > 0:` / `if mask.any():` tests a value computed on the device.
_REDUCTIONS = {"sum", "mean", "any", "all", "norm", "amax", "amin", "std", "var", "prod"}


class GraphBreakInCompiled(GpuRule):
    """A host read, a `print` or a branch on a tensor's value inside a function run by `torch.compile`.

    ## What it does
    Flags, inside a function decorated with `@torch.compile`, passed to `torch.compile(fn)`, or the `forward`
    of a model class of the same module compiled with `torch.compile(model)` / `model.compile()`:
    `.item()`, `.tolist()`, `.numpy()`, `print(...)`, `bool()`/`int()`/`float()` of a tensor, and `if` /
    `while` tests on a tensor's value. A preview rule: it runs when selected (`--select GPU4`).

    ## Why it is slow
    TorchDynamo cannot trace any of these into the graph: it stops the graph there, runs the line in plain
    Python, and starts a new graph after it (a *graph break*, listed by `torch._dynamo.explain(fn)(*args)` or
    `TORCH_LOGS=graph_breaks`). Every call then runs two or more compiled graphs with eager Python between
    them, loses the fusions across the break, and for `.item()`/`.tolist()`/a branch on a value waits for the
    GPU to finish (a host-device sync) every call. A data-dependent branch also compiles one graph per
    outcome (PyTorch "torch.compile troubleshooting" and "Dynamo deep dive" docs).

    ## Example
    ```python
    @torch.compile
    def step(x, w):
        y = x @ w
        if y.sum() > 0:
            y = y * 2
        return y
    ```
    Use instead:
    ```python
    @torch.compile
    def step(x, w):
        y = x @ w
        return torch.where(y.sum() > 0, y * 2, y)
    ```
    Print or log outside the compiled function (return the tensor and read it periodically).

    ## Fix
    None: the replacement (`torch.where`, `torch.cond`, returning the value) depends on what the code does.

    ## Fix safety
    No automatic fix.

    ## When it is fine
    `.item()` with `torch._dynamo.config.capture_scalar_outputs = True` (the module setting it keeps that
    finding silent), code compiled once for a single call, debugging prints you are about to remove, and
    branches on Python values (shapes, flags), which Dynamo specialises on without breaking. Functions that
    are not visibly compiled in this module are not checked.
    """

    code = "GPU414"
    name = "graph-break-in-compiled"
    message = "graph break in a function run by `torch.compile`: eager Python between two graphs, and a sync, " \
              "every call"
    family = Family.THROUGHPUT
    added_in = "0.2.0"
    preview = True
    VALID = (
        "import torch\n@torch.compile\ndef f(x):\n    return (x * 2).sum()\nloss = f(torch.ones(2).cuda())\n"
        "print(loss.item())\n",
        "import torch\ndef f(x):\n    print(x)\n    return x.sum().item()\nf(torch.ones(2).cuda())\n",
        "import torch\n@torch.compile\ndef f(x, flag: bool):\n    if flag:\n        x = x * 2\n    return x\n"
        "f(torch.ones(2, device='cuda'), True)\n",
    )
    INVALID = (
        Example("import torch\n@torch.compile\ndef f(x):\n    y = (x * 2).sum()\n    print(y.item())\n    return y\n"
                "f(torch.ones(2).cuda())\n",
                message="graph break", count=2),
        Example("import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n"
                "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
                "    def forward(self, x):\n        y = self.fc(x)\n        if y.sum() > 0:\n            y = y * 2\n"
                "        return y\n"
                "model = torch.compile(Net().cuda())\n",
                message="`if` on a tensor's value"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        what = self._break(node)
        if what is not None:
            self._report(node, what)

    def visit_If(self, node: cst.If) -> None:
        self._test(node, node.test, "`if`")

    def visit_While(self, node: cst.While) -> None:
        self._test(node, node.test, "`while`")

    def _test(self, node: cst.CSTNode, test: cst.BaseExpression, keyword: str) -> None:
        if self.analysis.is_bool_tensor(test) or self.analysis.is_tensor(test) or _reduction_test(test):
            self._report(node, f"{keyword} on a tensor's value")

    def _break(self, call: cst.Call) -> Optional[str]:
        func = call.func
        if type(func) is cst.Attribute and func.attr.value in _HOST_READS and not call.args:
            if func.attr.value == "item" and "capture_scalar_outputs" in (self.analysis.source or ""):
                return None
            return _HOST_READS[func.attr.value]
        if type(func) is cst.Name and self.analysis.qualified(func) in (None, func.value):
            if func.value == "print" and call.args:
                return "`print`"
            if func.value in _CASTS and len(call.args) == 1 and self._tensor_value(call.args[0].value):
                return f"`{func.value}()` of a tensor"
        return None

    def _tensor_value(self, expr: cst.BaseExpression) -> bool:
        if self.analysis.is_tensor(expr) or _reduction_test(expr):
            return True
        if type(expr) is cst.Name:
            bindings = self.analysis.index.visible_bindings(expr)
            return bool(bindings) and all(b.kind == "assign" and b.index is None and b.value is not None and
                                          _reduction_test(b.value) for b in bindings)
        return False

    def _report(self, node: cst.CSTNode, what: str) -> None:
        if not self.analysis.targets_gpu:
            return
        fn = compiled_functions(self.analysis).compiled_function(node)
        if fn is not None:
            self.report(node, f"{what} in `{fn.name.value}`, which runs under `torch.compile`: a graph break "
                              "(eager Python between two graphs, and a sync) every call")


def _reduction_test(test: cst.BaseExpression) -> bool:
    """`x.any()`, `not x.all()`, `y.sum() > 0`: a test whose value is a tensor reduction."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _reduction_test(test.expression)
    if type(test) is cst.Comparison:
        return any(_reduction_test(side) for side in (test.left, *(c.comparator for c in test.comparisons)))
    return type(test) is cst.Call and type(test.func) is cst.Attribute and \
        test.func.attr.value in _REDUCTIONS and not test.args
