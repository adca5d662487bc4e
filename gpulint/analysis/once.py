"""Blocks that run once per object: `if self.first: ...; self.first = False` in a method (a mask, a table or a
buffer set up on the first call, SpeechBrain's `FastDropChunk.forward`), or `if not self.ready: ...;
self.ready = True`. The block clears its own flag, and the method sets it back nowhere else: after the first
call the test is false, so neither the block nor the methods it calls run every step.

The same for a lazily set value kept in the object, tested against its "not set yet" sentinel: `Z = self.params[2].
item()` then `if Z < 0: self.params[2] = out.mean() * n; ...` (a normalisation constant computed on the first
call; also `if self.scale is None: self.scale = ...`, `== -1`, `<= 0`), or a buffer registered empty and filled on
the first call (`if not len(self.q): self.q = torch.ones(n).to(device)`, `self.q.numel() == 0`). The block sets
the very state its test reads, outside any other branch of it.

(A flag of a loop, `first = True` before it and `if first: first = False` in it, is `LoopAnalysis._clears_its_flag`.)
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.tree import child_nodes


def _code(node: cst.CSTNode) -> Optional[str]:
    """`self.first` as text, for a `self.<attr>` node only."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return f"self.{node.attr.value}"
    return None


def once_per_object(block: cst.If, method: Optional[cst.FunctionDef]) -> bool:
    """`block` is `if self.X:` (or `if not self.X:`) whose body assigns `self.X = False` (`True`) itself, in
    `method`, which assigns `self.X` nowhere else."""
    if method is None or not isinstance(block.body, cst.IndentedBlock):
        return False
    test, on = block.test, True
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, on = test.expression, False
    flag = _code(test)
    if flag is None:
        return _sets_its_sentinel(block, method)
    off = "False" if on else "True"
    clears = [small for stmt in block.body.body if type(stmt) is cst.SimpleStatementLine
              for small in stmt.body if type(small) is cst.Assign and len(small.targets) == 1
              and _code(small.targets[0].target) == flag and type(small.value) is cst.Name
              and small.value.value == off]
    if not clears:
        return False
    stack: list[cst.CSTNode] = [method.body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign) and all(node is not c for c in clears):
            targets = node.targets if type(node) is cst.Assign else [node]
            if any(_code(t.target) == flag for t in targets):  # type: ignore[union-attr]
                return False  # set again in the method: the block may run on other calls
        if type(node) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            stack.extend(child_nodes(node))
    return True


def _state(node: cst.CSTNode) -> Optional[str]:
    """`self.X` or `self.X[<constant>]` as text, else None."""
    if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index and \
            type(node.slice[0].slice.value) in (cst.Integer, cst.SimpleString):
        base = _code(node.value)
        return f"{base}[{node.slice[0].slice.value.value}]" if base is not None else None
    return _code(node)


def _sentinel(comparison: cst.Comparison) -> bool:
    """`x < 0`, `x <= 0`, `x == -1`, `x == 0`, `x is None`: a test for a value not set yet."""
    if len(comparison.comparisons) != 1:
        return False
    target = comparison.comparisons[0]
    operator, value = type(target.operator), target.comparator
    if operator is cst.Is:
        return type(value) is cst.Name and value.value == "None"
    number = value.expression if type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus else value
    if type(number) not in (cst.Integer, cst.Float) or number.value not in ("0", "1", "0.0", "1.0", "0.", "1."):
        return False
    negative, zero = type(value) is cst.UnaryOperation, number.value.startswith("0")
    if operator in (cst.LessThan, cst.LessThanEqual):
        return not negative and zero
    return operator is cst.Equal and (negative or zero)


def _empty_state(test: cst.BaseExpression) -> Optional[str]:
    """`self.X` when `test` checks that it is still empty: `not len(self.X)`, `len(self.X) == 0`,
    `not self.X.numel()`, `self.X.numel() == 0` (a buffer registered empty and filled on the first call)."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        sized = test.expression
    elif type(test) is cst.Comparison and len(test.comparisons) == 1 and \
            type(test.comparisons[0].operator) is cst.Equal and type(test.comparisons[0].comparator) is cst.Integer \
            and test.comparisons[0].comparator.value == "0":
        sized = test.left
    else:
        return None
    if type(sized) is not cst.Call or sized.args and type(sized.func) is not cst.Name:
        return None
    if type(sized.func) is cst.Name and sized.func.value == "len" and len(sized.args) == 1:
        return _state(sized.args[0].value)
    if type(sized.func) is cst.Attribute and sized.func.attr.value == "numel" and not sized.args:
        return _state(sized.func.value)
    return None


def _reads_of(node: cst.CSTNode) -> set:
    """The `self.X` / `self.X[k]` states read anywhere in `node`."""
    found, stack = set(), [node]
    while stack:
        current = stack.pop()
        state = _state(current)
        if state is not None:
            found.add(state)
            continue
        stack.extend(child_nodes(current))
    return found


def _sets_its_sentinel(block: cst.If, method: cst.FunctionDef) -> bool:
    """`if Z < 0:` (or `if self.X is None:`) where `Z` is bound once in `method`, from a read of the object's state
    `self.X[k]`, and the block's own statements assign that state (`self.params[2] = ...`)."""
    test = block.test
    emptied = _empty_state(test)
    if emptied is None and (type(test) is not cst.Comparison or not _sentinel(test)):
        return False
    written = {_state(t.target) for stmt in block.body.body if type(stmt) is cst.SimpleStatementLine
               for small in stmt.body if type(small) is cst.Assign for t in small.targets} - {None}
    if not written:
        return False  # the block sets no state of the object: the common case, decided without a walk
    if emptied is not None:
        return emptied in written  # `if not len(self.q): self.q = torch.ones(n).to(device)`
    left = test.left
    states = set()
    if _state(left) is not None:
        states.add(_state(left))
    elif type(left) is cst.Name:
        bindings = []
        stack: list[cst.CSTNode] = [method.body]
        while stack:
            node = stack.pop()
            if type(node) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == left.value
                                                for t in node.targets):
                bindings.append(node)
            if type(node) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                stack.extend(child_nodes(node))
        outside = [b for b in bindings if not _inside(b, block)]
        if len(outside) != 1 or len(outside[0].targets) != 1:
            return False
        states = _reads_of(outside[0].value)
    return bool(states & written)


def _inside(node: cst.CSTNode, block: cst.CSTNode) -> bool:
    stack = [block]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(child_nodes(current))
    return False
