"""Resolve local names to the qualified names they were imported as (`T.cuda.synchronize` -> `torch.cuda.synchronize`).

A cheap stand-in for LibCST's QualifiedNameProvider, which costs more than parsing the file (see shared facts):
we only need import aliases, so one look at the module's import statements is enough.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a chain of Name/Attribute nodes, else None."""
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _module_name(node: cst.BaseExpression) -> str:
    return dotted_name(node) or ""


class ImportMap:
    """Maps names bound by import statements to fully qualified names."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.star_modules: list[str] = []  # `from timm.utils import *`: absolute modules imported with a star

    def add(self, stmt: cst.Import | cst.ImportFrom) -> None:
        if type(stmt) is cst.Import:
            for alias in stmt.names:
                full = _module_name(alias.name)
                if alias.asname is not None and type(alias.asname.name) is cst.Name:
                    self.aliases[alias.asname.name.value] = full
                else:
                    # `import torch.nn` binds `torch`.
                    head = full.split(".")[0]
                    self.aliases[head] = head
        else:
            if stmt.relative or stmt.module is None:
                return
            module = _module_name(stmt.module)
            if type(stmt.names) is cst.ImportStar:
                self.star_modules.append(module)
                return
            for alias in stmt.names:
                name = _module_name(alias.name)
                local = name
                if alias.asname is not None and type(alias.asname.name) is cst.Name:
                    local = alias.asname.name.value
                self.aliases[local] = f"{module}.{name}"

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        """Qualified name of a Name/Attribute chain; unimported heads are kept as written."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        full_head = self.aliases.get(head, head)
        return f"{full_head}.{rest}" if rest else full_head

    @property
    def imports_torch(self) -> bool:
        return any(v == "torch" or v.startswith("torch.") for v in self.aliases.values())
