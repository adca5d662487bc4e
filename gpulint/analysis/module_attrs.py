"""A network known by its class, not by its name: `self.<attr>` of a class whose own declarations say it holds an
`nn.Module` (issue 11, heldout8).

gpulint recognises a model mostly by what it is called (`model`, `net`, `self.generator`). An RL library keeps
its network in `self.policy`, a recommender in `self.dlrm`: names that say nothing. What the class says is enough:

Asked for classes that are not networks themselves (a trainer, an RL algorithm, a runner; a class deriving from
`nn.Module` or defining `forward` is a network):

- a class-body annotation, `policy: ActorCriticPolicy` or `actor: th.nn.Module`, in the class or a project base
  class (the nearest declaration wins);
- else the class's own assignments, every `self.<attr> = Cls(...)` building a project class that derives from
  `nn.Module` or a `torch.nn` layer (`self.dlrm = DLRM_Net(...)`; `self.<attr> = self.<attr>.to(...)` and `None`
  say nothing; one assignment of anything else and the answer is no).

Computed from the project's `ast` modules (analysis/project.py), once per module asking, class and attribute.
"""

from __future__ import annotations

import ast
from gpulint import ast_walk
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from gpulint.analysis.project import ClassSummary, Project

_MAX_BASES = 6
# `nn.Module` methods that hand back the module itself
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "double", "bfloat16",
                          "requires_grad_", "share_memory"})


def holds_module(project: "Project", path: Path, class_name: str, attr: str, cache: dict) -> bool:
    """`self.<attr>` in a method of top-level class `class_name` of `path` holds an `nn.Module` (`cache`: the
    answers already found for the module asking, kept with its analysis)."""
    from gpulint.analysis.project import ClassSummary

    found = project.lookup(path, class_name)
    if not isinstance(found, ClassSummary):
        return False
    network = cache.get(("network", id(found)))
    if network is None:
        network = cache[("network", id(found))] = "forward" in found.methods or project.is_module_class(found)
    if network:
        # Inside a network, `self.<submodule>(...)` already computes a tensor (kinds.py); its loops over
        # time steps or sub-batches stay as the names make them (model code runs as its caller decides).
        return False
    key = (str(found.path), found.name, found.line, attr)
    if key not in cache:
        cache[key] = _holds_module(project, found, attr)
    return cache[key]


_PARAMETER_READS = frozenset({"parameters", "named_parameters"})


def _holds_module(project: "Project", cls: "ClassSummary", attr: str) -> bool:
    from gpulint.analysis.hierarchy import first_bases

    chain: list = []
    for current in first_bases(project, cls, _MAX_BASES, written_first=True):
        chain.append(current)
        declared = _annotated(project, current, attr)
        if declared is not None:
            return declared
    verdicts = [v for c in chain for v in _assigned(project, c, attr)]
    if bool(verdicts) and all(verdicts):
        return True
    return bool(verdicts) and _parameters_read(project, chain, attr)


# ... and, for an attribute named like a network (`self.network`, `self.model`), the module methods an optimizer
# shares (`self.network.zero_grad()`, `self.target_network.load_state_dict(self.network.state_dict())`)
_NAMED_MODULE_READS = _PARAMETER_READS | frozenset({"zero_grad", "state_dict", "load_state_dict", "train", "eval"})


# `nn.Module` methods whose call on `self.<attr>` says it is a module: its parameters handed to an optimizer,
# clipped or counted (`config.optimizer_fn(self.network.parameters())`)


def _parameters_read(project: "Project", chain: list, attr: str) -> bool:
    """`self.<attr>` is built by a factory nothing resolves (`self.network = config.network_fn()`, a callable
    the configuration holds), and the class reads its parameters (`self.network.parameters()`): a module. Only
    when every assignment is such a call (a project class that is no module, a literal or a name say no)."""
    from gpulint.analysis.project import ClassSummary, _dotted

    for cls in chain:
        for method in cls.methods.values():
            for node in _self_assignments(method).get(attr, ()):
                value = node.value
                if isinstance(value, ast.Constant) and value.value is None:
                    continue
                if not isinstance(value, ast.Call):
                    return False
                dotted = _dotted(value.func)
                if dotted is None or dotted.startswith("self."):
                    return False
                found = project.lookup(cls.path, dotted)
                if isinstance(found, ClassSummary) and not project.is_module_class(found):
                    return False
                info = project.module(cls.path)
                if found is None and info is not None and "." not in dotted and dotted in info.imports:
                    return False  # a library class or function imported by name: its own kind decides
    from gpulint.analysis.kinds import Kind, _kind_from_name

    reads = _NAMED_MODULE_READS if _kind_from_name(attr) is Kind.MODULE else _PARAMETER_READS
    for cls in chain:
        for method in cls.methods.values():
            for node in _attribute_calls(method):
                if node.func.attr in reads and isinstance(node.func.value, ast.Attribute) and \
                        node.func.value.attr == attr and isinstance(node.func.value.value, ast.Name) and \
                        node.func.value.value.id == "self":
                    return True
    return False


