"""Facts about one module that every rule shares: syntax index, value kinds, and where code runs."""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Callable, Optional, TypeVar

import libcst as cst

from gpulint import ast_walk, incremental
from gpulint.analysis.kinds import Kind, KindInference
from gpulint.analysis.loops import Execution, Frequency, LoopAnalysis, LoopRole, true_only_periodically
from gpulint.analysis.tree import SyntaxIndex

__all__ = ["GPU_HINT", "ModuleAnalysis", "Kind", "Execution", "Frequency", "LoopRole"]

T = TypeVar("T")


class ModuleAnalysis:
    """Built once per parsed module; each fact is computed on first use, at most once, through `fact`.

    A fact provider is any callable taking the ModuleAnalysis (a class such as `DataFacts`, or a function); its
    result is cached under the provider itself. A project-wide provider (summaries of other modules' functions)
    plugs in the same way: a callable that reads what it needs from the analysis and returns its fact.
    """

    def __init__(self, module: cst.Module, source: Optional[str] = None, path: Optional[Path] = None) -> None:
        self.module = module
        # The file on disk the module is (or stands for): the key to its project (analysis/project.py).
        # None for text with no file (an unnamed stdin): then nothing outside the module is consulted.
        self.path = path
        # The text the module was parsed from (module.code would regenerate it: a full codegen pass).
        self.source = source
        # The very text `module` was parsed from, kept apart: a chunk of a big file (runner's chunked lint) sets
        # `source` to the whole file's text afterwards. `module.code` without its codegen (unset_options).
        self.parsed_text = source
        # In a batch run, what other analyses of this very module object computed alike (incremental.py,
        # `module_companion`): a script's own lint and its caller analysis (forward.py `_hot_calls`) share one
        # syntax index and, for the same file, the loop roles (`_loops`)
        self._companion = incremental.module_companion(source, module)
        index = self._companion.get("index") if self._companion is not None else None
        if index is None:
            index = SyntaxIndex().build(module)
            if self._companion is not None:
                self._companion["index"] = index
        self.index = index
        self._facts: dict[Callable, object] = {}
        self._qualified: dict[int, Optional[str]] = {}

    def release(self) -> None:
        """Drop every fact (and the memoized accessors): the facts that close over the analysis (the loop
        analysis' hooks, `self.analysis` of a fact provider) form reference cycles with it, which only the
        garbage collector frees; without them the module's tree is freed by reference counting as soon as the
        last lint that holds it is done (a batch run collects rarely: gpulint/runtime.py). A fact asked for
        afterwards is computed again."""
        self._facts.clear()
        self.__dict__.pop("kinds", None)
        self.__dict__.pop("loops", None)

    def fact(self, provider: Callable[["ModuleAnalysis"], T]) -> T:
        """The fact `provider` computes for this module, computed on the first call only."""
        try:
            return self._facts[provider]  # type: ignore[return-value]
        except KeyError:
            value = self._facts[provider] = provider(self)
            return value

    @cached_property  # the accessor is memoized too: rules read these on every node
    def kinds(self) -> KindInference:
        return self.fact(_kinds)

    @cached_property  # the accessor is memoized too: rules read these on every node
    def loops(self) -> LoopAnalysis:
        return self.fact(_loops)

    # Shortcuts rules use all the time.
    def kind(self, node: cst.CSTNode) -> Kind:
        return self.kinds.of(node)

    def is_tensor(self, node: cst.CSTNode) -> bool:
        return self.kinds.of(node) is Kind.TENSOR

    def is_device_tensor(self, node: cst.CSTNode) -> bool:
        """A tensor not known to be in host memory (`correct = (a == b).cpu()`: `correct[i]` is on the host)."""
        return self.kinds.of(node) is Kind.TENSOR and not self.kinds.on_host(node)

    def execution(self, node: cst.CSTNode) -> Execution:
        return self.loops.execution(node)

    def qualified(self, node: cst.BaseExpression):
        """The qualified name of a Name/Attribute chain (memoised per node: every rule asks for every call)."""
        key = id(node)
        try:
            return self._qualified[key]
        except KeyError:
            found = self._qualified[key] = self.index.imports.qualify(node)
            return found

    def parent(self, node: cst.CSTNode):
        return self.index.up.get(id(node))

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # -- facts several rule families need --------------------------------------------------------------------
    @cached_property  # the accessor is memoized too: rules read these on every node
    def targets_gpu(self) -> bool:
        """The module mentions a device at all. Syncs in code that never leaves the CPU cost nothing."""
        return self.fact(_targets_gpu)

    def is_bool_tensor(self, node: cst.CSTNode, _seen: frozenset = frozenset()) -> bool:
        """A boolean mask: a tensor comparison, its negation/combination, or an is* test. A name is a mask when every
        assignment to it is one; an assignment that reads the name it binds (`mask = mask & other`) is followed
        once, so the question ends (`_seen`: the assigned values on the path)."""
        if type(node) is cst.Comparison:
            return self.is_tensor(node)
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.BitInvert:
            return self.is_bool_tensor(node.expression, _seen)
        if type(node) is cst.BinaryOperation and type(node.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor):
            return self.is_bool_tensor(node.left, _seen) or self.is_bool_tensor(node.right, _seen)
        if type(node) is cst.Call:
            q = self.qualified(node.func) if type(node.func) in (cst.Name, cst.Attribute) else None
            if q in _BOOL_FUNCTIONS:
                return True
            if q is not None and q.startswith("torch.") and any(
                    a.keyword is not None and a.keyword.value == "dtype" and type(a.value) in (cst.Name, cst.Attribute)
                    and self.qualified(a.value) == "torch.bool" for a in node.args) and self.is_tensor(node):
                return True  # `torch.eye(n, dtype=torch.bool)`, `torch.ones(b, t, dtype=torch.bool)`
            if type(node.func) is cst.Attribute and node.func.attr.value in _BOOL_METHODS \
                    and self.is_tensor(node.func.value):
                return True
            if _to_bool(self, node):
                return True  # `mask.float().to(torch.bool)`
            if type(node.func) is cst.Attribute and node.func.attr.value in _MASK_KEEPING and \
                    not any(_names_a_dtype(self, a.value) for a in node.args):
                # `mask.squeeze()`, `mask.to(device)`, `mask.repeat(5, 1)`: still a mask
                return self.is_bool_tensor(node.func.value, _seen)
            if q in ("torch.cat", "torch.stack") and node.args and type(node.args[0].value) in (cst.List, cst.Tuple):
                parts = [e.value for e in node.args[0].value.elements]  # type: ignore[attr-defined]
                return bool(parts) and all(self.is_bool_tensor(part, _seen) for part in parts)
            if q in ("torch.ones_like", "torch.zeros_like") and node.args and \
                    not any(a.keyword is not None and a.keyword.value == "dtype" for a in node.args):
                return self.is_bool_tensor(node.args[0].value, _seen)  # of a mask's dtype
        if type(node) is cst.Attribute and node.attr.value == "T":
            return self.is_bool_tensor(node.value, _seen)
        if type(node) is cst.Subscript and all(type(e.slice) is cst.Index and type(e.slice.value) is not cst.Name
                                               or type(e.slice) is cst.Slice for e in node.slice):
            return self.is_bool_tensor(node.value, _seen)  # `mask[:, 0]`, `masks[0]`: a part of a mask
        if type(node) is cst.Attribute and node.attr.value in SPLIT_MASKS:
            return self.is_tensor(node)  # `data.train_mask` of a graph moved to the device (analysis/graph_fields)
        if type(node) is cst.Name:
            scope = self.index.enclosing_scope(node)
            bindings = self.index.lookup(node.value, scope) if scope is not None else []
            # `j, k = (gxy > 1.).T`: each row of a mask unpacked is a mask
            values = [b.value for b in bindings if b.kind == "assign"]
            if values and len(values) == len(bindings) and not any(v is None for v in values):
                fresh = [v for v in values if id(v) not in _seen]
                if not fresh:
                    return True  # every value is being checked further up (`j = torch.stack((j, k))`)
                seen = _seen | {id(v) for v in values}
                if all(self.is_bool_tensor(v, seen) for v in fresh):
                    return True
            # the bindings disagree (`x, mask = batch`, then `mask = mask.to(device).to(torch.bool)`): the plain
            # assignment that runs last before this read decides
            last = self.kinds._last_assignment(node, bindings) if bindings else None
            return last is not None and id(last) not in _seen and self.is_bool_tensor(last, _seen | {id(last)})
        return False


