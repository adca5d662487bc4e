"""GPU406 `conv-bias-before-batchnorm`."""

from __future__ import annotations

import re
from typing import Iterator, Optional

import libcst as cst

from gpulint.analysis.data_facts import append_keyword, data_facts, has_star_args
from gpulint.analysis.test_code import is_test_path
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety
from gpulint.syntax import argument, positional
from gpulint.analysis.node_types import of_types

CONVS = {f"torch.nn.Conv{d}d" for d in (1, 2, 3)} | {f"torch.nn.modules.conv.Conv{d}d" for d in (1, 2, 3)}
NORMS = {f"torch.nn.BatchNorm{d}d" for d in (1, 2, 3)} | {"torch.nn.SyncBatchNorm"}
SEQUENTIAL = {"torch.nn.Sequential", "torch.nn.modules.container.Sequential"}


class ConvBiasBeforeBatchNorm(Rule):
    """A convolution with a bias feeding straight into BatchNorm, which subtracts that bias again.

    ## What it does
    Flags `nn.Conv1d/2d/3d(...)` without `bias=False` that is immediately followed by `nn.BatchNorm1d/2d/3d`
    (or `nn.SyncBatchNorm`): consecutive arguments of `nn.Sequential(...)`, or a `self.conv` whose only use is
    `self.bn(self.conv(x))` where `self.bn` is a BatchNorm.

    ## Why it is slow
    BatchNorm subtracts the per-channel mean of its input, and a conv bias is a per-channel constant: it is
    removed exactly, so its forward add, its gradient reduction in backward, its optimizer update and its
    memory are all spent on a parameter that cannot change the output (PyTorch "Performance Tuning Guide",
    *Disable bias for convolutions directly followed by a batch norm*; TorchTidy's "conv bias followed by
    BatchNorm" pattern).

    ## Example
    ```python
    block = nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU())
    ```
    Use instead:
    ```python
    block = nn.Sequential(nn.Conv2d(64, 128, 3, padding=1, bias=False), nn.BatchNorm2d(128), nn.ReLU())
    ```

    ## Fix
    Adds `bias=False` (or turns `bias=True` into `bias=False`).

    ## Fix safety
    Unsafe: the model loses parameters, so existing checkpoints no longer load with `strict=True`, parameter
    counts and optimizer param groups change, and the initial random state drawn for later layers shifts.
    The function the trained network computes is the same.

    ## When it is fine
    A conv whose output is also used without the BatchNorm (a residual branch, a shared layer), GroupNorm or
    LayerNorm after the conv (the same argument applies, but this rule does not judge it), and models whose
    checkpoints must keep loading: suppress with `# noqa: GPU406`. Test modules (`test_*.py`, `tests/`) are not
    reported: a test's toy network is not trained. On by default: each of its 38 findings outside tests in 30
    repositories was a bias that BatchNorm cancels (docs/rules/preview-decisions.md, fourth measurement).
    """

    code = "GPU406"
    name = "conv-bias-before-batchnorm"
    message = "conv bias directly followed by BatchNorm is cancelled by the normalisation: pass `bias=False`"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.ALWAYS
    fix_safety = FixSafety(Safety.UNSAFE, "removes parameters: checkpoints and parameter groups change")
    added_in = "0.2.0"
    preview = False  # default-on: precise on real code (docs/rules/preview-decisions.md, fourth measurement)
    # Every finding needs a BatchNorm class named in the text (an import, an attribute or an alias of it):
    # gpulint/prefilter.py skips the other files.
    needs_text = re.compile(r"BatchNorm")
    reports_in = ("conv-and-batchnorm-calls",)  # gpulint/prefilter.py: a conv call and a batch-norm call
    VALID = (
        "import torch.nn as nn\nblock = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))\n",
        "import torch.nn as nn\nblock = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.BatchNorm2d(8))\n",
        "import torch.nn as nn\nblock = nn.Sequential(nn.Conv2d(3, 8, 3), nn.GroupNorm(2, 8))\n",
    )
    INVALID = (
        Example("import torch.nn as nn\nblock = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())\n",
                message="bias=False",
                fixed="import torch.nn as nn\n"
                      "block = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU())\n"),
        Example("import torch.nn as nn\nblock = nn.Sequential(nn.Conv2d(3, 8, 3, bias=True), nn.BatchNorm2d(8))\n",
                fixed="import torch.nn as nn\n"
                      "block = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self._in_tests():
            return
        for conv in self._convs_before_norm(node):
            if has_star_args(conv):
                continue
            bias = argument(conv, "bias", 7)
            if bias is None:
                change = lambda updated: append_keyword(updated, "bias", cst.Name("False"))  # noqa: E731
                self.report(conv, fix=self.fix("Add `bias=False`", {conv: change}, safe=False))
            elif type(bias.value) is cst.Name and bias.value.value == "True":
                self.report(conv, fix=self.fix("Write `bias=False`", {bias.value: cst.Name("False")}, safe=False))

    def _in_tests(self) -> bool:
        """A test module (`test_*.py`, a `tests/` folder): its networks are fixtures, not trained models."""
        cached = getattr(self, "_tests", None)
        if cached is None:
            cached = self._tests = is_test_path(self.analysis.path)
        return cached

    def _convs_before_norm(self, node: cst.Call) -> Iterator[cst.Call]:
        q = self.analysis.qualified(node.func)
        if q in SEQUENTIAL:
            items = positional(node)
            for first, second in zip(items, items[1:]):
                if self._is(first, CONVS) and self._is(second, NORMS):
                    yield first  # type: ignore[misc]
        elif type(node.func) is cst.Attribute:
            # `self.bn(self.conv(x))` in a method
            args = positional(node)
            if len(args) == 1 and isinstance(args[0], cst.Call) and self._is(self._self_layer(node.func), NORMS):
                conv = self._self_layer(args[0].func)
                if self._is(conv, CONVS) and self._uses(args[0].func) == 1:
                    yield conv  # type: ignore[misc]

    def _is(self, node: Optional[cst.CSTNode], names: set[str]) -> bool:
        return type(node) is cst.Call and self.analysis.qualified(node.func) in names

    def _self_layer(self, func: cst.BaseExpression) -> Optional[cst.CSTNode]:
        """The single constructor call assigned to `self.<name>` when `func` is `self.<name>`."""
        if not (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"):
            return None
        values = data_facts(self.analysis).self_attributes().get(func.attr.value, [])
        return values[0] if len(values) == 1 else None

    def _uses(self, func: cst.Attribute) -> int:
        name = func.attr.value
        return sum(1 for n in of_types(self.analysis.index, cst.Attribute) if n.attr.value == name
                   and type(n.value) is cst.Name and n.value.value == "self"
                   and not isinstance(self.analysis.parent(n), cst.AssignTarget))
