"""Blocks that run once per object: `if self.first: ...; self.first = False` in a method (a mask, a table or a
buffer set up on the first call, SpeechBrain's `FastDropChunk.forward`), or `if not self.ready: ...;
self.ready = True`. The block clears its own flag, and the method sets it back nowhere else: after the first
call the test is false, so neither the block nor the methods it calls run every step.

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
        return False
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
