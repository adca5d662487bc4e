"""Project callables that run one step of work: a loop calling one every iteration is a step loop.

`for T in trange(1, T_max + 1): action = dqn.act(state); ...` calls only methods of project objects, yet every
iteration runs the network: `Agent.act` calls `self.online_net(...)`, an attribute its `__init__` builds from a
project `nn.Module` class. The summary asked here, per project method or function (memoised per module content),
is whether one call of it runs a step: a backward pass, an optimizer's `step()`, or a network's forward, outside
any loop of its own, in its body or through the callables it calls outside loops (`self.m(...)`, a method of an
object held in `self.X`, a project function), at most `MAX_DEPTH` calls deep and following at most
`MAX_FOLLOWED` distinct callees per function.

Not a step (the caller's loop runs it once per epoch, or for setup): a callable whose step work sits in a loop of
its own (an epoch's pass, an evaluation over a dataset, a minibatch loop), directly or in a callee it runs, and one
that reaches nothing of the kind.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint.analysis.project import ClassSummary, FunctionSummary, _dotted, _record, _self_stores

MAX_DEPTH = 3  # the callable itself, then up to three calls further (`learn` -> `_loss` -> `self.net(x)`)
MAX_FOLLOWED = 12  # distinct callees followed per function (fan-out bound)

STEP = "step"  # one call runs the work once: a loop calling it every iteration is a step loop
EPOCH = "epoch"  # the work runs in a loop of the callable's own: its caller's loop is an epoch loop
NONE = ""

# Calls on a built object that hand the object itself back (`DQN(args).to(device)`, `Net().cuda().train()`).
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval",
                             "requires_grad_", "share_memory"})
_WRAPPERS = ("DataParallel", "DistributedDataParallel")


class StepCallables:
    """Per project: what one call of a project function or method runs (`STEP`, `EPOCH` or `NONE`), cached by
    (module path, qualified name, module digest, depth)."""

    def __init__(self, project) -> None:
        self.project = project
        self._cache: dict[tuple, tuple[str, frozenset]] = {}  # key -> (answer, the modules it was read from)
        self._reading: Optional[set] = None  # the modules the answer being computed has read

    # -- entry points ------------------------------------------------------------------------------------------
    def method(self, cls: ClassSummary, name: str) -> str:
        """What one call of the method `name` of an instance of the project class `cls` runs."""
        summary = self.project.method(cls, name)
        if summary is None:
            return NONE
        owner = self._owner(summary) or cls
        return self._of(summary, owner, 0)

    def function(self, summary: FunctionSummary) -> str:
        """What one call of a project function (or of a method, through its defining class) runs."""
        return self._of(summary, self._owner(summary), 0)

    def instance_call(self, cls: ClassSummary) -> str:
        """What calling an instance of `cls` runs: an `nn.Module`'s forward (a step), else its `__call__`."""
        if self.project.is_module_class(cls):
            return STEP
        return self.method(cls, "__call__") if self.project.method(cls, "__call__") is not None else NONE

    # -- the summary -------------------------------------------------------------------------------------------
    def _owner(self, summary: FunctionSummary) -> Optional[ClassSummary]:
        owner, _, _ = summary.qualname.rpartition(".")
        if not owner:
            return None
        info = self.project.module(Path(summary.path))
        return info.classes.get(owner) if info is not None else None

    def _of(self, summary: FunctionSummary, cls: Optional[ClassSummary], depth: int) -> str:
        info = self.project.module(Path(summary.path))
        if depth > MAX_DEPTH:
            return NONE  # too deep: unknown
        # by depth too: an answer cut short by the depth bound is never handed to a shallower question, so the
        # answer never depends on which question came first
        key = (summary.path, summary.qualname, info.digest if info is not None else None, depth)
        known = self._cache.get(key)
        if known is not None:
            for path in known[1]:
                _record(path)  # a lint cached on this answer depends on the modules it was read from (cache.py)
            return known[0]
        self._cache[key] = (NONE, frozenset())  # recursion guard
        outer, self._reading = self._reading, {Path(summary.path)} | ({Path(cls.path)} if cls is not None else set())
        try:
            found = self._compute(summary, cls, depth)
        finally:
            read, self._reading = self._reading, outer
        if outer is not None:
            outer |= read
        self._cache[key] = (found, frozenset(read))
        return found

    def _compute(self, summary: FunctionSummary, cls: Optional[ClassSummary], depth: int) -> str:
        from gpulint.analysis import _method_node
        from gpulint.analysis.runs_model import _calls

        node = _method_node(self.project, summary)
        if node is None:
            return NONE
        step = False
        followed: dict[tuple, str] = {}
        for call, loops in _calls(node.body, ()):
            if self._runs_work(call, cls):
                if loops:
                    return EPOCH  # the work runs in a loop of its own: one call is many steps (or an epoch)
                step = True
                continue
            if len(followed) >= MAX_FOLLOWED and not loops:
                continue
            callee = self._callee(call, summary, cls)
            if callee is None:
                continue
            target, owner = callee
            ident = (target.path, target.qualname)
            if ident not in followed:
                if len(followed) >= MAX_FOLLOWED:
                    continue
                followed[ident] = self._of(target, owner, depth + 1)
            what = followed[ident]
            if what == EPOCH or what == STEP and loops:
                return EPOCH
            step = step or what == STEP
        return STEP if step else NONE

    def _runs_work(self, call: ast.Call, cls: Optional[ClassSummary]) -> bool:
        """A backward pass, an optimizer's step, or a network's forward (`self.net(x)`, `self.net.forward(x)`,
        `self(x)` in an `nn.Module`'s method)."""
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr == "backward":
                return True
            if func.attr == "step" and not call.args and "optim" in _last(func.value).lower():
                return True
            if func.attr == "forward" and cls is not None and self._network_attribute(cls, func.value):
                return True
        if cls is None:
            return False
        if isinstance(func, ast.Name) and func.id == "self":
            return self.project.is_module_class(cls)
        return self._network_attribute(cls, func)

    def _network_attribute(self, cls: ClassSummary, expr: ast.expr) -> bool:
        """`self.X` where every store of `self.X` in the class builds a network: a project `nn.Module` class, a
        `torch.nn` layer, or a parallel wrapper of one."""
        held = self._held(cls, expr)
        return held is not None and held[0]

    def _held(self, cls: ClassSummary, expr: ast.expr) -> Optional[tuple[bool, Optional[ClassSummary]]]:
        """(a network, the project class) of what `self.X` holds, when every store of it builds the same kind of
        thing; None when unknown or mixed."""
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"):
            return None
        stores = _self_stores(cls).get(expr.attr, [])
        if not stores:
            return None
        info = self.project.module(cls.path)
        if info is None:
            return None
        found: Optional[tuple[bool, Optional[ClassSummary]]] = None
        for store in stores:
            value = getattr(store, "value", None)
            if not isinstance(store, (ast.Assign, ast.AnnAssign)) or value is None:
                return None
            built = self._built(info, value)
            if built is None or found is not None and found != built:
                return None
            found = built
        return found

    def _built(self, info, value: ast.expr) -> Optional[tuple[bool, Optional[ClassSummary]]]:
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in _SELF_RETURNING and isinstance(value.func.value, ast.Call):
            value = value.func.value  # `DQN(args).to(device)`
        if not isinstance(value, ast.Call):
            return None
        dotted = _dotted(value.func)
        if dotted is None:
            return None
        if dotted.rpartition(".")[2] in _WRAPPERS and value.args:
            return self._built(info, value.args[0])
        found = self.project.lookup(info.path, dotted)
        if isinstance(found, ClassSummary):
            if self._reading is not None:
                self._reading.add(Path(found.path))
            return self.project.is_module_class(found), found
        qualified = info.qualify(dotted)
        if qualified.startswith("torch.nn.") and not qualified.startswith("torch.nn.functional") and \
                qualified.rpartition(".")[2][:1].isupper():
            return True, None
        return None

    def _callee(self, call: ast.Call, summary: FunctionSummary, cls: Optional[ClassSummary]):
        """(the project function or method a call runs, the class it is a method of), or None: `self.m(...)`,
        `self.X.m(...)` of an object `self.X` holds, `f(...)`/`mod.f(...)` of a project function."""
        func = call.func
        if isinstance(func, ast.Attribute) and cls is not None:
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                method = self.project.method(cls, func.attr)
                return (method, self._owner(method) or cls) if method is not None else None
            held = self._held(cls, receiver)
            if held is not None and held[1] is not None and not func.attr.startswith("__"):
                method = self.project.method(held[1], func.attr)
                return (method, self._owner(method) or held[1]) if method is not None else None
            if held is not None:
                return None
        dotted = _dotted(func)
        if dotted is None or dotted.split(".")[0] == "self":
            return None
        found = self.project.lookup(Path(summary.path), dotted)
        if isinstance(found, FunctionSummary) and "." not in found.qualname:
            return found, None
        return None


def _last(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def step_callables(project) -> StepCallables:
    found = getattr(project, "_step_callables", None)
    if found is None:
        found = project._step_callables = StepCallables(project)
    return found
