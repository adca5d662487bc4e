"""Defaults of a yacs configuration the project declares, for settings read from it (`pin_memory=cfg.X.PIN_MEMORY`).

Detection and video projects keep their settings in a yacs tree: a module builds `_C = CN()` (`from yacs.config
import CfgNode as CN`), then declares each setting with its default at the top level (`_C.DATA_LOADER = CN()`,
`_C.DATA_LOADER.PIN_MEMORY = True`). A loader factory elsewhere reads it through the configuration it is handed:
`DataLoader(..., pin_memory=cfg.DATA_LOADER.PIN_MEMORY)`. The default is what a run gets unless its YAML file
or command line says otherwise, as an option's `default=` is for argparse (`flags.option_default`).

`config_default(project, path_suffix)` answers the literal `True`/`False` every such declaration in the project
gives the setting (`("DATA_LOADER", "PIN_MEMORY")`, matched on the attributes after the tree's root), when the
root is a yacs `CfgNode`; None when there is none, when declarations disagree, or when the value is not a literal.
A YAML file of the project that sets the same setting (`PIN_MEMORY: False` nested under `DATA_LOADER:`, or a form
this reading does not follow) makes it None too: a shipped recipe may change it; so do a dotted override in a
script or document (`DETECTION.ENABLE True`) and a Python assignment of it outside the declaring tree. Only files
naming the setting's last attribute are read (the project's identifier index). `config_test_off` reads a test
(`if cfg.DETECTION.ENABLE:`) whose settings are all declared `False` that way: a block no shipped run takes
(analysis/unset_options.py).
"""

from __future__ import annotations

import ast
import re
from typing import Optional

_CFG_NODES = {"yacs.config.CfgNode", "yacs.config.CN", "fvcore.common.config.CfgNode"}


def setting_path(expr: ast.expr) -> Optional[tuple]:
    """`cfg.DATA_LOADER.PIN_MEMORY` -> ("DATA_LOADER", "PIN_MEMORY"): the attributes after a root name, each
    in upper case (the yacs convention); else None."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or not parts or not all(p.isupper() for p in parts):
        return None
    return tuple(reversed(parts))


def config_default(project, path: tuple) -> Optional[bool]:
    from gpulint.analysis.forward import _remembered

    return _remembered(project, ("yacs default", path), lambda: _compute(project, path))


def _compute(project, path: tuple) -> Optional[bool]:
    found = set()
    for file in project.files_naming(path[-1]):
        info = project.module(file)
        if info is None:
            continue
        roots = {t.id for s in info.tree.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                 for t in s.targets if isinstance(t, ast.Name)
                 and info.qualified(s.value.func) in _CFG_NODES}
        if not roots:
            continue
        for stmt in info.tree.body:
            if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                continue
            target = stmt.targets[0]
            parts = []
            while isinstance(target, ast.Attribute):
                parts.append(target.attr)
                target = target.value
            if not isinstance(target, ast.Name) or target.id not in roots or tuple(reversed(parts)) != path:
                continue
            if not (isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, bool)):
                return None
            found.add(stmt.value.value)
    if len(found) != 1 or _set_in_yaml(project, path) or _set_elsewhere(project, path):
        return None
    return found.pop()


_KEY = re.compile(r"^(\s*)([A-Za-z0-9_]+)\s*:")
_OVERRIDES = ("*.sh", "*.md", "*.txt", "*.json", "*.cfg", "*.ini")


def _set_in_yaml(project, path: tuple) -> bool:
    """A YAML file under the project root sets the setting (a recipe overriding the default): the key nested under
    its sections (`DETECTION:` then, indented under it, `ENABLE:`), or written as a flow mapping or a dotted
    override on that line (`{ENABLE: True}`, `DETECTION.ENABLE`). Any YAML line naming the last key in a form this
    reading does not follow (a flow mapping) counts as setting it."""
    key = path[-1]
    dotted = ".".join(path)
    count = 0
    for folder in (project.root,):
        for file in folder.rglob("*.y*ml"):
            count += 1
            if count > 2000:
                return True  # too many to read: not told
            try:
                if file.stat().st_size >= 1_000_000:
                    continue
                text = file.read_text(errors="replace")
            except OSError:
                continue
            if key not in text:
                continue
            if dotted in text:
                return True
            stack: list[tuple[int, str]] = []
            for line in text.splitlines():
                stripped = line.strip()
                if not stripped or stripped.startswith("#"):
                    continue
                match = _KEY.match(line)
                if match is None:
                    if re.search(rf"\b{re.escape(key)}\s*:", line):
                        return True  # `DETECTION: {ENABLE: True}` and other forms not followed here
                    continue
                indent = len(match.group(1))
                while stack and stack[-1][0] >= indent:
                    stack.pop()
                stack.append((indent, match.group(2)))
                if tuple(k for _, k in stack)[-len(path):] == path and len(stack) >= len(path):
                    return True
                if re.search(rf"[{{,]\s*{re.escape(key)}\s*:", line):
                    return True
    return False


def _set_elsewhere(project, path: tuple) -> bool:
    """A command line or a document of the project overrides the setting (`DETECTION.ENABLE True` in a shell script
    or the README, yacs' `opts`), or a Python file assigns it on a configuration other than the declaring tree
    (`cfg.DETECTION.ENABLE = True` in a script)."""
    dotted = ".".join(path)
    count = 0
    for pattern in _OVERRIDES:
        for file in project.root.rglob(pattern):
            count += 1
            if count > 4000:
                return True
            try:
                if file.stat().st_size < 1_000_000 and dotted in file.read_text(errors="replace"):
                    return True
            except OSError:
                continue
    for file in project.files_naming(path[-1]):
        info = project.module(file)
        if info is None or getattr(info, "tree", None) is None:
            continue
        roots = {t.id for s in info.tree.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                 for t in s.targets if isinstance(t, ast.Name) and info.qualified(s.value.func) in _CFG_NODES}
        for node in ast.walk(info.tree):
            if not isinstance(node, (ast.Assign, ast.AugAssign)):
                continue
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                parts = []
                while isinstance(target, ast.Attribute):
                    parts.append(target.attr)
                    target = target.value
                if tuple(reversed(parts))[-len(path):] != path or len(parts) < len(path):
                    continue
                if isinstance(target, ast.Name) and target.id in roots and len(parts) == len(path):
                    continue  # the declaration itself (`_C.DETECTION.ENABLE = False`), read by `_compute`
                return True
    return False


def config_test_off(project, test) -> bool:
    """`test` (a LibCST expression) is a yacs setting declared `False` that no recipe turns on
    (`cfg.DETECTION.ENABLE`), or an `or` of such settings: the block under it never runs as shipped."""
    import libcst as cst

    if type(test) is cst.BooleanOperation and type(test.operator) is cst.Or:
        return config_test_off(project, test.left) and config_test_off(project, test.right)
    parts = []
    while type(test) is cst.Attribute:
        parts.append(test.attr.value)
        test = test.value
    if type(test) is not cst.Name or len(parts) < 2 or not all(p.isupper() for p in parts):
        return False
    return config_default(project, tuple(reversed(parts))) is False
