"""Calls of a linted module into the project's own helpers, and what each costs (see analysis/project.py).

The question a rule asks here: "this call (or `with` item) runs every step: does the helper it reaches read a
tensor back to the host?" Receivers resolve through what the module itself shows: `logger =
utils.MetricLogger(...)`, `self.meter = AverageMeter()` anywhere in the class, `dt = (Profile(), Profile())`
then `with dt[1]:`, or a direct `utils.all_reduce_mean(loss)`.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.imports import dotted_name
from gpulint.analysis.isinstance_narrowing import narrowed_class
from gpulint.analysis.kinds import Kind
from gpulint.analysis.libraries import (Effect, LibraryFact, fact_for_function, fact_for_method, hands_back,
                                        is_library_class)
from gpulint.analysis.node_types import of_types
from gpulint.analysis.unmoved import unmoved_loader_element
from gpulint.syntax import STARRED, argument_for, literal_value, passed_argument, positional_names
from gpulint.analysis.project import _UNKNOWN, _optional_annotation
from gpulint.analysis.project import (HANDS_BACK_FUNCTIONS, MODEL_WRAPPERS, MODULE_SELF_METHODS, ClassSummary, FunctionSummary, Project, Sink,
                                     annotation_class)

MAX_BINDINGS = 16  # bindings of one name followed (every one must agree)
MAX_CARRY_DEPTH = 10  # names, comprehensions and helper returns followed to decide what an argument holds


@dataclass(frozen=True)
class HelperCost:
    """A call whose callee reads a tensor back: `sink` is where, `callee` the helper's name, `argument` the
    argument that reaches it (None when the helper syncs whatever it is given, as a timer does)."""

    callee: str
    sink: Optional[Sink]  # None for a library call: `library` says what it does instead
    argument: Optional[cst.BaseExpression] = None
    library: Optional[LibraryFact] = None
    choice: Optional[str] = None  # the cost is the default configuration's: how the class is chosen


_SCALER_READS = ("step", "get_scale", "state_dict")
# Tensor methods that hand on the same data reshaped or converted (a network's input read through them)
_RESHAPES = frozenset({"contiguous", "view", "reshape", "long", "float", "t", "unsqueeze", "squeeze", "transpose",
                       "permute", "flatten"})


def _bound_names(target: cst.BaseExpression) -> list:
    if type(target) is cst.Name:
        return [target.value]
    if type(target) in (cst.Tuple, cst.List):
        return [n for e in target.elements for n in _bound_names(e.value)]
    return []


class ModuleCalls:
    """Calls of one module resolved with what the module alone shows: library objects and their classes."""

    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self.index = analysis.index
        self._self_attributes: Optional[dict[tuple[int, str], list[cst.BaseExpression]]] = None
        self._self_annotations: dict[tuple[int, str], cst.BaseExpression] = {}
        self._carrying: set[int] = set()  # bindings being decided by carries_tensor (cycles)
        self._loss_scalers: Optional[set[str]] = None
        self._fed: dict[int, frozenset] = {}  # function -> the `a.b` values it hands to a network (_network_inputs)

    def library_cost(self, call: cst.Call) -> Optional[tuple[LibraryFact, Optional[cst.BaseExpression]]]:
        """A library call the table (analysis/libraries.py) says reads tensors back: (fact, the tensor argument
        that is read, or None when the call reads device state of its own, as `scaler.get_scale()` does)."""
        fact = self._library_fact(call)
        if fact is None:
            return None
        if fact.effect is Effect.SYNCS:
            if fact.target.startswith("torch.amp.GradScaler.") and self._scaler_disabled(call):
                return None
            if fact.target.endswith(".__call__") and not self._updates(call):
                return None
            if fact.unless == "fused-optimizer" and self._fused_optimizer(
                    call, 1 if fact.target.endswith(".__call__") else 0) or \
                    fact.unless == "nonfinite-check-off" and self._nonfinite_check_off(call) or \
                    fact.unless == "averaged-on-host" and self._averaged_on_host(call):
                return None
            return fact, None
        if fact.effect is Effect.SYNCS_TENSOR_ARGS:
            if fact.unless == "nan-check-disabled" and self._nan_check_disabled(call) or \
                    fact.unless == "validate-args-off" and self._validation_off(call):
                return None
            for arg in call.args:
                for value in _argument_values(arg.value):
                    if self.carries_tensor(value):
                        return fact, value
        return None

    def _validation_off(self, call: cst.Call) -> bool:
        """`Categorical(probs, validate_args=False)`, or a module that turns validation off for every distribution
        (`Distribution.set_default_validate_args(False)`)."""
        if any(a.keyword is not None and a.keyword.value == "validate_args" and type(a.value) is cst.Name and
               a.value.value == "False" for a in call.args):
            return True
        text = self.analysis.source if self.analysis.source is not None else ""
        return "set_default_validate_args(False)" in text

    def _averaged_on_host(self, call: cst.Call) -> bool:
        """`ema.update_parameters(model)` where `ema` is not known to be built on a device: a binding of it builds
        `AveragedModel(model)` without `device=` (or with `device="cpu"`) and never moves it (`.to(device)`,
        `.cuda()`); the buffer it tests stays in host memory. A receiver built out of sight (a parameter) is
        taken as the table says only when a binding shows a device."""
        func = call.func
        if type(func) is not cst.Attribute:
            return True
        built = self.built_by(func.value)
        if not built:
            return True
        for construction in built:
            device = next((a.value for a in construction.args if a.keyword is not None and
                           a.keyword.value == "device"), None)
            if device is None or type(device) is cst.SimpleString and device.evaluated_value == "cpu" or \
                    type(device) is cst.Name and device.value == "None":
                if not self._moved_after(construction):
                    return True
        return False

    def _moved_after(self, construction: cst.Call) -> bool:
        """`AveragedModel(model).to(device)` / `.cuda()`: the construction is the receiver of a move."""
        parent = self.analysis.parent(construction)
        if type(parent) is not cst.Attribute or parent.attr.value not in ("to", "cuda"):
            return False
        return type(self.analysis.parent(parent)) is cst.Call

    def _nan_check_disabled(self, call: cst.Call) -> bool:
        """`metric.update(x)` where every binding of `metric` builds it with `nan_strategy="disable"`."""
        func = call.func
        built = self.built_by(func.value) if type(func) is cst.Attribute else None
        return bool(built) and all(any(
            a.keyword is not None and a.keyword.value == "nan_strategy" and type(a.value) is cst.SimpleString
            and a.value.evaluated_value == "disable" for a in c.args) for c in built)

    def _scaler_disabled(self, call: cst.Call) -> bool:
        """`scaler.step(opt)` where every binding of `scaler` builds it disabled on a GPU that supports bfloat16:
        `GradScaler(enabled=False)`, or `enabled=(dtype == 'float16')` with `dtype` bound once to another literal
        or to `'bfloat16' if ... torch.cuda.is_bf16_supported() ... else 'float16'` (nanoGPT): a disabled scaler
        reads nothing back."""
        func = call.func
        built = self.built_by(func.value) if type(func) is cst.Attribute else None
        return bool(built) and all(self._disabled_on_gpu(c) for c in built)

    def _disabled_on_gpu(self, built: cst.Call) -> bool:
        enabled = next((a.value for a in built.args if a.keyword is not None and a.keyword.value == "enabled"), None)
        if type(enabled) is cst.Name:
            return enabled.value == "False"
        if type(enabled) is not cst.Comparison or len(enabled.comparisons) != 1 or \
                type(enabled.comparisons[0].operator) is not cst.Equal:
            return False
        name, literal = enabled.left, enabled.comparisons[0].comparator
        if type(name) is cst.SimpleString:
            name, literal = literal, name
        if type(name) is not cst.Name or type(literal) is not cst.SimpleString or \
                literal.evaluated_value not in ("float16", "fp16", "half"):
            return False
        bindings = self.index.visible_bindings(name)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None:
            return False
        value = bindings[0].value
        if type(value) is cst.IfExp and "is_bf16_supported" in self.analysis.code(value.test):
            value = value.body  # the branch taken on Ampere and later GPUs
        return type(value) is cst.SimpleString and value.evaluated_value != literal.evaluated_value

    @staticmethod
    def _nonfinite_check_off(call: cst.Call) -> bool:
        """`fabric.clip_gradients(model, opt, max_norm=1.0, error_if_nonfinite=False)`, or a call without
        `max_norm` (clipping by value computes no norm): no NaN/inf test read on the host."""
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        off = keywords.get("error_if_nonfinite")
        if type(off) is cst.Name and off.value == "False":
            return True
        positional = [a for a in call.args if a.keyword is None and not a.star]
        return "max_norm" not in keywords and len(positional) < 4 and not any(a.star for a in call.args)

    def _fused_optimizer(self, call: cst.Call, position: int = 0) -> bool:
        """`scaler.step(opt)` where every binding of `opt` builds it with `fused=True` (its step reads no flag);
        `position` 1 for `loss_scaler(loss, opt, ...)` (timm's NativeScaler)."""
        if len(call.args) <= position or any(a.keyword is not None for a in call.args[:position + 1]):
            return False
        built = self.built_by(call.args[position].value)
        return bool(built) and all(any(
            a.keyword is not None and a.keyword.value == "fused" and type(a.value) is cst.Name
            and a.value.value == "True" for a in c.args) for c in built)

    def library_fact(self, call: cst.Call) -> Optional[LibraryFact]:
        """The table's fact for this call (analysis/libraries.py), whatever its effect."""
        return self._library_fact(call)

    @staticmethod
    def _updates(call: cst.Call) -> bool:
        """`loss_scaler(loss, opt, ..., need_update=...)`: steps the optimizer unless `need_update` is given as
        anything but `True` (gradient accumulation passes a flag: not told, so not reported)."""
        flag = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "need_update"), None)
        return flag is None or type(flag) is cst.Name and flag.value == "True"

    def _library_fact(self, call: cst.Call) -> Optional[LibraryFact]:
        func = call.func
        fact = None
        if type(func) is cst.Attribute:
            built = self.constructor(func.value)
            if built is None and func.attr.value in _SCALER_READS and self._scales_a_loss(func.value):
                built = "torch.amp.GradScaler"  # built elsewhere, used as one: `scaler.scale(loss).backward()`
            fact = fact_for_method(built, func.attr.value)
        fact = fact or fact_for_function(self.analysis.qualified(func))
        if fact is None and type(func) in (cst.Name, cst.Attribute) and call.args:
            # an instance called (`loss_scaler(loss, optimizer)`): its class's `__call__`
            built = self.constructor(func)
            fact = fact_for_method(built, "__call__") if built is not None else self._union_fact(func, "__call__")
        return fact

    def _union_fact(self, receiver: cst.BaseExpression, method: str) -> Optional[LibraryFact]:
        """`method` of an object that is an instance of one of several library classes (`library_union`): the
        table's fact when every candidate has one with the same effect (the one with a stated exception, if any,
        so that exception is checked), else None: a call free in one configuration is not reported."""
        classes = self.library_union(receiver)
        if len(classes) < 2:
            return None
        facts = [fact_for_method(name, method) for name in sorted(classes)]
        if any(f is None for f in facts) or len({f.effect for f in facts}) != 1:  # type: ignore[union-attr]
            return None
        return next((f for f in facts if f.unless), facts[0])

    def _scales_a_loss(self, receiver: cst.BaseExpression) -> bool:
        """The module calls `<receiver>.scale(x).backward(...)` (the same expression as written): a gradient
        scaler, however it was built (a parameter, a tuple from a helper, an attribute of a wrapper)."""
        if self._loss_scalers is None:
            self._loss_scalers = set()
            code = self.analysis.code
            for node in of_types(self.index, cst.Call):
                func = node.func  # type: ignore[attr-defined]
                if type(func) is cst.Attribute and func.attr.value == "backward" and \
                        type(func.value) is cst.Call and type(func.value.func) is cst.Attribute and \
                        func.value.func.attr.value == "scale" and len(func.value.args) == 1:
                    self._loss_scalers.add(code(func.value.func.value))
        return bool(self._loss_scalers) and self.analysis.code(receiver) in self._loss_scalers

    def carries_tensor(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """`expr` holds a tensor, or a dict, tuple or list of them, as far as the module and the project's
        summaries tell: the value a project helper returns (`grad_norm = loss_scaler(...)`, `reduce_dict(d)`
        handing back what it is given), an element of such a dict, a comprehension over one."""
        if self.analysis.is_tensor(expr):
            return True
        if depth > MAX_CARRY_DEPTH:
            return False
        if type(expr) is cst.Subscript:
            return self.carries_tensor(expr.value, depth + 1)
        if type(expr) is cst.Attribute and self._fed_to_a_network(expr):
            return True
        if type(expr) is cst.BinaryOperation:
            return self.carries_tensor(expr.left, depth + 1) or self.carries_tensor(expr.right, depth + 1)
        if type(expr) is cst.DictComp:
            return self.carries_tensor(expr.value, depth + 1)
        if type(expr) in (cst.ListComp, cst.GeneratorExp):
            return self.carries_tensor(expr.elt, depth + 1)
        if type(expr) in (cst.Tuple, cst.List):
            return any(self.carries_tensor(e.value, depth + 1) for e in expr.elements)
        if type(expr) is cst.Dict:
            return any(type(e) is cst.DictElement and self.carries_tensor(e.value, depth + 1)
                       for e in expr.elements)
        if type(expr) is cst.Name:
            return self._bindings_carry(expr, depth)
        if type(expr) is cst.Call:
            return self._call_carries(expr, depth)
        return False

    def _fed_to_a_network(self, expr: cst.Attribute) -> bool:
        """`batch.trg` where the same function hands it (or a name bound to it, `trg = batch.trg`, sliced or
        reshaped) to a network (`model(src, trg[:, :-1])`): a tensor, on the network's device, whatever the
        iterator that made `batch` is (a torchtext iterator built with `device=`)."""
        if type(expr.value) is not cst.Name or expr.value.value == "self":
            return False
        fn = next((a for a in self.index.ancestors(expr) if type(a) in (cst.FunctionDef, cst.Module)), None)
        if fn is None:
            return False
        fed = self._fed.get(id(fn))
        if fed is None:
            fed = self._fed[id(fn)] = self._network_inputs(fn)
        return self.analysis.code(expr) in fed

    def _network_inputs(self, fn: cst.CSTNode) -> frozenset:
        """The `name.attr` expressions of `fn` whose value is an argument of a network call (`Kind.MODULE`),
        directly or through the name last bound to it before the call (`trg = batch.trg` ... `model(src,
        trg[:, :-1])`), possibly sliced or reshaped on the way (`x.contiguous().view(-1)`)."""
        latest: dict[str, Optional[str]] = {}  # name -> the `a.b` its latest binding (in source order) copies
        fed = set()
        stack: list = [fn]
        while stack:
            node = stack.pop()
            if type(node) is cst.Call and self.analysis.kinds.of(node.func) is Kind.MODULE:
                for arg in node.args:
                    value = arg.value
                    while True:
                        if type(value) is cst.Subscript:
                            value = value.value
                        elif type(value) is cst.Call and type(value.func) is cst.Attribute and \
                                value.func.attr.value in _RESHAPES:
                            value = value.func.value
                        else:
                            break
                    if type(value) is cst.Attribute and type(value.value) is cst.Name and \
                            value.value.value != "self":
                        fed.add(self.analysis.code(value))
                    elif type(value) is cst.Name and latest.get(value.value):
                        fed.add(latest[value.value])  # type: ignore[arg-type]
            if type(node) is cst.Assign:
                # the value is read before the targets are bound: visit it first, then record the binding
                stack.append(("bind", node))
                stack.append(node.value)
                continue
            if type(node) is tuple:
                assign = node[1]
                for target in assign.targets:
                    for name in _bound_names(target.target):
                        latest[name] = None
                    if type(target.target) is cst.Name and type(assign.value) is cst.Attribute and \
                            type(assign.value.value) is cst.Name and assign.value.value.value != "self":
                        latest[target.target.value] = self.analysis.code(assign.value)
                continue
            if node is not fn and type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            stack.extend(reversed(node.children))
        return frozenset(fed)

    def _bindings_carry(self, name: cst.Name, depth: int) -> bool:
        bindings = [b for b in self.index.visible_bindings(name)
                    if not (type(b.value) is cst.Name and b.value.value == "None")]
        # Inside a comprehension its own `for` binds the name (comprehensions share the function's scope here).
        own = [b for b in bindings if type(b.source) is cst.CompFor and b.source in self._comp_fors(name)]
        bindings = own or bindings
        if not bindings or len(bindings) > MAX_BINDINGS:
            return False
        for b in bindings:
            if id(b) in self._carrying:
                continue  # `x, y = gather((x, y))`: the binding being decided says nothing about itself
            self._carrying.add(id(b))
            if b.kind == "assign" and b.index is None and _empty_dict(b.value):
                carries = self._filled_with_tensors(name, depth)  # `losses = {}`; `losses[k] = loss.detach()`
            elif b.kind in ("assign", "walrus") and b.value is not None:
                carries = self._element_carries(b.value, b.index, depth)
            elif b.kind == "for" and b.value is not None:
                carries = self._iteration_carries(b.value, b.index, depth)
            else:
                carries = False
            self._carrying.discard(id(b))
            if not carries:
                return False
        return True

    def _filled_with_tensors(self, name: cst.Name, depth: int) -> bool:
        """A dict started empty in this scope whose item assignments (`losses["loss"] = loss.detach()`) store a
        tensor: a dict of tensors, as the literal `{"loss": loss.detach()}` is."""
        scope = self.index.enclosing_scope(name)
        found = False
        for node in of_types(self.index, cst.Assign):
            for target in node.targets:  # type: ignore[attr-defined]
                t = target.target
                if type(t) is cst.Subscript and type(t.value) is cst.Name and t.value.value == name.value and \
                        self.index.enclosing_scope(t.value) is scope:
                    if self.carries_tensor(node.value, depth + 1):  # type: ignore[attr-defined]
                        return True  # as a literal with one tensor value does
        return found

    def _element_carries(self, value: cst.BaseExpression, index: Optional[int], depth: int) -> bool:
        """What `x` gets from `x = value` (index None) or `x, y = value` (element `index`)."""
        if index is not None and type(value) is cst.Call and self._method_returns_carry(value, index, depth):
            return True  # `input, label = self.parse_batch_test(batch)` of `return input.to(dev), label.to(dev)`
        if index is None or type(value) is cst.Call:
            return self.carries_tensor(value, depth + 1)
        if type(value) in (cst.Tuple, cst.List):
            return index < len(value.elements) and self.carries_tensor(value.elements[index].value, depth + 1)
        if type(value) is cst.IfExp:  # `a, b = model(x) if train else (model(x), None)`
            return self._element_carries(value.body, index, depth + 1) and \
                self._element_carries(value.orelse, index, depth + 1)
        return False

    def _comp_fors(self, node: cst.CSTNode) -> list[cst.CompFor]:
        found = []
        for ancestor in self.index.ancestors(node):
            if type(ancestor) in (cst.DictComp, cst.ListComp, cst.SetComp, cst.GeneratorExp):
                comp_for = ancestor.for_in
                while comp_for is not None:
                    found.append(comp_for)
                    comp_for = comp_for.inner_for_in
            elif type(ancestor) in (cst.FunctionDef, cst.Lambda):
                break
        return found

    def _iteration_carries(self, iterable: cst.BaseExpression, index: Optional[int], depth: int) -> bool:
        """The loop target of `for k, v in d.items()` (v: what the dict holds), `zip(a, b)`, or a container."""
        if type(iterable) is cst.Call:
            func = iterable.func
            args = [a.value for a in iterable.args if not a.star]
            if type(func) is cst.Attribute and func.attr.value in ("items", "values"):
                if func.attr.value == "items" and index != 1:
                    return False
                return self.carries_tensor(func.value, depth + 1)
            if type(func) is cst.Name and func.value == "zip":
                return index is not None and index < len(args) and self.carries_tensor(args[index], depth + 1)
        return index is None and self.carries_tensor(iterable, depth + 1)

    def _call_carries(self, call: cst.Call, depth: int) -> bool:
        func = call.func
        if type(func) is cst.Name and func.value in ("sum", "max", "min", "abs"):
            return any(self.carries_tensor(a.value, depth + 1) for a in call.args)
        if type(func) is cst.Attribute and func.attr.value == "values" and not call.args:
            return self.carries_tensor(func.value, depth + 1)
        fact = self._library_fact(call)
        if fact is not None and fact.effect is Effect.RETURNS_TENSOR_ARGS:
            return bool(call.args) and self.carries_tensor(call.args[0].value, depth + 1)
        if self._builds_record(func):  # `Munch(real=loss_real)`, `LossTuple(*losses)`: a record of its arguments
            return any(self.carries_tensor(a.value, depth + 1) for a in call.args)
        return self._method_returns_carry(call, None, depth)

    def _method_returns_carry(self, call: cst.Call, index: Optional[int], depth: int) -> bool:
        """`self.m(...)` of a method of this module (the enclosing class's own, else the one definition returning
        values: `KindInference._local_returns`) every `return` of which hands back a tensor, or, with `index`, a
        tuple whose element there is one (`output = self.model_inference(input)` of `return self.model(input)`).
        Asked only where a call's argument is judged (the costs of project calls), not by the module's kinds."""
        func = call.func
        if not (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"):
            return False
        returns = self.analysis.kinds._local_returns(call)
        if not returns or id(returns[0]) in self._carrying:
            return False
        self._carrying.add(id(returns[0]))  # a method returning its own call: not decided by itself
        try:
            for ret in returns:
                value = ret.value
                if value is None:
                    return False
                if index is not None:
                    if type(value) is not cst.Tuple or index >= len(value.elements) or \
                            any(type(e) is cst.StarredElement for e in value.elements):
                        return False
                    value = value.elements[index].value
                if not self.carries_tensor(value, depth + 1):
                    return False
            return True
        finally:
            self._carrying.discard(id(returns[0]))

    def _builds_record(self, func: cst.BaseExpression) -> bool:
        """`func` is a dict, `Munch`/`EasyDict`/namespace class, or a named tuple type this module makes
        (`LossTuple = namedtuple("LossTuple", [...])`): calling it holds its arguments as fields."""
        from gpulint.analysis.project import _RECORD_CLASSES, _RECORD_NAMES

        if type(func) not in (cst.Name, cst.Attribute):
            return False
        if self.analysis.qualified(func) in _RECORD_CLASSES or type(func) is cst.Name and func.value in _RECORD_NAMES:
            return True
        if type(func) is not cst.Name:
            return False
        bindings = self.index.visible_bindings(func)
        if len(bindings) != 1 or bindings[0].kind != "assign" or type(bindings[0].value) is not cst.Call:
            return False
        maker = bindings[0].value.func  # type: ignore[union-attr]
        name = maker.value if type(maker) is cst.Name else maker.attr.value if type(maker) is cst.Attribute else ""
        return name in ("namedtuple", "NamedTuple")

    def cpu_device(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """`"cpu"`, `torch.device("cpu")`, or a name every binding of which is one (`loss_device =
        torch.device("cpu")`): a device whose tensors live in host memory."""
        if depth > 3:
            return False
        if type(expr) is cst.SimpleString:
            return isinstance(expr.evaluated_value, str) and expr.evaluated_value.split(":")[0] == "cpu"
        if type(expr) is cst.Call and type(expr.func) in (cst.Name, cst.Attribute) and \
                self.analysis.qualified(expr.func) == "torch.device" and len(expr.args) == 1:
            return self.cpu_device(expr.args[0].value, depth + 1)
        if type(expr) is cst.Name:
            bindings = self.index.visible_bindings(expr)
            return bool(bindings) and len(bindings) <= MAX_BINDINGS and all(
                b.kind == "assign" and b.index is None and b.value is not None and
                self.cpu_device(b.value, depth + 1) for b in bindings)
        return False

    def constructor(self, expr: cst.BaseExpression) -> Optional[str]:
        """The qualified name of the class an object was built from (`scaler = torch.cuda.amp.GradScaler()`,
        `self.writer = SummaryWriter(...)`), when every binding agrees."""
        calls = self.built_by(expr)
        if not calls:
            return self._annotated_library_class(expr) or self._passed_library_class(expr)
        names = {self.class_name(call.func) for call in calls}
        return names.pop() if len(names) == 1 else None

    def _passed_library_class(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """A parameter of a function of this module that every call of it in the module passes an instance of
        the same library class of the table, or `None` (`train_epoch(..., model_ema=model_ema)` with `model_ema =
        None` then `model_ema = ModelEmaV2(model)` in `main`): that class. No call passing one: unknown."""
        found = self._passed_library_classes(expr, depth)
        return next(iter(found)) if found is not None and len(found) == 1 else None

    def library_union(self, expr: cst.BaseExpression) -> frozenset:
        """The library classes of the table an object may be an instance of, each a configuration the program
        ships: every binding builds one (`loss_scaler = ApexScaler()` on one branch, `NativeScaler()` on
        another), or every call of the function whose parameter it is passes one of them (or `None`). Empty
        when anything else may be there."""
        calls = self.built_by(expr)
        if calls:
            names = {self.class_name(c.func) for c in calls}
            return frozenset(names) if all(n is not None and is_library_class(n) for n in names) else frozenset()
        return frozenset(self._passed_library_classes(expr) or ())

    def _passed_library_classes(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[set]:
        if type(expr) is not cst.Name or depth > 2 or expr.value in ("self", "cls"):
            return None
        found_param = self.index.parameter_of(expr)
        if found_param is None:
            return None
        fn = found_param[0]
        names = positional_names(fn)
        found = set()
        sites = self.analysis.loops.calls_to(fn)
        if not sites:  # called from other files only (`train_model(..., tb_log=tb_log)` in a launcher)
            return self._project_library_classes(fn, expr.value, depth)
        for call in sites:
            if any(a.star for a in call.args):
                return None
            arg = argument_for(call, names, expr.value)
            if arg is None:
                continue
            value = arg.value
            if type(value) is cst.IfExp and type(value.body) is cst.Name and value.body.value == "None":
                value = value.orelse  # `None if args.no_resume_opt else loss_scaler`
            if type(value) is cst.Name and value.value == "None":
                continue
            built = self.built_by(value)
            classes = {self.class_name(c.func) for c in built} if built else \
                self._passed_library_classes(value, depth + 1) or set()
            if not classes or not all(name is not None and is_library_class(name) for name in classes):
                return None
            found |= classes
        return found or None

    def _project_library_classes(self, fn: cst.FunctionDef, parameter: str, depth: int) -> Optional[set]:
        """`_passed_library_classes` for a top-level function of this module that only other files call: the
        table's classes every project call site passes (analysis/passed_library.py)."""
        path = getattr(self, "path", None)
        project = getattr(self, "project", None)
        if path is None or project is None or type(self.index.up.get(id(fn))) is not cst.Module:
            return None
        from gpulint.analysis.passed_library import parameter_library_classes

        found = parameter_library_classes(project, Path(path), fn.name.value, parameter, depth)
        return set(found) if found else None

    def _annotated_library_class(self, expr: cst.BaseExpression) -> Optional[str]:
        """A parameter annotated with a library class of the table (`fabric: L.Fabric`): that class."""
        if type(expr) is not cst.Name:
            return None
        bindings = self.index.visible_bindings(expr)
        if len(bindings) != 1 or bindings[0].kind != "param":
            return None
        param = bindings[0].value
        annotation = param.annotation.annotation if type(param) is cst.Param and param.annotation else None
        if type(annotation) is cst.SimpleString and isinstance(annotation.evaluated_value, str):
            try:
                annotation = cst.parse_expression(annotation.evaluated_value)
            except cst.ParserSyntaxError:
                return None
            annotation = _unwrap_optional(self.analysis, annotation)
            name = self.analysis.index.imports.qualify(annotation) if type(annotation) in (
                cst.Name, cst.Attribute) else None
        else:
            # `ema: Optional[ExponentialMovingAverage]`, `ema: EMA | None`: where it is called, it is one
            annotation = _unwrap_optional(self.analysis, annotation) if annotation is not None else None
            name = self.class_name(annotation) if type(annotation) in (cst.Name, cst.Attribute) else None
        return name if name is not None and is_library_class(name) else None

    def built_by(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[list[cst.Call]]:
        """The calls that build what `expr` holds, through every binding the module shows: `x = Cls(...)`,
        `self.x = Cls(...)` anywhere in the class, `dt[1]` with `dt = (Profile(), Profile())` or a comprehension
        of them, a name bound to another such name. None when any binding is something else."""
        if depth > 3:
            return None
        if type(expr) is cst.Call:
            func = expr.func
            if type(func) is cst.Attribute and func.attr.value in ("to", "cuda") and type(func.value) is cst.Call:
                return self.built_by(func.value, depth + 1)  # `RunningMean(...).to(device)`: moved, same object
            return [expr]
        if type(expr) is cst.Subscript and len(expr.slice) == 1:
            return self._elements_built_by(expr.value, depth)
        if type(expr) is cst.IfExp:  # `CTCConverter(...) if ctc else AttnConverter(...)`: either
            return self._all_built_by([expr.body, expr.orelse], depth)
        values: list[cst.BaseExpression] = []
        if type(expr) is cst.Name:
            bindings = self.index.visible_bindings(expr)
            if not bindings or len(bindings) > MAX_BINDINGS or any(
                    b.kind not in ("assign", "walrus") or b.index is not None or b.value is None for b in bindings):
                return None
            values = [b.value for b in bindings]
        elif type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
            # `self._wm = torch.compile(self._wm)`: the same object wrapped, its class still the one built
            values = [v for v in self.self_attributes(expr) if not self.rewrapped(v, expr.attr.value)]
        return self._all_built_by(values, depth)

    def rewrapped(self, value: cst.BaseExpression, attr: str) -> bool:
        """`torch.compile(self.<attr>)`, `DDP(self.<attr>)`: a model wrapper around what the attribute held."""
        if type(value) is not cst.Call or type(value.func) not in (cst.Name, cst.Attribute) or \
                self.class_name(value.func) not in MODEL_WRAPPERS:
            return False
        inner = _call_argument(value, 0, "module")
        return type(inner) is cst.Attribute and type(inner.value) is cst.Name and inner.value.value == "self" \
            and inner.attr.value == attr

    def _elements_built_by(self, container: cst.BaseExpression, depth: int) -> Optional[list[cst.Call]]:
        values: list[cst.BaseExpression] = []
        if type(container) is cst.Name:
            bindings = self.index.visible_bindings(container)
            if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None:
                return None
            values = [bindings[0].value]
        elif type(container) is cst.Attribute:
            values = self.self_attributes(container)
        elements: list[cst.BaseExpression] = []
        for value in values:
            if type(value) in (cst.Tuple, cst.List):
                elements.extend(e.value for e in value.elements)
            elif type(value) in (cst.ListComp, cst.GeneratorExp):
                elements.append(value.elt)
            else:
                return None
        return self._all_built_by(elements, depth)

    def _all_built_by(self, values: list[cst.BaseExpression], depth: int) -> Optional[list[cst.Call]]:
        calls: list[cst.Call] = []
        for value in values:
            if type(value) is cst.Name and value.value == "None":
                continue  # `val_loader = None` until an option builds it: a method called on it never runs on None
            found = self.built_by(value, depth + 1)
            if found is None:
                return None
            calls.extend(found)
        return calls or None

    def class_name(self, func: cst.BaseExpression) -> Optional[str]:
        """The qualified name a constructor call names, through the module's imports; a bare name no import
        binds, under `from timm.utils import *`, is that module's class when the table knows it there."""
        name = self.analysis.qualified(func)
        if name is not None and "." not in name and self.index.imports.star_modules and \
                not self.index.visible_bindings(func):  # type: ignore[arg-type]
            for module in self.index.imports.star_modules:
                if is_library_class(f"{module}.{name}"):
                    return f"{module}.{name}"
        return name

    def self_attributes(self, attr: cst.Attribute) -> list[cst.BaseExpression]:
        """Every value assigned to `self.<name>` in the class around `attr` (`self.x: T = v` included)."""
        if self._self_attributes is None:
            found: dict[tuple[int, str], list[cst.BaseExpression]] = {}
            annotations: dict[tuple[int, str], cst.BaseExpression] = {}
            for node in of_types(self.index, cst.Assign):
                if len(node.targets) == 1:
                    target = node.targets[0].target
                    if type(target) is cst.Attribute and type(target.value) is cst.Name \
                            and target.value.value == "self":
                        cls = self.index.enclosing_class(node)
                        if cls is not None:
                            found.setdefault((id(cls), target.attr.value), []).append(node.value)
            for node in of_types(self.index, cst.AnnAssign):
                target = node.target
                if type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
                    cls = self.index.enclosing_class(node)
                    if cls is not None:
                        key = (id(cls), target.attr.value)
                        annotations.setdefault(key, node.annotation.annotation)
                        if node.value is not None:
                            found.setdefault(key, []).append(node.value)
                elif type(target) is cst.Name:  # a class-body field (`optim: Optimizer`, a dataclass's)
                    line = self.index.up.get(id(node))
                    block = self.index.up.get(id(line)) if line is not None else None
                    cls = self.index.up.get(id(block)) if type(block) is cst.IndentedBlock else None
                    if type(cls) is cst.ClassDef:
                        annotations.setdefault((id(cls), target.value), node.annotation.annotation)
            self._self_attributes = found
            self._self_annotations = annotations
        cls = self.index.enclosing_class(attr)
        if cls is None:
            return []
        return self._self_attributes.get((id(cls), attr.attr.value), [])

    def self_annotation(self, attr: cst.Attribute) -> Optional[cst.BaseExpression]:
        """The annotation the class around `attr` declares for `self.<name>`: a field in the class body
        (`optim: Optimizer`, as dataclasses declare them) or `self.<name>: T` in a method; None without one."""
        self.self_attributes(attr)
        cls = self.index.enclosing_class(attr)
        return self._self_annotations.get((id(cls), attr.attr.value)) if cls is not None else None


class ProjectCalls(ModuleCalls):
    """Resolves calls and `with` items of one module to summaries of the project's functions and classes."""

    def __init__(self, analysis, project: Project, path: Path) -> None:
        super().__init__(analysis)
        self.project = project
        self.path = path.resolve()
        self._found: dict[str, object] = {}
        self._properties: Optional[dict[int, tuple[str, frozenset]]] = None
        self._passing: set[int] = set()  # calls `passed_through` is resolving (a recursion guard)
        # (id(call), index) -> what `passed_through` found (each call resolved once: `new_k = new_k.replace(...)`
        # ten times over in one loop asked about every earlier binding again from each, 2^n look-ups)
        self._passed: dict = {}

    def class_name(self, func: cst.BaseExpression) -> Optional[str]:
        """Through the project's re-exports as well (`from utils.general import Profile`, a library class), and
        through a project factory that builds and returns one (`accelerator = train_util.prepare_accelerator(args)`
        whose body returns an `Accelerator(...)`)."""
        dotted = dotted_name(func)
        external = self.project.external_name(self.path, dotted) if dotted else None
        if external is None and dotted and not dotted.startswith("self."):
            key = "returns-library:" + dotted
            if key not in self._found:  # one project lookup per name
                found = self.project.lookup(self.path, dotted)
                self._found[key] = found.returns_library if isinstance(found, FunctionSummary) else None
            if self._found[key] is not None:
                return self._found[key]  # type: ignore[return-value]
        return external or super().class_name(func)

    # -- what a node costs ----------------------------------------------------------------------------------
    def call_cost(self, call: cst.Call) -> Optional[HelperCost]:
        """The host read a call reaches through one of its tensor arguments, or that it makes always."""
        target = self.callee(call) or self.local_callee(call)
        if target is None:
            return self._union_cost(call) or self._default_cost(call)
        name, summary, bound = target
        return self._cost(call, name, summary, bound)

    def _default_cost(self, call: cst.Call) -> Optional[HelperCost]:
        """A call on an object whose class a command-line option chooses (`crit = MSELoss() if opt.mse_loss
        else FocalLoss()`, `--mse_loss` off by default): the cost of the method the default run's class runs,
        said to depend on the choice. A class built only when an option is turned on never makes one."""
        func = call.func
        if self.analysis.loops.local_function(call) is not None:
            return None
        receiver = func.value if type(func) is cst.Attribute and not (
            type(func.value) is cst.Name and func.value.value == "self") else func
        chosen = self.default_choice(receiver)
        if chosen is None:
            return None
        cls, reason = chosen
        if receiver is func:  # `crit(out, y)`: the instance called
            method, name = self.project.method(cls, "__call__"), "__call__"
            if method is None and self.project.is_module_class(cls):
                method, name = self.project.method(cls, "forward"), "forward"
        else:
            name = func.attr.value  # type: ignore[attr-defined]
            method = self.project.method(cls, name)
        if method is None:
            return None
        cost = self._cost(call, f"{cls.name}.{name}", method, True)
        return replace(cost, choice=reason) if cost is not None else None

    def default_choice(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[tuple[ClassSummary, str]]:
        """The project class `expr` holds in the program's default run, where a conditional expression on a
        command-line option of known default picks it (`MSELoss() if opt.mse_loss else FocalLoss()` with
        `--mse_loss` a `store_true` flag: `FocalLoss`; `flags.option_default`), with the phrase saying so."""
        from gpulint.analysis.flags import option_default

        value: Optional[cst.BaseExpression] = expr
        if type(expr) is cst.Name:
            bindings = self.index.visible_bindings(expr)
            value = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" and \
                bindings[0].index is None else None
        elif type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
            values = self.self_attributes(expr)
            value = values[0] if len(values) == 1 else None
        if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in ("to", "cuda"):
            value = value.func.value  # `(A() if c else B()).to(device)`: the same object
        if type(value) is not cst.IfExp or depth > 2:
            return None
        test, negated = value.test, False
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test, negated = test.expression, True
        default = option_default(self.analysis, test)
        if not isinstance(default, bool) or type(test) is not cst.Attribute:
            return None
        taken = value.body if default != negated else value.orelse
        reason = f"the class the default run builds: `--{test.attr.value}` is {'on' if default else 'off'} by default"
        if type(taken) is cst.IfExp:  # `A() if o1 else B() if o2 else C()`
            inner = self.default_choice(taken, depth + 1)
            return (inner[0], f"{reason}, {inner[1].split(': ', 1)[1]}") if inner is not None else None
        if type(taken) is not cst.Call:
            return None
        found = self._lookup(taken.func)
        return (found, reason) if isinstance(found, ClassSummary) else None

    def _union_cost(self, call: cst.Call) -> Optional[HelperCost]:
        """A method call on an object that may be one of several project classes, each with its own method
        (`converter.encode(...)` with `converter = CTCLabelConverter(...)` or `AttnLabelConverter(...)`): the
        cost of every candidate's method, reported (as the first one's) only when each candidate pays one."""
        func = call.func
        if self.analysis.loops.local_function(call) is not None:
            return None
        if type(func) is cst.Attribute:
            classes, member = self.instance_classes(func.value), func.attr.value
        elif type(func) is cst.Name and call.args:
            # `out = contrast(feat, index)` with `contrast = MemoryMoCo(...)` on one branch and `MemoryInsDis(...)`
            # on the other: each candidate's `__call__`, or its `forward` for a module class
            classes, member = self.instance_classes(func), None
        else:
            return None
        if len(classes) < 2:
            return None
        first: Optional[HelperCost] = None
        for cls in classes:
            name = member
            if name is None:
                name = "__call__" if self.project.method(cls, "__call__") is not None else (
                    "forward" if self.project.is_module_class(cls) else None)
            method = self.project.method(cls, name) if name is not None else None
            if method is None:
                return None
            cost = self._cost(call, f"{cls.name}.{name}", method, True)
            if cost is None:
                return None
            first = first or cost
        return first

    def _cost(self, call: cst.Call, name: str, summary: FunctionSummary, bound: bool) -> Optional[HelperCost]:
        if summary.always_syncs is not None:
            if summary.syncs_on_device_of is not None and self._cpu_device_passed(call, summary, bound):
                return None  # `sync(loss_device)` with `loss_device = torch.device("cpu")`: no CUDA work to wait on
            return HelperCost(name, summary.always_syncs)
        position = 0
        for arg in call.args:
            if arg.star == "**":  # `update(**losses)`: every value reaches **kwargs (or a named parameter)
                sink = summary.sink_params.get(summary.double_star or "") or \
                    next(iter(summary.sink_params.values()), None)
            elif arg.star == "*":
                sink = summary.sink_params.get(summary.star or "")
            else:
                keyword = arg.keyword.value if arg.keyword is not None else None
                sink = summary.sink_for_argument(None if keyword else position, keyword, bound)
                if keyword is None:
                    position += 1
            if sink is None or not _runs_at(call, summary, bound, sink, self.analysis):
                continue
            if self.carries_tensor(arg.value) and not self._host_batch_element(arg.value) or \
                    _parameters_of(arg.value) or \
                    sink.through in ("parameters", "output") and self.analysis.kind(arg.value) is Kind.MODULE:
                return HelperCost(name, sink, arg.value)
        if summary.copies_host is not None and summary.copies_host.path.resolve() != self.path and \
                not self._cpu_device_passed(call, summary, bound, summary.copies_host_device or "") and \
                not self._device_of_the_caller(call, summary, bound):
            # `sampler.sample(n, device)` from the training script: a pageable copy in another module on each
            # call (calls inside the copying module are left to the copy's own finding, GPU410/GPU203, there)
            return HelperCost(name, summary.copies_host)
        return None

    def _device_of_the_caller(self, call: cst.Call, summary: FunctionSummary, bound: bool) -> bool:
        """The device a copying helper copies to is left out (its default) or is a parameter of the function
        making the call: that function's own callers decide (and are reported through its summary)."""
        wanted = summary.copies_host_device
        if not wanted:
            return False
        params = summary.params[1:] if bound and summary.params else summary.params
        arg = passed_argument(call, params.index(wanted) if wanted in params else None, wanted)
        if arg is None:
            return True
        value = arg.value if isinstance(arg, cst.Arg) else None
        if type(value) is not cst.Name:
            return False
        bindings = self.index.visible_bindings(value)
        return bool(bindings) and all(b.kind == "param" for b in bindings)

    def _host_batch_element(self, value: cst.BaseExpression) -> bool:
        """A batch element its loop leaves in host memory (`analysis/unmoved.py`): a helper's reads of it
        wait for no GPU."""
        if type(value) is cst.Call and self.analysis.kinds.on_host(value):
            return True  # `save(path, wav[:n].cpu().unsqueeze(0))`: copied to the host in the call already
        # `embeds_loss = embeds.to(loss_device)` with `loss_device = torch.device("cpu")`, then `loss(embeds_loss)`
        return type(value) is cst.Name and (unmoved_loader_element(self.analysis.kinds, value) or
                                            self.analysis.kinds.on_host(value))

    def _cpu_device_passed(self, call: cst.Call, summary: FunctionSummary, bound: bool,
                           wanted: Optional[str] = None) -> bool:
        """The call passes a CPU device for the parameter the helper's sync (or copy: `wanted`) depends on."""
        if wanted is None:
            wanted = summary.syncs_on_device_of
        if not wanted:
            return False
        params = summary.params[1:] if bound and summary.params else summary.params
        arg = passed_argument(call, params.index(wanted) if wanted in params else None, wanted)
        return isinstance(arg, cst.Arg) and self.cpu_device(arg.value)

    def _call_carries(self, call: cst.Call, depth: int) -> bool:
        """Also what project helpers return: a tensor, or the argument they are given (`reduce_dict(d)`)."""
        if super()._call_carries(call, depth):
            return True
        if type(call.func) is cst.Name and self._module_parameter(call.func):
            return True  # `pred = head(rep)` with `model, head = model_list` and the callers passing modules
        # `losses = self.forward(imgs, bboxes)` in a sibling method: what this module's method returns
        target = self.callee(call, own_module=True) or self.local_callee(call)
        if target is None:
            return False
        summary, bound = target[1], target[2]
        if summary.returns_tensor:
            return True
        params = summary.params[1:] if bound and summary.params else summary.params
        for position, arg in enumerate(call.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else (
                params[position] if position < len(params) else None)
            if name in summary.returns_params and self.carries_tensor(arg.value, depth + 1):
                return True
        return False

    def property_cost(self, attr: cst.Attribute) -> Optional[HelperCost]:
        """`self.r` read in a method of a class of this module whose `@property r` reads a device tensor back
        (`return self.decoder.r.item()`): every read runs that body."""
        if type(attr.value) is not cst.Name or attr.value.value != "self":
            return None
        if self._properties is None:
            self._properties = {}
            for stmt in self.analysis.module.body:
                if type(stmt) is cst.ClassDef and type(stmt.body) is cst.IndentedBlock:
                    self._properties[id(stmt)] = (stmt.name.value, frozenset(
                        s.name.value for s in stmt.body.body if type(s) is cst.FunctionDef and any(
                            type(d.decorator) is cst.Name and d.decorator.value == "property" for d in s.decorators)))
        name = attr.attr.value
        if not any(name in props for _, props in self._properties.values()):
            return None
        cls = self.index.enclosing_class(attr)
        owner = self._properties.get(id(cls)) if cls is not None else None
        if owner is None or name not in owner[1]:
            return None
        parent = self.index.up.get(id(attr))
        if type(parent) is cst.Call and parent.func is attr or type(parent) is cst.AssignTarget or \
                type(parent) is cst.AugAssign and parent.target is attr:
            return None  # a method called, or the setter
        summary = self.project.function(self.path, f"{owner[0]}.{name}")
        if summary is None or summary.always_syncs is None:
            return None
        return HelperCost(f"{owner[0]}.{name}", summary.always_syncs)

    def with_cost(self, item: cst.WithItem) -> Optional[HelperCost]:
        """A context manager whose `__enter__` or `__exit__` synchronises (a timer)."""
        cls = self.instance_class(item.item)
        if cls is None:
            return self._library_with(item)
        for method in ("__enter__", "__exit__"):
            summary = self.project.method(cls, method)
            if summary is not None and summary.always_syncs is not None:
                return HelperCost(f"{cls.name}.{method}", summary.always_syncs)
        return None

    def _library_with(self, item: cst.WithItem) -> Optional[HelperCost]:
        name = self.constructor(item.item)
        for method in ("__enter__", "__exit__"):
            fact = fact_for_method(name, method)
            if fact is not None and fact.effect is Effect.SYNCS:
                return HelperCost(f"{name.rsplit('.', 1)[-1]}.{method}", None, library=fact)
        return None

    # -- resolution -------------------------------------------------------------------------------------------
    def callee(self, call: cst.Call, own_module: bool = False) -> Optional[tuple[str, FunctionSummary, bool]]:
        """(display name, summary, called through an instance) for a call into the project, else None.

        Calls the module's own loop analysis already follows (`helper(...)`, `self.helper(...)` of this file) are
        left to it, so no cost is reported twice (`own_module` resolves them too, for what they return).
        """
        func = call.func
        if not own_module and self.analysis.loops.local_function(call) is not None:
            return None
        classes = self.instance_classes(func.value) if type(func) is cst.Attribute else ()
        if classes:  # every class it may be runs the same method (`LionW` and `AdamW` inherit it)
            methods = [self.project.method(cls, func.attr.value) for cls in classes]
            method = methods[0]
            if method is None or any(m is not method for m in methods):
                return None
            if len(classes) == 1:  # an abstract method: the project subclasses' overrides (candidate_methods.py)
                from gpulint.analysis.candidate_methods import dispatched_method
                method = dispatched_method(self.project, classes[0], func.attr.value, method) or method
            owner = method.qualname.rpartition(".")[0] if len(classes) > 1 else classes[0].name
            return f"{owner or classes[0].name}.{func.attr.value}", method, True
        if type(func) is not cst.Attribute or type(func.value) is cst.Name and func.value.value == "self":
            # `self.crit(out, y)` with `self.crit = FocalLoss()`: a stored object called, as `crit(out, y)` is
            cls = self.instance_class(func)
            if cls is not None:  # `meter(x)`: __call__ of an instance; `criterion(out, y)`: a module's forward
                method = self.project.method(cls, "__call__")
                if method is not None:
                    return f"{cls.name}.__call__", method, True
                method = self.project.method(cls, "forward") if self.project.is_module_class(cls) else None
                return (f"{cls.name}.forward", method, True) if method is not None else None
        inherited = self._inherited_method(func)
        if inherited is not None:
            return inherited
        passed = self._passed_function(func)
        if passed is not None:
            summary, bound = passed
            return summary.qualname, summary, bound
        stored = self._stored_function(func)
        if stored is not None:  # `self.torch_stft(x)` with `self.torch_stft = partial(stft, n_fft=...)` in a base
            return stored.qualname, stored, False
        closure = self._returned_function(func)
        if closure is not None:
            return closure.qualname, closure, False
        found = self._lookup(func)
        if isinstance(found, FunctionSummary):
            if found.path == self.path and type(func) is cst.Name and not own_module:
                return None  # a function of this module: the in-file analysis owns it
            return found.qualname, found, False
        return None

    def _inherited_method(self, func: cst.BaseExpression) -> Optional[tuple[str, FunctionSummary, bool]]:
        """`self.model_backward_and_update(loss)` in a method of a top-level class that does not define it: the
        method of a project base class in another module (Dassl's trainers inherit `model_backward_and_update`
        from `TrainerBase`, whose `detect_anomaly` reads `isfinite(loss).all()`), called through the instance."""
        if not (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"):
            return None
        node = self.index.enclosing_class(func)
        if node is None or not isinstance(self.index.up.get(id(node)), cst.Module):
            return None
        info = self.project.module(self.path)
        cls = info.classes.get(node.name.value) if info is not None else None
        name = func.attr.value
        if cls is None or name in cls.methods or not cls.bases or name.startswith("__"):
            return None  # its own method: the in-file analysis follows it
        method = self.project.method(cls, name)
        if method is None or Path(method.path).resolve() == Path(self.path).resolve():
            return None  # not a project base's, or a base of this module (its own loop analysis follows it)
        owner = method.qualname.rpartition(".")[0]
        return f"{owner}.{name}", method, True

    def local_callee(self, call: cst.Call) -> Optional[tuple[str, FunctionSummary, bool]]:
        """A function or method of this module called as `helper(...)` or `self.helper(...)` (what
        `callee` leaves to the in-file analysis), with the same summary a call from another module gets: the
        in-file analysis reports the read where it is written; the call site, where its cost is paid every step,
        is reported here (with the read as related location). Not a call inside the helper itself (recursion)
        nor a function nested in another (no summary), nor `self.m()` that subclasses of the module override."""
        fn = self.analysis.loops.local_function(call)
        if fn is None or any(a is fn for a in self.index.ancestors(call)):
            return None
        owner = self.index.up.get(id(fn))
        if type(owner) is cst.Module:
            if type(call.func) is not cst.Name:
                return None
            qualname = fn.name.value
        else:
            cls = self.index.up.get(id(owner)) if type(owner) is cst.IndentedBlock else None
            if type(cls) is cst.ClassDef and type(call.func) is cst.Name:
                # `train_step(x, y)` in `def train(train_step, ...)`, every call site passing `trainer.train_step`
                # (a bound method of this module's class, resolved through the project's call sites)
                passed = self._passed_function(call.func)
                if passed is not None and passed[0].qualname == f"{cls.name.value}.{fn.name.value}" and \
                        Path(passed[0].path).resolve() == Path(self.path).resolve():
                    return passed[0].qualname, passed[0], passed[1]
            if type(cls) is not cst.ClassDef or not isinstance(self.index.up.get(id(cls)), cst.Module) or \
                    type(call.func) is not cst.Attribute or self.analysis.loops.overrides(call):
                return None
            qualname = f"{cls.name.value}.{fn.name.value}"
        summary = self.project.function(self.path, qualname)
        if summary is None:
            return None
        # `Trainer.write_metrics(loss_dict, ...)`, `self.reshape(x, 2)`: a static method called through its class
        # or an instance takes its arguments as its parameters (no `self` to skip)
        static = type(call.func) is cst.Attribute and any(
            type(d.decorator) is cst.Name and d.decorator.value == "staticmethod" for d in fn.decorators)
        return qualname, summary, "." in qualname and not static

    def _passed_function(self, func: cst.BaseExpression) -> Optional[tuple[FunctionSummary, bool]]:
        """A callable parameter (`def train(train_step, ...)`: `train_step(x, y)`), or one a class stores
        (`self.fwd_bwd_fn = fwd_bwd_fn` in `__init__`), resolved through the project's call sites: the project
        function or bound method every site passes."""
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            values = self.self_attributes(func)
            if len(values) != 1 or not isinstance(values[0], cst.Name):
                return None
            func = values[0]
        if type(func) is not cst.Name:
            return None
        bindings = self.index.visible_bindings(func)
        if len(bindings) != 1 or bindings[0].kind != "param" or not isinstance(bindings[0].source, cst.FunctionDef):
            return None
        fn = bindings[0].source
        owner = self.index.up.get(id(fn))
        if type(owner) is cst.Module:
            return self.project.parameter_function(self.path, fn.name.value, bindings[0].name)
        cls = self.index.up.get(id(owner)) if type(owner) is cst.IndentedBlock else None
        if fn.name.value == "__init__" and type(cls) is cst.ClassDef and \
                isinstance(self.index.up.get(id(cls)), cst.Module):
            return self.project.parameter_function(self.path, f"{cls.name.value}.__init__", bindings[0].name)
        return None

    def _stored_function(self, func: cst.BaseExpression) -> Optional[FunctionSummary]:
        """`self.f(...)` in a method of a top-level class, where no method `f` exists and the class (or a project
        base) stores a project function in `self.f` (analysis/stored_callables.py, `stored_function`)."""
        if type(func) is not cst.Attribute or type(func.value) is not cst.Name or func.value.value != "self":
            return None
        owner = next((a for a in self.index.ancestors(func) if type(a) is cst.ClassDef), None)
        if owner is None or not isinstance(self.index.up.get(id(owner)), cst.Module):
            return None
        info = self.project.module(Path(self.path))
        cls = info.classes.get(owner.name.value) if info is not None else None
        if cls is None or self.project.method(cls, func.attr.value) is not None:
            return None
        from gpulint.analysis.stored_callables import stored_function
        return stored_function(self.project, cls, func.attr.value)

    def _returned_function(self, func: cst.BaseExpression) -> Optional[FunctionSummary]:
        """`train = train_fns.GAN_training_function(G, D, ...)` then `train(x, y)`: the name is bound once, to
        what a project factory returns, and the factory returns a function it defines (`returns_function`)."""
        if type(func) is not cst.Name:
            return None
        bindings = self.index.visible_bindings(func)
        if not bindings or len(bindings) > 3 or any(
                b.kind != "assign" or b.index is not None or type(b.value) is not cst.Call for b in bindings):
            return None
        found = []
        for binding in bindings:  # `train = make_gan_fn(...)` or, on another branch, `train = dummy_fn()`
            factory = self._lookup(binding.value.func)
            if not isinstance(factory, FunctionSummary) or factory.returns_function is None:
                return None
            closure = self.project.function(factory.path, factory.returns_function)
            if closure is None:
                return None
            if not closure.stub and all(c is not closure for c in found):
                found.append(closure)
        return found[0] if len(found) == 1 else None

    def _or_default_classes(self, expr: cst.BooleanOperation, depth: int) -> tuple:
        """`sampler or UniformSampler(diffusion)` (a parameter defaulting to None, then a default instance):
        the classes of both sides, when both are known; only the right side's where the left is a parameter
        whose default is None that no call site passes."""
        if type(expr.operator) is not cst.Or:
            return ()
        right = self.instance_classes(expr.right, depth + 1)
        if not right:
            return ()
        left = self.instance_classes(expr.left, depth + 1)
        if left:
            return tuple(left) + tuple(c for c in right if all(c is not k for k in left))
        return tuple(right) if self.unpassed_none(expr.left) else ()

    def unpassed_none(self, expr: cst.BaseExpression) -> bool:
        """A parameter whose default is None that no call of its function in this module passes (`sampler=None`,
        then `self.sampler = sampler or UniformSampler(...)`: the `or` gives its right side)."""
        from gpulint.analysis.forward import _argument

        found = self.index.parameter_of(expr) if type(expr) is cst.Name else None
        if found is None:
            return False
        fn, param = found
        if not (type(param.default) is cst.Name and param.default.value == "None"):
            return False
        positions = positional_names(fn)
        position = positions.index(expr.value) if expr.value in positions else None
        for node in self.analysis.loops.calls_to(fn):
            argument = _argument(node, position, expr.value)
            if argument is not None and not (type(argument) is cst.Name and argument.value == "None"):
                return False
        return True

    def instance_class(self, expr: cst.BaseExpression) -> Optional[ClassSummary]:
        """The project class `expr` is an instance of, when every binding the module shows agrees (or, for a
        parameter of a top-level function, every call site in the project)."""
        classes = self.instance_classes(expr)
        return classes[0] if len(classes) == 1 else None

    def instance_classes(self, expr: cst.BaseExpression, depth: int = 0) -> tuple:
        """The project classes `expr` may hold an instance of, every one of them known: one, or several where
        a project factory returns one of several (`build_optimizer` returning `LionW(...)` or `AdamW(...)`);
        () when unknown. Bindings, `self.x` attributes (assigned, or declared by an annotation), parameters
        (annotated, or passed by every call site), and the elements of a container a `for` loop iterates."""
        if depth > 3:
            return ()
        narrowed = narrowed_class(self, expr)  # `if isinstance(self.sampler, LossAwareSampler): ...`
        if narrowed is not None:
            return (narrowed,)
        if type(expr) is cst.BooleanOperation:
            return self._or_default_classes(expr, depth)
        if type(expr) is cst.Name:
            bindings = self.index.visible_bindings(expr)
            if len(bindings) == 1 and bindings[0].kind == "param":
                from gpulint.analysis.forward import annotated_class

                source = bindings[0].source
                annotated = annotated_class(self, source, bindings[0].name) \
                    if type(source) is cst.FunctionDef else None
                found = annotated or self._parameter_class(bindings[0])
                if found is None and annotated is None:
                    return self._parameter_union(bindings[0])  # one of several classes: analysis/param_unions.py
                return (found,) if found is not None else ()
            if len(bindings) == 1 and bindings[0].kind == "for" and bindings[0].index is None \
                    and bindings[0].value is not None:
                return self.element_classes(bindings[0].value, depth + 1)
            loop = self._binding_loop(expr, bindings)
            if loop is not None:  # several `for metric in self.metrics:` loops in one method: the one around it
                return self.element_classes(loop.iter, depth + 1)
        if type(expr) is cst.Name:
            through = self._classes_through_calls(expr, depth)
            if through is not None:
                return through
            unpacked = self._unpacked_class(expr)
            if unpacked is not None:
                return (unpacked,)
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
            values = self.self_attributes(expr)  # `self.logger = logger` in `__init__(self, logger)`
            if len(values) == 1 and isinstance(values[0], (cst.Name, cst.BooleanOperation)):
                found = self.instance_classes(values[0], depth + 1)
                if not found and type(values[0]) is cst.Name:
                    # `Trainer(model, criterion)` of a subclass, `TripletLoss().cuda()`, a constructor parameter
                    # handed on from another constructor: analysis/held_objects.py
                    found = self._held_classes(expr)
                return found
            if not values:  # only declared: `optim: Optimizer` in the class body
                found = self.annotation_class(self.self_annotation(expr))
                return (found,) if found is not None else ()
        elif type(expr) is cst.Attribute:  # `self.cfg.strategy`: a field of a configuration class
            held = self.field_instance_classes(expr, depth)
            if held:
                return held
        calls = self.built_by(expr)
        if not calls:
            return ()
        union: list = []
        for call in calls:
            if type(call.func) is cst.Subscript or self._registry_entry(call.func) is not None:
                # `DiT_models[args.model](...)`, or `Detector = detector_factory[opt.task]` then `Detector(opt)`:
                # one of the classes the registry's entries build (a method call resolves when all run one)
                built: tuple = self.registry_classes(call.func)
            else:
                found = self._lookup(call.func)
                built = (found,) if isinstance(found, ClassSummary) else (
                    self.project.returned_classes(found) if isinstance(found, FunctionSummary) else ())
            if not built:
                return ()
            union.extend(c for c in built if all(c is not u for u in union))
        return tuple(union)

    def field_instance_classes(self, expr: cst.Attribute, depth: int = 0) -> tuple:
        """`owner.field` where `owner` holds an instance of one project class whose body declares the field
        (`strategy: DefaultStrategy = field(default_factory=DefaultStrategy)` in a config dataclass): the
        classes the field holds (analysis/config_fields.py); () when not known."""
        from gpulint.analysis.config_fields import field_classes

        owners = self.instance_classes(expr.value, depth + 1)
        return field_classes(self.project, owners[0], expr.attr.value) if len(owners) == 1 else ()

    def _unpacked_class(self, name: cst.Name) -> Optional[ClassSummary]:
        """`model, diffusion = create_model_and_diffusion(...)`: the name's one binding unpacks what a project
        function returns, and its element at that place is an instance of one project class
        (`FunctionSummary.returns_classes`, one per element of the returned tuple)."""
        bindings = self.index.visible_bindings(name)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is None or \
                type(bindings[0].value) is not cst.Call:
            return None
        found = self._lookup(bindings[0].value.func)
        if not isinstance(found, FunctionSummary) or len(found.returns_classes) < 2:
            return None
        index = bindings[0].index
        return found.returns_classes[index] if index < len(found.returns_classes) else None

    def _classes_through_calls(self, name: cst.Name, depth: int) -> Optional[tuple]:
        """`model = load_model(h)`, then `model = apply_gradient_allreduce(model)`, `model, optimizer =
        amp.initialize(model, optimizer)`, `model, optimizer, lr = load_checkpoint(path, model, optimizer)`:
        calls that hand back the object they are given (`passed_through`) keep its class, so the name holds
        the union of what its other bindings build. None where no binding is such a call (the plain
        look-up decides); () when a binding cannot be told."""
        bindings = self.index.visible_bindings(name)
        if not bindings or len(bindings) > MAX_BINDINGS or any(b.kind not in ("assign", "walrus") or b.value is None
                                                              for b in bindings):
            return None
        through = [self.passed_through(b.value, b.index) if type(b.value) is cst.Call else None for b in bindings]
        if all(t is None for t in through):
            return None
        union: list = []
        for binding, passed in zip(bindings, through):
            if passed is not None:
                if type(passed) is cst.Name and passed.value == name.value:
                    continue  # `model = wrap(model)`: what the name already held
                found = self.instance_classes(passed, depth + 1)
            elif binding.index is not None:
                return ()
            else:
                found = self.instance_classes(binding.value, depth + 1)
            if not found:
                return ()
            union.extend(c for c in found if all(c is not u for u in union))
        return tuple(union)

    def passed_through(self, call: cst.Call, index: Optional[int] = None) -> Optional[cst.BaseExpression]:
        """The argument of `call` whose object the call hands back (element `index` of a returned tuple, when
        unpacked): a model wrapper's module (`DDP(model)`), `model.cuda()`'s receiver, apex's
        `amp.initialize(model, optimizer)`, a project function whose every `return` hands back a parameter
        (`FunctionSummary.returns_param`, `returns_param_elements`). None when it hands back none."""
        func = call.func
        if index is None and type(func) is cst.Attribute and func.attr.value in MODULE_SELF_METHODS \
                and type(func.value) is cst.Name and func.value.value != "self":
            return func.value
        qualified = self.class_name(func) if type(func) in (cst.Name, cst.Attribute) else None
        if qualified in MODEL_WRAPPERS:
            return _call_argument(call, 0, "module") if index is None else None
        if index is None and type(func) is cst.Name:  # `MyDataParallel(dl)`: a project subclass of a wrapper
            found = self._lookup(func)
            if isinstance(found, ClassSummary) and self.project.wrapper_class(found):
                return _call_argument(call, 0, "module")
        spec = hands_back(qualified, index) if qualified in HANDS_BACK_FUNCTIONS else None
        if spec is not None:  # `engine, *_ = deepspeed.initialize(model=net, ...)`: the table's argument
            return _call_argument(call, spec[0], spec[1])
        if qualified in ("apex.amp.initialize", "amp.initialize"):  # `from apex import amp` in a function
            model, optimizer = _call_argument(call, 0, "models"), _call_argument(call, 1, "optimizers")
            if optimizer is None:
                return model if index is None else None
            return (model, optimizer)[index] if index in (0, 1) else None
        key = (id(call), index)
        if key in self._passed:
            return self._passed[key]
        if id(call) in self._passing:
            return None  # `model = model.update(x)`: resolving the receiver asks about this call again
        self._passing.add(id(call))
        try:
            found = self._passed_by_callee(call, index)
        finally:
            self._passing.discard(id(call))
        self._passed[key] = found
        return found

    def _passed_by_callee(self, call: cst.Call, index: Optional[int]) -> Optional[cst.BaseExpression]:
        """`passed_through` of a call into the project: the argument the callee's summary says it returns."""
        func = call.func
        target = self.callee(call, own_module=True)
        if target is None or type(func) is cst.Name and isinstance(self._lookup(func), ClassSummary):
            return None
        summary, bound = target[1], target[2]
        name = summary.returns_param if index is None else (
            summary.returns_param_elements[index] if index < len(summary.returns_param_elements) else None)
        if name is None:
            return None
        params = summary.params[1:] if bound and summary.params else summary.params
        return _call_argument(call, params.index(name) if name in params else None, name)

    def element_classes(self, container: cst.BaseExpression, depth: int = 0) -> tuple:
        """The project classes of what a `for` loop over `container` binds: `self.evaluators` declared
        `List[Evaluator]` (a field or `self.evaluators: List[Evaluator] = ...`), a parameter annotated so, or a
        list or tuple of instances the module builds (`dt = (Profile(), Profile())`)."""
        if type(container) is cst.Attribute and type(container.value) is cst.Name \
                and container.value.value == "self":
            found = self.annotation_class(self.self_annotation(container), element=True)
            if found is not None:
                return (found,)
        if type(container) is cst.Name:
            located = self.index.parameter_of(container)
            if located is not None and located[1].annotation is not None:
                found = self.annotation_class(located[1].annotation.annotation, element=True)
                return (found,) if found is not None else ()
        calls = self._elements_built_by(container, depth) if type(container) in (cst.Name, cst.Attribute) \
            else None
        if not calls:
            return self._passed_elements(container)
        union: list = []
        for call in calls:
            found = self._lookup(call.func)
            if not isinstance(found, ClassSummary):
                return ()
            if all(found is not u for u in union):
                union.append(found)
        return tuple(union)

    def _binding_loop(self, name: cst.Name, bindings: list) -> Optional[cst.For]:
        """The `for` loop around `name` whose target is that name, when no other binding of it is inside the
        loop: what the name holds there is an element of that loop's iterable, whatever other loops bind it."""
        if len(bindings) < 2:
            return None
        for parent in self.index.ancestors(name):
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return None
            if type(parent) is cst.For and type(parent.target) is cst.Name and parent.target.value == name.value:
                inside = [b for b in bindings if b.source is not None and b.source is not parent and
                          self.index.is_ancestor_or_self(parent, b.source)]
                return parent if not inside and not self.index.is_ancestor_or_self(parent.iter, name) else None
        return None

    def _passed_elements(self, container: cst.BaseExpression) -> tuple:
        """`self.metrics` stored from an `__init__` parameter (`self.metrics = metrics`) that every construction
        of the class passes a list literal of project instances (`metrics=[PSNRMeter(), LPIPSMeter()]`): their
        classes (`Project.parameter_element_classes`); () otherwise."""
        if not (type(container) is cst.Attribute and type(container.value) is cst.Name and
                container.value.value == "self"):
            return ()
        values = self.self_attributes(container)
        if len(values) != 1 or type(values[0]) is not cst.Name:
            return ()
        bindings = self.index.visible_bindings(values[0])
        if len(bindings) != 1 or bindings[0].kind != "param" or not isinstance(bindings[0].source, cst.FunctionDef):
            return ()
        fn = bindings[0].source
        owner = self.index.up.get(id(fn))
        cls = self.index.up.get(id(owner)) if type(owner) is cst.IndentedBlock else None
        if fn.name.value != "__init__" or type(cls) is not cst.ClassDef or \
                not isinstance(self.index.up.get(id(cls)), cst.Module):
            return ()
        found = self.project.parameter_element_classes(self.path, f"{cls.name.value}.__init__", bindings[0].name)
        return found or ()

    def annotation_class(self, annotation: Optional[cst.BaseExpression], element: bool = False) \
            -> Optional[ClassSummary]:
        """The project class an annotation names (`Optimizer`, `"Optimizer"`, `Optional[Optimizer]`), or with
        `element` the class of a container annotation's elements (`List[Evaluator]`); else None."""
        if annotation is None:
            return None
        try:
            tree = ast.parse(self.analysis.code(annotation).strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return None
        return annotation_class(self.project, self.path, tree, element)

    def _held_classes(self, attr: cst.Attribute) -> tuple:
        """`self.<attr>` kept from a constructor parameter: the classes the project's constructions pass."""
        from gpulint.analysis.held_objects import held_classes

        cls = self.index.enclosing_class(attr)
        if cls is None or not isinstance(self.index.up.get(id(cls)), cst.Module):
            return ()
        info = self.project.module(self.path)
        summary = info.classes.get(cls.name.value) if info is not None else None
        return held_classes(self.project, summary, attr.attr.value) if summary is not None else ()

    def _parameter_class(self, binding) -> Optional[ClassSummary]:
        """A parameter of a top-level function of this module: the class every project call site passes."""
        fn = binding.source
        if type(fn) is not cst.FunctionDef:
            return None
        owner = self.index.up.get(id(fn))
        if type(owner) is cst.Module:
            return self.project.parameter_class(self.path, fn.name.value, binding.name)
        cls = self.index.up.get(id(owner)) if type(owner) is cst.IndentedBlock else None
        if fn.name.value == "__init__" and type(cls) is cst.ClassDef and \
                isinstance(self.index.up.get(id(cls)), cst.Module):
            return self.project.parameter_class(self.path, f"{cls.name.value}.__init__", binding.name)
        if type(cls) is cst.ClassDef and isinstance(self.index.up.get(id(cls)), cst.Module):
            return self._handed_down_class(fn, cls, binding.name)
        return None

    def _handed_down_class(self, fn: cst.FunctionDef, cls: cst.ClassDef, name: str) -> Optional[ClassSummary]:
        """A parameter of a method another module's loop runs every step (`update_critic(self, obs, logger,
        step)`, reached from `self.agent.update(buffer, self.logger, step)` through `self.update_critic(...,
        logger, step)`): the one project class the per-step call hands it, followed back through the class's own
        `self.method(...)` calls (`helper_sites.handed_classes`, the reach `passed_object_site` uses). None when
        the method runs on no step, or the calls disagree."""
        from gpulint.analysis.forward import _remembered, per_step_caller
        from gpulint.analysis.helper_sites import handed_classes

        def find() -> Optional[ClassSummary]:
            site = per_step_caller(self.analysis, fn)
            classes = handed_classes(self.project, self.path, cls.name.value, fn.name.value, name, site) \
                if site is not None else ()
            return classes[0] if len(classes) == 1 else None

        # once per project state, with the files it read recorded for every asker, like the per-step sites (the
        # per-step search may resolve this very parameter again: the entry being computed answers None)
        return _remembered(self.project, ("handed down", self.path, cls.name.value, fn.name.value, name), find)

    def _module_parameter(self, name: cst.Name) -> bool:
        """`name` holds an `nn.Module` that the callers of this module's top-level function hand in: the parameter
        itself (`def predict(net, ...)`), or an element unpacked from it (`net_g, net_d = nets` with every call
        site passing `[net_g, net_d]`), each built as a module in the caller (`Project.parameter_modules`)."""
        bindings = self.index.visible_bindings(name)
        if len(bindings) != 1:
            return False
        binding, index = bindings[0], None
        if binding.kind == "assign" and binding.index is not None and type(binding.value) is cst.Name:
            index = binding.index
            bindings = self.index.visible_bindings(binding.value)
            if len(bindings) != 1:
                return False
            binding = bindings[0]
        fn = binding.source
        if binding.kind != "param" or type(fn) is not cst.FunctionDef or \
                type(self.index.up.get(id(fn))) is not cst.Module:
            return False
        flags = self.project.parameter_modules(self.path, fn.name.value, binding.name)
        if flags is None:
            return False
        return flags == (True,) if index is None else index < len(flags) and flags[index] is True

    def _parameter_union(self, binding) -> tuple:
        """A parameter of a top-level function of this module: the classes its call sites pass, when they pass
        one of several (`validation(..., converter, ...)` with a CTC or an attention converter)."""
        from gpulint.analysis.param_unions import parameter_classes

        fn = binding.source
        if type(fn) is not cst.FunctionDef or type(self.index.up.get(id(fn))) is not cst.Module:
            return ()
        return parameter_classes(self.project, self.path, fn.name.value, binding.name)

    def registry_classes(self, func: cst.BaseExpression) -> tuple:
        """The project classes the entries of the module-level registry `func` picks from build: `func` is
        `registry[key]`, or a name bound once to it; () when unknown."""
        subscript = func if type(func) is cst.Subscript else self._registry_entry(func)
        if subscript is None:
            return ()
        dotted = dotted_name(subscript.value)
        if dotted is None or dotted.split(".")[0] == "self":
            return ()
        return self.project.registry_classes(self.path, dotted)

    def _registry_entry(self, func: cst.BaseExpression) -> Optional[cst.Subscript]:
        """`Detector` bound once, to `detector_factory[opt.task]`: that subscript."""
        if type(func) is not cst.Name:
            return None
        bindings = self.index.visible_bindings(func)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
                type(bindings[0].value) is not cst.Subscript or len(bindings[0].value.slice) != 1:
            return None
        return bindings[0].value

    def registry_class(self, func: cst.BaseExpression) -> Optional[ClassSummary]:
        """`DiT_models[args.model]` (the function of a call): the one project class every entry of the
        module-level registry builds (Project.registry_class), else None."""
        if type(func) is not cst.Subscript:
            return None
        dotted = dotted_name(func.value)
        if dotted is None or dotted.split(".")[0] == "self":
            return None
        return self.project.registry_class(self.path, dotted)

    def _lookup(self, func: cst.BaseExpression):
        dotted = dotted_name(func)
        if dotted is None or dotted.split(".")[0] == "self":
            return None
        if dotted not in self._found:  # one project lookup per name in this module
            self._found[dotted] = self.project.lookup(self.path, dotted)
        return self._found[dotted]


def _empty_dict(value: Optional[cst.BaseExpression]) -> bool:
    return type(value) is cst.Dict and not value.elements or \
        type(value) is cst.Call and type(value.func) is cst.Name and value.func.value == "dict" and not value.args


def _call_argument(call: cst.Call, position: Optional[int], name: str) -> Optional[cst.BaseExpression]:
    """The expression `call` passes for a parameter (by keyword, else by position); None when left out or
    when `*args` may hold it."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args):
        return None
    if position is not None and position < len(positional):
        return positional[position].value
    return None


def _parameters_of(value: cst.BaseExpression) -> bool:
    """`model.parameters()` / `model.named_parameters()`: a module's parameters (and their gradients) are
    tensors, so a helper reading what it iterates (`grad_logger(encoder.named_parameters())`) reads them."""
    return type(value) is cst.Call and not value.args and type(value.func) is cst.Attribute and \
        value.func.attr.value in ("parameters", "named_parameters")


def _argument_values(value: cst.BaseExpression):
    """An argument and, for a dict or list literal (`wandb.log({"loss": loss})`), its values."""
    yield value
    if type(value) is cst.Dict:
        for element in value.elements:
            if type(element) is cst.DictElement:
                yield element.value
    elif type(value) in (cst.List, cst.Tuple):
        for element in value.elements:
            yield element.value


def project_calls(analysis) -> Optional[ProjectCalls]:
    """Fact provider (`analysis.fact(project_calls)`): calls into the project of the linted file, or None when
    the module has no file. The linted text is used for the file itself when it differs from the disk (an
    editor's unsaved buffer, stdin, a notebook's joined cells)."""
    from gpulint.analysis.project import project_for

    if analysis.path is None:
        return None
    path = Path(analysis.path)
    project = project_for(path)
    text = analysis.source if analysis.source is not None else analysis.module.code
    on_disk = project.module(path)
    if on_disk is None or on_disk.digest != hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest():
        project.set_text(path, text)
    return ProjectCalls(analysis, project, path)


def module_calls(analysis) -> ModuleCalls:
    """Fact provider: calls of the module resolved with what the module alone shows (no file needed)."""
    return ModuleCalls(analysis)


def _runs_at(call: cst.Call, summary: FunctionSummary, bound: bool, sink, analysis=None) -> bool:
    """Whether a read the helper makes only for some values of one of its parameters (`Sink.when`: `if
    reduction == "mean": return x.mean().item()`) runs at `call`, as far as its arguments show: a constant
    other than those (`reduction="none"`) skips it; anything else, or `**options`, may take it."""
    if not sink.when:
        return True
    name = sink.when[0]
    params = summary.params[1:] if bound and summary.params else summary.params
    arg = passed_argument(call, params.index(name) if name in params else None, name)
    if arg is STARRED:
        return True
    if arg is None:
        return sink.runs_with(_UNKNOWN, False)
    value = literal_value(arg.value)
    if sink.when[1] == (None,) and value is _UNKNOWN and type(arg.value) is cst.Name and analysis is not None:
        # a parameter of the caller, None by default (bound again or not further on): it may be None here
        for binding in analysis.index.visible_bindings(arg.value):
            source = binding.source
            if binding.kind != "param" or type(source) is not cst.FunctionDef:
                continue
            params = (*source.params.posonly_params, *source.params.params, *source.params.kwonly_params)
            param = next((p for p in params if p.name.value == arg.value.value), None)
            if param is None:
                continue
            default = param.default
            if default is not None and type(default) is cst.Name and default.value == "None" or \
                    param.annotation is None or _optional_annotation(analysis.code(param.annotation.annotation)):
                value = None  # None by default, or handed down unannotated: it may be None
    return sink.runs_with(value, True)


def _unwrap_optional(analysis, annotation: cst.BaseExpression) -> cst.BaseExpression:
    """`X` of `Optional[X]` (`typing.Optional`) or of `X | None` / `None | X`; else the annotation itself."""
    if type(annotation) is cst.Subscript and len(annotation.slice) == 1 and \
            type(annotation.slice[0].slice) is cst.Index and type(annotation.value) in (cst.Name, cst.Attribute):
        q = analysis.index.imports.qualify(annotation.value)
        if q in ("typing.Optional", "typing_extensions.Optional") or \
                q is None and type(annotation.value) is cst.Name and annotation.value.value == "Optional":
            return annotation.slice[0].slice.value
    if type(annotation) is cst.BinaryOperation and type(annotation.operator) is cst.BitOr:
        sides = [annotation.left, annotation.right]
        rest = [side for side in sides if not (type(side) is cst.Name and side.value == "None")]
        if len(rest) == 1:
            return rest[0]
    return annotation
