"""The CUDA default tensor type, or default device, of the program a module runs in.

After `torch.set_default_tensor_type('torch.cuda.FloatTensor')` (or `torch.cuda.FloatTensor` itself) or
`torch.set_default_device("cuda")`, tensors built without a device are CUDA tensors: `torch.rand`, `torch.zeros`,
`torch.linspace` are made on the device (no copy), while `torch.Tensor([1e10])`, `torch.Tensor(numpy_image)` and
`torch.tensor(host_list)` copy their host data to the GPU from pageable memory on every call.

A module runs on that default when it sets it itself (anywhere: nerf-pytorch sets it in `__main__`), or when a
project script that sets it imports the module (`from run_nerf_helpers import *`). Only a literal CUDA argument
counts: `torch.set_default_device(device)` with a variable is not assumed either way.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.node_types import of_types

_SETTERS = ("set_default_tensor_type", "set_default_device")


@dataclass(frozen=True)
class CudaDefault:
    """Where the CUDA default is set: another file of the project and its line, or (None, 0): the linted module."""

    path: Optional[Path]
    line: int


def _cuda_literal(text: str) -> bool:
    return text.startswith("torch.cuda.") or text == "cuda" or text.startswith("cuda:")


def _cuda_argument_ast(call: ast.Call) -> bool:
    if len(call.args) != 1 or call.keywords:
        return False
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return _cuda_literal(arg.value)
    if isinstance(arg, ast.Attribute):  # torch.cuda.FloatTensor
        parts = []
        node: ast.expr = arg
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
        return ".".join(reversed(parts)).startswith("torch.cuda.")
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "device" and \
            len(arg.args) == 1 and isinstance(arg.args[0], ast.Constant) and isinstance(arg.args[0].value, str):
        return _cuda_literal(arg.args[0].value)  # torch.device("cuda")
    return False


def _setter_line(tree: ast.AST, walk: bool = True) -> Optional[int]:
    """The line of a call in `tree` that sets a CUDA default (`torch.set_default_tensor_type(...)`)."""
    for node in (ast_walk.walk(tree) if walk else (tree,)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SETTERS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and \
                _cuda_argument_ast(node):
            return node.lineno
    return None


def _streamed_setter_line(statements) -> Optional[int]:
    """`_setter_line` of the module whose top-level statements are `statements`: the call `ast.walk` of the
    whole tree meets first (breadth first: the least depth, then the earliest statement)."""
    from collections import deque

    best: Optional[tuple[int, int, int]] = None
    for index, stmt in enumerate(statements):
        todo = deque([(stmt, 1)])
        while todo:
            node, depth = todo.popleft()
            if best is not None and depth >= best[0]:
                break
            if _setter_line(node, walk=False) is not None:
                best = (depth, index, node.lineno)
                break
            todo.extend((child, depth + 1) for child in ast_walk.iter_child_nodes(node))
    return best[2] if best is not None else None


def _imports(tree: ast.Module, project, importer: Path, target: Path) -> bool:
    """`tree` (the module at `importer`) imports the module at `target` (`import m`, `from m import *`,
    `from pkg import m`, relative forms), wherever the import statement is."""
    for node in ast_walk.walk(tree):
        if isinstance(node, ast.Import):
            names = [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names = [(base, node.level)] + [(f"{base}.{a.name}" if base else a.name, node.level)
                                              for a in node.names if a.name != "*"]
        else:
            continue
        for name, level in names:
            try:
                resolved = project.resolver.resolve(name, importer, level) if name or level else None
            except (OSError, ValueError):
                resolved = None
            if resolved is not None and resolved.resolve() == target:
                return True
    return False


def cuda_default(analysis) -> Optional[CudaDefault]:
    """Fact provider: where the program this module runs in sets a CUDA default tensor type or device, else None."""
    for node in of_types(analysis.index, cst.Call):
        func = node.func  # type: ignore[attr-defined]
        if type(func) is cst.Attribute and func.attr.value in _SETTERS and \
                (analysis.qualified(func) or "").startswith("torch.set_default_"):
            try:
                tree = ast.parse(analysis.code(node))
            except SyntaxError:
                continue
            call = tree.body[0].value if tree.body and isinstance(tree.body[0], ast.Expr) else None
            if isinstance(call, ast.Call) and _cuda_argument_ast(call):
                return CudaDefault(None, 0)
    if analysis.path is None:
        return None
    from gpulint.analysis.project import project_for, text_dependency

    path = Path(analysis.path).resolve()
    project = project_for(path)
    for setter in _SETTERS:
        for file in project.files_naming(setter):
            file = Path(file)
            if file.resolve() == path:
                continue
            with text_dependency():
                info = project.module(file)
            if info is None:
                continue
            streamed = getattr(info, "statements", None)  # a big module: no whole tree (lazy_module.py)
            if streamed is not None:
                line = _streamed_setter_line(streamed())
                if line is not None and any(_imports(stmt, project, file, path) for stmt in streamed()):
                    return CudaDefault(file, line)
                continue
            line = _setter_line(info.tree)
            if line is not None and _imports(info.tree, project, file, path):
                return CudaDefault(file, line)
    return None
