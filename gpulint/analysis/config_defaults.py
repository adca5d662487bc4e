"""Defaults of a yacs configuration the project declares, for settings read from it (`pin_memory=cfg.X.PIN_MEMORY`).

Detection and video projects keep their settings in a yacs tree: a module builds `_C = CN()` (`from yacs.config
import CfgNode as CN`), then declares each setting with its default at the top level (`_C.DATA_LOADER = CN()`,
`_C.DATA_LOADER.PIN_MEMORY = True`). A loader factory elsewhere reads it through the configuration it is handed:
`DataLoader(..., pin_memory=cfg.DATA_LOADER.PIN_MEMORY)`. The default is what a run gets unless its YAML file
or command line says otherwise, as an option's `default=` is for argparse (`flags.option_default`).

`config_default(project, path_suffix)` answers the literal `True`/`False` every such declaration in the project
gives the setting (`("DATA_LOADER", "PIN_MEMORY")`, matched on the attributes after the tree's root), when the
root is a yacs `CfgNode`; None when there is none, when declarations disagree, or when the value is not a literal.
A YAML file of the project that sets the same key (`PIN_MEMORY: False`) makes it None too: a shipped recipe may
turn it off. Only files naming the setting's last attribute are read (the project's identifier index).
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
    if len(found) != 1 or _set_in_yaml(project, path[-1]):
        return None
    return found.pop()


def _set_in_yaml(project, key: str) -> bool:
    """A YAML file under the project root sets `key` (a recipe overriding the default)."""
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*:", re.M)
    count = 0
    for folder in (project.root,):
        for file in folder.rglob("*.y*ml"):
            count += 1
            if count > 2000:
                return True  # too many to read: not told
            try:
                if file.stat().st_size < 1_000_000 and pattern.search(file.read_text(errors="replace")):
                    return True
            except OSError:
                continue
    return False
