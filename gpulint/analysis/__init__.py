"""Facts about one module that every rule shares: syntax index, value kinds, and where code runs."""

from __future__ import annotations

import re
from functools import cached_property
from typing import Optional

import libcst as cst

from gpulint.analysis.kinds import Kind, KindInference
from gpulint.analysis.loops import Execution, Frequency, LoopAnalysis, LoopRole
from gpulint.analysis.tree import SyntaxIndex

__all__ = ["GPU_HINT", "ModuleAnalysis", "Kind", "Execution", "Frequency", "LoopRole"]


class ModuleAnalysis:
    """Built once per parsed module; each part is computed on first use."""

    def __init__(self, module: cst.Module, source: Optional[str] = None) -> None:
        self.module = module
        # The text the module was parsed from (module.code would regenerate it: a full codegen pass).
        self.source = source
        self.index = SyntaxIndex().build(module)

    @cached_property
    def kinds(self) -> KindInference:
        return KindInference(self.index)

    @cached_property
    def loops(self) -> LoopAnalysis:
        return LoopAnalysis(self.index, self.kinds)

    # Shortcuts rules use all the time.
    def kind(self, node: cst.CSTNode) -> Kind:
        return self.kinds.of(node)

    def is_tensor(self, node: cst.CSTNode) -> bool:
        return self.kinds.of(node) is Kind.TENSOR

    def execution(self, node: cst.CSTNode) -> Execution:
        return self.loops.execution(node)

    def qualified(self, node: cst.BaseExpression):
        return self.index.imports.qualify(node)

    def parent(self, node: cst.CSTNode):
        return self.index.parent.get(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # -- facts several rule families need --------------------------------------------------------------------
    @cached_property
    def targets_gpu(self) -> bool:
        """The module mentions a device at all. Syncs in code that never leaves the CPU cost nothing."""
        text = self.source if self.source is not None else self.module.code
        return GPU_HINT.search(text) is not None

    def is_bool_tensor(self, node: cst.CSTNode) -> bool:
        """A boolean mask: a tensor comparison, its negation/combination, or an is* test."""
        if isinstance(node, cst.Comparison):
            return self.is_tensor(node)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            return self.is_bool_tensor(node.expression)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr,
                                                                                   cst.BitXor)):
            return self.is_bool_tensor(node.left) or self.is_bool_tensor(node.right)
        if isinstance(node, cst.Call):
            q = self.qualified(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
            if q in _BOOL_FUNCTIONS:
                return True
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _BOOL_METHODS \
                    and self.is_tensor(node.func.value):
                return True
        if isinstance(node, cst.Name):
            scope = self.index.enclosing_scope(node)
            bindings = self.index.lookup(node.value, scope) if scope is not None else []
            values = [b.value for b in bindings if b.kind == "assign" and b.index is None]
            return bool(values) and len(values) == len(bindings) and all(
                v is not None and self.is_bool_tensor(v) for v in values)
        return False

    def is_synced_accumulation(self, call: cst.CSTNode) -> bool:
        """`total += x.item()` / `total += float(x)`: GPU302/GPU303 own these, so GPU101/GPU104/GPU105 stay quiet.

        Asks the GPU3xx rules' own matcher, so a shape they decline is still reported by the GPU1xx rules.
        """
        from gpulint.rules.accumulation import synced_accumulation  # rules import the engine, not the reverse

        return synced_accumulation(self, call) is not None


# Evidence that tensors go to an accelerator: `.cuda()`, `.to(...)`, a `device`, "cuda" strings, accelerate/XLA.
GPU_HINT = re.compile(r"\.cuda\b|cuda[\"':]|\bdevice\b|\.to\(|accelerat|xla_device|\bmps\b|\bxpu\b|\bnpu\b",
                       re.IGNORECASE)
_BOOL_FUNCTIONS = {"torch.isnan", "torch.isinf", "torch.isfinite", "torch.logical_and", "torch.logical_or",
                   "torch.logical_not", "torch.logical_xor", "torch.eq", "torch.ne", "torch.gt", "torch.lt",
                   "torch.ge", "torch.le", "torch.isin", "torch.isclose"}
_BOOL_METHODS = {"isnan", "isinf", "isfinite", "bool", "eq", "ne", "gt", "lt", "ge", "le", "logical_and",
                 "logical_or", "logical_not", "isclose"}
