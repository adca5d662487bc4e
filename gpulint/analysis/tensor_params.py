"""Parameters that hold device tensors because of what their callers pass (`KindInference.parameter_hook`).

A function's parameter says nothing of its kind by itself: `def build_targets(self, p, targets, imgs)` may be
given anything. It holds a device tensor where

- every call of the function in its own module passes one (`self.build_targets(p, targets, imgs)` in the same
  class, or `helper(x)` for a top-level function, each argument a tensor not known to be in host memory), and no
  other project file calls it (`.build_targets(` or `def build_targets` elsewhere: a caller there could pass
  anything); or
- every call in the project's other files passes a copy to a device for it (`.to(device)`, `.cuda()`, or a
  name every assignment of which in the caller's scope is one: `x, y = x.cuda(), y.cuda()`, read with `ast`); for a class's `__call__` or `forward`, every call of a name a project file binds to an instance
  (`compute_loss = ComputeLoss(model)` ... `compute_loss(pred, targets.to(device))`).

Both kinds of sites may be present; there must be at least one, and a method called as `obj.method(...)` in another
file is not followed. A chain of helpers handing the value on is followed 3 deep. Only `ast` and this module's
kinds are read: no other module's loop analysis (which would ask the same question there, without end).

A value whose device is not known stays unknown: a parameter that one call gives a host tensor, a number or an
unknown value is not a device tensor here (`tests/test_tensor_params.py`).
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.node_types import of_types_within
from gpulint.analysis.tree import of_types
from gpulint.syntax import passed_argument


def device_tensor_parameter(analysis, binding) -> bool:
    fn, param = binding.source, binding.value
    if type(fn) is not cst.FunctionDef or type(param) is not cst.Param or analysis.path is None:
        return False
    answers = analysis.fact(_answers)
    key = (id(fn), param.name.value)
    found = answers.get(key)
    if found is None:
        if answers.setdefault("depth", 0) >= _MAX_CHAIN:
            return False  # a chain of helpers handing the value on: too far to follow
        answers[key] = False  # a recursive question (a function passing its parameter to itself) says no
        answers["depth"] += 1
        try:
            found = answers[key] = _given_device_tensors(analysis, fn, param)
        finally:
            answers["depth"] -= 1
    return found


_MAX_CHAIN = 3


def _answers(analysis) -> dict:
    return {}


def _position(analysis, fn: cst.FunctionDef, param: cst.Param) -> tuple[Optional[int], Optional[bool]]:
    """The parameter's position among the arguments a call passes (after `self` for a method), and whether `fn`
    is a method of a top-level class (True), a top-level function (False) or neither (None)."""
    from gpulint.analysis.host_values import _method_of

    method = _method_of(analysis, fn)
    params = list(fn.params.posonly_params) + list(fn.params.params)
    if param not in params or method is None:
        return None, method
    # a `@staticmethod` called as `self.reshape(x, 2)` has no `self` to skip
    static = any(type(d.decorator) is cst.Name and d.decorator.value == "staticmethod" for d in fn.decorators)
    position = params.index(param) - (1 if method and not static else 0)
    return (position if position >= 0 else None), method


_TENSOR_FIELDS = frozenset({"shape", "dtype", "device", "T", "mT", "H", "data", "grad", "ndim", "is_cuda",
                            "requires_grad", "grad_fn", "is_leaf", "layout", "real", "imag", "names"})


def _calls_by_name(analysis) -> tuple[dict, dict]:
    """The module's calls `name(...)` by name, and its calls `self.name(...)` by name: one walk per module
    (`ModuleAnalysis.fact`), not one per parameter asked about."""
    return analysis.fact(_index_calls)


def _index_calls(analysis) -> tuple[dict, dict]:
    plain: dict[str, list] = {}
    on_self: dict[str, list] = {}
    for call in of_types(analysis.index, cst.Call):
        func = call.func
        if type(func) is cst.Name:
            plain.setdefault(func.value, []).append(call)
        elif type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            on_self.setdefault(func.attr.value, []).append(call)
    return plain, on_self


def _used_as_a_record(analysis, fn: cst.FunctionDef, name: str) -> bool:
    """The function reads a field of the parameter that no tensor has (`batch.masks`, `batch.dict_key`): a
    record with a `.to(device)` of its own (SAM 2's `BatchedVideoDatapoint`), not a tensor."""
    for node in of_types_within(analysis.index, fn, cst.Attribute):
        if type(node.value) is cst.Name and node.value.value == name and node.attr.value not in _TENSOR_FIELDS:
            parent = analysis.index.up.get(id(node))
            if not (type(parent) is cst.Call and parent.func is node):
                return True
    return False


def _given_device_tensors(analysis, fn: cst.FunctionDef, param: cst.Param) -> bool:
    position, method = _position(analysis, fn, param)
    if position is None or _used_as_a_record(analysis, fn, param.name.value):
        return False
    name = fn.name.value
    cls = analysis.index.up.get(id(analysis.index.up.get(id(fn)))) if method else None
    if method:
        local = [call for call in _calls_by_name(analysis)[1].get(name, ())
                 if analysis.index.is_ancestor_or_self(cls, call)]
    else:
        local = list(_calls_by_name(analysis)[0].get(name, ()))
    remote = _remote_sites(analysis, name, cls.name.value if method and name in ("__call__", "forward") else None,
                           method, cls.name.value if method else None)
    if remote is None or not local and not remote:
        return False
    for call in local:
        arg = passed_argument(call, position, param.name.value)
        if not isinstance(arg, cst.Arg) or arg.star or not analysis.is_device_tensor(arg.value) or \
                _raw_batch(analysis, arg.value):
            return False
    for call, assigns in remote:
        if any(type(a) is ast.Starred for a in call.args):
            return False
        arg = next((k.value for k in call.keywords if k.arg == param.name.value), None)
        if arg is None and position < len(call.args):
            arg = call.args[position]
        if arg is None or not (_device_copy(arg) or _bound_to_device_copies(arg, call, assigns)):
            return False
    return True


def _bound_to_device_copies(arg: ast.expr, call: ast.Call, assigns: Optional[dict]) -> bool:
    """`labels` where every assignment of the name in the caller's scope before the call is a copy to a device
    (`labels = labels.cuda()`, `inputs, labels = inputs.cuda(), labels.cuda(non_blocking=True)`), and there is
    one: what the call is given is that copy (a loop variable the copy rebinds included)."""
    if type(arg) is not ast.Name or not assigns:
        return False
    bound = assigns.get(arg.id)
    if not bound:
        return False
    values = []
    for value, index in bound:
        if value.lineno >= call.lineno:
            continue  # bound after the call (`inputs, labels = mixup(...)` later in the step): not what it passes
        if index is not None:
            if type(value) is not ast.Tuple or index >= len(value.elts) or \
                    any(type(e) is ast.Starred for e in value.elts):
                return False
            value = value.elts[index]
        values.append(value)
    return bool(values) and all(_device_copy(v) and not _built_object(v) for v in values)


def _built_object(copy: ast.expr) -> bool:
    """`torch.nn.Linear(16, 8).cuda()`, `Net().to(device)`: the copy moves an object just built by its class (a
    network moved to the GPU, not a tensor)."""
    receiver = copy.func.value if isinstance(copy, ast.Call) and isinstance(copy.func, ast.Attribute) else None
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and \
            receiver.func.attr in ("to", "cuda", "train", "eval", "float", "half", "bfloat16", "double"):
        receiver = receiver.func.value
    if not isinstance(receiver, ast.Call):
        return False
    func = receiver.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name[:1].isupper()


def _raw_batch(analysis, expr: cst.BaseExpression) -> bool:
    """A loader's batch as the loop drew it (`for batch in self.train_loader: self.train_step(batch)`, or a part
    of it: `x, y = batch`, `batch["x"]`): where the loader put it, in host memory unless moved; the helper may
    move it itself (OLMo's `train_step`), so it is no device tensor to hand on."""
    from gpulint.analysis.unmoved import iterates_a_loader

    for _ in range(4):
        while type(expr) in (cst.Subscript, cst.Attribute):
            expr = expr.value  # type: ignore[union-attr]
        if type(expr) is not cst.Name:
            return False
        bindings = analysis.index.visible_bindings(expr)
        if any(b.kind == "for" and type(b.source) is cst.For and iterates_a_loader(analysis.kinds, b.source.iter)
               for b in bindings):
            return True
        unpacked = [b for b in bindings if b.kind == "assign" and b.index is not None]
        if len(unpacked) != len(bindings) or len(unpacked) != 1 or unpacked[0].value is None:
            return False
        expr = unpacked[0].value  # `x, y = batch`: the batch it came from
    return False


_MAX_OWNER_FILES = 12  # files naming a method read to tell that one class alone defines it (a parse each)


def _remote_sites(analysis, name: str, instance_of: Optional[str], method: bool,
                  owner: Optional[str] = None) -> Optional[list]:
    """The calls of `name` in the project's other files (for `__call__`/`forward`, the calls of the instances of
    `instance_of` every file builds, this one included), read with `ast`; None when a call there cannot be read
    so (a method called on some other object). A method no other class of the project defines
    (`trainer.train_step(img, bbox)` of the one class with a `train_step`, `owner`) is followed at its
    `obj.name(...)` calls too: whichever object they are made on, only that class's method can run."""
    from gpulint.analysis.project import project_for

    here = Path(analysis.path).resolve()
    project = project_for(here)
    sites: list = []
    files = project.files_naming(instance_of or name)
    if method and instance_of is None and (
            owner is None or name.startswith("__") or len(files) > _MAX_OWNER_FILES or any(
                cls.name != owner and name in cls.methods for file in files
                for cls in (getattr(project.module(Path(file)), "classes", None) or {}).values())):
        owner = None  # another class has the method (or it is a dunder): a call elsewhere may be its
    for file in files:
        info = project.module(Path(file))
        if info is None:
            return None
        if instance_of is not None:
            # each with the assignments of its scope (`caplens = caplens.to(device)` before `decoder(imgs, caps,
            # caplens)`), as `calls_named` pairs them
            sites.extend((call, _scope_assigns(info, call)) for call in _instance_calls(info, instance_of))
        elif project._resolved(Path(file)) != here and info.calls_named(name):  # the project's memo of paths
            if method and owner is None:
                return None  # `obj.name(...)` elsewhere: what it passes is not followed
            sites.extend(info.calls_named(name))
    return sites


def _scope_assigns(info, call: ast.Call) -> Optional[dict]:
    """The assignments of the scope of `call` (a call of a name or of `<name>.attr`), from `calls_named`."""
    func = call.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if last is None:
        return None
    return next((assigns for c, assigns in info.calls_named(last) if c is call), None)


def _instance_calls(info, cls: str) -> list:
    """`loss_fn = ComputeLoss(model)` (or `self.loss_fn = ...`) then `loss_fn(pred, targets)`: the calls of the
    names a module (its `ModuleInfo`) binds to instances of `cls`, in `ast_walk.walk` order. Read from the
    module's index (`_instance_index`, built once per module), not a walk per class."""
    bound, calls = info.indexed(_instance_index)
    names, attrs = bound.get(cls, ((), ()))
    if not names and not attrs:
        return []
    found = [*(c for name in names for c in calls.get(("name", name), ())),
             *(c for attr in attrs for c in calls.get(("attr", attr), ()))]
    return [call for _, call in sorted(found, key=lambda c: c[0])]


def _instance_index(tree: ast.Module) -> tuple[dict, dict]:
    """(the last name of a called class -> (the names, the attributes) assignments bind to its calls' results;
    `("name", n)` / `("attr", a)` -> (walk position, call) for each call of `n(...)` / `<name>.a(...)`), from one
    walk of the module."""
    bound: dict[str, tuple[set, set]] = {}
    calls: dict[tuple[str, str], list] = {}
    for position, node in enumerate(ast_walk.walk(tree)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if last is None:
                continue
            names, attrs = bound.setdefault(last, (set(), set()))
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                elif isinstance(target, ast.Attribute):
                    attrs.add(target.attr)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                calls.setdefault(("name", node.func.id), []).append((position, node))
            elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                calls.setdefault(("attr", node.func.attr), []).append((position, node))
    return bound, calls


def _device_copy(node: ast.expr) -> bool:
    """`x.to(device)`, `x.to(self.device, non_blocking=True)`, `x.cuda()`, `x.float().cuda(rank)`: a copy to a
    device, not to the CPU nor to a dtype."""
    if type(node) is not ast.Call or type(node.func) is not ast.Attribute:
        return False
    if node.func.attr == "cuda":
        return True
    if node.func.attr != "to":
        return False
    target = next((k.value for k in node.keywords if k.arg == "device"), None)
    if target is None and node.args:
        target = node.args[0]
    if target is None:
        return False
    text = ast.unparse(target).lower()
    return "cpu" not in text and any(word in text for word in ("device", "cuda", "gpu"))
