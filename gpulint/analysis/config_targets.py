"""Objects built from configuration files: Hydra's `_target_:` (`class:` before Hydra 1.0) and torchtune's
`_component_:` (issue 11).

Real trainers build their model and loss from YAML:

    # configs/train.yaml                         # trainer.py
    trainer:                                     self.model = instantiate(self.model_conf, _convert_="all")
      model:                                     self.loss = instantiate(cfg.loss)
        _target_: training.model.Net             ...
        encoder:                                 for batch in loader:
          _target_: training.model.Encoder            out = self.model(batch)
      loss:
        all:
          _target_: training.loss_fns.MultiLoss

`instantiate(X)` builds the class the configuration names under the key X reads. The key is the last name of
the argument with the spellings of "configuration" taken off (`self.model_conf`, `cfg.model`, `cfg["model"]`,
`model_cfg` -> `model`; a bare `cfg`/`config` names no key: unknown). Its candidates are the project classes (or
the classes a project builder function returns) named by the *shallowest* `_target_:` under a key of that name
in each configuration file: `model` gives `training.model.Net`, not the `Encoder` nested inside it (the model
builds that itself), and `loss` gives `MultiLoss` one level down. A Hydra config group (a file of
`configs/model/` whose `_target_:` sits at the top) counts as the key `model`. Library targets
(`torch.optim.AdamW`) are no project class and drop out. The candidates are a union (any run may pick each
configuration file), used as analysis/named_classes.py uses its choices: a candidate's per-step methods are
per-step code when the loop calls the instance; never for call-site costs.

The configuration files are read once per project state, line by line (no YAML library, nothing executed):
the nesting comes from indentation, list items (`- key:`) included; anchors, flow mappings and multi-line values
are not followed (a miss, never a false alarm).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.analysis.project import ClassSummary, FunctionSummary, Project

_TARGET_KEYS = ("_target_", "_component_", "class")
_MAX_CONFIG_FILES = 2000
_MAX_CONFIG_BYTES = 1_000_000
_SKIPPED = {"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env"}
_LINE = re.compile(r"^(\s*)((?:-\s+)*)([A-Za-z_][\w.\-]*)\s*:(?:\s+(.*))?$")
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+$")
_CONFIG_WORDS = ("cfg", "conf", "config", "configs", "cfgs", "args", "hparams", "params")


def yaml_entries(text: str):
    """(indent, key, value, enclosing keys as (indent, key) pairs) for each `key: value` line of a YAML text, read
    line by line: comments and document markers skipped, nesting from indentation (list items' `- ` counted as
    indentation); the value unquoted, "" for a key that opens a mapping. The enclosing list is the caller's to
    extend (`stack.append((indent, key))` for a key that opens one): it is the same list every time."""
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#") or line.startswith(("---", "...", "%")):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        indent = len(match.group(1)) + len(match.group(2))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        yield indent, match.group(3), (match.group(4) or "").strip().strip("'\""), stack


def read_targets(text: str, group: str = "") -> dict[str, dict[str, int]]:
    """{key: {dotted target: depth below the key}} of one YAML text: every key enclosing a `_target_:` (or
    `_component_:`) maps to it with the number of keys between them; `group` (the file's folder) encloses the
    targets at the top of the file."""
    found: dict[str, dict[str, int]] = {}
    for indent, key, value, stack in yaml_entries(text):
        if key in _TARGET_KEYS:
            if _DOTTED.match(value):
                keys = [k for _, k in stack] or ([group] if group else [])
                for position, enclosing in enumerate(keys):
                    depth = len(keys) - 1 - position
                    known = found.setdefault(enclosing, {})
                    if depth < known.get(value, depth + 1):
                        known[value] = depth
            continue
        stack.append((indent, key))
    return found


_INTERPOLATION = re.compile(r"^\$\{([A-Za-z_][\w.]*)\}$")


def read_aliases(text: str) -> dict[str, str]:
    """{key: the key it interpolates} of one YAML text's whole-value interpolations: `critic_cfg:
    ${double_q_critic}` makes `instantiate(critic_cfg)` build what `double_q_critic:` names (the last part of a
    dotted reference: `${model.encoder}` -> `encoder`)."""
    found: dict[str, str] = {}
    for raw in text.splitlines():
        match = _LINE.match(raw.split(" #", 1)[0].rstrip())
        value = (match.group(4) or "").strip().strip("'\"") if match is not None else ""
        reference = _INTERPOLATION.match(value)
        if reference is not None:
            found.setdefault(match.group(3), reference.group(1).rsplit(".", 1)[-1])
    return found


def _shallowest(per_key: dict[str, int]) -> list[str]:
    least = min(per_key.values())
    return [target for target, depth in per_key.items() if depth == least]


def config_targets(project: Project) -> dict[str, tuple[str, ...]]:
    """{key: the dotted targets the project's configuration files build under that key (the shallowest of each
    file)}: once per project state."""
    from gpulint.analysis.forward import _remembered

    return _remembered(project, ("config targets",), lambda: _config_targets(project)) or {}


def _config_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in _SKIPPED)
        files.extend(Path(folder) / n for n in sorted(names) if n.endswith((".yaml", ".yml")))
        if len(files) >= _MAX_CONFIG_FILES:
            break
    return files[:_MAX_CONFIG_FILES]


def _config_targets(project: Project) -> dict[str, tuple[str, ...]]:
    merged: dict[str, list[str]] = {}
    aliases: dict[str, set] = {}
    for file in _config_files(project.root):
        try:
            if file.stat().st_size > _MAX_CONFIG_BYTES:
                continue
            raw = file.read_bytes()
        except OSError:
            continue
        if b"_target_" not in raw and b"_component_" not in raw and b"class:" not in raw and b"${" not in raw:
            continue
        text = raw.decode("utf-8", "replace")
        for key, per_key in read_targets(text, file.parent.name).items():
            known = merged.setdefault(key, [])
            known.extend(t for t in _shallowest(per_key) if t not in known)
        for key, referenced in read_aliases(text).items():
            aliases.setdefault(key, set()).add(referenced)
    # `critic_cfg: ${double_q_critic}`: the key `critic_cfg` (read by `instantiate(critic_cfg)` as `critic`) names
    # what `double_q_critic` names; only where the key names nothing of its own
    for key, referenced in aliases.items():
        wanted = config_key(ast.Name(id=key, ctx=ast.Load()))
        targets = [t for r in sorted(referenced) for t in merged.get(r, ())]
        if wanted is not None and targets and wanted not in merged:
            merged[wanted] = list(dict.fromkeys(targets))
    return {key: tuple(targets) for key, targets in merged.items()}


def config_key(expr: ast.expr) -> Optional[str]:
    """The configuration key an `instantiate` argument reads: `cfg.model`, `self.model_conf`, `cfg["loss"]`,
    `model_cfg` -> `model`; None for a bare configuration object or anything else."""
    if isinstance(expr, ast.Attribute):
        name = expr.attr
    elif isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and \
            isinstance(expr.slice.value, str):
        name = expr.slice.value
    elif isinstance(expr, ast.Name):
        name = expr.id
    else:
        return None
    lowered = name.lower()
    for word in _CONFIG_WORDS:
        for affix in (f"_{word}",):
            if lowered.endswith(affix):
                lowered = lowered[:-len(affix)]
        if lowered.startswith(f"{word}_"):
            lowered = lowered[len(word) + 1:]
    if not lowered or lowered in _CONFIG_WORDS or lowered == "self":
        return None
    return lowered


def is_instantiate(func: ast.expr) -> bool:
    """`instantiate(...)`, `hydra.utils.instantiate(...)`, `config.instantiate(...)`."""
    return isinstance(func, ast.Name) and func.id == "instantiate" or \
        isinstance(func, ast.Attribute) and func.attr == "instantiate"


def instantiated(project: Project, path: Path, call: ast.Call) -> Optional[list[ClassSummary]]:
    """The candidate project classes of what `instantiate(cfg.X, ...)` in the module `path` builds; None when
    the key is unknown or no configuration file names a project class under it."""
    if not (is_instantiate(call.func) and call.args):
        return None
    return _key_candidates(project, path, config_key(call.args[0]))


def _key_candidates(project: Project, path: Path, key: Optional[str]) -> Optional[list[ClassSummary]]:
    if key is None:
        return None
    targets = config_targets(project).get(key, ())
    found: list[ClassSummary] = []
    for cls in _resolved_targets(project, path, targets):
        if all(cls is not f for f in found):
            found.append(cls)
    return found or None


def _resolved_targets(project: Project, path: Path, targets) -> list[ClassSummary]:
    found: list[ClassSummary] = []
    for dotted in targets:
        summary = project._lookup_dotted(dotted, path)
        if isinstance(summary, ClassSummary):
            found.append(summary)
        elif isinstance(summary, FunctionSummary):
            returned = project.returned_classes(summary) or tuple(
                c for c in summary.returns_classes[:1] if c is not None)
            found.extend(returned)
    return found


def is_config_target(project: Project, path: Path, class_name: str) -> bool:
    """Some configuration file builds the class `class_name` of the module `path` (as the shallowest target of
    a key): a file calling `instantiate` may build it."""
    from gpulint.analysis.forward import _remembered

    def find() -> frozenset:
        built = set()
        for targets in config_targets(project).values():
            for cls in _resolved_targets(project, path, targets):
                built.add((project._resolved(cls.path), cls.name))
        return frozenset(built)

    built = _remembered(project, ("config-built classes",), find) or frozenset()
    return (project._resolved(path), class_name) in built


def held_by_attribute(project: Project, path: Path, expr: ast.expr, line: int) -> list[ClassSummary]:
    """The candidate classes of a per-step call's target `expr` (at `line` of the module `path`) that come from
    `instantiate`: `self.X` or an element `self.X[k]` of an attribute some assignment `self.X = ...` fills from
    `instantiate(cfg.K)` (directly, wrapped, or through a comprehension over its items), or a parameter of the
    enclosing method that the module's `self.method(..., self.X, ...)` calls pass such an attribute."""
    info = project.module(path)
    if info is None:
        return []
    held = _held_attributes(project, info)
    if not held:
        return []
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return list(held.get(expr.attr, ()))
    if not isinstance(expr, ast.Name):
        return []
    method = _enclosing_method(info.tree, line)
    if method is None:
        return []
    params = [a.arg for a in (*method.args.posonlyargs, *method.args.args)]
    if expr.id not in params[1:] or any(
            isinstance(n, ast.Name) and n.id == expr.id and isinstance(n.ctx, ast.Store)
            for n in ast_walk.walk(method)):
        return []  # only a parameter never rebound in the method
    position = params.index(expr.id) - 1
    found: list[ClassSummary] = []
    for node in ast_walk.walk(info.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method.name
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
            continue
        passed = node.args[position] if position < len(node.args) and not any(
            isinstance(a, ast.Starred) for a in node.args[:position + 1]) else next(
            (k.value for k in node.keywords if k.arg == expr.id), None)
        if isinstance(passed, ast.Attribute) and isinstance(passed.value, ast.Name) and passed.value.id == "self":
            found.extend(c for c in held.get(passed.attr, ()) if all(c is not f for f in found))
    return found


def _enclosing_method(tree: ast.Module, line: int) -> Optional[ast.FunctionDef]:
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef):
            for fn in cls.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        fn.lineno <= line <= (fn.end_lineno or fn.lineno):
                    return fn
    return None


def _held_attributes(project: Project, info) -> dict[str, tuple]:
    """{X: candidate classes} of the `self.X = ...` assignments of the module's classes whose value holds an
    `instantiate(cfg.K)` call with candidates: once per module content."""
    key = ("config-built attributes", info.path, info.digest)
    known = project.per_step_sites.get(key)
    if known is None:
        known = {}
        if "instantiate" in _names(info.tree):
            builders = _instantiating_builders(info.tree)
            for node in ast_walk.walk(info.tree):
                if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                    continue
                target = node.targets[0]
                if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == "self"):
                    continue
                for call in ast_walk.walk(node.value):
                    if not isinstance(call, ast.Call):
                        continue
                    if is_instantiate(call.func):
                        built = instantiated(project, info.path, call)
                    elif isinstance(call.func, ast.Name) and call.func.id in builders:
                        passed = _passed(call, *builders[call.func.id])
                        built = _key_candidates(project, info.path, config_key(passed)) if passed else None
                    else:
                        continue
                    if built:
                        for cls in built:
                            classes = known.setdefault(target.attr, [])
                            if all(cls is not c for c in classes):
                                classes.append(cls)
            known = {k: tuple(v) for k, v in known.items()}
        project.per_step_sites[key] = known
    return known


def _instantiating_builders(tree: ast.Module) -> dict[str, tuple[int, str]]:
    """{name: (position, parameter)} of the module's top-level functions that return `instantiate(p)` of one of
    their parameters `p` never rebound (`def make_agent(obs_spec, action_spec, cfg): ...; return
    hydra.utils.instantiate(cfg)`): a call `make_agent(a, b, cfg.agent)` builds what the key `agent` names."""
    found: dict[str, tuple[int, str]] = {}
    for fn in tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        rebound = {n.id for n in ast_walk.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for node in ast_walk.walk(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Call) and \
                    is_instantiate(node.value.func) and node.value.args and \
                    isinstance(node.value.args[0], ast.Name) and node.value.args[0].id in params and \
                    node.value.args[0].id not in rebound:
                name = node.value.args[0].id
                found[fn.name] = (params.index(name), name)
    return found


def _passed(call: ast.Call, position: int, name: str) -> Optional[ast.expr]:
    """The argument a call passes for the parameter `name` at `position` (None behind a `*args`)."""
    if any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return None
    if position < len(call.args):
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _names(tree: ast.Module) -> set:
    return {n.attr if isinstance(n, ast.Attribute) else n.id
            for n in ast_walk.walk(tree) if isinstance(n, (ast.Attribute, ast.Name))}
