"""Early exits for an empty input: `if not pairs: return torch.tensor(0.0, device=d, requires_grad=True)`.

A loss or metric that guards the degenerate case of its input (no pairs, no positives, an empty batch) with an
`if` that tests emptiness and leaves the function at once pays what that block does only on such a batch, not
on every step. `LoopAnalysis._walk_up` keeps the block out of the step. Emptiness tests: `len(x) == 0`
(`< 1`, `0 == len(x)`), `not len(x)`, `x.numel() == 0`, `x.nelement() == 0`, `x.shape[0] == 0`,
`x.size(0) == 0`, and `not x` where `x` is a local bound only to a list, dict, set or tuple built in the function
(a display or a comprehension): never a switch (`if not self.training:`, `if not return_loss:`)."""
from __future__ import annotations

import libcst as cst

_DISPLAYS = (cst.List, cst.Dict, cst.Set, cst.Tuple, cst.ListComp, cst.DictComp, cst.SetComp)


def empty_input_exit(index, branch: cst.If) -> bool:
    """`branch` tests its input for emptiness, has no `else`, and its block ends by leaving the function."""
    if branch.orelse is not None or type(branch.body) is not cst.IndentedBlock or not branch.body.body:
        return False
    last = branch.body.body[-1]
    if type(last) is not cst.SimpleStatementLine or type(last.body[-1]) not in (cst.Return, cst.Raise):
        return False
    return _empty_test(index, branch.test)


def _empty_test(index, test: cst.BaseExpression) -> bool:
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        operand = test.expression
        if _length(operand):
            return True
        if type(operand) is cst.Name:
            bindings = index.visible_bindings(operand)
            return bool(bindings) and all(b.kind == "assign" and b.index is None and type(b.value) in _DISPLAYS
                                          for b in bindings)
        return False
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        op = type(test.comparisons[0].operator)
        left, right = test.left, test.comparisons[0].comparator
        if op is cst.Equal:
            return _zero(right) and _length(left) or _zero(left) and _length(right)
        if op is cst.LessThan:
            return _length(left) and type(right) is cst.Integer and right.value == "1"
        if op is cst.LessThanEqual:
            return _length(left) and _zero(right)
    return False


def _zero(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Integer and node.value == "0"


def _length(node: cst.BaseExpression) -> bool:
    """`len(x)`, `x.numel()`, `x.nelement()`, `x.shape[0]`, `x.size(0)`."""
    if type(node) is cst.Call:
        func = node.func
        if type(func) is cst.Name and func.value == "len" and len(node.args) == 1:
            return True
        if type(func) is cst.Attribute and func.attr.value in ("numel", "nelement") and not node.args:
            return True
        if type(func) is cst.Attribute and func.attr.value == "size" and len(node.args) == 1 and \
                _zero(node.args[0].value):
            return True
        return False
    if type(node) is cst.Subscript and type(node.value) is cst.Attribute and node.value.attr.value == "shape" \
            and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
        return _zero(node.slice[0].slice.value)
    return False