from gpulint.analysis.graph_fields import SPLIT_MASKS  # noqa: E402


_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


def _autograd_function(analysis: ModuleAnalysis, node: cst.BaseExpression) -> bool:
    """`node` names a project class deriving from `torch.autograd.Function` (directly or through project
    classes): `class AllReduce(torch.autograd.Function)`, called as `AllReduce.apply(x)`."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.project import ClassSummary

    calls = analysis.fact(project_calls)
    found = calls._lookup(node) if calls is not None else None
    for _ in range(4):
        if not isinstance(found, ClassSummary):
            return False
        info = calls.project.module(found.path)
        if info is None:
            return False
        if any(info.qualify(base) in _AUTOGRAD_FUNCTIONS for base in found.bases if base):
            return True
        found = next((calls.project.lookup(found.path, base) for base in found.bases if base), None)
    return False


def _kinds(analysis: ModuleAnalysis) -> KindInference:
    kinds = KindInference(analysis.index)
    kinds.parameter_hook = lambda binding: _parameter_kind(analysis, binding)
    if analysis.path is not None:
        kinds.self_attribute_hook = lambda node: _self_attribute_kind(analysis, node)
        kinds.declared_module_hook = lambda node: _declared_module(analysis, node)
        from gpulint.analysis.kept_values import kept_device_tensor

        kinds.kept_attribute_hook = lambda node: kept_device_tensor(analysis, node)
        from gpulint.analysis.derived_returns import derived_device_tensor

        kinds.derived_tensor_hook = lambda node: derived_device_tensor(analysis, node)
        kinds.returns_tensor_hook = lambda node: _returns_tensor(analysis, node)
        kinds.autograd_function_hook = lambda node: _autograd_function(analysis, node)
        from gpulint.analysis.host_values import computed_where_given, host_call, host_param

        kinds.host_call_hook = lambda node: host_call(analysis, node)
        kinds.where_given_hook = lambda node: computed_where_given(analysis, node)
        kinds.host_param_hook = lambda node, depth: host_param(analysis, node, depth)
        from gpulint.analysis.skipped_keys import host_entry

        kinds.host_entry_hook = lambda node: host_entry(analysis, node)
        from gpulint.analysis.unmoved import unpacked_loader_element

        kinds.unpacked_part_hook = lambda name, binding: unpacked_loader_element(analysis, name, binding)
        from gpulint.analysis.loader_calls import project_loader_call

        text = analysis.source if analysis.source is not None else ""
        if "next(" in text:  # a loader factory's result matters where batches are drawn with `next(...)`
            kinds.loader_call_hook = lambda node: project_loader_call(analysis, node)
        if "next(" in text or "Loader" in text:
            from gpulint.analysis.loader_classes import dataloader_subclass_call, fetcher_class_call, \
                loader_class_call

            # `InfiniteLoader(...)`: a project class handing on a DataLoader's batches; `DataLoaderMasking(...)`: a
            # project subclass of torch's DataLoader (analysis/loader_classes.py)
            kinds.loader_class_hook = lambda node: loader_class_call(analysis, node) is not None or \
                dataloader_subclass_call(analysis, node) or fetcher_class_call(analysis, node)
    return kinds


def _parameter_kind(analysis: ModuleAnalysis, binding) -> Kind:
    """A parameter every call site passes a loader to is a loader (`analysis/loader_params.py`); one its callers
    give device tensors is a tensor (`analysis/tensor_params.py`)."""
    from gpulint.analysis.loader_params import parameter_is_loader

    if parameter_is_loader(analysis, binding):
        return Kind.LOADER
    from gpulint.analysis.tensor_params import device_tensor_parameter

    return Kind.TENSOR if device_tensor_parameter(analysis, binding) else Kind.UNKNOWN


def _returns_tensor(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    """A call of a project function or method (this module's included) whose summary returns a tensor and never a
    host scalar read from one (`return loss` from `compute_loss(model, x, y)`, not `return loss.item()`)."""
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    target = (calls.callee(call, own_module=True) or calls.local_callee(call)) if calls is not None else None
    if target is None:
        return False
    summary = target[1]
    return summary.returns_tensor and summary.returns_host_scalar is None


def _self_attribute_kind(analysis: ModuleAnalysis, node: cst.Attribute) -> Kind:
    """`self.data` where the class stores an `__init__` parameter (`self.data = data`, or `cycle(data)`,
    `iter(data)`) that every project call site of the class passes a DataLoader for (a loader factory's result
    included): a loader (`next(self.data)` draws a batch)."""
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    if calls is None:
        return Kind.UNKNOWN
    loader = _self_attribute_loader(analysis, calls, node)
    if loader is Kind.UNKNOWN and _self_attribute_module(analysis, calls, node):
        return Kind.MODULE
    if loader is Kind.UNKNOWN:
        from gpulint.analysis.self_lists import host_list_attribute, numpy_attribute

        if host_list_attribute(analysis, node):  # `self.timestep_map = []` filled with numbers
            return Kind.OTHER
        if numpy_attribute(analysis, node):  # `self.obses = np.empty(...)` of a replay buffer
            return Kind.NUMPY
    return loader


def _attribute_answers(analysis: ModuleAnalysis) -> dict:
    return {}


def _declared_module(analysis: ModuleAnalysis, node: cst.Attribute) -> bool:
    """`self.network`, named like a model, in a class whose declarations or own use say it holds an `nn.Module`."""
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    return calls is not None and _self_attribute_module(analysis, calls, node)


def _self_attribute_module(analysis: ModuleAnalysis, calls, node: cst.Attribute) -> bool:
    """`self.policy` in a method of a top-level class whose declarations say the attribute holds an `nn.Module`
    (`policy: ActorCriticPolicy` in the class body or a base's, `self.policy = PolicyNet(...)`):
    analysis/module_attrs.py."""
    from gpulint.analysis.module_attrs import holds_module

    cls = next((a for a in analysis.index.ancestors(node) if type(a) is cst.ClassDef), None)
    if cls is None or not isinstance(analysis.index.up.get(id(cls)), cst.Module) or \
            analysis.kinds.of(cls.name) is Kind.MODULE_CLASS or _defines_forward(cls):
        return False  # not in a network class itself (module_attrs.py), told without the project where it can be
    answers = analysis.fact(_attribute_answers)
    key = (id(cls), node.attr.value)
    found = answers.get(key)
    if found is None:
        found = answers[key] = holds_module(calls.project, calls.path, cls.name.value, node.attr.value, answers)
    return found


def _defines_forward(cls: cst.ClassDef) -> bool:
    """A class with a `forward` method: a network, whatever its bases (a library head class)."""
    return any(type(s) is cst.FunctionDef and s.name.value == "forward" for s in cls.body.body)  # type: ignore


def _self_attribute_loader(analysis: ModuleAnalysis, calls, node: cst.Attribute) -> Kind:
    stored = stored_init_parameter(analysis, calls, node)
    if stored is None:
        return Kind.UNKNOWN
    loader = calls.project.parameter_loader(calls.path, *stored)
    return Kind.LOADER if loader is not None else Kind.UNKNOWN


def stored_init_parameter(analysis: ModuleAnalysis, calls, node: cst.Attribute) -> Optional[tuple[str, str]]:
    """("Class.__init__", parameter) where `node` is `self.<name>` of a top-level class whose one assignment of
    it stores that `__init__` parameter (`self.data = data`, or `iter(data)`, `cycle(data)`); else None. What
    the class's constructions pass there is what the attribute holds (`Project.parameter_loader`)."""
    values = calls.self_attributes(node)
    if len(values) != 1:
        return None
    value = values[0]
    if type(value) is cst.Call and type(value.func) is cst.Name and len(value.args) == 1 and \
            analysis.qualified(value.func) in ("iter", "itertools.cycle", "cycle"):
        value = value.args[0].value
    if type(value) is not cst.Name:
        return None
    bindings = analysis.index.visible_bindings(value)
    fn = bindings[0].source if len(bindings) == 1 and bindings[0].kind == "param" else None
    if type(fn) is not cst.FunctionDef or fn.name.value != "__init__":
        return None
    block = analysis.index.up.get(id(fn))
    cls = analysis.index.up.get(id(block)) if type(block) is cst.IndentedBlock else None
    if type(cls) is not cst.ClassDef or not isinstance(analysis.index.up.get(id(cls)), cst.Module):
        return None
    return f"{cls.name.value}.__init__", value.value


def _loops(analysis: ModuleAnalysis) -> LoopAnalysis:
    loops = LoopAnalysis(analysis.index, analysis.kinds)
    unset = None
    if analysis.path is not None:
        from gpulint.analysis.forward import per_step_caller

        loops.per_step_caller = lambda fn: per_step_caller(analysis, fn)
        loops.engine_call_site = lambda node, fn: _engine_call_site(analysis, node, fn)
        loops.runs_argument = lambda call, position, keyword: _runs_argument(analysis, call, position, keyword)
        loops.hands_model_on = lambda call: _hands_model_on(analysis, call)
        loops.trains_through_method = lambda call: _trains_through_method(analysis, call)
        loops.steps_through_method = lambda call: _steps_through_method(analysis, call)
        from gpulint.analysis.closure_factories import steps_through_closure

        loops.steps_through_closure = lambda call: steps_through_closure(analysis, call)
        loops.epoch_through_method = lambda call: _epoch_through_method(analysis, call)
        loops.periodic_predicate = lambda call: _periodic_predicate(analysis, call)
        loops.project_network = lambda name: _project_network(analysis, name)
        from gpulint.analysis.host_models import host_model_loop

        loops.host_model_loop = lambda loop: host_model_loop(analysis, loop)
        loops.generator_source = lambda call: _generator_source(analysis, call)
        loops.display_length = lambda dotted: _display_length(analysis, dotted)
        from gpulint.analysis.uncalled import uncalled

        loops.uncalled = lambda fn: uncalled(analysis, fn)
        from gpulint.analysis.periodic_methods import only_called_periodically

        loops.periodic_only = lambda fn: only_called_periodically(analysis, fn)
        if analysis._companion is not None:
            # A loop's role is the same in every analysis of this module for this file: it never asks whether a
            # loop elsewhere runs a function of it every step (`per_step_caller`, which a caller analysis turns
            # off) nor where a node runs (`execution`); its other questions are the module's and the project's.
            loops._roles = analysis._companion.setdefault(("roles", _resolved_path(analysis.path)), loops._roles)
        from gpulint.analysis.unset_options import unset_options

        unset = unset_options
    from gpulint.analysis.forward import stepped_argument
    from gpulint.analysis.test_mode import diagnostic_off

    def never_runs(branch: cst.If) -> bool:
        if diagnostic_off(analysis, branch.test, type(branch.orelse) in (cst.Else, cst.If)):
            return True
        return unset is not None and type(branch.test) in (cst.Attribute, cst.Call, cst.BooleanOperation, cst.Name,
                                                           cst.Comparison) \
            and analysis.fact(unset).never_runs(branch)

    loops.stepped_argument = lambda call: stepped_argument(analysis, call)
    loops.never_runs = never_runs
    if analysis.path is not None:
        from gpulint.analysis.periodic_methods import called_only_in_dead_branches

        loops.dead_calls = lambda fn: called_only_in_dead_branches(analysis, fn, never_runs)
    return loops


def _resolved_path(path) -> Path:
    """`path` resolved: a file linted as `train.py` and analysed as a caller under its absolute path is one file."""
    return Path(path).resolve()


def _trains_through_method(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    """`agent.update(rollouts)` where every value the name is bound to in its scope builds an instance of a project
    class (of this module or another: `agent = algo.PPO(...)` in one branch, `algo.A2C_ACKTR(...)` in another)
    whose method of that name runs a backward pass (`loss.backward()`, in its own body or a minibatch loop of it).
    """
    func = call.func
    if type(func) is not cst.Attribute or type(func.value) is not cst.Name:
        return False
    found = _bound_project_classes(analysis, func.value)
    if not found:
        return False
    project, classes = found
    from gpulint.analysis.project import text_dependency

    with text_dependency():  # the method's body is read: a lint cached on it depends on its module's text
        for cls in classes:
            method = project.method(cls, func.attr.value)
            if method is None or not _runs_backward(project, method):
                return False
    return True


def _method_receivers(analysis: ModuleAnalysis, call: cst.Call):
    """(project, the project classes the receiver holds, the method's name) of `agent.update(...)` /
    `self.agent.update(...)` where every class the receiver may hold is known (`_receiver_classes`); None for any
    other call."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value.startswith("__") or \
            not (type(func.value) is cst.Name or type(func.value) is cst.Attribute
                 and type(func.value.value) is cst.Name and func.value.value.value == "self"):
        return None
    found = _receiver_classes(analysis, func.value)
    return (*found, func.attr.value) if found else None


def _steps_through_method(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    """`self.agent.update(replay_buffer, logger, step)` or `agent.update(batch)` where the receiver holds an
    instance of project classes (every one known: built by a constructor, a factory, or `instantiate(cfg.agent)`
    from a configuration file naming the class, analysis/config_targets.py) whose method of that name is one
    training step: it runs a backward pass outside any loop of its own, in its body or in the methods of the class
    it calls outside loops (`update` -> `update_critic` -> `critic_loss.backward()`). A loop calling it on every
    iteration is a step loop (a trainer's `while self.step < self.cfg.num_train_steps:`). A method whose backward
    passes all sit in loops of its own (an epoch's pass, PPO's minibatch loop) is no single step."""
    found = _method_receivers(analysis, call) or _named_receivers(analysis, call)
    if found is None:
        return False
    project, classes, method = found
    from gpulint.analysis.project import text_dependency
    from gpulint.analysis.step_callables import STEP, step_callables

    summaries = step_callables(project)
    with text_dependency():  # the methods' bodies are read: a lint cached on it depends on their modules' text
        # or one call runs the network once (`dqn.act(state)` -> `self.online_net(...)`): step_callables.py
        return all(_steps_backward(project, cls, method) or summaries.method(cls, method) == STEP
                   for cls in classes)


def _named_receivers(analysis: ModuleAnalysis, call: cst.Call):
    """(project, classes, method) of `model.optimize_parameters(...)` where `model` is a plain name whose class
    a name picks at run time (BasicSR's `model = create_model(opt)`: `getattr(module, opt['model_type'])` over
    the modules of a package, analysis/named_classes.py): the candidates that define the method with a body
    (not an abstract stub of a base class), at least one; None otherwise. Some run builds each of them, and the
    loop calls the method on whichever it is: when every such candidate's method is one training step, the loop
    is a step loop (BasicSR's `while train_data is not None:` over a prefetcher)."""
    func = call.func
    if type(func) is not cst.Attribute or type(func.value) is not cst.Name or func.attr.value.startswith("__") \
            or analysis.path is None:
        return None
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.named_classes import caller_instances

    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    fn = analysis.index.enclosing_function(call)
    while fn is not None and not isinstance(analysis.index.up.get(id(fn)), cst.Module):
        fn = analysis.index.enclosing_function(analysis.index.up.get(id(fn)))
    if fn is None:
        return None  # module-level code: its assignments are not a function's scope
    found = caller_instances(calls.project, Path(analysis.path), func.value.value, fn.name.value) or ()
    method = func.attr.value
    defining = []
    for cls in found:
        summary = calls.project.method(cls, method)
        if summary is not None and not summary.stub:
            defining.append(cls)
    return (calls.project, tuple(defining), method) if defining else None


def _epoch_through_method(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    """`agent.update(rollouts)` (a name or `self.X` holding project classes) where the method of one of them
    runs its step work (a backward pass, a network) in a loop of its own: analysis/step_callables.py."""
    found = _method_receivers(analysis, call)
    if found is None:
        return False
    project, classes, method = found
    from gpulint.analysis.project import text_dependency
    from gpulint.analysis.step_callables import EPOCH, step_callables

    summaries = step_callables(project)
    with text_dependency():
        return any(summaries.method(cls, method) == EPOCH for cls in classes)


def _periodic_predicate(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    """`eval_every_step(self.global_step)` where `eval_every_step` holds an instance of project classes (every one
    known, `_bound_project_classes`: `eval_every_step = utils.Every(self.cfg.eval_every_frames)`) whose
    `__call__` is true every N steps only: it returns `True`/`False` literals, each `return True` under an `if`
    testing `... % ... == 0`, or returns such a comparison itself. A guard calling it runs every N steps."""
    found = _bound_project_classes(analysis, call.func)
    if found is None:
        return False
    project, classes = found
    from gpulint.analysis.project import text_dependency

    with text_dependency():  # the classes' `__call__` bodies are read
        return all(_true_every_n(project, cls) for cls in classes)


def _true_every_n(project, cls) -> bool:
    import ast

    method = project.method(cls, "__call__")
    node = _method_node(project, method) if method is not None else None
    if node is None:
        return False

    def modulo_test(test) -> bool:
        return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and \
            any(isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mod) for s in (test.left, *test.comparators))

    read: list = []  # (return, the `if` or function holding it, the field it is in)
    for parent in ast_walk.walk(node):
        for field in ("body", "orelse"):
            for stmt in getattr(parent, field, ()) if isinstance(parent, (ast.If, ast.FunctionDef)) else ():
                if isinstance(stmt, ast.Return) and stmt.value is not None:
                    read.append((stmt, parent, field))
    returns = sum(1 for n in ast_walk.walk(node) if isinstance(n, ast.Return) and n.value is not None)
    if len(read) != returns:
        return False  # a `return` elsewhere (in a loop, a `with`) is not read: unknown

    def literal(r) -> Optional[bool]:
        value = r[0].value
        return value.value if isinstance(value, ast.Constant) and isinstance(value.value, bool) else None

    return true_only_periodically(read, literal=literal, periodic_value=lambda r: modulo_test(r[0].value),
                                  guarded=lambda r: isinstance(r[1], ast.If) and r[2] == "body"
                                  and modulo_test(r[1].test))


def _receiver_classes(analysis: ModuleAnalysis, expr: cst.BaseExpression):
    """(project, classes) of a method call's receiver: a name or `self.X` bound to project classes
    (`_bound_project_classes`), else `self.X = instantiate(cfg.X)` with the classes configuration files name."""
    found = _bound_project_classes(analysis, expr)
    if found or type(expr) is not cst.Attribute:
        return found
    import ast

    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.config_targets import held_by_attribute

    calls = analysis.fact(project_calls) if analysis.path is not None else None
    if calls is None:
        return None
    held = held_by_attribute(calls.project, Path(analysis.path),
                             ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=expr.attr.value,
                                           ctx=ast.Load()), 0)
    return (calls.project, tuple(held)) if held else None


def _steps_backward(project, cls, name: str, depth: int = 0, seen: Optional[set] = None) -> bool:
    """The method `name` of the project class `cls` runs `.backward()` outside any loop of its own, directly or
    through `self.m(...)` calls (outside loops) of the class's methods, at most three calls deep."""
    seen = set() if seen is None else seen
    method = project.method(cls, name)
    node = _method_node(project, method) if method is not None else None
    if node is None or (method.path, method.qualname) in seen:
        return False
    seen.add((method.path, method.qualname))
    import ast

    from gpulint.analysis.runs_model import _calls

    called: list[str] = []
    for n, loops in _calls(node.body, ()):
        if loops or not isinstance(n.func, ast.Attribute):
            continue
        if n.func.attr == "backward":
            return True
        if isinstance(n.func.value, ast.Name) and n.func.value.id == "self":
            called.append(n.func.attr)
    return depth < 3 and any(_steps_backward(project, cls, m, depth + 1, seen) for m in called)


def _display_length(analysis: ModuleAnalysis, dotted: str) -> Optional[int]:
    """The number of items of the top-level display `dotted` names in the project (`Project.display_length`)."""
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls) if analysis.path is not None else None
    return calls.project.display_length(calls.path, dotted) if calls is not None else None


def _generator_source(analysis: ModuleAnalysis, call: cst.Call) -> Optional[cst.BaseExpression]:
    """What a project generator called by `call` hands on the items of (`DataFacts.project_generator_source`)."""
    from gpulint.analysis.data_facts import data_facts

    return data_facts(analysis).project_generator_source(call)


def _project_network(analysis: ModuleAnalysis, name: cst.Name) -> bool:
    """Every value `name` is bound to in its scope builds an instance of a project `nn.Module` class defined in
    another module (`actor_critic = Policy(obs_shape, action_space)` with `from a2c_ppo_acktr.model import
    Policy`), which the module's own kind inference does not see."""
    found = _bound_project_classes(analysis, name)
    return bool(found) and all(found[0].is_module_class(cls) for cls in found[1])


def _bound_project_classes(analysis: ModuleAnalysis, name: cst.BaseExpression):
    """(project, classes): the project classes `name` may hold an instance of, every one of them known
    (`ProjectCalls.instance_classes`: `agent = algo.PPO(...)` in one branch, `algo.A2C_ACKTR(...)` in another), or
    None when unknown or the module has no file."""
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls) if analysis.path is not None else None
    classes = calls.instance_classes(name) if calls is not None else ()
    return (calls.project, classes) if classes else None


def _runs_backward(project, method) -> bool:
    """The project method (a `FunctionSummary`) calls `.backward()` somewhere in its body."""
    import ast

    node = _method_node(project, method)
    return node is not None and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in ast_walk.walk(node))


def _method_node(project, method):
    """The `ast.FunctionDef` of a project function or method (a `FunctionSummary`), found by its qualified name
    in its module's tree; None when it is not there."""
    import ast

    from gpulint.analysis.lazy_module import LazyModuleInfo
    from gpulint.analysis.project import _find_function

    info = project.module(method.path)
    if isinstance(info, LazyModuleInfo):  # a big module keeps no tree: `tree` would parse all of it each time
        found = _find_function(info, method.qualname)[0]
        return found if isinstance(found, ast.FunctionDef) else None
    node = info.tree if info is not None else None
    for part in method.qualname.split("."):
        body = getattr(node, "body", None) or []
        node = next((s for s in body if isinstance(s, (ast.ClassDef, ast.FunctionDef)) and s.name == part), None)
        if node is None:
            return None
    return node if isinstance(node, ast.FunctionDef) else None


def _engine_call_site(analysis: ModuleAnalysis, registration: cst.CSTNode, fn: cst.FunctionDef):
    """The registration that hands `fn` to an engine library which runs it once per batch (`Engine(update)`,
    `@trainer.on(Events.ITERATION_COMPLETED)`, `engine.hooks['on_forward'] = on_forward`), as the call site a
    finding in `fn` names (analysis/engine_steps.py)."""
    from gpulint.analysis.forward import CallSite, _line_of

    shown = registration.decorator if type(registration) is cst.Decorator else registration
    code = cst.Module([]).code_for_node(shown).strip()
    if type(registration) is cst.Decorator:
        code = "@" + code
    return CallSite(Path(analysis.path), _line_of(analysis, shown), code, fn.name.value)


def _runs_argument(analysis: ModuleAnalysis, call: cst.Call, position: Optional[int], keyword: Optional[str]) -> bool:
    """The project function `call` reaches (each of them, for a name bound to one of several methods) calls the
    parameter that receives this argument on every call."""
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    targets = _callees(analysis, calls, call) if calls is not None else None
    if not targets:
        return False
    for summary, bound in targets:
        params = summary.params[1:] if bound and summary.params else summary.params
        name = keyword if keyword is not None else (params[position] if position is not None and
                                                     position < len(params) else None)
        if name is None:
            return False
        if name in summary.calls_params:
            continue
        # handed on to a project function that calls it (`p_sample_loop(..., cond_fn=cond_fn)` -> `p_sample(...,
        # cond_fn=cond_fn)` -> `cond_fn(x, t)`): analysis/runs_model.py
        from gpulint.analysis.runs_model import model_runners

        if not model_runners(calls.project).runs_parameter(summary, name):
            return False
    return True


def _callees(analysis: ModuleAnalysis, calls, call: cst.Call) -> Optional[list]:
    """(summary, bound) of the project function `call` reaches; for a name bound once to a method or to a choice
    between two (`sample_fn = diffusion.p_sample_loop if c else diffusion.ddim_sample_loop`), each of them;
    None when any is unknown."""
    funcs: list = [call.func]
    if type(call.func) is cst.Name:
        scope = analysis.index.enclosing_scope(call.func)
        bindings = analysis.index.lookup(call.func.value, scope) if scope is not None else []
        if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].index is None:
            value = bindings[0].value
            if type(value) is cst.IfExp and type(value.body) is cst.Attribute and type(value.orelse) is cst.Attribute:
                funcs = [value.body, value.orelse]
            elif type(value) is cst.Attribute:
                funcs = [value]
    found = []
    for func in funcs:
        target = calls.callee(call if func is call.func else call.with_changes(func=func), own_module=True) or \
            (calls.local_callee(call) if func is call.func else None)
        if target is None:
            return None
        found.append((target[1], target[2]))
    return found


def _model_value(analysis: ModuleAnalysis, value: cst.BaseExpression, depth: int = 0) -> bool:
    """A network or one of its methods: `model`, `model.forward_with_cfg`, or a name every binding of which in
    its scope is one (`sample_fn = model.forward` on one branch, `model.forward_with_cfg` on the other)."""
    if analysis.kinds.of(value) is Kind.MODULE:
        return True
    if type(value) is cst.Name and depth == 0 and _runs_a_network(analysis, value):
        return True
    if type(value) is cst.Attribute:
        return analysis.kinds.of(value.value) is Kind.MODULE and not value.attr.value.startswith("_")
    if type(value) is cst.Name and depth == 0:
        scope = analysis.index.enclosing_scope(value)
        bindings = analysis.index.lookup(value.value, scope) if scope is not None else []
        return bool(bindings) and all(b.kind == "assign" and b.index is None and b.value is not None and
                                      _model_value(analysis, b.value, depth + 1) for b in bindings)
    return False


def _runs_a_network(analysis: ModuleAnalysis, name: cst.Name) -> bool:
    """A name bound only to a function of this module whose own body calls a network (`def model_fn(x, t):
    return model(x, t, y)`): a wrapper that runs the model."""
    bindings = analysis.index.visible_bindings(name)
    if len(bindings) != 1 or bindings[0].kind != "def" or type(bindings[0].value) is not cst.FunctionDef:
        return False
    from gpulint.analysis.tree import descendants

    return any(type(n) is cst.Call and analysis.kinds.of(n.func) is Kind.MODULE for n in descendants(bindings[0].value))


def _hands_model_on(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    """`call` hands a network (or one of its methods) to a project function or method that runs it on every
    call, directly or through other project functions (`diffusion.p_sample_loop(model, shape, ...)`, also
    through a name bound to one of several such methods: `sample_fn = diffusion.p_sample_loop if c else
    diffusion.ddim_sample_loop`): analysis/runs_model.py."""
    models = [i for i, a in enumerate(call.args) if not a.star and (
        type(a.value) is cst.Name or type(a.value) is cst.Attribute and type(a.value.value) is cst.Name) and
        _model_value(analysis, a.value)]
    if not models or any(analysis.kinds.of(a.value) is Kind.LOADER for a in call.args if not a.star):
        return False  # `train_one_epoch(model, loader, ...)`: a pass over the data, its caller an epoch loop
    return runs_passed_callable(analysis, call, models)


def runs_passed_callable(analysis: ModuleAnalysis, call: cst.Call, positions: list) -> bool:
    """The project function (or each of the methods a name may be bound to) that `call` reaches runs, on every
    call, the callable one of the arguments at `positions` (indices into `call.args`) hands it."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.runs_model import model_runners

    calls = analysis.fact(project_calls)
    targets = _callees(analysis, calls, call) if calls is not None else None
    if not targets:
        return False
    runners = model_runners(calls.project)
    for summary, bound in targets:
        params = summary.params[1:] if bound and summary.params else summary.params
        runs = False
        for i in positions:
            arg = call.args[i]
            keyword = arg.keyword.value if arg.keyword is not None else None
            position = sum(1 for a in call.args[:i] if a.keyword is None)
            name = keyword if keyword is not None else (params[position] if position < len(params) else None)
            if name is not None and runners.runs_parameter(summary, name):
                runs = True
                break
        if not runs:
            return False
    return True


def _targets_gpu(analysis: ModuleAnalysis) -> bool:
    text = analysis.source if analysis.source is not None else analysis.module.code
    if _OTHER_FRAMEWORK.search(text) is not None and _TORCH_IMPORT.search(text) is None:
        return False  # TensorFlow/JAX code (a vendored library's TF tests): its tensors are not PyTorch's
    if GPU_HINT.search(text) is not None:
        return True
    from gpulint.analysis.forward import feeds_a_gpu

    return feeds_a_gpu(analysis)  # a file of model classes run every step by a loop that names the device


# Imports of the module itself (at the top level, or in a top-level `if`/`try` block), not inside a function: a
# TensorFlow test with one PyTorch-equivalence test importing torch locally is TensorFlow code (likewise MXNet/Gluon
# and PaddlePaddle training scripts, whose autograd and devices are their own).
_OTHER_FRAMEWORK = re.compile(r"^ {0,4}(?:import|from)\s+(?:tensorflow|jax|flax|mxnet|paddle)\b", re.MULTILINE)
_TORCH_IMPORT = re.compile(r"^ {0,4}(?:import|from)\s+torch\b", re.MULTILINE)


# Evidence that tensors go to an accelerator: `.cuda()`, `.to(...)`, a `device`, "cuda" strings, accelerate/XLA,
# the CUDA devices a script makes visible (`os.environ['CUDA_VISIBLE_DEVICES'] = opt.gpus_str`).
GPU_HINT = re.compile(r"\.cuda\b|cuda[\"':]|\bdevice\b|\.to\(|accelerat|xla_device|\bmps\b|\bxpu\b|\bnpu\b|"
                      r"\bCUDA_VISIBLE_DEVICES\b", re.IGNORECASE)
_BOOL_FUNCTIONS = {"torch.isnan", "torch.isinf", "torch.isfinite", "torch.logical_and", "torch.logical_or",
                   "torch.logical_not", "torch.logical_xor", "torch.eq", "torch.ne", "torch.gt", "torch.lt",
                   "torch.ge", "torch.le", "torch.isin", "torch.isclose"}
# Tensor methods that keep the dtype of what they are called on (a mask stays a mask), unless given a dtype
_MASK_KEEPING = frozenset({"to", "cuda", "squeeze", "unsqueeze", "flatten", "view", "reshape", "repeat", "expand",
                           "contiguous", "clone", "detach", "t", "permute", "transpose", "view_as", "reshape_as",
                           "expand_as", "triu", "tril", "flip", "roll"})


def _names_a_dtype(analysis: "ModuleAnalysis", node: cst.BaseExpression) -> bool:
    """`torch.float32`, `torch.long`, `dtype` / `x.dtype`: a conversion target that is a dtype."""
    q = analysis.qualified(node) if type(node) in (cst.Name, cst.Attribute) else None
    if q is not None and q.startswith("torch.") and q.count(".") == 1 and q != "torch.device":
        return True
    last = node.attr.value if type(node) is cst.Attribute else node.value if type(node) is cst.Name else ""
    return "dtype" in last.lower()


def _to_bool(analysis: "ModuleAnalysis", call: cst.Call) -> bool:
    """`x.to(torch.bool)`, `x.to(dtype=torch.bool)`, `x.type(torch.bool)` of a tensor."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in ("to", "type") or not call.args:
        return False
    target = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "dtype"), None)
    if target is None and call.args[0].keyword is None:
        target = call.args[0].value
    return target is not None and type(target) in (cst.Name, cst.Attribute) and \
        analysis.qualified(target) == "torch.bool" and analysis.is_tensor(func.value)


_BOOL_METHODS = {"isnan", "isinf", "isfinite", "bool", "eq", "ne", "gt", "lt", "ge", "le", "logical_and",
                 "logical_or", "logical_not", "isclose"}
