"""Which functions of a module run under `torch.compile`: a fact for the rules about compiled code (GPU414).

A function is compiled when it is decorated with `@torch.compile` / `@torch.compile(...)`, passed to
`torch.compile(fn)`, or is the `forward` of a class of this module whose instance is passed to `torch.compile`
(`model = torch.compile(Net().to(device))`, `torch.compile(model)`) or compiled in place (`model.compile()`).
Only what the module shows: a model built elsewhere, or compiled by a caller, is not known to be compiled.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from gpulint.analysis import ModuleAnalysis
from gpulint.analysis.node_types import of_types

_COMPILE = "torch.compile"
_MOVES = {"to", "cuda", "half", "bfloat16", "float", "train", "eval"}


class CompiledFunctions:
    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.analysis = analysis
        self.functions: set[int] = set()
        for node in of_types(analysis.index, cst.FunctionDef, cst.Call):
            if type(node) is cst.FunctionDef and any(self._is_compile(d.decorator) for d in node.decorators):
                self.functions.add(id(node))
            elif type(node) is cst.Call:
                for fn in self._compiled_by(node):
                    self.functions.add(id(fn))

    def _is_compile(self, expr: cst.BaseExpression) -> bool:
        if type(expr) is cst.Call:
            expr = expr.func
        return type(expr) in (cst.Name, cst.Attribute) and self.analysis.qualified(expr) == _COMPILE

    def _compiled_by(self, call: cst.Call) -> Iterator[cst.FunctionDef]:
        if type(call.func) in (cst.Name, cst.Attribute) and self.analysis.qualified(call.func) == _COMPILE:
            if call.args and call.args[0].keyword is None:
                yield from self._functions_of(call.args[0].value)
        elif type(call.func) is cst.Attribute and call.func.attr.value == "compile" and not call.args:
            yield from self._functions_of(call.func.value)  # nn.Module.compile(): compiles forward in place

    def _functions_of(self, expr: cst.BaseExpression, depth: int = 0) -> Iterator[cst.FunctionDef]:
        """The function `expr` stands for, or the `forward` of the local model class it is an instance of."""
        while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _MOVES:
            expr = expr.func.value  # Net().to(device)
        index = self.analysis.index
        if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value in index.classes:
            forward = _method(index.classes[expr.func.value], "forward")
            if forward is not None:
                yield forward
        elif type(expr) is cst.Name and depth < 3:
            for binding in index.visible_bindings(expr):
                if binding.kind == "def" and type(binding.value) is cst.FunctionDef:
                    yield binding.value
                elif binding.kind == "assign" and binding.index is None and binding.value is not None:
                    yield from self._functions_of(binding.value, depth + 1)

    def compiled_function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        """The compiled function whose own body (not a nested def or lambda) holds `node`, if any."""
        for ancestor in self.analysis.index.ancestors(node):
            if type(ancestor) in (cst.FunctionDef, cst.Lambda):
                return ancestor if id(ancestor) in self.functions else None
        return None


def _method(cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
    for stmt in cls.body.body:
        if type(stmt) is cst.FunctionDef and stmt.name.value == name:
            return stmt
    return None


def compiled_functions(analysis: ModuleAnalysis) -> CompiledFunctions:
    return analysis.fact(CompiledFunctions)