_ATTRIBUTE_CALLS: dict = {}


def _attribute_calls(method: ast.AST) -> list:
    """The `x.m(...)` calls of a method, walked once per method node (kept as `_self_assignments` keeps its own)."""
    known = _ATTRIBUTE_CALLS.get(id(method))
    if known is not None and known[0] is method:
        return known[1]
    found = [n for n in ast_walk.walk(method) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    if len(_ATTRIBUTE_CALLS) >= _KEPT:
        _ATTRIBUTE_CALLS.clear()
    _ATTRIBUTE_CALLS[id(method)] = (method, found)
    return found


def class_node(project: "Project", cls: "ClassSummary") -> Optional[ast.ClassDef]:
    """The `ClassDef` of the project class `cls`; from its own lines in a big module (no whole tree parsed)."""
    info = project.module(cls.path)
    if info is None:
        return None
    if hasattr(info, "class_node"):  # a big module: no whole tree (lazy_module.py)
        node = info.class_node(cls.name)
        return node if node is not None and node.lineno == cls.line else None
    return next((s for s in info.tree.body if isinstance(s, ast.ClassDef) and s.name == cls.name
                 and s.lineno == cls.line), None)


def _annotated(project: "Project", cls: "ClassSummary", attr: str) -> Optional[bool]:
    """What a class-body annotation `attr: X` says: True for a module class, False for anything else, None
    when the class declares nothing for `attr`."""
    node = class_node(project, cls)
    if node is None:
        return None
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == attr:
            return _names_module_class(project, cls.path, stmt.annotation)
    return None


def _names_module_class(project: "Project", path: Path, expr: ast.expr) -> bool:
    from gpulint.analysis.project import ClassSummary, _dotted, annotation_class

    dotted = _dotted(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
    info = project.module(path)
    if dotted is not None and info is not None and _torch_module(info.qualify(dotted)):
        return True
    found = annotation_class(project, path, expr)
    return isinstance(found, ClassSummary) and project.is_module_class(found)


def _torch_module(qualified: str) -> bool:
    """`torch.nn.Module`, `torch.nn.Linear`: a class of `torch.nn` (not `torch.nn.functional.relu`)."""
    parts = qualified.split(".")
    return len(parts) >= 3 and parts[:2] == ["torch", "nn"] and parts[-1][:1].isupper() and \
        "functional" not in parts and "utils" not in parts and "init" not in parts


# method node -> (the node, its `self.<attr> = ...` statements by attr, in `ast.walk` order): every asking module
# asked again for each attr of each class, walking every method each time (about 30,000 nodes walked for
# pytorch/examples' cold lint). Nodes are never changed after the parse; the node is kept so its id stays its own.
_SELF_ASSIGNMENTS: dict = {}
_KEPT = 4096


def _self_assignments(method: ast.AST) -> dict:
    known = _SELF_ASSIGNMENTS.get(id(method))
    if known is not None and known[0] is method:
        return known[1]
    found: dict = {}
    for node in ast_walk.walk(method):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    nodes = found.setdefault(t.attr, [])
                    if not nodes or nodes[-1] is not node:  # `self.a = self.a = x`: the statement once
                        nodes.append(node)
    if len(_SELF_ASSIGNMENTS) >= _KEPT:
        _SELF_ASSIGNMENTS.clear()
    _SELF_ASSIGNMENTS[id(method)] = (method, found)
    return found


def _assigned(project: "Project", cls: "ClassSummary", attr: str) -> list:
    """For each `self.<attr> = value` in the class's methods that says something: whether it builds a module."""
    from gpulint.analysis.config_targets import instantiated, is_instantiate
    from gpulint.analysis.project import _dotted

    verdicts = []
    for method in cls.methods.values():
        for node in _self_assignments(method).get(attr, ()):
            value = node.value
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                    value.func.attr in _SAME_MODULE and \
                    isinstance(value.func.value, ast.Attribute) and value.func.value.attr == attr:
                continue  # `self.policy = self.policy.to(self.device)`: the same object
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                    value.func.attr in _SAME_MODULE and isinstance(value.func.value, ast.Call):
                value = value.func.value  # `Net().to(device)`: the module built
            dotted = _dotted(value.func) if isinstance(value, ast.Call) else None
            if isinstance(value, ast.Call) and is_instantiate(value.func):
                # `self.critic = hydra.utils.instantiate(critic_cfg).to(device)`: the configured classes
                built = instantiated(project, cls.path, value)
                verdicts.append(bool(built) and all(project.is_module_class(c) for c in built))
                continue
            verdicts.append(dotted is not None and not dotted.startswith("self.") and
                            _names_module_class(project, cls.path, value.func))
    return verdicts
