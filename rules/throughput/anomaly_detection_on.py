"""GPU422 `anomaly-detection-on`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.training import training_facts
from gpulint.fixes import statement_removal
from gpulint.rule import Example, Family, FixAvailability, FixSafety, GpuRule, Safety

_SWITCHES = frozenset({"torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly"})
_CONTEXTS = frozenset({"torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly"})
_HEAD = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
_STEP = "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n"


class AnomalyDetectionOn(GpuRule):
    """Autograd's anomaly detection left on for a training run.

    ## What it does
    Flags `torch.autograd.set_detect_anomaly(True)` run unconditionally (at the top of a script, at the start of
    `main()`: not under an `if`, other than `if __name__ == "__main__":`), and `with torch.autograd.detect_anomaly():`
    (or `with torch.autograd.set_detect_anomaly(True):`) around a training step, in a module that trains on a GPU
    (a training loop over batches that runs backward, in a module that moves something to a device).

    ## Why it is slow
    Anomaly mode is a debugging tool. In every backward pass the autograd engine checks each output of every
    node for NaN and reads the answer on the host (`isnan(output)._is_any_true().item()` in
    `torch/csrc/autograd/engine.cpp`): one device-to-host sync per node, hundreds per step, so the CPU can never
    run ahead of the GPU. Every forward operation also records the Python traceback that created it. PyTorch's
    documentation says: "This mode should be enabled only for debugging as the different tests will slow down
    your program execution" (`torch.autograd.detect_anomaly`). Measured on an H200 (docs/benchmarks.md,
    thirty-seventh landing): a small convolutional network's step ran 2.9x slower with anomaly mode on, a 6-layer
    transformer encoder's 5.0x.

    ## Example
    ```python
    import torch
    torch.autograd.set_detect_anomaly(True)

    model = Net().cuda()
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        ...
    ```
    Use instead: turn it on only while debugging (`if args.debug: torch.autograd.set_detect_anomaly(True)`),
    or remove it.

    ## Fix
    Removes the `torch.autograd.set_detect_anomaly(True)` statement (a lone statement of its block becomes
    `pass`). The `with` form is reported without a fix.

    ## Fix safety
    Unsafe: a NaN or inf produced in backward no longer raises an error naming the forward operation that made
    it; the run goes on with non-finite gradients (or fails later, elsewhere).

    ## When it is fine
    Anomaly mode turned on behind a flag or a condition (`if args.detect_anomaly:`, `set_detect_anomaly(args.debug)`),
    turned off (`set_detect_anomaly(False)`, `check_nan=False` is still reported: the tracebacks remain), in tests,
    and in modules that train nothing on a GPU (a CPU-only debugging script).
    """

    code = "GPU422"
    name = "anomaly-detection-on"
    message = ("autograd anomaly detection is on for training: every backward reads a NaN check of each node's "
               "output on the host (a sync per node) and every forward records a traceback; use it only to debug")
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "a NaN made in backward no longer raises at the forward op that made it")
    added_in = "0.2.0"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py: the module trains in a loop of its own
    VALID = (
        # behind a debugging flag
        _HEAD + "if args.debug:\n    torch.autograd.set_detect_anomaly(True)\n" + _STEP,
        # the flag's value decides
        _HEAD + "torch.autograd.set_detect_anomaly(args.detect_anomaly)\n" + _STEP,
        # turned off
        _HEAD + "torch.autograd.set_detect_anomaly(False)\n" + _STEP,
        # a CPU-only script
        "import torch\nmodel = torch.nn.Linear(2, 2)\ntorch.autograd.set_detect_anomaly(True)\n" + _STEP,
        # no training in the module
        "import torch\ntorch.autograd.set_detect_anomaly(True)\nmodel = torch.nn.Linear(2, 2).cuda()\n",
    )
    INVALID = (
        Example("import torch\ntorch.autograd.set_detect_anomaly(True)\nmodel = torch.nn.Linear(2, 2).cuda()\n" + _STEP,
                message="autograd anomaly detection is on for training",
                fixed="import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n" + _STEP),
        Example(_HEAD + "def main():\n    torch.autograd.set_detect_anomaly(mode=True)\n    for x in loader:\n"
                "        loss = model(x).sum()\n        loss.backward()\n\n"
                "if __name__ == \"__main__\":\n    main()\n",
                message="autograd anomaly detection is on for training",
                fixed=_HEAD + "def main():\n    for x in loader:\n"
                      "        loss = model(x).sum()\n        loss.backward()\n\n"
                      "if __name__ == \"__main__\":\n    main()\n"),
        Example(_HEAD + "for x in loader:\n    with torch.autograd.detect_anomaly():\n"
                "        loss = model(x).sum()\n        loss.backward()\n",
                message="autograd anomaly detection is on for training"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.analysis.qualified(node.func)
        if qualified in _SWITCHES:
            if not _turns_on(node):
                return
            parent = self.analysis.parent(node)
            if type(parent) is cst.WithItem:
                self._report_context(node, parent)
            elif type(parent) is cst.Expr and self._unconditional(node) and self._trains_on_gpu():
                changes = statement_removal(self.analysis, node)
                fix = self.fix("Remove `set_detect_anomaly(True)`", changes, safe=False) if changes else None
                self.report(node, fix=fix)
        elif qualified in _CONTEXTS:
            parent = self.analysis.parent(node)
            if type(parent) is cst.WithItem:
                self._report_context(node, parent)

    def _report_context(self, node: cst.Call, item: cst.WithItem) -> None:
        """`with torch.autograd.detect_anomaly():` whose body trains (runs backward every step, or holds the
        training loop)."""
        statement = self.analysis.parent(item)
        if type(statement) is not cst.With or not self._trains_on_gpu():
            return
        loops = training_facts(self.analysis).training_loops()
        index = self.analysis.index
        in_step = any(index.is_ancestor_or_self(loop.body, statement) for loop in loops) and \
            _runs_backward(statement.body)
        if in_step or self._holds_training(statement.body, loops, 0):
            self.report(node)

    def _holds_training(self, body: cst.CSTNode, loops: list, depth: int) -> bool:
        """`body` holds a training loop of the module, or calls a function of the module that does (two calls
        deep: `with detect_anomaly(): for epoch in ...: train_epoch()`)."""
        index = self.analysis.index
        if any(index.is_ancestor_or_self(body, loop) for loop in loops):
            return True
        if depth == 2:
            return False
        local = self.analysis.loops.local_function
        return any(fn is not None and self._holds_training(fn.body, loops, depth + 1)
                   for fn in (local(call) for call in _calls(body)))

    def _unconditional(self, node: cst.Call) -> bool:
        """Not under an `if` (other than `if __name__ == "__main__":`), a `try`'s handler, a loop or a `with`."""
        for parent in self.analysis.index.ancestors(node):
            if type(parent) is cst.If:
                test = self.analysis.code(parent.test)
                if not ("__name__" in test and "__main__" in test):
                    return False
            if type(parent) in (cst.ExceptHandler, cst.For, cst.While, cst.Lambda, cst.ClassDef, cst.IfExp):
                return False
        return True

    def _trains_on_gpu(self) -> bool:
        """The module trains in a loop of its own, names a device, and is not a test (a small model pays the per-node
        check as much as a big one: no size threshold)."""
        from gpulint.analysis.test_code import is_test_path, program_named_like_a_test

        path = self.analysis.path
        if path is not None and is_test_path(path) and not program_named_like_a_test(self.analysis.module, path):
            return False
        return training_facts(self.analysis).trains_on_cuda_here() and self.analysis.targets_gpu


def _turns_on(call: cst.Call) -> bool:
    """`set_detect_anomaly(True)` / `(mode=True)`: a literal True as the mode."""
    mode: Optional[cst.BaseExpression] = None
    for arg in call.args:
        if arg.keyword is None and not arg.star and mode is None:
            mode = arg.value
        elif arg.keyword is not None and arg.keyword.value == "mode":
            mode = arg.value
    return type(mode) is cst.Name and mode.value == "True"


def _calls(body: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    body.visit(_Calls())
    return found


def _runs_backward(body: cst.CSTNode) -> bool:
    return any(type(c.func) is cst.Attribute and c.func.attr.value == "backward" for c in _calls(body))
