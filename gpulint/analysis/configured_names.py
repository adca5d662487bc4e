"""Class names a project's configuration files choose by a key (issue 11: an optimizer named in a config).

Config-driven training code builds its optimizer from a name it reads at run time:

    # config.json (pytorch-template and the projects made from it)    # train.py
    "optimizer": {"type": "Adam", "args": {"lr": 0.001}}               optimizer = config.init_obj('optimizer', torch.optim, params)

    # config/lego.yml (YAML, nested keys)                             # train_nerf.py
    optimizer:                                                         optimizer = getattr(torch.optim, cfg.optimizer.type)(
      type: Adam                                                           trainable_parameters, lr=cfg.optimizer.lr)
      lr: 5.0E-3

`configured_names(project, key, field)` answers the set of string values that the project's configuration files
(`*.json`, `*.yaml`, `*.yml` under the project root, tests and virtual environments left out) give `field` of a
mapping held under `key` (`"optimizer": {"type": "Adam"}`), or `key` itself where it holds a string (`optimizer:
adam`): the classes the shipped runs may build. None when no file says, or when a mapping under the key also sets
`fused`/`foreach` (the run chooses the implementation itself) or holds a value this reading cannot tell. The files
are read once per project state (JSON with the standard library, YAML line by line as analysis/config_targets.py
reads it: nesting from indentation; anchors, flow mappings and multi-line values are not followed).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Optional

_MAX_FILES = 500
_MAX_BYTES = 500_000
_SKIPPED = {"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env", ".venv", "tests", "test"}
_NAME = re.compile(r"^[A-Za-z_][\w.]*$")
_CHOOSING = ("fused", "foreach")


def configured_names(project, key: str, field: Optional[str]) -> Optional[frozenset]:
    """The names the configuration files give `field` under `key` (or `key` itself, where `field` is None or the
    key holds a string); None when none is given or one cannot be told (see the module docstring)."""
    from gpulint.analysis.forward import _remembered

    table = _remembered(project, ("configured names",), lambda: _read_all(project.root)) or {}
    found = table.get((key.lower(), (field or "").lower()))
    if found is None and field:
        found = table.get((key.lower(), ""))
    if not found or None in found:
        return None
    return frozenset(found)


def _files(root: Path) -> list[Path]:
    files: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in _SKIPPED)
        files.extend(Path(folder) / n for n in sorted(names) if n.endswith((".json", ".yaml", ".yml")))
        if len(files) >= _MAX_FILES:
            break
    return files[:_MAX_FILES]


def _read_all(root: Path) -> dict:
    """{(key, field): {value, ...}} over every configuration file; a None value: one that cannot be told."""
    table: dict = {}
    for file in _files(root):
        try:
            if file.stat().st_size > _MAX_BYTES:
                continue
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        pairs = _read_json(text) if file.suffix == ".json" else _read_yaml(text)
        for pair, value in pairs:
            table.setdefault(pair, set()).add(value)
    return table


def _read_json(text: str) -> list:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    found: list = []
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if not isinstance(key, str):
                continue
            if isinstance(value, str) and _NAME.match(value):
                found.append(((key.lower(), ""), value))
            elif isinstance(value, dict):
                chooses = _chooses(value)
                for field, inner in value.items():
                    if isinstance(field, str) and isinstance(inner, str) and _NAME.match(inner):
                        found.append(((key.lower(), field.lower()), None if chooses else inner))
                stack.append(value)
            elif isinstance(value, list):
                stack.append(value)
    return found


def _chooses(mapping: dict) -> bool:
    """The mapping (or its `args`/`kwargs`) sets `fused` or `foreach` itself."""
    for inner in (mapping, mapping.get("args"), mapping.get("kwargs"), mapping.get("params")):
        if isinstance(inner, dict) and any(k in inner for k in _CHOOSING):
            return True
    return False


def _read_yaml(text: str) -> list:
    from gpulint.analysis.config_targets import yaml_entries

    found: list = []
    choosing: set[tuple[int, str]] = set()  # keys (by indent and name) whose mapping sets `fused`/`foreach`
    pending: list[tuple[tuple, str, tuple]] = []
    for indent, key, value, stack in yaml_entries(text):
        if key in _CHOOSING:
            choosing.update(stack[-2:])
        if value and _NAME.match(value):
            found.append(((key.lower(), ""), value))
            if stack:
                pending.append(((stack[-1][1].lower(), key.lower()), value, stack[-1]))
        if not value:
            stack.append((indent, key))
    for pair, value, owner in pending:
        found.append((pair, None if owner in choosing else value))
    return found
