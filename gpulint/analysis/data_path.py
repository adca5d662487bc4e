"""Module-wide facts about the data path and the model's shape, for the throughput rules (GPU409-GPU413).

Which map-style dataset classes do per-sample work in `__getitem__`, whether the script has a
`if __name__ == "__main__":` guard (DataLoader workers on spawn platforms need one), where a statement can go
after the imports, which convolution layers the module builds, and whether it already chooses cuDNN's
algorithm policy. Built once per module through `analysis.fact(data_path_facts)`.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from gpulint.analysis import ModuleAnalysis
from gpulint.analysis.data_facts import _walk
from gpulint.syntax import string_value

_CONVS = {f"torch.nn.{kind}{n}d" for kind in ("Conv", "ConvTranspose", "LazyConv") for n in (1, 2, 3)}
# Calls in `__getitem__` that are bookkeeping, not per-sample work.
_TRIVIAL_CALLS = {"int", "float", "len", "tuple", "list", "str", "bool", "dict", "super", "isinstance", "range"}
# Setting any of these is a decision about cuDNN's algorithm choice: GPU413 stays silent.
_CUDNN_CHOICE = re.compile(r"cudnn\.(benchmark|deterministic)$|\buse_deterministic_algorithms$")
_CUDNN_NAMES = {"benchmark", "deterministic", "use_deterministic_algorithms"}
_ITERABLE_DATASETS = {"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"}


class DataPathFacts:
    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.analysis = analysis
        body = analysis.module.body
        self.main_guard = any(_is_main_guard(stmt) for stmt in body)
        self.import_anchor = _last_top_import(body)
        self.top_imports = {alias for stmt in body for alias in _imported_names(stmt)}
        self.conv_layers = [n for n in analysis.index.nodes if isinstance(n, cst.Call)
                            and analysis.qualified(n.func) in _CONVS]
        self._work: dict[str, Optional[str]] = {}

    @property
    def chooses_cudnn_algorithms(self) -> bool:
        """The module sets `cudnn.benchmark`/`cudnn.deterministic` or asks for deterministic algorithms."""
        return any(isinstance(n, cst.Attribute) and n.attr.value in _CUDNN_NAMES
                   and _CUDNN_CHOICE.search(self.analysis.code(n)) for n in self.analysis.index.nodes)

    def imports(self, name: str) -> bool:
        """`import <name>` binds `name` at the top of the module."""
        return name in self.top_imports

    def per_sample_work(self, dataset_class: cst.ClassDef) -> Optional[str]:
        """What the map-style dataset class's `__getitem__` does per sample (a call it makes), else None."""
        key = dataset_class.name.value
        if key not in self._work:
            self._work[key] = self._compute_work(dataset_class)
        return self._work[key]

    def dataset_class(self, expr: Optional[cst.BaseExpression], depth: int = 0) -> Optional[cst.ClassDef]:
        """The class of this module that `expr` (a `MyDataset(...)` call, or a name bound to one) instantiates."""
        if expr is None or depth > 4:
            return None
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            classes = [n for n in self.analysis.index.nodes if isinstance(n, cst.ClassDef)
                       and n.name.value == expr.func.value]
            return classes[0] if len(classes) == 1 else None
        if isinstance(expr, cst.Name):
            values = [b.value for b in self.analysis.index.visible_bindings(expr) if b.kind == "assign"]
            found = [self.dataset_class(v, depth + 1) for v in values]
            if len(found) == 1:
                return found[0]
        return None

    def _compute_work(self, cls: cst.ClassDef) -> Optional[str]:
        if any(self.analysis.qualified(base.value) in _ITERABLE_DATASETS for base in cls.bases):
            return None
        getitem = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef)
                        and s.name.value == "__getitem__"), None)
        if getitem is None:
            return None
        for node in _walk(getitem.body):
            if isinstance(node, cst.Call):
                name = self.analysis.qualified(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) \
                    else None
                if name not in _TRIVIAL_CALLS:
                    return self.analysis.code(node.func)
        return None


def data_path_facts(analysis: ModuleAnalysis) -> DataPathFacts:
    return analysis.fact(DataPathFacts)


def _is_main_guard(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.If) or not isinstance(stmt.test, cst.Comparison):
        return False
    test = stmt.test
    if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides) and \
        any(string_value(s) == "__main__" for s in sides)


def _imported_names(stmt: cst.CSTNode) -> list[str]:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    names = []
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                if alias.asname is None and isinstance(alias.name, cst.Name):
                    names.append(alias.name.value)
    return names


def _last_top_import(body) -> Optional[cst.SimpleStatementLine]:
    """The last import line of the module's leading block of imports (docstring and comments allowed)."""
    last = None
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
            last = stmt
        elif isinstance(stmt, cst.SimpleStatementLine) and last is None and \
                all(isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString) for s in stmt.body):
            continue  # the module docstring
        else:
            break
    return last
