"""Blocks that run only when a value is not finite (issue 11, precision): a bad step, not every step.

    if torch.isnan(loss) or torch.isinf(loss):       # the test reads the loss every step (reported: GPU106/108)
        loss = torch.tensor(0.0, device=loss.device) # runs only on a NaN/inf step: not a per-step cost

The test is paid every step and stays reported; what its body does is paid only on the rare step whose value
is not finite (a skipped batch, a replaced loss, a warning), as an error path that raises is paid at most once.
Recognised tests: `torch.isnan(x)`, `torch.isinf(x)`, `x.isnan()`, `x.isinf()` (with `.any()`/`.all()`),
`math.isnan`/`math.isinf`/`numpy.isnan`/`numpy.isinf`, `not torch.isfinite(x)` (`not x.isfinite().all()`), joined by
`or`; a conjunction (`flag and (torch.isnan(x) or ...)`) holding one of them.
"""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.imports import dotted_name

_NONFINITE = {"isnan", "isinf", "isposinf", "isneginf"}
_REDUCTIONS = {"any", "all", "item"}


def nonfinite_only(test: cst.BaseExpression) -> bool:
    """The `if` test holds only when some value is NaN or infinite."""
    if type(test) is cst.BooleanOperation:
        if type(test.operator) is cst.Or:
            return nonfinite_only(test.left) and nonfinite_only(test.right)
        return nonfinite_only(test.left) or nonfinite_only(test.right)  # `and`: one rare conjunct is enough
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _named_test(test.expression, {"isfinite"})
    return _named_test(test, _NONFINITE)


def _named_test(node: cst.BaseExpression, names: set) -> bool:
    while type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in _REDUCTIONS \
            and not node.args:
        node = node.func.value  # `torch.isnan(x).any()`
    if type(node) is not cst.Call:
        return False
    func = node.func
    if type(func) is cst.Attribute and func.attr.value in names:
        # `torch.isnan(x)`, `math.isinf(v)`, `np.isnan(v)`, or the tensor method `x.isnan()`
        owner = dotted_name(func.value)
        return owner in (None, "torch", "math", "np", "numpy") or not node.args
    return type(func) is cst.Name and func.value in names  # `from torch import isnan`
