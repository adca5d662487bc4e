"""GPU408 `constructed-in-loop`."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis import Kind
from gpulint.rule import Example, Family, GpuRule

# torch.nn names that are not modules (or cost nothing to build).
_NOT_MODULES = {"Parameter", "Buffer", "ParameterList", "ParameterDict", "Module", "Identity"}


class ConstructedInLoop(GpuRule):
    """A model, layer, optimizer or loss module built anew on every step of a training loop.

    ## What it does
    Flags calls that construct an `nn.*` layer or loss (`nn.CrossEntropyLoss()`, `nn.Linear(...)`), a model
    class of the module (a subclass of `nn.Module`), or a `torch.optim` optimizer, on every iteration of a
    training/eval loop.

    ## Why it is slow
    Each construction runs Python `__init__` code, registers parameters and buffers, and for layers allocates
    and randomly initialises fresh weights (then moves them to the GPU if the loop does): host work and
    transfers on every step that the GPU waits for. An optimizer built each step also loses its state
    (momentum, Adam moments) and a layer built each step trains nothing: it is usually a bug as well as a cost
    (PyTorch "Performance Tuning Guide": keep the CPU side of a step minimal).

    ## Example
    ```python
    for x, y in loader:
        loss = nn.CrossEntropyLoss()(model(x), y)
    ```
    Use instead:
    ```python
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        loss = criterion(model(x), y)
    ```

    ## Fix
    None: hoisting the construction out of the loop changes which object later code sees, and for layers and
    optimizers which state is kept; the right place is a decision.

    ## Fix safety
    No automatic fix.

    ## When it is fine
    Constructions once per epoch or per run (a new model per fold or per hyper-parameter trial, an optimizer
    rebuilt when a phase changes), `nn.Parameter(...)`, and code outside hot loops. An optimizer built in a
    function that first resets the parameters of the model it optimizes (`model.reset_parameters()`, then
    `Adam(model.parameters())`: a model retrained from scratch on each step, as a poisoning attack's inner
    training does) needs its fresh state: building it anew is the point. A network's `forward` that no loop was
    seen to call (a model built from a registry or a configuration, assumed to run on every batch) is not
    reported: building a loss module costs microseconds, worth saying only where a loop is seen to call it.
    """

    code = "GPU408"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "constructed-in-loop"
    message = "module, loss or optimizer constructed every step: build it once, before the loop"
    family = Family.THROUGHPUT
    at_assumed_forwards = False
    added_in = "0.2.0"
    preview = False  # default-on: 100% precise on the labelled repositories (docs/rules/preview-decisions.md)
    VALID = (
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\ncriterion = torch.nn.MSELoss()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    criterion(model(x), x).backward()\n    opt.step()\n",
        "import torch\nfor trial in range(3):\n    model = torch.nn.Linear(4, 2).cuda()\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
        "def attack_step(x, y):\n    model.reset_parameters()\n"
        "    opt = torch.optim.Adam(model.parameters(), lr=0.01)\n"
        "    for _ in range(10):\n        torch.nn.functional.mse_loss(model(x), y).backward()\n        opt.step()\n"
        "for x, y in loader:\n    attack_step(x, y)\n",
    )
    INVALID = (
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
                "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for x, y in loader:\n    torch.nn.CrossEntropyLoss()(model(x), y).backward()\n    opt.step()\n",
                message="build it once"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) not in (cst.Name, cst.Attribute) or not self._constructs(node):
            return
        if self._retrains_from_scratch(node):
            return
        where = self.where(node)
        if where is not None:
            self.report(node, where=where)

    def _retrains_from_scratch(self, node: cst.Call) -> bool:
        """`opt = Adam(model.parameters(), ...)` in a function that calls `model.reset_parameters()`: the optimizer
        belongs to a model trained anew from its reset, so its state must start fresh too."""
        if "reset_parameters()" not in self.analysis.source:  # the code generated below is a piece of it
            return False
        q = self.analysis.qualified(node.func) or ""
        if not q.startswith("torch.optim.") or not node.args:
            return False
        first = node.args[0].value
        if type(first) is not cst.Call or type(first.func) is not cst.Attribute or \
                first.func.attr.value != "parameters":
            return False
        model = self.analysis.code(first.func.value)
        function = next((a for a in self.analysis.index.ancestors(node) if type(a) is cst.FunctionDef), None)
        if function is None:
            return False
        return f"{model}.reset_parameters()" in self.analysis.code(function)

    def _constructs(self, node: cst.Call) -> bool:
        q = self.analysis.qualified(node.func) or ""
        for prefix in ("torch.nn.", "torch.optim."):
            if q.startswith(prefix):
                rest = q[len(prefix):]
                return "." not in rest and rest[:1].isupper() and rest not in _NOT_MODULES
        return type(node.func) is cst.Name and self.analysis.kind(node.func) is Kind.MODULE_CLASS
