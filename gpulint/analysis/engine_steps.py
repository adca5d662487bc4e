"""Functions a training-engine library calls once per batch, as data (issue 11: per-step code with no loop in sight).

Some projects hand their step to a library that owns the batch loop, and register handlers for its events:

    from ignite.engine import Engine, Events               # PyTorch-Ignite

    def update(engine, batch):                             # called by `trainer.run` once per batch
        x, y = batch[0].to(device), batch[1].to(device)
        loss = criterion(model(x), y); loss.backward(); optimizer.step()
        return loss.item()                                 # a device read every step
    trainer = Engine(update)

    @trainer.on(Events.ITERATION_COMPLETED)                # every iteration
    def log(engine): ...
    @trainer.on(Events.ITERATION_COMPLETED(every=100))     # every 100th: periodic
    def log_often(engine): ...
    trainer.run(train_loader, max_epochs=10)

    engine = torchnet.engine.Engine()                      # torchnet (PyTorch 0.x projects)
    engine.hooks['on_forward'] = on_forward                # after every batch's forward
    engine.train(h, train_loader, maxepoch=10, optimizer=optimizer)   # `h(sample)` once per batch

`engine_steps(index, kinds)` maps each function of the module that such a library runs (bound once by `def`, handed
by name, or a method of the enclosing class handed as `self.m`) to how often it runs: `Frequency.EVERY_ITERATION`
for the process function and the per-iteration events, `PERIODIC` for a handler with `every=`/`event_filter=` or
a per-epoch event, with the registration as the reason's anchor. A handler of a once-per-run event (`STARTED`,
`COMPLETED`) or with `once=` is not listed. Only modules that import the library are read (the events and engines
are recognised by their qualified names, so a project's own `Engine` or `Events` is never taken for them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from gpulint.analysis.node_types import of_types


@dataclass(frozen=True)
class EngineStep:
    """How often the library runs a handed function, and the registration that says so."""

    every_iteration: bool
    reason: str  # for a periodic handler: why ("`Events.ITERATION_COMPLETED(every=100)`")
    registration: cst.CSTNode  # the call, decorator or assignment that hands the function to the library
    library: str  # "ignite" / "torchnet": how the message names the caller


LIBRARIES = ("ignite", "torchnet")
# The engine classes whose constructor takes the process function (their definitions and the re-exports users import)
_IGNITE_ENGINES = frozenset({"ignite.engine.Engine", "ignite.engine.engine.Engine", "ignite.engine.DeterministicEngine",
                             "ignite.engine.deterministic.DeterministicEngine"})
_IGNITE_EVENTS = ("ignite.engine.Events.", "ignite.engine.events.Events.")
# ignite/engine/events.py: fired in `Engine._run_once_on_dataset` once per batch, and in `_internal_run` once per epoch
_IGNITE_PER_BATCH = frozenset({"ITERATION_STARTED", "ITERATION_COMPLETED", "GET_BATCH_STARTED", "GET_BATCH_COMPLETED"})
_IGNITE_PER_EPOCH = frozenset({"EPOCH_STARTED", "EPOCH_COMPLETED"})
_TORCHNET_ENGINES = frozenset({"torchnet.engine.Engine", "torchnet.engine.engine.Engine"})
# torchnet/engine/engine.py: `train` calls the network closure and the hooks below once per sample of the iterator
_TORCHNET_PER_BATCH = frozenset({"on_sample", "on_forward", "on_update"})
_TORCHNET_PER_EPOCH = frozenset({"on_start_epoch", "on_end_epoch"})


def imports_an_engine_library(index) -> bool:
    aliases = index.imports.aliases.values()
    return any(v.split(".", 1)[0] in LIBRARIES for v in aliases)


def engine_steps(index, kinds) -> dict[int, EngineStep]:
    """id(function) -> how often an engine library runs it; empty for a module that imports no such library."""
    if not imports_an_engine_library(index):
        return {}
    found: dict[int, EngineStep] = {}

    def add(fn: Optional[cst.FunctionDef], step: Optional[EngineStep]) -> None:
        if fn is None or step is None:
            return
        known = found.get(id(fn))
        if known is None or (step.every_iteration and not known.every_iteration):
            found[id(fn)] = step

    for fn in of_types(index, cst.FunctionDef):
        for decorator in fn.decorators:  # type: ignore[attr-defined]
            call = decorator.decorator
            if type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value == "on" \
                    and call.args and call.args[0].keyword is None:
                add(fn, _ignite_event(kinds, call.args[0].value, decorator))
    for call in of_types(index, cst.Call):
        func = call.func  # type: ignore[attr-defined]
        if type(func) in (cst.Name, cst.Attribute) and kinds.qualified(func) in _IGNITE_ENGINES:
            handed = _argument(call, 0, "process_function")
            add(_handed_function(index, handed), EngineStep(True, "", call, "ignite"))
        elif type(func) is cst.Attribute and func.attr.value == "add_event_handler" and len(call.args) >= 2:
            handed = _argument(call, 1, "handler")
            event = _argument(call, 0, "event_name")
            if event is not None:
                add(_handed_function(index, handed), _ignite_event(kinds, event, call))
        elif type(func) is cst.Attribute and func.attr.value in ("train", "test") and \
                _torchnet_engine(index, kinds, func.value):
            handed = _argument(call, 0, "network")
            add(_handed_function(index, handed), EngineStep(True, "", call, "torchnet"))
    for assign in of_types(index, cst.Assign):
        target = assign.targets[0].target if len(assign.targets) == 1 else None  # type: ignore[attr-defined]
        hook = _torchnet_hook(index, kinds, target)
        if hook is not None:
            handed = _handed_function(index, assign.value)  # type: ignore[attr-defined]
            if hook in _TORCHNET_PER_BATCH:
                add(handed, EngineStep(True, "", assign, "torchnet"))
            elif hook in _TORCHNET_PER_EPOCH:
                add(handed, EngineStep(False, f"once per epoch (torchnet's `{hook}` hook)", assign, "torchnet"))
    return found


def _argument(call: cst.Call, position: int, keyword: str) -> Optional[cst.BaseExpression]:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    if any(a.star for a in call.args[:position + 1]):
        return None
    return positional[position].value if position < len(positional) else None


def _handed_function(index, value: Optional[cst.BaseExpression]) -> Optional[cst.FunctionDef]:
    """The `def` a handed name refers to (bound once, by that `def`), or the method `m` of the enclosing class
    for `self.m`."""
    if type(value) is cst.Name:
        bindings = index.visible_bindings(value)
        if len(bindings) == 1 and bindings[0].kind == "def" and type(bindings[0].value) is cst.FunctionDef:
            return bindings[0].value
        return None
    if type(value) is cst.Attribute and type(value.value) is cst.Name and value.value.value == "self":
        cls = index.enclosing_class(value)
        if cls is None or type(cls.body) is not cst.IndentedBlock:
            return None
        methods = [s for s in cls.body.body if type(s) is cst.FunctionDef and s.name.value == value.attr.value]
        return methods[0] if len(methods) == 1 else None
    return None


def _ignite_event(kinds, event: cst.BaseExpression, registration: cst.CSTNode) -> Optional[EngineStep]:
    """How often handlers of `event` run: `Events.X`, `Events.X(every=N)` (or `event_filter=`), `A | B`."""
    if type(event) is cst.BinaryOperation and type(event.operator) is cst.BitOr:
        steps = [s for s in (_ignite_event(kinds, event.left, registration),
                             _ignite_event(kinds, event.right, registration)) if s is not None]
        return next((s for s in steps if s.every_iteration), steps[0] if steps else None)
    filtered: Optional[str] = None
    if type(event) is cst.Call:
        keywords = {a.keyword.value for a in event.args if a.keyword is not None}
        if "once" in keywords or "before" in keywords:
            return None  # `Events.ITERATION_COMPLETED(once=1)`: a single iteration
        if not event.args:
            filtered = None
        else:
            filtered = "every" if "every" in keywords else "event_filter"
        event = event.func
    if type(event) is not cst.Attribute:
        return None
    name = kinds.qualified(event)
    if name is None or not name.startswith(_IGNITE_EVENTS):
        return None
    member = name.rsplit(".", 1)[1]
    shown = cst.Module([]).code_for_node(registration.decorator if type(registration) is cst.Decorator
                                         else registration)
    if member in _IGNITE_PER_BATCH:
        if filtered:
            return EngineStep(False, f"`{shown}`", registration, "ignite")
        return EngineStep(True, "", registration, "ignite")
    if member in _IGNITE_PER_EPOCH:
        return EngineStep(False, f"once per epoch (`{shown}`)", registration, "ignite")
    return None


def _torchnet_engine(index, kinds, receiver: cst.BaseExpression) -> bool:
    """`engine` where every binding of the name is a call of torchnet's `Engine` (`Engine()`, `tnt.engine.Engine()`)."""
    if type(receiver) is not cst.Name:
        return False
    bindings = index.visible_bindings(receiver)
    return bool(bindings) and all(
        b.kind == "assign" and b.index is None and type(b.value) is cst.Call and
        type(b.value.func) in (cst.Name, cst.Attribute) and kinds.qualified(b.value.func) in _TORCHNET_ENGINES
        for b in bindings)


def _torchnet_hook(index, kinds, target) -> Optional[str]:
    """`engine.hooks['on_forward']` of a torchnet engine: the hook's name."""
    if type(target) is not cst.Subscript or type(target.value) is not cst.Attribute or \
            target.value.attr.value != "hooks" or len(target.slice) != 1:
        return None
    index_value = target.slice[0].slice
    if type(index_value) is not cst.Index or type(index_value.value) is not cst.SimpleString:
        return None
    if not _torchnet_engine(index, kinds, target.value.value):
        return None
    return index_value.value.evaluated_value if isinstance(index_value.value.evaluated_value, str) else None
