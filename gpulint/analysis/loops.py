"""Where code runs: every iteration of a training/eval loop, only periodically, or outside any hot loop.

A sync inside `for batch in loader:` costs a GPU stall per step; the same sync under `if step % 100 == 0:` is
deliberate logging and costs nothing worth reporting. Everything in this module serves that distinction.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Callable, Optional, Union

from gpulint.analysis.progress_wrappers import is_progress_wrapper
import libcst as cst

from gpulint.analysis.empty_exit import empty_input_exit
from gpulint.analysis.helper_sites import none_test, ruled_out
from gpulint.analysis.skip_guards import sharding
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.kinds import Kind, KindInference
from gpulint.analysis.memo_guards import cst_memo_fill, cst_memo_return
from gpulint.analysis.node_types import of_types
from gpulint.analysis.nonfinite import nonfinite_only
from gpulint.analysis.once import once_per_object
from gpulint.analysis.unset_options import first_step_only
from gpulint.analysis.runs_model import _DATA_WORDS
from gpulint.analysis.tree import SyntaxIndex, child_nodes, descendants, own_scope_nodes
from gpulint.syntax import NOT_CONSTANT as _NOT_CONSTANT, code_of as _code, literal_value as _constant_value, \
    positional_names, string_value, target_names as _target_names

Loop = Union[cst.For, cst.While]


class Frequency(enum.Enum):
    OUTSIDE = "outside"  # not in a training/eval loop (or in one, but runs once per epoch: see PERIODIC)
    EVERY_ITERATION = "every-iteration"
    PERIODIC = "periodic"


@dataclass(frozen=True)
class Execution:
    frequency: Frequency
    loop: Optional[Loop] = None  # the training/eval loop the code runs in
    reason: str = ""  # for PERIODIC: why ("under `if step % 100 == 0`")
    # Model code run every step from a loop in another place (analysis/forward.py: a `forward` and what it
    # calls): the loop's call site, a `forward.CallSite`; `loop` is then None.
    via: Optional[object] = None

    @property
    def every_iteration(self) -> bool:
        return self.frequency is Frequency.EVERY_ITERATION

    @property
    def periodic(self) -> bool:
        return self.frequency is Frequency.PERIODIC


OUTSIDE = Execution(Frequency.OUTSIDE)

_TIMERS = {"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "timeit.default_timer"}
# Tests that hold only while a model is exported or traced, never on a training or evaluation step.
_EXPORT_TESTS = {"torch.onnx.is_in_onnx_export", "torch.jit.is_tracing"}
_HELPER_DEPTH = 4  # calls deep that a hot helper makes another function of the module hot
_EXITS = {"sys.exit", "exit", "quit", "os._exit", "os.abort"}
# Names of flags that turn true at the end of a run (`if done or step % N == 0:` saves a last time).
_END_FLAGS = frozenset({"done", "finished", "is_done", "is_finished", "last", "is_last", "last_step", "is_last_step",
                        "final_step", "is_final", "is_final_step", "training_done", "end_of_training"})
_COUNTER_HINTS = ("step", "iter", "idx", "epoch", "batch", "it", "i", "n", "count", "global_step", "itr")

# A batch's index within a pass, as a framework hook's parameter names it (Lightning 0.x `validation_step(self,
# batch, batch_nb)`) or a project's step method: `if batch_nb == 0:` holds for one batch of each pass.
_BATCH_INDEXES = frozenset({"batch_nb", "batch_num", "batch_no", "batch_index", "batch_i", "batch_id", "i_batch"})


class LoopRole(enum.Enum):
    HOT = "hot"  # a training/eval loop: iterates batches, or trains in its own body
    EPOCH = "epoch"  # not hot itself, but holds a hot loop: its own statements run once per epoch
    COLD = "cold"


class LoopAnalysis:
    def __init__(self, index: SyntaxIndex, kinds: KindInference) -> None:
        self.index = index
        self.kinds = kinds
        self._roles: dict[int, LoopRole] = {}
        self._math_only: set[int] = set()  # hot loops that are hot only for the tensor math they iterate
        self._exec: dict[int, Execution] = {}
        self._trains: dict = {}
        self._hot_helpers: Optional[dict[int, Execution]] = None
        self._constant_branches: dict[tuple[int, int], bool] = {}  # `_constant_off`, per branch and function
        self._memos: dict = {}  # analysis/memo_guards.py's answers, per `if` (and per block position)
        self._calls_of: Optional[dict[int, list[cst.Call]]] = None
        self._subclasses: Optional[dict[int, list[cst.ClassDef]]] = None
        self._defaults: Optional[dict] = None
        # _compute_execution's walks, by the id of a node passed on the way up (see there)
        self._walks: dict[int, Execution] = {}
        self._walks_without_helpers: dict[int, Execution] = {}
        # (id(loop or function), into nested loops) -> (the node, the nodes of its body in `_walk_body`'s order):
        # a loop's role, its training and batch questions each walked the same body again (`_body`)
        self._bodies: dict[tuple[int, bool], tuple] = {}
        self._model_runs: dict[int, tuple] = {}  # `_runs_a_model` per call node: (the node, the answer)
        self._without_helpers = False
        # analysis/host_models.py: the loop runs only a model built in host memory and never moved, in code
        # that names no device
        self.host_model_loop: Optional[Callable[[Loop], bool]] = None
        # the argument a call of a project generator hands on the items of (`metric_logger.log_every(t, 50)`)
        self.generator_source: Optional[Callable[[cst.Call], Optional[cst.BaseExpression]]] = None
        # analysis/__init__.py: the number of items of the top-level display an imported dotted name names in
        # another module of the project (`lib.PARTS`: `Project.display_length`), or None
        self.display_length: Optional[Callable[[str], Optional[int]]] = None
        # analysis/forward.py: the call site that runs a function every step from a loop elsewhere, or None
        self.per_step_caller: Optional[Callable[[cst.FunctionDef], Optional[object]]] = None
        # analysis/__init__.py: whether a call runs the function passed as its argument (by position, or by
        # keyword) every time it runs (`gpu_timer(train_step)` where `def gpu_timer(closure): ... closure()`)
        self.runs_argument: Optional[Callable[[cst.Call, Optional[int], Optional[str]], bool]] = None
        # analysis/__init__.py: whether a call hands a network to a project function that runs it (a sampler's
        # `diffusion.p_sample_loop(model, ...)`: analysis/runs_model.py)
        self.hands_model_on: Optional[Callable[[cst.Call], bool]] = None
        # analysis/forward.py: the optimizer a library call steps (`scaler.step(optimizer)`), or None
        self.stepped_argument: Optional[Callable[[cst.Call], Optional[cst.BaseExpression]]] = None
        # analysis/__init__.py: whether a call runs a method of a project class (of any module) that runs a
        # backward pass (`agent.update(rollouts)` where `agent = algo.PPO(...)`, whose minibatch loop trains)
        self.trains_through_method: Optional[Callable[[cst.Call], bool]] = None
        # analysis/__init__.py: whether a name holds an instance of a project `nn.Module` class of another module
        # (`actor_critic = Policy(...)`, imported), which kind inference does not follow
        self.project_network: Optional[Callable[[cst.Name], bool]] = None
        # `self.agent.update(...)`: a method of a project object (another module's class, a configured one) that
        # is one training step (a backward pass outside loops of its own), set by analysis/__init__.py
        self.steps_through_method: Optional[Callable[[cst.Call], bool]] = None
        # `train_step_fn(state, batch)` of a closure a project factory returned, one training step a call
        self.steps_through_closure: Optional[Callable[[cst.Call], bool]] = None
        # `agent.update(rollouts)`: a method of a project object whose step work runs in a loop of its own (an
        # epoch's pass, several epochs of minibatches), set by analysis/__init__.py (analysis/step_callables.py)
        self.epoch_through_method: Optional[Callable[[cst.Call], bool]] = None
        # `if eval_every_step(self.global_step):` where the name holds a project predicate object whose
        # `__call__` is true every N steps only (`step % every == 0`), set by analysis/__init__.py
        self.periodic_predicate: Optional[Callable[[cst.Call], bool]] = None
        # analysis/__init__.py: whether an `if`'s body never runs in the program as shipped: a debug/analysis
        # option of the program's parser left at its default (`if opt.debug > 0:`, analysis/test_mode.py), or a
        # flag no construction turns on (`if self.autobalance:`, `hasattr(self, "x")` that no training sets,
        # analysis/unset_options.py)
        self.never_runs: Optional[Callable[[cst.If], bool]] = None
        # analysis/__init__.py: whether a top-level function of a script is called by nothing in the project (an
        # `eval()` the script defines and never runs, analysis/uncalled.py): its loops run no step
        self.uncalled: Optional[Callable[[cst.FunctionDef], bool]] = None
        # a function every call of which in the project is periodic (analysis/periodic_methods.py): its loops
        # over tensor math run periodically
        self.periodic_only: Optional[Callable[[cst.FunctionDef], Optional[str]]] = None
        # a method every call of which is in a branch that never runs (`never_runs`, analysis/periodic_methods.py)
        self.dead_calls: Optional[Callable[[cst.FunctionDef], bool]] = None
        # analysis/__init__.py: the call site to show for a function an engine library runs every batch (its
        # registration, analysis/engine_steps.py), or None without a path
        self.engine_call_site: Optional[Callable[[cst.CSTNode, cst.FunctionDef], Optional[object]]] = None
        self._engine_steps: Optional[dict] = None

    # -- loop roles --------------------------------------------------------------------------------------------
    def role(self, loop: Loop) -> LoopRole:
        key = id(loop)
        role = self._roles.get(key)
        if role is None:
            role = self._roles[key] = self._compute_role(loop)
        return role

    def _body(self, loop: Union[Loop, cst.FunctionDef], into_loops: bool) -> tuple:
        """`_walk_body(loop, into_loops)`, the nodes in the same order, walked once per loop or function and
        variant: on a cold fairseq lint 1.4M node steps came from about ten walks of each loop's body (its role,
        whether it trains, draws a batch, steps an environment, ...). The node is held with its nodes (ids of
        the module's tree stay unique while it is)."""
        key = (id(loop), into_loops)
        kept = self._bodies.get(key)
        if kept is None or kept[0] is not loop:
            kept = self._bodies[key] = (loop, tuple(_walk_body(loop, into_loops)))
        return kept[1]

    def _compute_role(self, loop: Loop) -> LoopRole:
        if _one_pass(loop, self._body):
            return LoopRole.COLD  # `for x in loader: <measure once>; return`: the body runs at most once
        if self._over_own_arguments(loop):
            return LoopRole.COLD  # `def prepare(self, *models): for m in models: ...`: a call's few arguments
        if self.uncalled is not None:
            outer = next((a for a in reversed(list(self.index.ancestors(loop))) if type(a) is cst.FunctionDef), None)
            if outer is not None and self.uncalled(outer):
                return LoopRole.COLD  # a loop of a script's function that nothing calls never runs
            if outer is not None and self.dead_calls is not None and self.dead_calls(outer):
                return LoopRole.COLD  # a method called only under `if self.DBval:` that nothing turns on
        if self.host_model_loop is not None and self.host_model_loop(loop):
            return LoopRole.COLD  # an actor's or a CPU test's loop over a model never moved (analysis/host_models.py)
        if self._per_device(loop):
            return LoopRole.COLD  # `for k in range(torch.cuda.device_count()):`: once per GPU, a handful of times
        if _clears_each_item(loop):
            # `for opt in self.optims.values(): opt.zero_grad()`: one call per optimizer of a few, not a step loop;
            # the code around it (a helper a step loop calls) decides how often it runs
            return LoopRole.COLD
        if self._capped_dump(loop):
            return LoopRole.COLD  # `for i, x in enumerate(test_loader): save(x); if i == n - 1: break` before training
        if self._loops_over_batches(loop):
            return LoopRole.HOT
        if _draws_from_each_item(loop, self._body):
            # `for length, dl in eval_dls.items(): seq, labels = next(dl)`: one batch from each of a few loaders,
            # as many iterations as there are loaders: the code around the loop decides how often it runs (under
            # `if (i + 1) % EVAL_EVERY == 0:` in a training loop, periodically)
            return LoopRole.COLD
        if type(loop) is cst.For and any(type(n) is cst.Call and self._next_batch(n)
                                             for n in self._body(loop, into_loops=False)):
            # `for step in range(max_steps): batch = next(self.data)`: one batch per iteration (not counted as a
            # pass over the data by an enclosing loop: `for micro in range(accum): next(it)` inside a step loop)
            return LoopRole.HOT
        if self._step_helper_draws_a_batch(loop):
            return LoopRole.HOT
        if _episode_loop(loop, self._body):
            # `while not done: action = agent.select_action(state); state, r, done, _ = env.step(action)`: one
            # policy call per environment step, whatever runs around it or inside it (an update loop per step)
            return LoopRole.HOT
        if self._under_periodic_guard(loop) and not any(
                type(n) is cst.Call and self._runs_a_model(n) and not _names_a_loss(n.func)
                for n in self._body(loop, into_loops=False)):
            # `if g_it == 0 or (g_it + 1) % 500 == 0: for si, (bg, ed) in enumerate(scales): ... .item()`: a loop
            # that takes no batch, nested in a periodic block of its function, runs only when the block runs; the
            # walk up from its body meets the block and its reason (every iteration of it is a periodic cost). A
            # loop that runs a network every iteration (`if j % 10 == 0: for step in range(n): discr(obs[step])`,
            # a relabelling pass every N updates) is a pass of its own: each of its iterations pays its costs; a
            # loss evaluated per scale for the log (`self.val_loss(pred, y).item()`) is not
            return LoopRole.COLD
        # A loop around a pass over the data is an epoch loop, even if it also runs the model itself (a sample
        # or an evaluation per epoch): `for epoch ...: for x in loader: ...` or `for epoch ...: train(epoch)`.
        nested_hot = False
        per_item = False  # the body runs a sampler of this module once per iteration (one batch of samples each)
        for node in self._body(loop, into_loops=True):
            if type(node) in (cst.For, cst.While) and self.role(node) is LoopRole.HOT:
                if self._loops_over_batches(node):
                    return LoopRole.EPOCH
                nested_hot = True
            if type(node) in _COMPREHENSIONS and self._iterates_batches(node.for_in.iter):  # type: ignore[attr-defined]
                # `for part in parts: preds = torch.cat([model(X[idx]) for idx in loader]).cpu()`: the
                # comprehension is the pass over the batches; the loop around it runs once per pass (per split)
                return LoopRole.EPOCH
            if type(node) is cst.Call:
                helper = self.local_function(node)
                if helper is not None and self._function_has_step_loop(helper) and \
                        not self._periodic_within(node, loop):
                    if self._is_sampler(helper) and not self.index.is_ancestor_or_self(helper, loop):
                        per_item = True
                        continue
                    return LoopRole.EPOCH
                chosen = self.chosen_functions(node)
                if chosen and all(self._is_sampler(c) and not self.index.is_ancestor_or_self(c, loop)
                                  for c in chosen) and not self._periodic_within(node, loop):
                    per_item = True
        if per_item and not nested_hot and not self._over_a_display(loop) and not _few_range_iterations(loop):
            # `for batch_seeds in batches: images = sampler_fn(net, latents); images.cpu()`: one generated batch
            # per iteration, each a full sampling pass (the sampler's own loop is the step inside it)
            return LoopRole.HOT
        # `for step ...: for micro in range(accum): ...; optimizer.step()` is hot; an epoch loop that only clears
        # gradients around its inner training loop (`optimizer.zero_grad()` once per epoch) is not.
        # A sweep over configurations written out in the source (`for hook in [NO, FP16, BF16]: run_test(hook)`)
        # runs a handful of times, not once per batch.
        if not self._over_a_display(loop) and not _few_range_iterations(loop) and \
                self._body_trains(loop, beside_hot_loop=nested_hot):
            return LoopRole.HOT
        if nested_hot:
            return LoopRole.EPOCH
        if self._samples_through_helper(loop):
            return LoopRole.HOT
        if self._steps_model_state(loop):
            return LoopRole.HOT
        if self._rollout(loop) or self._rollout_pass(loop):
            return LoopRole.HOT
        if self._chunked_pass(loop):
            return LoopRole.HOT
        if not self._iterates_tensor_math(loop):
            return LoopRole.COLD
        if self.periodic_only is not None:
            outer = next((a for a in reversed(list(self.index.ancestors(loop))) if type(a) is cst.FunctionDef), None)
            if outer is not None and self.periodic_only(outer):
                return LoopRole.COLD  # a method the project calls every N steps only (analysis/periodic_methods.py)
        self._math_only.add(id(loop))
        return LoopRole.HOT

    def _chunked_pass(self, loop: Loop) -> bool:
        """`for i in range(0, num_text, text_bs): text = texts[i: min(num_text, i + text_bs)]; ...;
        model.text_encoder(...)`: a pass over data in chunks the loop slices itself, running a model on each
        chunk (an evaluation's or an embedding extraction's batches without a loader). A `range` over a count not
        written out, a slice whose start reads the loop's counter, and a model call in the loop's own body."""
        if type(loop) is cst.For and self._over_tensor_rows(loop.iter):
            # `for i, sims in enumerate(metric_logger.log_every(sims_matrix[start:end], 50, header)):` running
            # the fusion encoder on each row: one model pass per item of a tensor
            return any(type(n) is cst.Call and self._runs_a_model(n) and not _names_a_loss(n.func)
                       for n in self._body(loop, into_loops=False))
        if type(loop) is not cst.For or type(loop.target) is not cst.Name or type(loop.iter) is not cst.Call or \
                dotted_name(loop.iter.func) != "range" or not _many_range_iterations(loop.iter):
            return False
        counter = loop.target.value
        sliced = ran = False
        for node in self._body(loop, into_loops=False):
            if type(node) is cst.Subscript and not sliced:
                for element in node.slice:
                    part = element.slice
                    if type(part) is cst.Slice and part.lower is not None and any(
                            type(n) is cst.Name and n.value == counter for n in descendants(part.lower)):
                        sliced = True
            elif type(node) is cst.Call and not ran and self._runs_a_model(node) and not _names_a_loss(node.func):
                ran = True
            if sliced and ran:
                return True
        return False

    def _over_tensor_rows(self, iterable: cst.BaseExpression) -> bool:
        """`iterable` yields the rows of a tensor: the tensor itself (or a slice of it), through `enumerate` or a
        project generator handing on the items it is given (`metric_logger.log_every(t, 50)`)."""
        for _ in range(3):
            if type(iterable) is cst.Call and dotted_name(iterable.func) == "enumerate" and iterable.args:
                iterable = iterable.args[0].value
            elif type(iterable) is cst.Call:
                handed = self.generator_source(iterable) if self.generator_source is not None else None
                if handed is None:
                    return False
                iterable = handed
            else:
                break
        return type(iterable) in (cst.Name, cst.Subscript, cst.Attribute) and self.kinds.of(iterable) is Kind.TENSOR

    def _per_device(self, loop: Loop) -> bool:
        """`for k in range(num_gpu):` with `num_gpu = torch.cuda.device_count()` (or the call itself): one
        iteration per visible GPU (detectron2's `collect_env` copying a probe tensor to each)."""
        if type(loop) is not cst.For or type(loop.iter) is not cst.Call or dotted_name(loop.iter.func) != "range" \
                or len(loop.iter.args) != 1 or loop.iter.args[0].keyword is not None or loop.iter.args[0].star:
            return False
        count = loop.iter.args[0].value
        if type(count) is cst.Name:
            bindings = self.index.visible_bindings(count)
            if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
                    bindings[0].value is None:
                return False
            count = bindings[0].value
        return type(count) is cst.Call and not count.args and \
            self.kinds.qualified(count.func) == "torch.cuda.device_count"

    def _capped_dump(self, loop: Loop) -> bool:
        """`for i, x_t in enumerate(test_loader): ...; if i == args.n_test_samples - 1: break`: a pass over the first
        few batches of a loader, stopped by a `break` under a test of its own counter, that trains nothing (no
        backward pass, no optimizer step), is nested in no loop, and sits beside a training loop of the same scope
        (the real step loop, which does run backward passes): a one-off dump or warm-up before training (samples
        saved for reference), whose copies and reads run a handful of times, not once per step."""
        if type(loop) is not cst.For or type(loop.iter) is not cst.Call or dotted_name(loop.iter.func) != "enumerate" \
                or type(loop.target) is not cst.Tuple or not loop.target.elements or \
                type(loop.target.elements[0].value) is not cst.Name:
            return False
        counter = loop.target.elements[0].value.value
        body = loop.body.body if type(loop.body) is cst.IndentedBlock else []
        if not any(_stops_at_count(stmt, counter) for stmt in body):
            return False
        scope: Optional[cst.CSTNode] = None
        for ancestor in self.index.ancestors(loop):
            if type(ancestor) in (cst.For, cst.While):
                return False  # a capped pass inside an epoch loop runs every epoch
            if type(ancestor) in (cst.FunctionDef, cst.Module):
                scope = ancestor
                break
        if scope is None or _runs_training(loop, into_loops=True):
            return False
        # the training loop comes after it: a capped pass after the step loop of the same function
        # (`if iteration >= epoch_step_val: break` in a `fit_one_epoch`) is the epoch's validation, every batch
        at = self.index.order(loop)
        return at is not None and any(
            type(node) in (cst.For, cst.While) and node is not loop and
            not self.index.is_ancestor_or_self(loop, node) and (self.index.order(node) or -1) > at and
            _runs_training(node, into_loops=True) for node in _walk_scope(scope))

    def _over_own_arguments(self, loop: Loop) -> bool:
        """`for arg in args:` / `for key, value in kwargs.items():` over the enclosing function's own `*args` or
        `**kwargs`: the handful of values one call passed (`strategy.prepare((actor, cfg), critic)`), not a
        stream of batches. A per-step caller still makes its body run every step."""
        if type(loop) is not cst.For:
            return False
        iterable = loop.iter
        if type(iterable) is cst.Call and type(iterable.func) is cst.Attribute and not iterable.args and \
                iterable.func.attr.value in ("items", "values", "keys"):
            iterable, star = iterable.func.value, "**"
        else:
            star = "*"
        if type(iterable) is not cst.Name:
            return False
        fn = next((a for a in self.index.ancestors(loop) if type(a) in (cst.FunctionDef, cst.Lambda)), None)
        if type(fn) is not cst.FunctionDef:
            return False
        params = fn.params
        own = params.star_arg if star == "*" else params.star_kwarg
        if not isinstance(own, cst.Param) or own.name.value != iterable.value:
            return False
        bindings = self.index.visible_bindings(iterable)
        return all(b.kind == "param" for b in bindings)

    def _step_helper_draws_a_batch(self, loop: Loop) -> bool:
        """`for step in range(n): forward_backward(data); trainer.optimize(opt)` where the helper of this module
        draws one batch per call outside any loop of its own (`batch = next(data_loader)`, then a loop over
        micro-batches of it that runs the model): each iteration of the caller's loop takes one batch, so it is
        the step loop and the helper's inner loop a pass over pieces of that batch, not over the data. Not a call
        under a periodic test (an evaluation every N steps)."""
        for node in self._body(loop, into_loops=False):
            if type(node) is not cst.Call:
                continue
            helper = self.local_function(node)
            if helper is None or any(a is helper for a in self.index.ancestors(loop)):
                continue
            if any(type(n) is cst.Call and self._next_batch(n) for n in self._body(helper, into_loops=False)) \
                    and self._function_has_hot_loop(helper) and not self._function_loops_over_batches(helper) \
                    and not self._periodic_within(node, loop):
                return True
        return False

    def _over_a_display(self, loop: Loop) -> bool:
        """A `for` loop over a list, tuple or set display of a few items: written out in the loop (`for hook in
        [NO, FP16, BF16]:`) or a top-level constant of this module or another, named as a constant (`for part in
        lib.PARTS:` with `PARTS = [TRAIN, VAL, TEST]`, a handful of splits), not one iteration per batch. An empty
        display is no count (a list filled where this analysis does not look)."""
        if _over_a_display(loop):
            return True
        if type(loop) is not cst.For or type(loop.iter) not in (cst.Name, cst.Attribute):
            return False
        last = loop.iter.value if type(loop.iter) is cst.Name else loop.iter.attr.value
        if not last.isupper():
            return False  # a constant by its name (`PARTS`, `SPLITS`); `loader = [batch]` is a stand-in loader
        count = self._constant_display_length(loop.iter)
        return count is not None and 0 < count < _MANY

    def _constant_display_length(self, iterable: cst.BaseExpression) -> Optional[int]:
        """The number of items of the top-level display `iterable` names (see `_over_a_display`), or None."""
        root = iterable
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is not cst.Name:
            return None
        bindings = self.index.visible_bindings(root)
        if len(bindings) != 1 or not isinstance(bindings[0].scope, cst.Module) or \
                any(any(n.name.value == root.value for n in g.names) for g in of_types(self.index, cst.Global)):
            return None
        binding = bindings[0]
        if binding.kind == "assign" and root is iterable and binding.index is None and \
                type(binding.value) in (cst.List, cst.Tuple, cst.Set):
            elements = binding.value.elements  # type: ignore[union-attr]
            if any(isinstance(e, cst.StarredElement) for e in elements) or self._extended(root.value):
                return None
            return len(elements)
        if binding.kind == "import" and self.display_length is not None:
            dotted = dotted_name(iterable)
            return self.display_length(dotted) if dotted is not None else None
        return None

    def _extended(self, name: str) -> bool:
        """A call of `name.append(...)` (`extend`, `insert`) anywhere in the module."""
        return any(type(c.func) is cst.Attribute and type(c.func.value) is cst.Name and c.func.value.value == name
                   and c.func.attr.value in ("append", "extend", "insert", "add", "update")
                   for c in of_types(self.index, cst.Call))

    def _samples_through_helper(self, loop: Loop) -> bool:
        """A loop of many iterations whose own body hands the network to a project function that runs it
        (`for _ in range(n_batches): samples = diffusion.p_sample_loop(model.forward, ...)`, `while done < n:
        diffusion.calc_bpd_loop(model, batch, ...)`): a sampling or evaluation pass per iteration."""
        if self.hands_model_on is None or self._over_a_display(loop) or _few_range_iterations(loop):
            return False
        owner = self._class_of(loop)
        if owner is not None and any(type(s) is cst.FunctionDef and s.name.value == "forward"
                                     for s in owner.body.body):
            return False  # a network's own code (a loop over its blocks or time steps) is no sampling pass
        return any(type(n) is cst.Call and n.args and self.hands_model_on(n) and not self._reaches_local_hot_loop(n)
                   for n in self._body(loop, into_loops=False))

    def _steps_model_state(self, loop: Loop) -> bool:
        """A sampler's or solver's loop: its own body runs a network on a value it updates from what the network
        returned (`denoised = net(x_hat, t_hat)`, then `x_next = x_hat + (t_next - t_hat) * d_cur` with `d_cur`
        from `denoised`, and `x_hat` from `x_next` on the next iteration): one network evaluation per sampling
        step, a hot loop wherever the function is called from. The network is a module (`model(x)`,
        `model.sample_step(x)`) or a callable parameter of the enclosing function (`def edm_sampler(net, ...)`).
        Not a loop over a handful of literal items, nor one binding the callee itself (`for blk in blocks: x =
        blk(x)`), nor a loop in a network's own code or in data-side and setup functions."""
        if self._over_a_display(loop) or _few_range_iterations(loop):
            return False
        function = next((a for a in self.index.ancestors(loop)
                         if type(a) in (cst.FunctionDef, cst.Lambda, cst.ClassDef)), None)
        if type(function) is not cst.FunctionDef or function.name.value in _SETUP_METHODS or \
                _data_side(function, self.index):
            return False
        owner = self._class_of(loop)
        if owner is not None and any(type(s) is cst.FunctionDef and s.name.value == "forward"
                                     for s in owner.body.body):
            return False  # a network's own code (a loop over its blocks or time steps)
        loop_names = set(_target_names(loop.target)) if type(loop) is cst.For else set()
        assigned: dict[str, list[tuple[int, cst.CSTNode, set[str]]]] = {}  # name -> (place, statement, names read)
        outputs: set[str] = set()  # names assigned (also) from a network's result
        model_calls: list[tuple[int, cst.Call]] = []
        for place, node in enumerate(self._body(loop, into_loops=False)):
            if type(node) is cst.Call and self._runs_network(node, function, loop_names):
                model_calls.append((place, node))
            if type(node) is cst.Expr and type(node.value) is cst.Call and type(node.value.func) is cst.Attribute \
                    and type(node.value.func.value) is cst.Name and node.value.args and \
                    node.value.func.value.value not in loop_names and node.value.func.value.value != "self" and \
                    self.kinds.of(node.value.func.value) not in (Kind.MODULE, Kind.MODULE_CLASS, Kind.OPTIMIZER,
                                                                 Kind.LOADER) and \
                    not self._runs_network(node.value, function, loop_names):
                # `decode_strategy.advance(log_probs, attn)`: a method call hands values to an object that keeps
                # them (a decoding strategy's state), read back through its attributes
                # (`decode_strategy.current_predictions`) as the network's next input: an update of that object.
                # Not a network's own method (`model.update_omega(W)`), an optimizer or a loader
                read = {n.value for a in node.value.args for n in _names_under(a.value)}
                assigned.setdefault(node.value.func.value.value, []).append((place, node, read))
            if type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign) and node.value is not None:
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                names = {name for t in targets for name in _target_names(t)}
                read = {n.value for n in _names_under(node.value)}
                if type(node) is cst.AugAssign:
                    read |= names  # `x += f(x)` reads the old value
                runs = any(type(n) is cst.Call and self._runs_network(n, function, loop_names)
                           for n in descendants(node.value))
                for name in names:
                    assigned.setdefault(name, []).append((place, node, read))
                    if runs:
                        outputs.add(name)
        if not model_calls or not outputs:
            return False

        def earlier(name: str, used: int, user: cst.CSTNode):
            """The assignments of `name` this iteration made before its use at `used` (not the one using it)."""
            return [(p, n, r) for p, n, r in assigned.get(name, ()) if p < used and n is not user
                    and not self.index.is_ancestor_or_self(n, user)]

        # The network's input must carry a value the network returned on an earlier iteration: a name read before
        # this iteration assigns it (`x_next` of the previous step), leading back to a network output. A result
        # used later in the same iteration (`loss += compute_loss(out, y)` after `out = model(x)`) is no state.
        for place, call in model_calls:
            seen: set[tuple[str, int, bool]] = set()
            todo = [(n.value, place, call, False) for a in call.args for n in _names_under(a.value)]
            while todo:
                name, used, user, carried = todo.pop()
                if (name, used, carried) in seen:
                    continue
                seen.add((name, used, carried))
                before = earlier(name, used, user)
                if not before:  # from the previous iteration (or from before the loop)
                    if name in outputs:
                        return True
                    todo.extend((d, p, n, True) for p, n, r in assigned.get(name, ()) for d in r)
                    continue
                last = max(before, key=lambda item: item[0])
                if carried and name in outputs and any(last[1] is n for p, n, r in assigned[name]) and \
                        any(type(c) is cst.Call and self._runs_network(c, function, loop_names)
                            for c in descendants(last[1].value)):
                    return True
                todo.extend((d, last[0], last[1], carried) for d in last[2])
        return False

    def _is_sampler(self, fn: cst.FunctionDef) -> bool:
        """Every hot loop of `fn` is a sampler's loop (`_steps_model_state`) that neither takes batches of a loader
        nor trains: a call of `fn` generates one batch of samples."""
        key = ("sampler", id(fn))
        if key not in self._trains:
            self._trains[key] = False  # recursion guard
            hot = [n for n in self._body(fn, into_loops=True)
                   if type(n) in (cst.For, cst.While) and self.role(n) is LoopRole.HOT]
            self._trains[key] = bool(hot) and all(
                self._steps_model_state(h) and not self._loops_over_batches(h) and not _over_items(h, fn) and not any(
                    type(c) is cst.Call and type(c.func) is cst.Attribute and
                    c.func.attr.value in ("backward", "step", "zero_grad") for c in self._body(h, into_loops=True))
                for h in hot)
        return self._trains[key]

    def chosen_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """`sampler_fn(...)` where `sampler_fn = ablation_sampler if c else edm_sampler` is the only binding of
        the name where it stands, both top-level functions of this module: those functions (else [])."""
        func = call.func
        if type(func) is not cst.Name:
            return []
        bindings = self.index.visible_bindings(func)
        if len(bindings) != 1 or type(bindings[0].value) is not cst.IfExp:
            return []
        choice = bindings[0].value
        found = []
        for option in (choice.body, choice.orelse):
            if type(option) is not cst.Name:
                return []
            defs = [d for d in self.index.functions.get(option.value, [])
                    if type(self.index.enclosing_scope(d)) is cst.Module]
            if len(defs) != 1:
                return []
            found.append(defs[0])
        return found

    def _runs_network(self, call: cst.Call, function: cst.FunctionDef, loop_names: set) -> bool:
        """`call` runs a network: a module (`model(x)`, a method of one that is not bookkeeping) or a callable
        parameter of `function` (`net(x, t)` in `def sampler(net, ...)`), not a name the loop binds."""
        func = call.func
        if type(func) is cst.Name:
            if func.value in loop_names:
                return False
            found = self.index.parameter_of(func)
            if found is not None and found[0] is function:
                # given a tensor (`net(x_hat, t_hat)`), not a tokenizer given text (`tokenizer(prompts,
                # return_tensors="pt")`)
                from gpulint.analysis.tokenizers import host_tensors_call  # imports gpulint.analysis
                return not host_tensors_call(call) and any(self.kinds.of(a.value) is Kind.TENSOR for a in call.args)
            if self._hands_network_a_tensor(call):
                return True
        return self._runs_a_model(call) or self._helper_runs_a_model(call, function)

    def _hands_network_a_tensor(self, call: cst.Call) -> bool:
        """`x, x_mean = corrector_update_fn(x, vec_t, model=model)`: a plain callable (a partial of a sampler's
        update function, a closure) handed the network by name together with a tensor: one step of a sampler
        or solver evaluates the network (branch recall70; only `_steps_model_state` asks, which also wants the
        result fed back as the next iteration's input)."""
        if self.kinds.of(call.func) in (Kind.MODULE, Kind.MODULE_CLASS):
            return False
        values = [a.value for a in call.args if not a.star]
        return any(type(v) is cst.Name and self.kinds.of(v) is Kind.MODULE for v in values) and \
            any(self.kinds.of(v) is Kind.TENSOR for v in values)

    def _helper_runs_a_model(self, call: cst.Call, function: cst.FunctionDef, depth: int = 0) -> bool:
        """`self._decode_and_generate(decoder_input, ...)`: a function or method of this module (not `function`
        itself) whose own body, outside loops and branches of its own, runs a network (`self.model.decoder(...)`),
        directly or through one more such helper: each call of it is one network evaluation."""
        helper = self.local_function(call)
        if helper is None or helper is function or depth > 1 or \
                any(a is helper for a in self.index.ancestors(call)):
            return False
        key = ("helper-runs-a-model", id(helper), id(function), depth)  # memoised: asked per call of every loop
        if key not in self._trains:
            self._trains[key] = False  # recursion guard
            self._trains[key] = any(
                type(node) is cst.Call and not _under_branch(self.index, node, helper) and
                (self._runs_a_model(node) or self._helper_runs_a_model(node, function, depth + 1))
                for node in self._body(helper, into_loops=False))
        return self._trains[key]

    def _reaches_local_hot_loop(self, call: cst.Call, depth: int = 0) -> bool:
        """`call` runs a function of this module that has a hot loop of its own, or calls one that does
        (`generate(model, ...)` -> `generate_fn(...)`, a decoding loop over tokens): that loop is the step, and
        the caller's loop runs once per generated sequence, as an epoch loop does."""
        helper = self.local_function(call)
        if helper is None or depth > 3:
            return False
        if self._function_has_hot_loop(helper):
            return True
        return any(type(n) is cst.Call and self.local_function(n) is not helper and
                   self._reaches_local_hot_loop(n, depth + 1) for n in self._body(helper, into_loops=True))

    def _rollout(self, loop: Loop) -> bool:
        """An RL rollout: a loop of many iterations whose own body runs a model (`agent(obs)`, a method of a
        module: `agent.get_action_and_value(next_obs)`) and hands what it returns to an environment's step
        (`obs, reward, done, info = envs.step(action.cpu().numpy())`, `_environment_step`), placed in a loop whose
        body also holds a loop that trains (PPO's update loops beside the rollout), or calls an agent's method that
        trains (`agent.update(rollouts)`, `trains_through_method`). Each iteration is an
        environment step of training; a diffusion sampler's `scheduler.step(eps, t, x)` is not an environment.
        Not subsumed by `_steps_model_state` (the observation is the model's state through `envs.step`): that one
        judges loops of functions only, and a rollout is mostly a script's top-level loop (cleanrl's PPO;
        tests/test_loop_analysis.py's rollout cases fail without this)."""
        if isinstance(loop, cst.For) and (not _many_range_iterations(loop.iter) or _few_range_iterations(loop)):
            return False
        outer = next((a for a in self.index.ancestors(loop) if isinstance(a, (cst.For, cst.While, cst.FunctionDef,
                                                                              cst.Lambda, cst.ClassDef))), None)
        if not isinstance(outer, (cst.For, cst.While)) or self._periodic_within(loop, outer):
            return False  # an evaluation rollout every N updates (`if j % eval_interval == 0:`) is no step loop
        outputs: set = set()  # names bound in the body to what the model returns
        steps = []
        for node in self._body(loop, into_loops=False):
            if not isinstance(node, cst.Assign) or not isinstance(node.value, cst.Call):
                continue
            if self._runs_a_model(node.value):
                for target in node.targets:
                    outputs.update(_target_names(target.target))
            elif _environment_step(node):
                steps.append(node.value)
        if not outputs or not any(
                isinstance(n, cst.Name) and n.value in outputs
                for step in steps for arg in step.args for n in _names_under(arg.value)):
            return False
        if any(isinstance(other, (cst.For, cst.While)) and other is not loop and
               not self.index.is_ancestor_or_self(loop, other) and self._trains_by_itself(other)
               for other in self._body(outer, into_loops=True)):
            return True
        # the update beside the rollout is a method of an agent class (`value_loss, ... = agent.update(rollouts)`,
        # PPO's minibatch loop in its own module), run in the outer loop's own body on every iteration
        return self.trains_through_method is not None and any(
            isinstance(node, cst.Call) and not self.index.is_ancestor_or_self(loop, node) and
            self.trains_through_method(node) and not self._periodic_within(node, outer)
            for node in self._body(outer, into_loops=False))

    def _rollout_pass(self, loop: Loop) -> bool:
        """A second pass over a rollout's steps: a loop over the very iterable of a rollout (`_rollout`) in the
        same outer loop, whose own body runs a model every iteration (GAIL's `for step in range(num_steps):
        rollouts.rewards[step] = discr.predict_reward(...)` after the rollout `for step in range(num_steps):`).
        It runs once per environment step of the update, as the rollout does. Not under a periodic test of the
        outer loop."""
        if not isinstance(loop, cst.For) or not _many_range_iterations(loop.iter) or _few_range_iterations(loop):
            return False
        outer = self._enclosing(loop)
        if not isinstance(outer, (cst.For, cst.While)) or self._periodic_within(loop, outer):
            return False
        if not any(isinstance(node, cst.Call) and self._runs_a_model(node)
                   for node in self._body(loop, into_loops=False)):
            return False
        return any(isinstance(other, cst.For) and other is not loop and self._enclosing(other) is outer and
                   other.iter.deep_equals(loop.iter) and self._rollout(other)
                   for other in self._body(outer, into_loops=True))

    def _enclosing(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The innermost loop, function, lambda or class holding `node`."""
        return next((a for a in self.index.ancestors(node)
                     if isinstance(a, (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)

    def _runs_a_model(self, call: cst.Call) -> bool:
        """`model(x)`, or a method of a module that is not set-up or bookkeeping (`agent.act(obs)`; a module
        imported from another project file: `project_network`). Answered once per call node: a loop's role, its
        network calls and the host-model test (analysis/host_models.py) ask about the same calls, nested loops'
        calls again for each loop around them."""
        kept = self._model_runs.get(id(call))
        if kept is None or kept[0] is not call:
            kept = self._model_runs[id(call)] = (call, self._computes_runs_a_model(call))
        return kept[1]

    def _computes_runs_a_model(self, call: cst.Call) -> bool:
        func = call.func
        if self.kinds.of(func) is Kind.MODULE:
            return True
        if not isinstance(func, cst.Attribute) or func.attr.value.startswith("_") or \
                func.attr.value in _MODULE_BOOKKEEPING:
            return False
        return self.kinds.of(func.value) is Kind.MODULE or (
            isinstance(func.value, cst.Name) and self.project_network is not None and
            self.project_network(func.value))

    def _iterates_tensor_math(self, loop: Loop) -> bool:
        """A loop with no model that does tensor math many times: an iterative solver, k-means, sampling.

        Only an outermost loop of its function (an inner loop runs as often as the outer one decides), that
        iterates `range(...)` of a non-literal or literal length >= 8 or is a `while` loop, in a function no loop
        of the module calls and that is not data-side or setup code (`__init__`, `__getitem__`, ...), and
        whose body computes a tensor (a call or an operator whose result is one).
        """
        if type(loop) is cst.For and (not _many_range_iterations(loop.iter) or _few_range_iterations(loop)):
            return False
        function = None
        for parent in self.index.ancestors(loop):
            if type(parent) in (cst.For, cst.While) and parent is not loop:
                return False
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                function = parent
                break
        if type(function) is cst.Lambda or type(function) is cst.FunctionDef and (
                function.name.value in _SETUP_METHODS or _data_side(function, self.index) or
                self._called_from_a_loop(function) or self._set_up_once(function)):
            return False
        if type(loop) is cst.While and type(loop.test) in (cst.Name, cst.Integer):
            # `while True:`: an interactive or serving loop, paced by its input; or a decoder generating
            return self._decoding_loop(loop, function)
        body = list(self._body(loop, into_loops=True))
        if any(type(n) is cst.Call and self._not_tensor_math_loop(n) for n in body):
            return False
        return any(type(n) in (cst.Call, cst.BinaryOperation) and self._computes_tensor(n) for n in body)

    def _decoding_loop(self, loop: cst.While, function) -> bool:
        """`while True:` in a method of a class, stopped by a `break` under a test of a tensor it computes
        (`if torch.sigmoid(gate_output.data) > self.gate_threshold: break`): an autoregressive decoder, one
        iteration per generated frame or token, not a loop paced by input."""
        if type(function) is not cst.FunctionDef or not any(
                type(a) is cst.ClassDef for a in self.index.ancestors(function)):
            return False
        for node in self._body(loop, into_loops=False):
            if type(node) is cst.If and any(type(n) is cst.Break for n in self._body(node, into_loops=False)) \
                    and any(type(n) in (cst.Call, cst.Comparison) and self.kinds.of(n) is Kind.TENSOR
                            for n in descendants(node.test)):
                return True
        return False

    def _not_tensor_math_loop(self, call: cst.Call) -> bool:
        """A call that marks the loop as something else: it hands a model or a loader on (an epoch loop:
        `train(model, loader)`), runs a model's method (generation: `model.generate(...)`), or plots."""
        if any(self.kinds.of(a.value) in (Kind.MODULE, Kind.LOADER) for a in call.args):
            return True
        func = call.func
        if type(func) is cst.Attribute and self.kinds.of(func.value) is Kind.MODULE:
            return True
        name = self.kinds.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None
        return name is not None and name.startswith(("matplotlib.", "seaborn.", "PIL."))

    def _computes_tensor(self, node: Union[cst.Call, cst.BinaryOperation]) -> bool:
        """Math on a tensor the loop already has: an operator or a call whose result is a tensor and that takes
        one (a bare factory such as `torch.zeros(3)` is not), or a read of a value it computes (`.cpu()`, `.item()`).
        """
        if type(node) is cst.BinaryOperation:
            return self.kinds.of(node) is Kind.TENSOR
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in ("cpu", "item") and not node.args:
            # of a value computed here (`(a * b).sum().cpu()`), not of an element read out (`y[i].cpu()`)
            return type(func.value) in (cst.Call, cst.BinaryOperation) and \
                self.kinds.of(func.value) in (Kind.TENSOR, Kind.UNKNOWN)
        if self.kinds.of(node) is not Kind.TENSOR:
            return False
        if type(func) is cst.Attribute and self.kinds.of(func.value) is Kind.TENSOR:
            return not _copied_to_host(func.value)  # `y[i].cpu().squeeze()` is host work
        return any(self.kinds.of(a.value) is Kind.TENSOR for a in node.args)

    def _called_from_a_loop(self, fn: cst.FunctionDef) -> bool:
        """Some training or eval loop calls `fn` (one that iterates batches or trains in its own body): how often
        `fn`'s loop runs is then its caller's business (every step, or under `if step % N == 0:`). A call from
        any other loop (`for k in args.nb_knn: knn_classifier(...)`) leaves `fn`'s own loop to decide."""
        key = ("called", id(fn))
        if key not in self._trains:
            self._trains[key] = any(
                not self.index.is_ancestor_or_self(fn, n) and any(
                    type(a) in (cst.For, cst.While) and self._trains_by_itself(a) for a in self.index.ancestors(n))
                for n in self.calls_to(fn))
        return self._trains[key]

    def _set_up_once(self, fn: cst.FunctionDef) -> bool:
        """Every call of `fn` in the module runs under a once-per-object guard (`if self.first:
        self.masks = self.initialize_masks(x); self.first = False`, analysis/once.py): setup code, as `__init__`
        is, however many iterations its own loop has."""
        calls = self.calls_to(fn)
        return bool(calls) and all(self._under_once_guard(call) for call in calls)

    def _under_once_guard(self, node: cst.CSTNode) -> bool:
        child = node
        for parent in self.index.ancestors(node):
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return False
            if type(parent) is cst.If and child is parent.body and once_per_object(parent, next(
                    (a for a in self.index.ancestors(parent) if type(a) is cst.FunctionDef), None)):
                return True
            child = parent
        return False

    def calls_to(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The calls of this module that `local_function` resolves to `fn`, in document order."""
        if self._calls_of is None:
            self._calls_of = {}
            for node in of_types(self.index, cst.Call):
                target = self.local_function(node)  # type: ignore[arg-type]
                if target is not None:
                    self._calls_of.setdefault(id(target), []).append(node)
        return self._calls_of.get(id(fn), [])

    def _trains_by_itself(self, loop: Loop) -> bool:
        """The loop iterates batches or runs a model, backward pass or optimizer step in its own body (helpers
        not followed: this is asked while a helper's own role is being decided)."""
        return self._loops_over_batches(loop) or any(
            type(n) is cst.Call and self.is_training_call(n) for n in self._body(loop, into_loops=False))

    def _loops_over_batches(self, loop: Loop) -> bool:
        if type(loop) is cst.While:
            # `it = iter(loader)` ... `while True: batch = next(it)`: one batch per iteration
            return any(type(n) is cst.Call and self._next_batch(n) for n in self._body(loop, into_loops=False))
        return self.kinds.iteration_kind(loop.iter, None) is Kind.TENSOR and self._iterates_batches(loop.iter)

    def _next_batch(self, call: cst.Call) -> bool:
        """`next(it)` where `it` is a loader, or a name bound only to iterators over loaders (`iter(loader)`), or a
        loader's method named for a batch (`loader.get_batch(split)`, `loader.next_batch()`)."""
        if type(call.func) is cst.Attribute and "batch" in call.func.attr.value and \
                self.kinds.of(call.func.value) is Kind.LOADER:
            return True  # `data = loader.get_batch('train')`: a project loader class's own method for one batch
        if dotted_name(call.func) != "next" or not call.args or call.args[0].keyword is not None:
            return False
        it = call.args[0].value
        if self._iterates_batches(it):
            return True
        scope = self.index.enclosing_scope(it) if type(it) is cst.Name else None
        values = [b.value for b in self.index.lookup(it.value, scope)] if scope is not None else []  # type: ignore
        return bool(values) and all(type(v) is cst.Call and dotted_name(v.func) == "iter" and v.args and
                                    self._iterates_batches(v.args[0].value) for v in values)

    def _function_has_hot_loop(self, fn: cst.FunctionDef) -> bool:
        key = ("loop", id(fn))
        if key not in self._trains:
            self._trains[key] = False  # recursion guard
            self._trains[key] = any(type(n) in (cst.For, cst.While) and self.role(n) is LoopRole.HOT
                                    for n in self._body(fn, into_loops=True))
        return self._trains[key]

    def _function_has_step_loop(self, fn: cst.FunctionDef) -> bool:
        """`fn` has a hot loop that is a pass of its own (over batches, training, sampling), not only a loop over
        tensor math: YOLOv4's `build_target` loops over the images of the batch (`for b in range(batchsize):`
        with `int(nlabel[b])`), and the loss's loop over the output scales that calls it once per scale is not
        an epoch loop (its body, the loss's `forward`, runs every step)."""
        key = ("step loop", id(fn))
        if key not in self._trains:
            self._trains[key] = False  # recursion guard
            self._trains[key] = any(type(n) in (cst.For, cst.While) and self.role(n) is LoopRole.HOT
                                    and id(n) not in self._math_only for n in self._body(fn, into_loops=True))
        return self._trains[key]

    def _iterates_batches(self, iterable: cst.BaseExpression, depth: int = 0) -> bool:
        """A DataLoader (possibly wrapped in enumerate/tqdm/zip, directly or through a name bound once to the
        wrapper: `data_iter = enumerate(val_loader)`), not a tensor's rows or a parameter list."""
        if depth < 3:
            iterable = self.kinds.wrapper_bound_to(iterable)
        if type(iterable) is cst.Call:
            fn = dotted_name(iterable.func)
            args = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if fn == "zip" and any(a.star == "*" and self.kinds.holds_loaders(a.value) for a in iterable.args):
                return True  # `zip(*loaders)`: one batch of each loader per iteration
            if (fn in ("enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "zip", "islice",
                       "itertools.islice") or is_progress_wrapper(fn)) and args:
                return any(self._iterates_batches(a, depth + 1) for a in args)
        return self.kinds.of(iterable) is Kind.LOADER

    def _body_trains(self, loop: Loop, beside_hot_loop: bool = False) -> bool:
        """The loop's own body (not nested loops) runs a backward pass, an optimizer step or a forward pass
        (beside a hot inner loop, clearing gradients does not count)."""
        inner_passes = [n for n in self._body(loop, into_loops=False)
                        if type(n) in _COMPREHENSIONS and _built_iterable(n.for_in.iter)]  # type: ignore[attr-defined]
        for node in self._body(loop, into_loops=False):
            if type(node) is cst.Call and self.is_training_call(node, follow_helpers=True):
                if beside_hot_loop and type(node.func) is cst.Attribute and node.func.attr.value == "zero_grad":
                    continue
                if any(self.index.is_ancestor_or_self(c, node) for c in inner_passes):
                    # `for part in parts: torch.cat([model(X[part][idx]) for idx in IndexLoader(...)])`: the
                    # comprehension is a pass of its own over an iterable built there; one forward per item of
                    # it, not one per iteration of this loop
                    continue
                return True
        # `self.agent.update(replay_buffer, logger, step)` of a project agent whose update is one training step,
        # on every iteration (not under `if step % 1000 == 0:`); or `dqn.act(state)`, whose one call runs the
        # network. Not beside a call of a method that passes over data in a loop of its own (`agent.update()`
        # training for several epochs): then the loop is an outer loop (analysis/step_callables.py). Nor beside a
        # hot inner loop: `next_value = agent.get_value(next_obs)` after an RL rollout (a bootstrap value once per
        # iteration of cleanrl's PPO) leaves the rollout the step loop.
        if self.steps_through_closure is not None and not beside_hot_loop and any(
                type(node) is cst.Call and type(node.func) is cst.Name and self.local_function(node) is None
                and not self._periodic_within(node, loop) and self.steps_through_closure(node)
                for node in self._body(loop, into_loops=False)):
            return True  # `loss = train_step_fn(state, batch)` of a factory's step closure (closure_factories)
        if self.steps_through_method is None or beside_hot_loop:
            return False
        methods = [node for node in self._body(loop, into_loops=False) if type(node) is cst.Call and
                   type(node.func) is cst.Attribute and self.local_function(node) is None]
        if not any(not self._periodic_within(node, loop) and self.steps_through_method(node) for node in methods):
            return False
        return self.epoch_through_method is None or not any(self.epoch_through_method(node) for node in methods)

    def loops_over_batches(self, loop: Loop) -> bool:
        """The loop takes a batch of a data loader each iteration (`for x, y in loader`, `next(it)`)."""
        return self._loops_over_batches(loop)

    def is_training_call(self, call: cst.Call, follow_helpers: bool = False) -> bool:
        func = call.func
        if type(func) is cst.Attribute:
            method = func.attr.value
            if method == "backward":
                return True
            if method in ("step", "zero_grad") and self.kinds.of(func.value) is Kind.OPTIMIZER:
                return True
            if method in _NETWORK_METHODS and self.kinds.of(func.value) is Kind.MODULE and \
                    not (type(func.value) is cst.Name and func.value.value == "self"):
                return True  # `vae.decode(z)`, `model.generate(...)`: the network runs (SiT's sampling loop)
        if self.kinds.of(func) is Kind.MODULE and not (follow_helpers and self._own_method(call)):
            return True
        if follow_helpers:
            helper = self.local_function(call)
            if helper is not None and self._function_trains(helper):
                return True
            # `self.run_step()` in a base class's loop: the subclasses' overrides run in its place
            return any(self._function_trains(o) for o in self.overrides(call))
        return False

    def _function_trains(self, fn: cst.FunctionDef) -> bool:
        """A step function: trains outside any loop of its own (one that loops is an epoch function), in its own
        body or through the step functions it calls (`run_step` calling `self.forward_backward(batch)` and
        `self.optimize()`, a trainer class's shape; a sampling step reaching the model through a helper); one that
        calls a function looping over batches is an epoch function."""
        key = id(fn)
        if key not in self._trains:
            self._trains[key] = False  # recursion guard
            calls = [n for n in self._body(fn, into_loops=False) if type(n) is cst.Call]
            helpers = [h for h in map(self.local_function, calls) if h is not None and h is not fn]
            self._trains[key] = not self._function_has_hot_loop(fn) and \
                not any(self._function_loops_over_batches(h) for h in helpers) and \
                (any(self.is_training_call(n, follow_helpers=True) for n in calls) or self._steps_an_object(calls))
        return self._trains[key]

    def _steps_an_object(self, calls: list) -> bool:
        """A helper's call of a project object's method that is one step (`self._wm._train(data)` in a
        trainer's `_train`, analysis/step_callables.py), with no call beside it passing over data in a loop of
        its own. Only methods of objects the helper's class holds (`self.X.m(...)`): a parameter's class would be
        looked for at the project's call sites of every helper asked about."""
        if self.steps_through_method is None:
            return False
        methods = [n for n in calls if type(n.func) is cst.Attribute and type(n.func.value) is cst.Attribute
                   and type(n.func.value.value) is cst.Name and n.func.value.value.value == "self"
                   and self.local_function(n) is None]
        return any(self.steps_through_method(n) for n in methods) and (
            self.epoch_through_method is None or not any(self.epoch_through_method(n) for n in methods))

    def _own_method(self, call: cst.Call) -> bool:
        """`self.unwrap_dist_model(self.model)`: a method of the module's class, named like a model (the kinds
        go by name), is a function whose body says whether it trains (`_function_trains`), not a forward pass
        (LAVIS's checkpoint helper made its epoch loop a step loop)."""
        func = call.func
        return type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self" and \
            self.local_function(call) is not None

    def _function_loops_over_batches(self, fn: cst.FunctionDef) -> bool:
        return any(type(n) in (cst.For, cst.While) and self._loops_over_batches(n)
                   for n in self._body(fn, into_loops=True))

    def local_function(self, call: cst.Call) -> Optional[cst.FunctionDef]:
        """The function or method of this module that `call` calls (`f(...)`, `self.f(...)`), if unambiguous."""
        func = call.func
        name = None
        if type(func) is cst.Name:
            name = func.value
        elif type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            name = func.attr.value
        elif type(func) is cst.Attribute and type(func.value) is cst.Name:
            return self._static_method(func.value, func.attr.value)
        if name is None:
            return None
        candidates = self.index.functions.get(name, [])
        if type(func) is cst.Name and candidates:
            # a bare name calls what it is bound to where it stands: not a method, not a function nested in
            # another function, not when a loop variable or a parameter of that name hides it
            # (`for block in self.blocks: block(x)` beside a `def block(...)` helper inside `__init__`)
            bindings = self.index.visible_bindings(func)
            defs = {id(b.source): b.source for b in bindings if b.kind == "def" and not (
                type(b.scope) is cst.ClassDef and self.index.enclosing_scope(call) is not b.scope)}
            if len(bindings) == 1 and bindings[0].kind == "param":
                # a callable passed in under the name of the module's function or method it usually is
                # (`train(trainer.train_step, ...)`, then `train_step(x)` in `train`): as before, by name
                candidates = [c for c in candidates
                              if type(self.index.enclosing_scope(c)) in (cst.Module, cst.ClassDef)]
            elif len(defs) != 1 or len(bindings) != 1:
                return None
            else:
                candidates = [c for c in candidates if id(c) in defs]
        if len(candidates) > 1 and type(func) is cst.Attribute:
            # `self.run_iter(...)` where several classes of the module define `run_iter`: the caller's own
            # class's method
            owner = self._class_of(call)
            candidates = [c for c in candidates if owner is not None and self._class_of(c) is owner]
        return candidates[0] if len(candidates) == 1 else None

    def _static_method(self, owner: cst.Name, name: str) -> Optional[cst.FunctionDef]:
        """`Trainer.write_metrics(...)`: a `@staticmethod` or `@classmethod` `name` defined in the body of the
        module's top-level class `owner` (bound by nothing else), called through the class. Its arguments are its
        parameters as written (a class method's `cls` aside), as for a call through `self`."""
        bindings = self.index.visible_bindings(owner)
        if len(bindings) != 1 or bindings[0].kind != "class" or type(bindings[0].source) is not cst.ClassDef:
            return None
        cls: cst.ClassDef = bindings[0].source
        found = [stmt for stmt in (cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ())
                 if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name]
        if len(found) != 1 or not any(type(d.decorator) is cst.Name and d.decorator.value in
                                      ("staticmethod", "classmethod") for d in found[0].decorators):
            return None
        return found[0]

    def overrides(self, call: cst.Call) -> list[cst.FunctionDef]:
        """For `self.m(...)` in a method of a class of this module: the methods `m` of the module's classes derived
        from that class (by base name, transitively), which run in its place on their instances (detectron2's
        `TrainerBase.train` loops over `self.run_step()`; `SimpleTrainer` and `AMPTrainer` define it)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
            return []
        owner = self._class_of(call)
        if owner is None:
            return []
        name = func.attr.value
        found = []
        for derived in self._derived_classes(owner):
            for stmt in derived.body.body if isinstance(derived.body, cst.IndentedBlock) else ():
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
                    found.append(stmt)
        return found

    def _derived_classes(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """The classes of this module that derive from `cls` through base classes named in the module (the
        one class of the module by each name), directly or transitively."""
        if self._subclasses is None:
            self._subclasses = {}
            for other in self.index.classes.values():
                for base in other.bases:
                    value = base.value if base.keyword is None else None
                    parent = self.index.classes.get(value.value) if isinstance(value, cst.Name) else None
                    if parent is not None and parent is not other:
                        self._subclasses.setdefault(id(parent), []).append(other)
        found: list[cst.ClassDef] = []
        stack = list(self._subclasses.get(id(cls), ()))
        while stack:
            other = stack.pop()
            if other in found:
                continue
            found.append(other)
            stack.extend(self._subclasses.get(id(other), ()))
        return found

    def passed_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """Functions of this module passed by name to `call` whose callee calls them on every call: a step
        closure handed to a timer (`gpu_timer(train_step)`) runs wherever, and as often as, the call runs."""
        if self.runs_argument is None:
            return []
        found: list[cst.FunctionDef] = []
        position = 0
        for arg in call.args:
            if arg.star:
                break
            keyword = arg.keyword.value if arg.keyword is not None else None
            value = arg.value
            if type(value) is cst.Name and value.value in self.index.functions:
                bindings = self.index.visible_bindings(value)
                fn = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "def" else None
                if type(fn) is cst.FunctionDef and \
                        self.runs_argument(call, None if keyword else position, keyword):
                    found.append(fn)
            if keyword is None:
                position += 1
        return found

    def instance_method(self, call: cst.Call) -> Optional[cst.FunctionDef]:
        """The method of a class of this module that `call` runs on an instance the module builds: `opt.step()`
        where every binding of `opt` is `opt = Lars(...)` and `Lars` (the module's one class by that name)
        defines `step`; also `scaler.step(opt)` of a `GradScaler`, which runs `opt.step()`."""
        func = call.func
        if type(func) is not cst.Attribute:
            return None
        receiver: Optional[cst.BaseExpression] = func.value
        name = func.attr.value
        if self.stepped_argument is not None and name == "step" and call.args:
            stepped = self.stepped_argument(call)
            if stepped is not None:
                receiver = stepped
        if type(receiver) is not cst.Name or not self.index.classes:
            return None
        bindings = self.index.visible_bindings(receiver)
        if not bindings or any(b.kind != "assign" or b.index is not None or type(b.value) is not cst.Call
                               or type(b.value.func) is not cst.Name for b in bindings):
            return None
        built = {b.value.func.value for b in bindings}  # type: ignore[union-attr]
        if len(built) != 1:
            return None
        cls = self.index.classes.get(built.pop())
        if cls is None or type(cls.body) is not cst.IndentedBlock or \
                type(self.index.enclosing_scope(cls)) is not cst.Module:
            return None
        methods = [m for m in cls.body.body if type(m) is cst.FunctionDef and m.name.value == name]
        return methods[0] if len(methods) == 1 else None

    def _built_once(self, block: cst.If) -> Optional[str]:
        """`if self.graph is None: self._capture(...)`: the block sets the attribute it tests, itself or through
        a method of the same class (DLRM's CUDA-graph capture), so it runs once, not every time around."""
        test = block.test
        if type(test) is cst.Comparison and len(test.comparisons) == 1 and \
                type(test.comparisons[0].operator) is cst.Is and type(test.comparisons[0].comparator) is cst.Name \
                and test.comparisons[0].comparator.value == "None" and type(test.left) is cst.Name:
            return self._first_iteration(block, test.left.value)
        emptied = _tested_empty(test)
        if emptied is not None:
            return self._first_fill(block, emptied)
        missing = _tested_missing(test)
        if missing is not None and _assigns_self(block.body, missing) and not self._deletes_self(block, missing):
            # `if not hasattr(self, 'queue_lr'): self.queue_lr = torch.zeros(...).cuda()` (Real-ESRGAN's pool)
            return "once, while an attribute tested with hasattr is created"
        if not (type(test) is cst.Comparison and len(test.comparisons) == 1
                and type(test.comparisons[0].operator) is cst.Is
                and type(test.comparisons[0].comparator) is cst.Name
                and test.comparisons[0].comparator.value == "None"
                and type(test.left) is cst.Attribute and type(test.left.value) is cst.Name
                and test.left.value.value == "self"):
            return None
        attr = test.left.attr.value
        reason = "once, while an attribute tested for None is built"
        if _assigns_self(block.body, attr):
            return reason
        cls = self._class_of(block)
        if cls is None or type(cls.body) is not cst.IndentedBlock:
            return None
        methods = {m.name.value: m for m in cls.body.body if type(m) is cst.FunctionDef}
        for node in descendants(block.body):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    type(node.func.value) is cst.Name and node.func.value.value == "self" and \
                    node.func.attr.value in methods and _assigns_self(methods[node.func.attr.value].body, attr):
                return reason
        return None

    def _first_iteration(self, block: cst.If, name: str) -> Optional[str]:
        """`preds = None` before `for batch in loader:`, then `if preds is None: preds = logits.cpu().numpy()
        else: preds = np.append(preds, ...)` in it: the body sets the local name it tests, which nothing in the
        loop sets back to `None`, so it runs on the first iteration of each pass only (the `else` every time)."""
        loop = self._innermost_loop(block)
        if loop is None:
            return None
        sets = False
        for node in descendants(loop):
            if type(node) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name
                                                for t in node.targets):
                if type(node.value) is cst.Name and node.value.value == "None":
                    return None  # `preds = None` again inside the loop: the test may hold on a later iteration
                if self.index.is_ancestor_or_self(block.body, node):
                    sets = True
            elif type(node) in (cst.AnnAssign, cst.AugAssign, cst.Del, cst.Global, cst.Nonlocal, cst.NamedExpr) \
                    and name in _code(node).split("=")[0]:
                return None  # anything less plain about the name: unsure
        return "once, on the first iteration, while a name tested for None is set" if sets else None

    def _innermost_loop(self, block: cst.If) -> Optional[Loop]:
        """The loop that holds `block` in the same function (None when a function, lambda or class comes first)."""
        found = next((a for a in self.index.ancestors(block) if type(a) in (cst.For, cst.While, cst.FunctionDef,
                                                                           cst.Lambda, cst.ClassDef)), None)
        return found if type(found) in (cst.For, cst.While) else None

    def _first_fill(self, block: cst.If, name: str) -> Optional[str]:
        """`if len(all_preds) == 0: all_preds.append(preds.cpu().numpy()) else: all_preds[0] = np.append(...)` in
        a loop: the body fills the list it tests, which nothing in the loop rebinds or empties, so it runs on the
        first iteration of each pass only (ViT-pytorch's `valid`)."""
        loop = self._innermost_loop(block)
        if loop is None:
            return None
        fills = False
        for node in descendants(loop):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name \
                    and node.func.value.value == name:
                method = node.func.attr.value
                if method in ("clear", "pop", "remove"):
                    return None  # emptied again: the test may hold later
                if method in ("append", "extend", "insert") and self.index.is_ancestor_or_self(block.body, node):
                    fills = True
            elif type(node) in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Del, cst.Global, cst.Nonlocal,
                                cst.NamedExpr) and any(type(t) is cst.Name and t.value == name
                                                       for t in _assigned_names(node)):
                return None  # rebound in the loop: unsure
        return "once, on the first iteration, while a list tested for emptiness is filled" if fills else None

    def _deletes_self(self, block: cst.If, attr: str) -> bool:
        """The class of `block` deletes `self.<attr>` somewhere (`del self.x`, `delattr(self, "x")`): the
        attribute may be missing again later."""
        cls = self._class_of(block)
        for node in (descendants(cls) if cls is not None else self.index.nodes):
            if type(node) is cst.Del and type(node.target) is cst.Attribute and node.target.attr.value == attr:
                return True
            if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "delattr" and \
                    len(node.args) == 2 and string_value(node.args[1].value) == attr:
                return True
        return False

    def _class_of(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        """The innermost class whose method holds `node` (for a method itself: its class)."""
        return self.index.enclosing_class(node)

    # -- where a node runs -------------------------------------------------------------------------------------
    def execution(self, node: cst.CSTNode) -> Execution:
        key = id(node)
        cached = self._exec.get(key)
        if cached is None:
            cached = self._exec[key] = self._compute_execution(node)
        return cached

    def _compute_execution(self, node: cst.CSTNode) -> Execution:
        """Walks up from `node`. Every node passed before a periodic guard is found leads to the same answer
        from there on (the walk above it does not depend on what lies below), so each is remembered: nodes of
        one statement share their ancestors' work, and a module is walked about once, not once per node."""
        memo = self._walks_without_helpers if self._without_helpers else self._walks
        passed: list[int] = []
        result = self._walk_up(node, memo, passed)
        for key in passed:
            memo[key] = result
        return result

    def _walk_up(self, node: cst.CSTNode, memo: dict[int, Execution], passed: list[int]) -> Execution:
        periodic: Optional[str] = None
        flag: Optional[cst.Name] = None  # the innermost `if <parameter>:` passed (see `_flag_off`)
        valued: Optional[cst.If] = None  # the innermost `if <parameter> == <constant>:` passed (`_constant_off`)
        once_in: Optional[Loop] = None  # the loop whose first pass alone runs the block being walked out of
        leaves: Optional[str] = None  # "return" / "break": the block walked out of ends the loop or the function
        guards: list = []  # `if p is None:` blocks walked out of: (p, runs only when p is None) (helper_sites)
        # this walk's answer holds for `node` alone, neither taken from nor given to the walks of the nodes around
        # it (a `torch.mps` call, which an MPS branch does not keep out of the step: see below)
        unshared = self._mps_call(node)
        child = node
        for parent in self.index.ancestors(node):
            if periodic is None and once_in is None and flag is None and leaves is None and valued is None \
                    and not guards and not unshared:
                known = memo.get(id(child))
                if known is not None:
                    return known
                passed.append(id(child))
            if once_in is not None:
                if parent is once_in:  # the block runs once each time this loop runs: the loop's context decides
                    once_in = None
                child = parent
                continue
            if type(parent) is cst.Assert and child is parent.msg:
                return OUTSIDE  # `assert ok, f"{x}"`: the message is built only when the assertion fails
            if type(parent) is cst.Raise and child is parent.exc:
                return OUTSIDE  # `raise TypeError(f"{x} ...")`: built only on the error path, at most once
            if type(parent) is cst.If and child is parent.body and self._export_only(parent.test):
                return OUTSIDE  # `if torch.onnx.is_in_onnx_export():`: runs while a model is exported, not trained
            if type(parent) is cst.If and self.without_cuda(parent, child):
                if not (self._mps_call(node) and self._mps_branch(parent)):
                    return OUTSIDE  # `else:` of `if torch.cuda.is_available():`: runs only where there is no GPU
                # `if device == "mps": torch.mps.synchronize()`: the Apple GPU's own sync, paid where the branch
                # runs (GPU109 reports it on purpose); the branch's other code is still off CUDA
            if type(parent) is cst.If and child is parent.body and nonfinite_only(parent.test):
                return OUTSIDE  # `if torch.isnan(loss):`: runs only on a step whose value is not finite
            if type(parent) is cst.If and child is parent.body and first_step_only(parent.test, held=True):
                return OUTSIDE  # `if self.cuda and self.get_num_updates() == 0:`: the run's first update only
            if type(parent) is cst.If and child is parent.body and empty_input_exit(self.index, parent):
                return OUTSIDE  # `if not pairs: return torch.tensor(0.0, ...)`: only a batch with nothing in it
            if type(parent) is cst.If and child is parent.body and self.never_runs is not None \
                    and self.never_runs(parent):
                return OUTSIDE  # `if opt.debug > 0:` (default 0); `if self.autobalance:` nothing turns on
            if type(parent) is cst.If and child is parent.body and periodic is None:
                if once_per_object(parent, next((a for a in self.index.ancestors(parent)
                                                 if type(a) is cst.FunctionDef), None)):
                    return OUTSIDE  # `if self.first: ...; self.first = False`: the first call only (once.py)
                once_in = self._clears_its_flag(parent)
                if once_in is not None:
                    child = parent
                    continue
            if type(parent) is cst.If and type(parent.test) is cst.Comparison:
                guard = none_test(parent.test, child, parent)
                if guard is not None:
                    guards.append(guard)
            if type(parent) is cst.If and child is parent.body and periodic is None:
                if flag is None and type(parent.test) is cst.Name and self.per_step_caller is not None \
                        and self.index.parameter_of(parent.test) is not None:
                    flag = parent.test
                if valued is None and type(parent.test) is cst.Comparison:
                    valued = parent
                reason = self.periodic_test(parent.test)
                if reason and self._steps_an_optimizer(parent.body):
                    reason = None  # a block that steps the optimizer is gradient accumulation's step: hot
                reason = reason or _fills_a_cache(parent) or self._built_once(parent) or (
                    "once per key, while a memo is filled" if cst_memo_fill(parent, self._memos) else None)
                if reason:
                    periodic = reason
            elif type(parent) is cst.If and child is parent.orelse and periodic is None:
                if flag is None and type(child) is cst.Else and type(parent.test) is cst.UnaryOperation and \
                        type(parent.test.operator) is cst.Not and type(parent.test.expression) is cst.Name and \
                        self.per_step_caller is not None and self.index.parameter_of(parent.test.expression):
                    flag = parent.test.expression  # `if not reverse: ... else: <runs when reverse is set>`
                # `if step % N != 0: ... else: <periodic>`
                reason = self.periodic_test(parent.test, negated=True)
                if reason:
                    periodic = reason
            elif type(parent) is cst.IfExp and periodic is None and child is not parent.test:
                # `stats = log(x) if step % 100 == 0 else None`
                reason = self.periodic_test(parent.test, negated=child is parent.orelse)
                if reason:
                    periodic = reason
            elif type(parent) is cst.IndentedBlock and periodic is None:
                if type(self.index.up.get(id(parent))) in (cst.If, cst.Else, cst.ExceptHandler) \
                        and self._ends_the_run(parent):
                    return OUTSIDE  # an error path that raises or exits: it runs at most once
                if error_handler(self.index.up.get(id(parent))):
                    return OUTSIDE  # `except RuntimeError:` (an out-of-memory fallback): once per failure
                if leaves is None and type(self.index.up.get(id(parent))) in (cst.If, cst.Else):
                    leaves = _leaves_by(parent)
                reason = self._after_skip_guard(parent, child) or (
                    "once per key, after a memo's early return" if cst_memo_return(parent, child, self._memos)
                    else None)
                if reason:
                    periodic = reason
            elif type(parent) in (cst.For, cst.While) and _runs_each_iteration(parent, child):
                role = self.role(parent)
                if role is LoopRole.HOT and leaves is not None and self._outermost_step_loop(parent, leaves):
                    # `if step >= max_steps: save(); return` (or `break`) in the training loop: the block ends
                    # the training run, so it runs once, not every step
                    return OUTSIDE
                if leaves == "break":
                    leaves = None  # a `break` leaves only the innermost loop: the loops above decide
                if role is LoopRole.HOT:
                    if periodic:
                        return Execution(Frequency.PERIODIC, parent, periodic)
                    return Execution(Frequency.EVERY_ITERATION, parent)
                if role is LoopRole.EPOCH:
                    return Execution(Frequency.PERIODIC, parent, "once per epoch, outside the inner loop")
            elif type(parent) in _COMPREHENSIONS and child is not parent.for_in and \
                    self._iterates_batches(parent.for_in.iter):  # type: ignore[attr-defined]
                # `torch.cat([eval_batch(bat) for bat in tqdm(DataLoader(dataset))])`: the element is computed
                # once per batch of the loader, as a `for` loop's body is (no loop statement to name)
                if periodic:
                    return Execution(Frequency.PERIODIC, None, periodic)
                return Execution(Frequency.EVERY_ITERATION, None)
            elif type(parent) in (cst.FunctionDef, cst.Lambda):
                if type(parent) is cst.FunctionDef:
                    local = self.hot_helpers().get(id(parent))
                    if local is not None and valued is not None and self._constant_off(valued, parent):
                        return OUTSIDE  # every call of the module passes a value the branch does not test for
                    caller = local or self._model_code(parent)
                    if caller is not None and caller.via is not None and ruled_out(parent, guards, caller.via):
                        return OUTSIDE  # `if dim_size is None:` where the per-step call passes `dim_size`
                    reason = self._flag_off(flag, parent, caller) if periodic is None else None
                    if reason:
                        return Execution(Frequency.PERIODIC, caller.loop, reason)
                    if caller is not None:
                        if periodic and caller.every_iteration:
                            return Execution(Frequency.PERIODIC, caller.loop, periodic)
                        return caller
                return OUTSIDE
            elif type(parent) is cst.ClassDef:
                return OUTSIDE
            child = parent
        return OUTSIDE

    def _flag_off(self, flag: Optional[cst.Name], fn: cst.FunctionDef, caller: Optional[Execution]) -> Optional[str]:
        """A reason when `fn` is per-step code of a call in another module (`caller.via`) that passes its
        parameter `flag` a periodic value, `False`, or leaves it at a default of False or None
        (`clip_grads(collect_metrics=should_log)`, then `if collect_metrics:` in `fn`): the block runs when
        the caller logs, not every step."""
        site = caller.via if caller is not None else None
        if flag is None or site is None or flag.value not in getattr(site, "periodic_params", ()):
            return None
        located = self.index.parameter_of(flag)
        if located is None or located[0] is not fn:
            return None
        return f"`{flag.value}` (passed periodically by `{site.code}`)"

    def _constant_off(self, branch: cst.If, fn: cst.FunctionDef) -> bool:
        """`if reduction == "mean":` (or `in ("a", "b")`) on a parameter of `fn` that every call of `fn` in this
        module passes a different constant, or leaves at a default that is one (`compute_top_k(logits, y,
        reduction="none")`): the branch never runs where the module calls the function."""
        key = (id(branch), id(fn))
        if key not in self._constant_branches:
            self._constant_branches[key] = self._compute_constant_off(branch.test, fn)
        return self._constant_branches[key]

    def _compute_constant_off(self, test: cst.BaseExpression, fn: cst.FunctionDef) -> bool:
        tested = _constant_test(test)
        if tested is None:
            return False
        name, values = tested
        located = self.index.parameter_of(name)
        if located is None or located[0] is not fn:
            return False
        positional = positional_names(fn)
        param = located[1]
        default = _constant_value(param.default) if param.default is not None else _NOT_CONSTANT
        calls = [c for c in of_types(self.index, cst.Call)
                 if self.local_function(c) is fn and not self.index.is_ancestor_or_self(fn, c)]  # type: ignore
        if not calls:
            return False
        calls = [c for c in calls if not in_error_handler(self.index, c)]  # `f(..., "cpu")` after an error only
        if not calls:
            return False
        for call in calls:
            bound = type(call.func) is cst.Attribute  # `self.f(...)`: `self` is not among the arguments
            params = positional[1:] if bound and positional else positional
            value = default
            position = 0
            for arg in call.args:
                if arg.star:
                    return False
                if arg.keyword is not None:
                    if arg.keyword.value == name.value:
                        value = _constant_value(arg.value)
                elif position < len(params) and params[position] == name.value:
                    value = _constant_value(arg.value)
                    position += 1
                else:
                    position += 1
            if value is _NOT_CONSTANT or value in values:
                return False
        return True

    def _under_periodic_guard(self, loop: Loop) -> bool:
        """`loop` sits, inside its function (or module), in the body of `if <periodic test>:` (or the `else:` of
        `if step % N != 0:`) that does not step an optimizer (a gradient-accumulation boundary is every optimizer
        step): the loop runs only when the guard lets it."""
        child: cst.CSTNode = loop
        for parent in self.index.ancestors(loop):
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return False
            if type(parent) is cst.If and (
                    child is parent.body and self.periodic_test(parent.test)
                    or child is parent.orelse and self.periodic_test(parent.test, negated=True)) \
                    and not self._steps_an_optimizer(parent.body):
                return True
            child = parent
        return False

    def _periodic_within(self, node: cst.CSTNode, loop: Loop) -> bool:
        """`node` sits in `loop` under `if <periodic test>:` (`if step % eval.interval == 0: validate(...)`): a
        validation pass every N steps does not make the step loop an epoch loop."""
        child = node
        for parent in self.index.ancestors(node):
            if parent is loop:
                return False
            if type(parent) is cst.If and child is parent.body and self.periodic_test(parent.test):
                return True
            child = parent
        return False

    def _outermost_step_loop(self, loop: Loop, leaves: str = "break") -> bool:
        """`loop` is a hot loop of a function that nothing runs every step (not a per-step helper, not model
        code) and, for a `break`, that no loop of that function encloses (a `return` leaves them all): leaving it
        ends the training (or evaluation) run."""
        for ancestor in self.index.ancestors(loop):
            if type(ancestor) in (cst.For, cst.While):
                if leaves == "return":
                    continue
                return False
            if type(ancestor) is cst.Lambda:
                return False
            if type(ancestor) is cst.FunctionDef:
                return self.hot_helpers().get(id(ancestor)) is None and self._model_code(ancestor) is None
        return True

    def hot_helpers(self) -> dict[int, Execution]:
        """Functions of this module called from inside a hot loop, with how often they run: directly, or through
        other such functions (`run_step` -> `self.optimize()` -> `self._log_grad_norm()`), up to
        `_HELPER_DEPTH` calls deep."""
        if self._hot_helpers is None:
            calls = []
            for node in of_types(self.index, cst.Call):
                fn = self.local_function(node)  # type: ignore[arg-type]
                if fn is not None and not self.index.is_ancestor_or_self(fn, node):
                    calls.append((node, fn))
                for override in self.overrides(node):  # type: ignore[arg-type]
                    if not self.index.is_ancestor_or_self(override, node):
                        calls.append((node, override))
                for passed in self.passed_functions(node):  # type: ignore[arg-type]
                    if not self.index.is_ancestor_or_self(passed, node):
                        calls.append((node, passed))
                method = self.instance_method(node)  # type: ignore[arg-type]
                if method is not None and not self.index.is_ancestor_or_self(method, node):
                    calls.append((node, method))
                for chosen in self.chosen_functions(node):  # type: ignore[arg-type]
                    if not self.index.is_ancestor_or_self(chosen, node):
                        calls.append((node, chosen))
                drawn = self.drawn_generator(node)  # type: ignore[arg-type]
                if drawn is not None and not self.index.is_ancestor_or_self(drawn, node):
                    calls.append((node, drawn))
                partial = self.partial_function(node)  # type: ignore[arg-type]
                if partial is not None and not self.index.is_ancestor_or_self(partial, node):
                    calls.append((node, partial))
                hook = self.hook_function(node)  # type: ignore[arg-type]
                if hook is not None and not self.index.is_ancestor_or_self(hook, node):
                    calls.append((node, hook))
            found: dict[int, Execution] = {}
            for _ in range(_HELPER_DEPTH):
                known_before = dict(found)
                for node, fn in calls:
                    where = self._execution_given_helpers(node, known_before)
                    if where.frequency is Frequency.OUTSIDE:
                        continue
                    known = found.get(id(fn))
                    if known is None or (known.periodic and where.every_iteration):
                        found[id(fn)] = where
                if found.keys() == known_before.keys() and all(
                        found[k].frequency is known_before[k].frequency for k in found):
                    break
            self._hot_helpers = found
        return self._hot_helpers

    def partial_function(self, call: cst.Call) -> Optional[cst.FunctionDef]:
        """`corrector_update_fn(x, t, model=model)` where the name is bound once, in an enclosing function, to
        `functools.partial(f, ...)` of a top-level function `f` of this module: the call runs `f` (branch
        recall70: a sampler's predictor and corrector steps)."""
        if type(call.func) is not cst.Name:
            return None
        bindings = self.index.visible_bindings(call.func)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None:
            return None
        value = bindings[0].value
        if type(value) is not cst.Call or not value.args or value.args[0].keyword is not None or \
                value.args[0].star or type(value.args[0].value) is not cst.Name or \
                self.kinds.qualified(value.func) not in ("functools.partial", "partial"):
            return None
        fn = self.index.functions.get(value.args[0].value.value, [])
        fn = [f for f in fn if type(self.index.enclosing_scope(f)) is cst.Module]
        return fn[0] if len(fn) == 1 else None

    def hook_function(self, call: cst.Call) -> Optional[cst.FunctionDef]:
        """`loss.register_hook(check)` (or `register_post_accumulate_grad_hook`) with `check` a function of this
        module bound once by `def`: the hook runs in every backward of the tensor it is registered on, so, where
        the registration runs every step (a per-step tensor's hook), so does the hook's body (branch recall77:
        a gradient NaN check). A hook registered once, outside the loop, is left alone: the registration decides
        how often it is seen to run."""
        if type(call.func) is not cst.Attribute or \
                call.func.attr.value not in ("register_hook", "register_post_accumulate_grad_hook") or \
                len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star or \
                type(call.args[0].value) is not cst.Name:
            return None
        bindings = self.index.visible_bindings(call.args[0].value)
        if len(bindings) != 1 or bindings[0].kind != "def" or type(bindings[0].value) is not cst.FunctionDef:
            return None
        fn = bindings[0].value
        return fn if len(fn.params.params) == 1 else None

    def drawn_generator(self, call: cst.Call) -> Optional[cst.FunctionDef]:
        """`next(gen)` where every binding of `gen` is a call of one generator function of this module
        (`train_dl = cycle(n)` ... `next(train_dl)`): each `next` runs the generator's body up to its next `yield`,
        so that body runs where the `next` runs (as `next(cycle())` runs it through the call). Only a generator
        whose body is one loop: code before the loop runs once per generator."""
        if type(call.func) is not cst.Name or call.func.value != "next" or not call.args or \
                call.args[0].keyword is not None or type(call.args[0].value) is not cst.Name or \
                self.index.visible_bindings(call.func):
            return None
        bindings = self.index.visible_bindings(call.args[0].value)
        functions = set()
        for binding in bindings:
            if binding.kind != "assign" or binding.index is not None or type(binding.value) is not cst.Call:
                return None
            fn = self.local_function(binding.value)
            if fn is None or not _is_generator(fn) or not _one_loop(fn):
                return None
            functions.add(fn)
        return functions.pop() if len(functions) == 1 else None

    def _model_code(self, fn: cst.FunctionDef) -> Optional[Execution]:
        """A model's `forward` (or what it calls) that a loop elsewhere runs every step (analysis/forward.py), or
        a function an engine library runs once per batch (analysis/engine_steps.py)."""
        engine = self.engine_step(fn)
        if engine is not None:
            return engine
        site = self.per_step_caller(fn) if self.per_step_caller is not None else None
        return Execution(Frequency.EVERY_ITERATION, None, via=site) if site is not None else None

    def engine_step(self, fn: cst.FunctionDef) -> Optional[Execution]:
        """How often an engine library (ignite's `Engine(update)` and its event handlers, torchnet's
        `engine.train(h, ...)` and hooks) runs `fn`, a function of this module handed to it; None when none does."""
        step = self.engine_functions().get(id(fn))
        if step is None:
            return None
        if not step.every_iteration:
            return Execution(Frequency.PERIODIC, None, step.reason)
        site = self.engine_call_site(step.registration, fn) if self.engine_call_site is not None else None
        return Execution(Frequency.EVERY_ITERATION, None, via=site)

    def engine_functions(self) -> dict:
        """id(function) -> `engine_steps.EngineStep` for the module's functions an engine library runs (worked out
        once per module: the rule gate and the walks up from each node ask the same question)."""
        if self._engine_steps is None:
            from gpulint.analysis.engine_steps import engine_steps

            self._engine_steps = engine_steps(self.index, self.kinds)
        return self._engine_steps

    def _execution_given_helpers(self, node: cst.CSTNode, helpers: dict[int, Execution]) -> Execution:
        """Where `node` runs, taking only `helpers` as the module's hot functions (walks remembered apart)."""
        saved = self._hot_helpers, self._without_helpers, self._walks_without_helpers
        self._hot_helpers, self._without_helpers = helpers, True
        if helpers:
            self._walks_without_helpers = {}
        try:
            return self._compute_execution(node)
        finally:
            self._hot_helpers, self._without_helpers, self._walks_without_helpers = saved

    # -- periodic guards ---------------------------------------------------------------------------------------
    def periodic_test(self, test: cst.BaseExpression, negated: bool = False) -> Optional[str]:
        """A reason when `test` (or its negation) is true only on some iterations, else None."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            return self.periodic_test(test.expression, not negated)
        if type(test) is cst.BooleanOperation:
            left = self.periodic_test(test.left, negated)
            right = self.periodic_test(test.right, negated)
            is_and = (type(test.operator) is cst.And) != negated  # De Morgan (`not (a or b)` is `not a and not b`)
            if is_and:
                return left or right
            if left and right:
                return left
            # `cancel_initiated or step % save_interval == 0`, the flag set by the loop itself (an event such as a
            # cancellation, `cancel_initiated, extra = check()`): the block still runs on some iterations only. A
            # flag the loop never sets (`verbose`, an option) may be on for the whole run: every step.
            if (left or right) and not negated and self._event_flag(test.right if left else test.left, test):
                return f"{left or right} (or a flag the loop sets)"
            if (left or right) and not negated and \
                    _fixed_value_of_tested(test.right if left else test.left, test.left if left else test.right):
                # `if g_it == 0 or (g_it + 1) % 500 == 0:`: one more value of the number the periodic side tests
                # (the first iteration, then every N)
                return f"{left or right} (or one more iteration)"
            if (left or right) and not negated and self._set_once(test.right if left else test.left, test):
                # `if (threshold_mem is None) or (global_step % every == 0):` where the block computes
                # `threshold_mem`: the first pass, then periodically
                return f"{left or right} (or while a value the loop sets is still unset)"
            return None
        if type(test) is cst.Comparison and len(test.comparisons) == 2 and not negated:
            # `0 <= step <= 2`: a counter between two literals, a fixed number of iterations
            first, second = test.comparisons
            below = (cst.LessThan, cst.LessThanEqual)
            if isinstance(test.left, cst.Integer) and isinstance(second.comparator, cst.Integer) and \
                    isinstance(first.operator, below) and isinstance(second.operator, below) and \
                    self._is_counter(first.comparator):
                return f"`{_code(test)}` (a bounded number of times)"
            return None
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            op = test.comparisons[0].operator
            sides = (test.left, test.comparisons[0].comparator)
            # The test as it holds after negation: `not (a == b)` is `a != b`, `not (a >= b)` is `a < b`.
            equal = type(op) is cst.NotEqual if negated else type(op) is cst.Equal
            unequal = type(op) is cst.Equal if negated else type(op) is cst.NotEqual
            if any(_has_modulo(s) for s in sides):
                if sharding(*sides):
                    return None  # `if idx % world_size != rank: continue`: this process's share of the items
                if equal and not any(self._period_one(s) for s in sides):
                    return f"`{_code(test)}`"
                return None
            if equal and any(self._is_counter(s) for s in sides):
                return f"`{_code(test)}`"
            if type(op) is cst.In and not negated and self._is_counter(test.left) and \
                    not (type(sides[1]) is cst.Call and dotted_name(sides[1].func) == "range"):
                return f"`{_code(test)}` (chosen iterations)"  # `if i in eval_iters:`, `if step in milestones:`
            if self._bounded(test.left, op, test.comparisons[0].comparator, negated):
                return f"`{_code(test)}` (a bounded number of times)"
            if not negated and self._end_of_pass(test.left, op, test.comparisons[0].comparator):
                return f"`{_code(test)}` (the last iteration of a pass)"
            if not unequal and any(self._reads_clock(s) for s in sides):
                return f"`{_code(test)}` (time-based)"
            if self._moving_threshold(test, op, negated):
                return f"`{_code(test)}` (a threshold the loop moves on)"
            return None
        if type(test) is cst.BinaryOperation and type(test.operator) is cst.Modulo and negated:
            return f"`not {_code(test)}`"
        if type(test) is cst.Attribute and not negated and \
                test.attr.value.startswith(("should_log", "should_eval", "should_save")):
            return f"`{_code(test)}`"  # Hugging Face's `if self.control.should_evaluate:` (every N steps)
        if type(test) is cst.Name and negated and self._set_from_none(test):
            # `if loss_ema: loss_ema = 0.9 * loss_ema + ... else: loss_ema = loss.item()`: the else runs while the
            # value is still None, on the first pass only
            return f"`not {test.value}` (the first pass, while a value the loop sets is still None)"
        if type(test) is cst.Name and not negated and self._end_of_run_flag(test):
            return f"`{test.value}` (the end of the run)"  # `if done or step % N == 0:`
        if type(test) is cst.Name and not negated and self._episode_end(test):
            return f"`{test.value}` (an episode's end)"  # `for idx, d in enumerate(done): if d: <log the return>`
        if type(test) is cst.Name and not negated:
            # `should_log = step % N == 0` ... `if should_log:`
            scope = self.index.enclosing_scope(test)
            bindings = self.index.lookup(test.value, scope) if scope is not None else []
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None \
                    and bindings[0].index is None:
                reason = self.periodic_test(bindings[0].value)
                if reason:
                    return f"`{test.value}` = {reason}"
        if type(test) is cst.Call and not negated:
            # `if should_log(step):` `if accelerator.sync_gradients` are framework spellings of the same thing.
            name = dotted_name(test.func) or ""
            last = name.rsplit(".", 1)[-1]
            if last.startswith(("should_log", "should_eval", "should_save", "is_log", "is_eval")):
                return f"`{_code(test)}`"
            helper = self.local_function(test)
            if helper is not None and self._returns_periodic_tests(helper):
                # `def divisible_by(n, d): return (n % d) == 0` ... `if divisible_by(step, every):`
                return f"`{_code(test)}`"
            if helper is not None and self._true_only_periodically(helper):
                # `def check_frequency(self, idx): if idx % self.batch_freq == 0 ...: return True; return False`
                return f"`{_code(test)}` (true only on some iterations)"
            if helper is None and self.periodic_predicate is not None and type(test.func) is cst.Name and \
                    self.periodic_predicate(test):
                # `eval_every_step = utils.Every(cfg.eval_every_frames)` ... `if eval_every_step(step):`
                return f"`{_code(test)}` (a predicate object true every N steps)"
        return None

    def _returns_periodic_tests(self, fn: cst.FunctionDef) -> bool:
        """Every `return` of `fn` hands back a divisibility test, directly or through a local name that every
        assignment of `fn` binds to one, possibly narrowed with `and` (`test = state.step % freq == 0; if acc_step
        is not None: test = test and (state.acc_step == acc_step); return test`): true on some steps only."""
        key = ("periodic_returns", id(fn))
        if key in self._trains:
            return self._trains[key]
        returns, values = [], {}
        for n in descendants(fn.body):
            if type(n) is cst.Yield:
                self._trains[key] = False
                return False
            if type(n) in (cst.Return, cst.Assign, cst.AugAssign) and self.index.enclosing_scope(n) is not fn:
                continue  # a nested function's or lambda's own
            if type(n) is cst.Return:
                returns.append(n)
            elif type(n) is cst.Assign:
                for t in n.targets:
                    values.setdefault(t.target.value if type(t.target) is cst.Name else "", []).append(n.value)
            elif type(n) is cst.AugAssign and type(n.target) is cst.Name:
                values.setdefault(n.target.value, []).append(None)

        def periodic(expr, seen: frozenset) -> bool:
            if type(expr) is cst.Comparison:
                return len(expr.comparisons) == 1 and type(expr.comparisons[0].operator) is cst.Equal and \
                    any(_has_modulo(side) for side in (expr.left, expr.comparisons[0].comparator))
            if type(expr) is cst.BooleanOperation:
                if type(expr.operator) is cst.And:
                    return periodic(expr.left, seen) or periodic(expr.right, seen)
                return periodic(expr.left, seen) and periodic(expr.right, seen)
            if type(expr) is cst.Name:
                if expr.value in seen:
                    return True  # `test = test and ...`: what the name held, a test of the same kind
                bound = values.get(expr.value)
                return bool(bound) and all(v is not None and periodic(v, seen | {expr.value}) for v in bound)
            return False

        answer = bool(returns) and all(r.value is not None and periodic(r.value, frozenset()) for r in returns)
        self._trains[key] = answer
        return answer

    def _true_only_periodically(self, fn: cst.FunctionDef) -> bool:
        """`fn` returns only `True` and `False` (literals), and each `return True` is in the body of an `if` of
        `fn` whose test is periodic (`if ((idx % self.batch_freq) == 0 or idx in self.log_steps) and ...:`)."""
        key = ("true_periodically", id(fn))
        if key in self._trains:
            return self._trains[key]
        self._trains[key] = False  # recursion guard
        returns = [n for n in descendants(fn.body) if type(n) is cst.Return and self.index.enclosing_scope(n) is fn]

        def literal(r: cst.Return) -> Optional[bool]:
            if type(r.value) is cst.Name and r.value.value in ("True", "False"):
                return r.value.value == "True"
            return None

        answer = true_only_periodically(returns, literal=literal, periodic_value=lambda r: False,
                                        guarded=lambda r: self._under_periodic_if(r, fn))
        self._trains[key] = answer
        return answer

    def _under_periodic_if(self, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
        child = node
        for parent in self.index.ancestors(node):
            if parent is fn:
                return False
            if type(parent) is cst.If and child is parent.body and self.periodic_test(parent.test):
                return True
            child = parent
        return False

    def _period_one(self, node: cst.CSTNode) -> bool:
        """`step % args.every` where the script's own options give `every` the default 1 (a dataclass field
        `every: int = 1` of the class the options are parsed into, `parser.add_argument("--every", default=1)`):
        true on every step unless the run says otherwise."""
        if not isinstance(node, cst.BinaryOperation):
            return False
        if not isinstance(node.operator, cst.Modulo):
            return self._period_one(node.left) or self._period_one(node.right)
        period = node.right
        if isinstance(period, cst.Integer):
            return period.value == "1"  # `step % 1 == 0`
        if isinstance(period, cst.Name):
            return self._module_constant_one(period)
        if not (isinstance(period, cst.Attribute) and isinstance(period.value, cst.Name)):
            return False
        if period.value.value == "self" and self._init_default_one(period):
            return True
        defaults = self._option_defaults()
        return defaults.get(period.attr.value) == ["1"]

    def _module_constant_one(self, period: cst.Name) -> bool:
        """`log_interval = 1` at the module's top level, its only binding, then `if iter_num % log_interval == 0:`:
        a period of 1 written as a setting of the script, true on every step. A name any function declares
        `global` may be changed at run time: not known."""
        bindings = self.index.visible_bindings(period)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
                not isinstance(bindings[0].scope, cst.Module) or not isinstance(bindings[0].value, cst.Integer) or \
                bindings[0].value.value != "1":
            return False
        return not any(any(n.name.value == period.value for n in g.names) for g in of_types(self.index, cst.Global))

    def _init_default_one(self, period: cst.Attribute) -> bool:
        """`self.gather_metric_period` that the class sets once, in `__init__`, from a parameter whose default is
        1 (`def __init__(self, ..., gather_metric_period=1)`: `self.gather_metric_period = gather_metric_period`):
        every step unless a caller passes another period."""
        cls = self._class_of(period)
        if cls is None or not isinstance(cls.body, cst.IndentedBlock):
            return False
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"),
                    None)
        if init is None:
            return False
        name = period.attr.value
        stores = []
        for node in of_types(self.index, cst.Assign, cst.AugAssign, cst.AnnAssign):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"
                   and t.attr.value == name for t in targets):
                stores.append(node)
        if len(stores) != 1 or not isinstance(stores[0], cst.Assign) or \
                not self.index.is_ancestor_or_self(init, stores[0]) or not isinstance(stores[0].value, cst.Name):
            return False
        param = next((p for p in (*init.params.params, *init.params.kwonly_params)
                      if p.name.value == stores[0].value.value), None)
        return param is not None and isinstance(param.default, cst.Integer) and param.default.value == "1"

    def option_default_is_cuda(self, option: cst.BaseExpression) -> bool:
        """`args.device` where every default the module's own options give `device` is a CUDA device string
        (`parser.add_argument('--device', default='cuda')`): CUDA on the run the script ships."""
        if not (isinstance(option, cst.Attribute) and isinstance(option.value, cst.Name)):
            return False
        defaults = self._option_defaults().get(option.attr.value)
        return bool(defaults) and all(d is not None and d.startswith("str:cuda") for d in defaults)

    def _option_defaults(self) -> dict:
        """Option name -> the defaults the module gives it, as written (`--target-network-frequency` read as
        `target_network_frequency`): annotated fields of dataclasses with a literal default, and `add_argument`
        calls with a literal `default=`."""
        if self._defaults is None:
            found: dict = {}
            for cls in self.index.classes.values():
                if not any((dotted_name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                            or "").endswith("dataclass") for d in cls.decorators):
                    continue  # a plain class's attribute may be set again in `__init__`
                for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
                    for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and \
                                small.value is not None:
                            found.setdefault(small.target.value, []).append(_literal(small.value))
            for node in of_types(self.index, cst.Call):
                func = node.func  # type: ignore[attr-defined]
                if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"):
                    continue
                flags = [a.value.evaluated_value for a in node.args  # type: ignore[attr-defined]
                         if a.keyword is None and isinstance(a.value, cst.SimpleString)]
                dest = next((a.value for a in node.args if a.keyword is not None  # type: ignore[attr-defined]
                             and a.keyword.value == "dest"), None)
                names = [dest.evaluated_value] if isinstance(dest, cst.SimpleString) else \
                    [f.lstrip("-").replace("-", "_") for f in flags if isinstance(f, str) and f.startswith("--")][:1]
                default = next((a.value for a in node.args if a.keyword is not None  # type: ignore[attr-defined]
                                and a.keyword.value == "default"), None)
                for name in names:
                    found.setdefault(name, []).append(_literal(default) if default is not None else None)
            self._defaults = found
        return self._defaults

    def _end_of_run_flag(self, name: cst.Name) -> bool:
        """`done` / `finished` / `is_last_step`: a flag set from a comparison or a literal (`done = cur >= total`,
        `done = True`), true at the end of the run only. Not one unpacked from a call (`obs, reward, done, info =
        env.step(a)`)."""
        if name.value.lower() not in _END_FLAGS:
            return False
        bindings = self.index.visible_bindings(name)
        return bool(bindings) and all(
            b.kind == "assign" and b.index is None and (
                type(b.value) is cst.Comparison or
                type(b.value) is cst.Name and b.value.value in ("True", "False")) for b in bindings)

    def _episode_end(self, name: cst.Name) -> bool:
        """A flag an environment step returns (`obs, reward, done, info = envs.step(action)`: the third or fourth
        of four or five names unpacked from a `.step(...)` call, Gym's `terminated`/`truncated`), or an element
        of one (`for idx, d in enumerate(done):`): true when an episode ends, not on every step."""
        bindings = self.index.visible_bindings(name)
        if not bindings:
            return False
        for b in bindings:
            if b.kind == "for" and isinstance(b.source, cst.For):
                iterable = b.source.iter
                if isinstance(iterable, cst.Call) and dotted_name(iterable.func) == "enumerate" and iterable.args:
                    if b.index != 1:
                        return False
                    iterable = iterable.args[0].value
                elif b.index is not None:
                    return False
                if not (isinstance(iterable, cst.Name) and
                        all(self._unpacked_from_step(c) for c in self.index.visible_bindings(iterable))):
                    return False
            elif not self._unpacked_from_step(b):
                return False
        return True

    @staticmethod
    def _unpacked_from_step(binding) -> bool:
        source = binding.source
        if binding.kind != "assign" or binding.index is None or not isinstance(source, cst.Assign) or \
                len(source.targets) != 1 or not isinstance(source.targets[0].target, (cst.Tuple, cst.List)):
            return False
        size = len(source.targets[0].target.elements)
        value = source.value
        return size in (4, 5) and binding.index in (2, 3) and binding.index < size - 1 and \
            isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "step"

    def _moving_threshold(self, test: cst.Comparison, op, negated: bool) -> bool:
        """`cur_nimg >= tick_start_nimg + kimg_per_tick * 1000` (or `step - last_log >= every`, or the negation of
        `cur < mark + n` in `if ...: continue`), where the loop around the test sets the mark again
        (`tick_start_nimg = cur_nimg`, `next_log += every`): true once each time the counter passes the mark."""
        right = test.comparisons[0].comparator
        if type(op) in (cst.GreaterThan, cst.GreaterThanEqual):
            big, threshold = (right, test.left) if negated else (test.left, right)
        elif type(op) in (cst.LessThan, cst.LessThanEqual):
            big, threshold = (test.left, right) if negated else (right, test.left)
        else:
            return False
        loop = next((a for a in self.index.ancestors(test) if type(a) in (cst.For, cst.While)), None)
        if loop is None:
            return False
        added, subtracted = _terms(threshold, cst.Add), _terms(big, cst.Subtract)
        # a mark plus an interval, or the counter minus a mark: never a bare name (`if step >= limit: continue`)
        marks = (added if len(added) > 1 else []) + subtracted[1:]
        if any(type(m) is cst.Name and self._set_in_loop(m, loop) for m in marks):
            return True
        return type(threshold) is cst.Name and not negated and self._raised_by_its_block(test, threshold.value)

    def _raised_by_its_block(self, test: cst.Comparison, name: str) -> bool:
        """`if step >= warm_up_steps: <rebuild the optimizer>; warm_up_steps = warm_up_steps * 3` (or `+= n`):
        the block the test guards moves the bare threshold on from itself, so it runs once per crossing, not on
        every step after the first (`if step >= limit: continue` moves nothing: every step)."""
        block = self.index.parent.get(test)
        if type(block) is not cst.If or block.test is not test:
            return False
        stack: list[cst.CSTNode] = [block.body]
        while stack:
            node = stack.pop()
            if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            if type(node) is cst.AugAssign and type(node.target) is cst.Name and node.target.value == name and \
                    type(node.operator) in (cst.AddAssign, cst.MultiplyAssign):
                return True
            if type(node) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name
                                                for t in node.targets) and \
                    type(node.value) is cst.BinaryOperation and type(node.value.operator) in (cst.Add, cst.Multiply) \
                    and any(type(n) is cst.Name and n.value == name for n in (node.value.left, node.value.right)):
                return True
            stack.extend(child_nodes(node))
        return False

    def _event_flag(self, expr: cst.BaseExpression, test: cst.BaseExpression) -> bool:
        """`expr` is a bare name (possibly negated) that the loop around `test` assigns, in a tuple too; or an
        `and` with such a name (`epoch_done and opt.save_every_epoch`: true only when the flag is)."""
        if type(expr) is cst.BooleanOperation and type(expr.operator) is cst.And:
            return self._event_flag(expr.left, test) or self._event_flag(expr.right, test)
        while type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Not:
            expr = expr.expression
        if type(expr) is not cst.Name:
            return False
        loop = next((a for a in self.index.ancestors(test) if type(a) in (cst.For, cst.While)), None)
        return loop is not None and any(
            b.kind in ("assign", "augassign") and b.source is not None and self.index.is_ancestor_or_self(loop, b.source)
            for b in self.index.visible_bindings(expr))

    def _set_once(self, expr: cst.BaseExpression, test: cst.BaseExpression) -> bool:
        """`expr` is `name is None` where the loop around `test` assigns `name`, and never `None` (a value
        computed lazily, on the first pass: `threshold_mem = concat.kthvalue(k).values.item()`)."""
        if type(expr) is not cst.Comparison or len(expr.comparisons) != 1 or \
                type(expr.comparisons[0].operator) is not cst.Is or type(expr.left) is not cst.Name or \
                type(expr.comparisons[0].comparator) is not cst.Name or expr.comparisons[0].comparator.value != "None":
            return False
        split = self._bindings_around(expr.left, test)
        return split is not None and bool(split[0]) and all(b.kind == "assign" and _set_to_a_value(b)
                                                            for b in split[0])

    def _set_from_none(self, name: cst.Name) -> bool:
        """`name` is bound to `None` before the loop around it, and only to other values inside it."""
        split = self._bindings_around(name, name)
        if split is None:
            return False
        inside, before = split
        return bool(inside) and bool(before) and all(
            b.kind == "assign" and b.index is None and _is_none(b.value) for b in before) and all(
            b.kind in ("assign", "augassign") and _set_to_a_value(b) for b in inside)

    def _bindings_around(self, name: cst.Name, at: cst.CSTNode) -> Optional[tuple[list, list]]:
        """The bindings of `name` inside the innermost loop around `at`, and the others; None outside a loop."""
        loop = next((a for a in self.index.ancestors(at) if type(a) in (cst.For, cst.While)), None)
        if loop is None:
            return None
        bindings = self.index.visible_bindings(name)
        inside = [b for b in bindings if b.source is not None and self.index.is_ancestor_or_self(loop, b.source)]
        return inside, [b for b in bindings if b not in inside]

    def _set_in_loop(self, name: cst.Name, loop: Loop) -> bool:
        bindings = self.index.visible_bindings(name)
        return any(b.kind in ("assign", "augassign") and b.source is not None and b.index is None and
                   self.index.is_ancestor_or_self(loop, b.source) for b in bindings)

    def _clears_its_flag(self, block: cst.If) -> Optional[Loop]:
        """`if first: first = False; <once>` (or `if not done: done = True; ...`) in a loop that sets the flag
        nowhere else: the block runs on the loop's first pass only (a prefill step, a first-batch setup). The
        loop, else None."""
        test, on = block.test, "True"
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, on = test.expression, "False"
        if not isinstance(test, (cst.Name, cst.Attribute)) or not isinstance(block.body, cst.IndentedBlock):
            return None
        flag, off = _code(test), "False" if on == "True" else "True"
        clears = [small for stmt in block.body.body if isinstance(stmt, cst.SimpleStatementLine)
                  for small in stmt.body if isinstance(small, cst.Assign) and len(small.targets) == 1
                  and _code(small.targets[0].target) == flag and isinstance(small.value, cst.Name)
                  and small.value.value == off]
        loop = next((a for a in self.index.ancestors(block) if isinstance(a, (cst.For, cst.While, cst.FunctionDef,
                                                                              cst.ClassDef))), None)
        if not clears or not isinstance(loop, (cst.For, cst.While)):
            return None
        for node in self._body(loop, into_loops=True):
            targets = node.targets if isinstance(node, cst.Assign) else \
                [node] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else []
            if any(_code(t.target) == flag for t in targets) and all(node is not c for c in clears):
                return None  # set again inside the loop: the block may run more than once
        return loop

    def without_cuda(self, branch: cst.If, child: cst.CSTNode) -> bool:
        """`child` is the branch of `branch` taken only when CUDA is unavailable: the `else`/`elif` of
        `if torch.cuda.is_available():`, or the body of `if not torch.cuda.is_available():`."""
        test = branch.test
        negated = type(test) is cst.UnaryOperation and type(test.operator) is cst.Not
        if negated:
            test = test.expression  # type: ignore[attr-defined]
        if type(test) is cst.Name:
            # `x_is_mps = x.device.type == "mps"` ... `if x_is_mps:`: the one binding of the name decides
            scope = self.index.enclosing_scope(test)
            bindings = self.index.lookup(test.value, scope) if scope is not None else []
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].index is None and \
                    type(bindings[0].value) is cst.Comparison:
                test = bindings[0].value
        if type(test) is cst.Comparison:
            on_cuda = _device_test(test)  # `if self.device == "cuda": ... else: <the CPU path>`
            if on_cuda is None:
                return False
            return child is (branch.body if on_cuda == negated else branch.orelse)
        if not (type(test) is cst.Call and not test.args and
                self.kinds.qualified(test.func) == "torch.cuda.is_available"):
            return False
        return child is branch.body if negated else child is branch.orelse

    def _mps_call(self, node: cst.CSTNode) -> bool:
        return type(node) is cst.Call and (self.kinds.qualified(node.func) or "").startswith("torch.mps.")

    def _mps_branch(self, branch: cst.If) -> bool:
        """`if device == "mps":` (or a name bound once to such a test): a branch for Apple GPUs."""
        test = branch.test
        if type(test) is cst.Name:
            scope = self.index.enclosing_scope(test)
            bindings = self.index.lookup(test.value, scope) if scope is not None else []
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
                test = bindings[0].value
        return type(test) is cst.Comparison and any(
            (type(side) is cst.SimpleString and side.evaluated_value == "mps") or
            (type(side) is cst.Attribute and side.attr.value == "MPS")
            for side in (test.left, *(c.comparator for c in test.comparisons)))

    def _export_only(self, test: cst.BaseExpression) -> bool:
        return type(test) is cst.Call and not test.args and self.kinds.qualified(test.func) in _EXPORT_TESTS

    def _ends_the_run(self, block: cst.IndentedBlock) -> bool:
        """The block's last statement raises or exits the program (`raise ...`, `sys.exit(1)`, `exit()`)."""
        last = block.body[-1] if block.body else None
        if type(last) is not cst.SimpleStatementLine or not last.body:
            return False
        stmt = last.body[-1]
        if type(stmt) is cst.Raise:
            return True
        call = stmt.value if type(stmt) is cst.Expr else None
        return type(call) is cst.Call and self.kinds.qualified(call.func) in _EXITS

    def _after_skip_guard(self, block: cst.IndentedBlock, child: cst.CSTNode) -> Optional[str]:
        """`if step % N != 0: continue` (or `return`, in a helper) earlier in the block makes the rest of the
        block periodic (unless the rest steps the optimizer: then it is gradient accumulation's step, hot)."""
        for i, stmt in enumerate(block.body):
            if stmt is child:
                return None
            if type(stmt) is cst.If:
                reason = self._skip_guard(stmt)
                if reason and not any(self._steps_an_optimizer(rest) for rest in block.body[i + 1:]):
                    return reason
        return None

    def _skip_guard(self, stmt: cst.If, depth: int = 0) -> Optional[str]:
        """A reason when the code after `stmt` runs only on some iterations: every way through `stmt` that does
        not leave (`continue`, `return`) passes a periodic test (`if step % N != 0: return`; `if step == 0: <if
        not at_first: return> else: <if step % every != 0: return>`, a sampling helper's guards), else None."""
        if depth > 4:
            return None
        found = None
        if not _leaves_by_skip(stmt.body):  # through the body
            found = self.periodic_test(stmt.test) or self._block_guard(stmt.body, depth)
            if found is None:
                return None
        orelse = stmt.orelse  # through the `else` side
        if orelse is None:
            reason = self.periodic_test(stmt.test, negated=True)
        elif _never_falls(orelse):
            reason = found  # nothing passes this way
        elif type(orelse) is cst.If:  # `elif`
            reason = self.periodic_test(stmt.test, negated=True) or self._skip_guard(orelse, depth + 1)
        else:
            reason = self.periodic_test(stmt.test, negated=True) or self._block_guard(orelse.body, depth)
        if reason is None:
            return None
        return found or reason

    def _block_guard(self, block: cst.BaseSuite, depth: int) -> Optional[str]:
        """A statement of `block` after which the rest of it runs only periodically (see `_skip_guard`)."""
        if type(block) is not cst.IndentedBlock:
            return None
        for stmt in block.body:
            if type(stmt) is cst.If:
                reason = self._skip_guard(stmt, depth + 1)
                if reason:
                    return reason
        return None

    def accumulation_guard(self, node: cst.CSTNode) -> Optional[str]:
        """The periodic test of an `if` around `node`, inside its innermost loop, whose block steps the optimizer
        (`if (step + 1) % accum == 0: optimizer.step()`): such a block is hot (it runs on every optimizer step),
        and rules whose cost is small next to N micro-steps read the guard here."""
        child: cst.CSTNode = node
        for parent in self.index.ancestors(node):
            if type(parent) in (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return None
            if type(parent) is cst.If and child is parent.body and self._steps_an_optimizer(parent.body):
                reason = self.periodic_test(parent.test)
                if reason:
                    return reason
            child = parent
        return None

    def _steps_an_optimizer(self, node: cst.CSTNode) -> bool:
        """`optimizer.step()`, `scaler.step(optimizer)` or `optimizer.zero_grad()` in `node` (nested functions
        left out): a block under `if (step + 1) % accum == 0:` runs on every optimizer step. Also through the
        class's own methods it calls, two calls deep (`self.update_critic(...)` stepping `self.critic_opt`): a
        method returning early unless `step % update_every == 0` whose rest runs the updates is the training step
        itself (an RL agent's `update()`), so what it costs is paid on every optimizer step, not periodically."""
        stack: list[tuple[cst.CSTNode, int]] = [(node, 0)]
        seen: set[int] = set()
        while stack:
            n, depth = stack.pop()
            if type(n) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            stack.extend((c, depth) for c in child_nodes(n))
            if type(n) is not cst.Call:
                continue
            if type(n.func) is cst.Attribute and n.func.attr.value in ("step", "zero_grad") and \
                    any(self.kinds.of(o) is Kind.OPTIMIZER for o in (n.func.value, *(a.value for a in n.args))):
                return True
            if depth < 2 and type(n.func) is cst.Attribute and type(n.func.value) is cst.Name and \
                    n.func.value.value == "self":
                method = self.local_function(n)
                if method is not None and id(method) not in seen:
                    seen.add(id(method))
                    stack.append((method.body, depth + 1))
        return False

    def _bounded(self, left: cst.BaseExpression, op, right: cst.BaseExpression, negated: bool) -> bool:
        """`batch_i < 3`, `printed <= 5`: true for a fixed, literal number of iterations only."""
        below = (cst.LessThan, cst.LessThanEqual)
        above = (cst.GreaterThan, cst.GreaterThanEqual)
        if type(right) is cst.Integer and self._is_counter(left):
            return isinstance(op, above if negated else below)
        if type(left) is cst.Integer and self._is_counter(right):
            return isinstance(op, below if negated else above)
        if self._length_of_another_list(left, right):
            return isinstance(op, above if negated else below)
        if self._length_of_another_list(right, left):
            return isinstance(op, below if negated else above)
        return False

    def _length_of_another_list(self, counter: cst.BaseExpression, length: cst.BaseExpression) -> bool:
        """`i < len(output_writers)` in `for i, (x, y) in enumerate(val_loader):`: the enumerated loop's index below
        the length of a plain name the loop does not iterate (one image writer per logged batch), true for the first
        few batches only. Not a loader, a dataset or a tensor (`len(batch)`), not the loop's own iterable."""
        if not (type(counter) is cst.Name and type(length) is cst.Call and type(length.func) is cst.Name and
                length.func.value == "len" and len(length.args) == 1 and type(length.args[0].value) is cst.Name) \
                or self.index.visible_bindings(length.func):
            return False
        listed = length.args[0].value
        scope = self.index.enclosing_scope(counter)
        loops = [b.source for b in (self.index.lookup(counter.value, scope) if scope is not None else [])
                 if b.kind == "for" and self.kinds.iteration_kind(b.value, b.index) is Kind.NUMBER]
        if len(loops) != 1 or type(loops[0]) is not cst.For or \
                not self.index.is_ancestor_or_self(loops[0], counter):
            return False
        numbered = loops[0].iter
        if not (type(numbered) is cst.Call and dotted_name(numbered.func) == "enumerate" and numbered.args and
                not (type(numbered.args[0].value) is cst.Call and dotted_name(numbered.args[0].value.func) in
                     ("range", "zip"))):
            return False  # `for j in range(4): if j < len(writers):` bounds an inner loop, not the batches
        iterated = {n.value for n in descendants(loops[0].iter) if type(n) is cst.Name}
        if listed.value in iterated or self.kinds.of(listed) in (Kind.LOADER, Kind.TENSOR, Kind.NUMPY):
            return False
        return not any(word in listed.value.lower() for word in ("data", "loader", "batch", "sample", "set"))

    def _end_of_pass(self, left: cst.BaseExpression, op, right: cst.BaseExpression) -> bool:
        """`i_batch >= len(train_loader) - 1` (or `i + 1 >= len(loader)`, mirrored `len(loader) - 1 <= i`): a loop
        index reaching the length of what it counts, true on the last iteration of each pass only (an end-of-epoch
        checkpoint or evaluation)."""
        if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
            left, right = right, left
        elif not isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
            return False
        length = right
        if type(length) is cst.BinaryOperation and type(length.operator) is cst.Subtract and \
                type(length.right) is cst.Integer:
            length = length.left
        if type(left) is cst.BinaryOperation and type(left.operator) is cst.Add and type(left.right) is cst.Integer:
            left = left.left
        return type(length) is cst.Call and dotted_name(length.func) == "len" and type(left) is cst.Name and \
            self._is_counter(left)

    def _is_counter(self, node: cst.BaseExpression) -> bool:
        """An iteration counter: a loop index, or a name bumped by `+= 1`, or one named like one, or the length
        of a list the loop only appends to (`len(shown) < 15`, `shown.append(...)`)."""
        if type(node) is cst.Call:
            return _growing_length(self.index, node)
        if type(node) is cst.BinaryOperation:
            return self._is_counter(node.left) or self._is_counter(node.right)
        if type(node) is cst.Attribute:
            return node.attr.value.lower().endswith(_COUNTER_HINTS)
        if type(node) is not cst.Name:
            return False
        scope = self.index.enclosing_scope(node)
        for b in self.index.lookup(node.value, scope) if scope is not None else []:
            if b.kind == "for" and self.kinds.iteration_kind(b.value, b.index) is Kind.NUMBER:
                return True
            if b.kind == "augassign" and type(b.value) is cst.Integer:
                return True
        name = node.value.lower()
        return name in _COUNTER_HINTS or name in ("steps", "global_steps") or name in _BATCH_INDEXES or \
            name.endswith(("_step", "_iter", "_idx", "step", "_epoch"))

    def _reads_clock(self, node: cst.CSTNode) -> bool:
        if type(node) is cst.Call:
            q = self.kinds.qualified(node.func) if type(node.func) in (cst.Name, cst.Attribute) else None
            if q in _TIMERS:
                return True
        if type(node) is cst.BinaryOperation:
            return self._reads_clock(node.left) or self._reads_clock(node.right)
        if type(node) is cst.Name:
            # `now = time.time()` ... `if now - last_log > every:`: time-throttled logging
            scope = self.index.enclosing_scope(node)
            bindings = self.index.lookup(node.value, scope) if scope is not None else []
            values = [b.value for b in bindings if b.kind == "assign" and b.index is None]
            return bool(values) and len(values) == len(bindings) and all(
                type(v) is cst.Call and self._reads_clock(v) for v in values)
        return False


def _is_none(value: Optional[cst.CSTNode]) -> bool:
    return type(value) is cst.Name and value.value == "None"


def _set_to_a_value(b) -> bool:
    """A plain binding (no unpacking) to something other than `None`."""
    return b.index is None and b.value is not None and not _is_none(b.value)


def _growing_length(index, call: cst.Call) -> bool:
    """`len(items)` of a list that is appended to and never shrunk, and not bound again in the innermost loop
    around the call (a list reset each epoch still bounds the test within the epoch): `if len(items) < 15:`
    holds for a fixed number of appends."""
    if not (type(call.func) is cst.Name and call.func.value == "len" and len(call.args) == 1 and
            type(call.args[0].value) is cst.Name) or index.visible_bindings(call.func):
        return False
    name = call.args[0].value
    bindings = index.visible_bindings(name)
    if not bindings or not all(b.kind == "assign" and type(b.value) is cst.List and not b.value.elements
                               for b in bindings):
        return False
    loop = next((a for a in index.ancestors(call) if type(a) in (cst.For, cst.While)), None)
    if loop is None or any(index.is_ancestor_or_self(loop, b.source) for b in bindings if b.source is not None):
        return False
    grows = False
    for use in index.names(name.value):
        if use is name or not index.is_ancestor_or_self(loop, use):
            continue
        parent = index.parent.get(use)
        method = parent.attr.value if type(parent) is cst.Attribute and parent.value is use else None
        if method in ("append", "extend", "insert"):
            grows = True
        elif method in ("pop", "clear", "remove") or type(parent) in (cst.AugAssign, cst.Del) or \
                type(parent) is cst.SubscriptElement:
            return False
    return grows


_DATA_SIDE = re.compile(r"collat", re.IGNORECASE)
_DATA_SIDE_CLASS = re.compile(r"(collat\w*|dataset)$", re.IGNORECASE)


def _data_side(function: cst.FunctionDef, index) -> bool:
    """A collate function (`collate_data_and_cast`, `_collate`), or a method of a collator or a dataset class
    (`class MultiModalCollator(Collator)`, `class LINKXDataset(InMemoryDataset)`, by its name or a base's): it
    runs on the host, in loader workers or while the data is prepared, over CPU tensors; its loops are not
    per-step GPU work."""
    if _DATA_SIDE.search(function.name.value):
        return True
    for parent in index.ancestors(function):
        if type(parent) is cst.ClassDef:
            names = [parent.name.value] + [_code(b.value) for b in parent.bases]
            return any(_DATA_SIDE_CLASS.search(n.split(".")[-1]) for n in names)
        if type(parent) is cst.FunctionDef:
            continue
    return False


_SETUP_METHODS = {"__init__", "__getitem__", "__len__", "__iter__", "__next__", "reset_parameters",
                  "_init_weights", "init_weights"}
_MANY = 8  # fewer literal iterations than this is a handful of items, not a hot loop


def _one_loop(fn: cst.FunctionDef) -> bool:
    """`fn`'s body is one loop (after a docstring): no setup code before it, which would run once per generator,
    not once per `next`."""
    body = list(fn.body.body) if type(fn.body) is cst.IndentedBlock else []
    if body and type(body[0]) is cst.SimpleStatementLine and len(body[0].body) == 1 and \
            type(body[0].body[0]) is cst.Expr and isinstance(body[0].body[0].value, cst.SimpleString):
        body = body[1:]
    return len(body) == 1 and type(body[0]) in (cst.For, cst.While)


def _is_generator(fn: cst.FunctionDef) -> bool:
    """`fn` yields in its own body (not in a nested function, class or lambda)."""
    stack: list[cst.CSTNode] = [fn.body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.Yield,):
            return True
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        stack.extend(child_nodes(node))
    return False


def _fills_a_cache(block: cst.If) -> Optional[str]:
    """`if key not in self._graphs: ...; self._graphs[key] = build(...)`: the body runs once per key (a cache
    being filled, a CUDA graph captured), not every time the surrounding code runs."""
    test = block.test
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.NotIn)):
        return None
    key, cache = _code(test.left), _code(test.comparisons[0].comparator)
    for stmt in block.body.body if type(block.body) is cst.IndentedBlock else ():
        for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
            if type(small) is cst.Assign and any(
                    type(t.target) is cst.Subscript and _code(t.target.value) == cache
                    and len(t.target.slice) == 1 and isinstance(t.target.slice[0].slice, cst.Index)
                    and _code(t.target.slice[0].slice.value) == key for t in small.targets):
                return "once per key, while a cache is filled"
    return None


def _copied_to_host(expr: cst.BaseExpression) -> bool:
    """`expr` is, or is computed from, a `.cpu()` copy along its chain of calls and subscripts."""
    while type(expr) in (cst.Call, cst.Attribute, cst.Subscript):
        if type(expr) is cst.Call:
            if type(expr.func) is cst.Attribute and expr.func.attr.value == "cpu":
                return True
            expr = expr.func
        else:
            expr = expr.value
    return False


def _over_items(loop: Loop, fn: cst.FunctionDef) -> bool:
    """The loop walks data it is given, not a schedule of steps: a parameter of `fn` (or a wrapper of one:
    `enumerate(sequence)`), `next(...)` in a `while` loop, or a name or attribute that reads as data
    (`runs_model._DATA_WORDS`). A call of `fn` is then a pass over that data (an evaluation), not one sample."""
    if type(loop) is cst.While:
        return any(type(n) is cst.Call and dotted_name(n.func) == "next" for n in _walk_body(loop, into_loops=True))
    iterable = loop.iter
    while type(iterable) is cst.Call and (dotted_name(iterable.func) in _ITERATION_WRAPPERS or
                                          is_progress_wrapper(dotted_name(iterable.func))) and iterable.args:
        iterable = iterable.args[0].value
    root = iterable
    while type(root) in (cst.Attribute, cst.Subscript):
        root = root.value
    params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
    if type(root) is cst.Name and root.value in params - {"self"}:
        return True
    return any(type(n) is cst.Name and any(word in n.value.lower() for word in _DATA_WORDS)
               for n in _names_under(loop.iter))


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "zip", "reversed",
                                 "islice", "itertools.islice"})


def _over_a_display(loop: Loop) -> bool:
    return type(loop) is cst.For and type(loop.iter) in (cst.List, cst.Tuple, cst.Set)


_PER_ITEM_STEPS = frozenset({"zero_grad", "step"})


def _clears_each_item(loop: Loop) -> bool:
    """A `for` loop whose body only calls `zero_grad(...)` or `step(...)` on its own target (`for opt in
    optimizers: opt.zero_grad()`, `for name in opts: opts[name].step()` is not matched): it fans one call out over
    a collection of optimizers or schedulers, so it is neither a training loop nor the marker of one (a helper
    holding it is not a "function with a hot loop" that makes its caller's loop an epoch loop, branch recall77)."""
    if type(loop) is not cst.For or type(loop.target) is not cst.Name or loop.orelse is not None:
        return False
    name = loop.target.value
    body = loop.body.body if type(loop.body) is cst.IndentedBlock else [loop.body]
    if not body:
        return False
    for line in body:
        statements = line.body if type(line) in (cst.SimpleStatementLine, cst.SimpleStatementSuite) else None
        if not statements:
            return False
        for stmt in statements:
            call = stmt.value if type(stmt) is cst.Expr else None
            if type(call) is not cst.Call or type(call.func) is not cst.Attribute or \
                    call.func.attr.value not in _PER_ITEM_STEPS or type(call.func.value) is not cst.Name or \
                    call.func.value.value != name:
                return False
    return True


def _draws_from_each_item(loop: Loop, walk=None) -> bool:
    """A `for` loop that draws `next(x)` from the very iterator its target binds (`for name, it in
    iterators.items(): batch = next(it)`), steps no optimizer and runs no backward pass in its body: one batch from
    each of the collection's iterators, an evaluation over several loaders rather than a pass over batches."""
    if type(loop) is not cst.For:
        return False
    bound = set(_target_names(loop.target))
    draws = False
    for node in (walk or _walk_body)(loop, into_loops=True):
        if type(node) is not cst.Call:
            continue
        if type(node.func) is cst.Attribute and node.func.attr.value in ("backward", "step"):
            return False
        if dotted_name(node.func) == "next" and node.args and type(node.args[0].value) is cst.Name \
                and node.args[0].value.value in bound:
            draws = True
    return draws


def _one_pass(loop: Loop, walk=None) -> bool:
    """The loop's body ends with an unconditional `return` or `break` (and holds no `continue` that could skip
    it): it runs once at most, a throughput probe or a first-batch check, not a loop over batches."""
    body = loop.body.body if type(loop.body) is cst.IndentedBlock else []
    if body and type(body[-1]) is cst.Try and _retry_until_success(body[-1]):
        return True
    if not body or not isinstance(body[-1], cst.SimpleStatementLine) or \
            not any(type(s) in (cst.Return, cst.Break) for s in body[-1].body):
        return False
    return not any(type(n) is cst.Continue for n in (walk or _walk_body)(loop, into_loops=False))


def _ends_by_leaving(block: cst.BaseSuite) -> bool:
    """The block's last statement is a line holding `break` or `return`."""
    body = block.body if type(block) is cst.IndentedBlock else []
    return bool(body) and isinstance(body[-1], cst.SimpleStatementLine) and \
        any(type(s) in (cst.Return, cst.Break) for s in body[-1].body)


def _retry_until_success(attempt: cst.Try) -> bool:
    """`try: <work> except RuntimeError: batch_size //= 2 else: break` (or `<work>; break` ending the `try`
    body), the last statement of a loop's body: a success leaves the loop, only a failure runs it again (an
    out-of-memory retry with a smaller batch). The loop's body runs once per success, as the code around it
    decides, not once per batch. No `continue` in the attempt itself (it would run it again on success)."""
    if not attempt.handlers or attempt.finalbody is not None:
        return False
    if not (_ends_by_leaving(attempt.body) or attempt.orelse is not None and _ends_by_leaving(attempt.orelse.body)):
        return False
    return not any(type(n) is cst.Continue for n in descendants(attempt.body)) and not (
        attempt.orelse is not None and any(type(n) is cst.Continue for n in descendants(attempt.orelse.body)))


def true_only_periodically(returns: list, *, literal: Callable, periodic_value: Callable,
                           guarded: Callable) -> bool:
    """The one reader of "a predicate true only every N steps", over either tree (LibCST here, `ast` for a
    project class's `__call__`: analysis/__init__.py `_true_every_n`): `returns` are the function's own returns;
    each must return a periodic test itself (`periodic_value`: `return step % n == 0`) or a `True`/`False`
    literal (`literal` gives its value, None for anything else), every `return True` under a periodic guard
    (`guarded`: the body of an `if` whose test is periodic), and one of them must be able to answer true."""
    trues = 0
    for r in returns:
        if periodic_value(r):
            trues += 1
            continue
        value = literal(r)
        if value is None:
            return False
        if value:
            if not guarded(r):
                return False
            trues += 1
    return trues > 0


def _fixed_value_of_tested(side: cst.BaseExpression, periodic: cst.BaseExpression) -> bool:
    """`side` is `x == <integer>` (or `<integer> == x`) for a plain name or attribute `x` that the periodic
    test `periodic` also reads (`g_it == 0` beside `(g_it + 1) % 500 == 0`): it adds one value of the number."""
    if type(side) is not cst.Comparison or len(side.comparisons) != 1 or \
            type(side.comparisons[0].operator) is not cst.Equal:
        return False
    left, right = side.left, side.comparisons[0].comparator
    number = right if type(left) in (cst.Name, cst.Attribute) else left
    name = left if number is right else right
    if type(number) is not cst.Integer or type(name) not in (cst.Name, cst.Attribute):
        return False
    key = _code(name)
    return any(type(n) is type(name) and _code(n) == key for n in descendants(periodic))


def _built_iterable(iterable: cst.BaseExpression) -> bool:
    """`IndexLoader(n, batch_size, ...)`, `range(n)`, `loader.split(...)`: a call that builds what a
    comprehension iterates (not `zip`/`enumerate` of names, not a literal list of a few items)."""
    if type(iterable) is not cst.Call:
        return False
    name = dotted_name(iterable.func) or ""
    if name in ("zip", "enumerate", "reversed", "sorted", "list", "tuple"):
        return any(_built_iterable(a.value) for a in iterable.args)
    return True


def _names_a_loss(func: cst.BaseExpression) -> bool:
    """`self.val_loss(...)`, `criterion(...)`: the called module is named a loss or a criterion."""
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
    return "loss" in name.lower() or "criterion" in name.lower()


# Methods of a model that run its network (a forward pass by another name): an autoencoder's `encode`/`decode`
# (diffusers' `AutoencoderKL`). A language model's `generate` is left out: a loop of a few `model.generate(...)`
# calls printing each sample is a handful of samples, each a generation loop of its own (nanoGPT's sample.py).
_NETWORK_METHODS = frozenset(("forward", "encode", "decode"))


def _few_range_iterations(loop: Loop) -> bool:
    """`for _ in range(2 if jit else 1): model(im)` (a warm-up), `range(3)`: fewer than `_MANY` iterations
    written out in the source, a handful of runs rather than one per batch."""
    if type(loop) is not cst.For or type(loop.iter) is not cst.Call or \
            dotted_name(loop.iter.func) != "range" or len(loop.iter.args) != 1:
        return False
    value = loop.iter.args[0].value
    choices = [value.body, value.orelse] if type(value) is cst.IfExp else [value]
    return all(type(c) is cst.Integer and c.evaluated_value < _MANY for c in choices) and \
        loop.iter.args[0].keyword is None and not loop.iter.args[0].star


def _many_range_iterations(iterable: cst.BaseExpression) -> bool:
    """`range(n)` with `n` not a literal, or a literal range of at least `_MANY` items."""
    if type(iterable) is not cst.Call or dotted_name(iterable.func) != "range" or not iterable.args:
        return False
    values = []
    for arg in iterable.args:
        if arg.keyword is not None or arg.star:
            return False
        value = arg.value
        negative = type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus
        literal = value.expression if negative else value
        if type(literal) is not cst.Integer:
            return not _structure_count(literal)
        values.append(-literal.evaluated_value if negative else literal.evaluated_value)
    return len(range(*values)) >= _MANY


def _structure_count(node: cst.BaseExpression) -> bool:
    """`num_attn_heads`, `self.num_layers`, `config.depth`: a count of a model's parts (heads, layers, blocks,
    stages), a handful to a hundred, not one iteration per batch or sample."""
    name = node.value if type(node) is cst.Name else node.attr.value if type(node) is cst.Attribute else ""
    return _STRUCTURE_COUNT.match(name) is not None


_STRUCTURE_COUNT = re.compile(r"^(num_|n_)?(attn_|attention_|hidden_|encoder_|decoder_)?"
                              r"(heads?|layers?|blocks?|stages?)$|^depths?$")


def _literal(node: cst.BaseExpression) -> Optional[str]:
    """An int literal's digits (`1`), a string literal's text marked `str:` (`str:cuda`), else None."""
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return f"str:{node.evaluated_value}"
    return node.value if isinstance(node, cst.Integer) else None


def _has_modulo(node: cst.CSTNode) -> bool:
    if type(node) is cst.BinaryOperation:
        return type(node.operator) is cst.Modulo or _has_modulo(node.left) or _has_modulo(node.right)
    return False


def _leaves_by_skip(body: cst.BaseSuite) -> bool:
    """The block ends by `continue` or `return` (never falls through to the statement after its `if`)."""
    if type(body) is cst.SimpleStatementSuite:
        last = body.body[-1] if body.body else None
    elif type(body) is cst.IndentedBlock and body.body and type(body.body[-1]) is cst.SimpleStatementLine:
        line = body.body[-1]
        last = line.body[-1] if line.body else None  # type: ignore[union-attr]
    else:
        return False
    return type(last) in (cst.Continue, cst.Return)


def _device_test(test: cst.Comparison) -> Optional[bool]:
    """`device == "cuda"` / `self.device.type != "cpu"` (a name or attribute spelt `device` or `...device.type`
    compared with a device string): True when the test holds on CUDA runs only, False when it holds off CUDA only,
    None for any other test."""
    if len(test.comparisons) != 1:
        return None
    op = test.comparisons[0].operator
    if type(op) not in (cst.Equal, cst.NotEqual):
        return None
    sides = (test.left, test.comparisons[0].comparator)
    literal = next((s for s in sides if type(s) is cst.SimpleString or _device_member(s)), None)
    other = next((s for s in sides if s is not literal), None)
    if literal is None or other is None or type(other) not in (cst.Name, cst.Attribute):
        return None
    spelt = _code(other).lower()
    if not (spelt.endswith("device") or spelt.endswith("device.type") or spelt == "device_type" or
            spelt.endswith(".device_type")):
        return None
    if type(literal) is cst.SimpleString:
        value = literal.evaluated_value if isinstance(literal.evaluated_value, str) else ""
    else:
        value = literal.attr.value.lower()  # type: ignore[attr-defined]
    if value.split(":")[0] == "cuda":
        cuda_when_true = True
    elif value in ("cpu", "mps"):
        cuda_when_true = False  # an Apple-GPU (MPS) branch runs only off CUDA, as a CPU branch does
    else:
        return None
    return cuda_when_true if type(op) is cst.Equal else not cuda_when_true


def _device_member(node: cst.CSTNode) -> bool:
    """`TorchDevice.CUDA`, `DeviceType.CPU`: a member of a device enumeration (a class attribute spelt as a device
    type in capitals), compared with a device like a device string."""
    return type(node) is cst.Attribute and type(node.value) in (cst.Name, cst.Attribute) and \
        node.attr.value in ("CUDA", "CPU", "MPS")


def _never_falls(branch: Union[cst.If, cst.Else]) -> bool:
    """No way through the `else`/`elif` branch reaches the statement after it: every block ends by leaving."""
    if type(branch) is cst.Else:
        return _leaves_by_skip(branch.body)
    return _leaves_by_skip(branch.body) and branch.orelse is not None and _never_falls(branch.orelse)


def _leaves_by(block: cst.IndentedBlock) -> Optional[str]:
    """"return" or "break" when the block's last statement is one, else None."""
    last = block.body[-1] if block.body else None
    if type(last) is not cst.SimpleStatementLine or not last.body:
        return None
    stmt = last.body[-1]
    return "return" if type(stmt) is cst.Return else "break" if type(stmt) is cst.Break else None


def _runs_each_iteration(loop: Loop, child: cst.CSTNode) -> bool:
    """The loop's body and a while-loop's test run per iteration; a for-loop's iterable and else-block do not."""
    if child is loop.body:
        return True
    return type(loop) is cst.While and child is loop.test


# Methods of a module that set it up or read its state, never a forward pass.
_MODULE_BOOKKEEPING = frozenset({
    "to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16", "parameters", "named_parameters",
    "buffers", "named_buffers", "modules", "named_modules", "children", "named_children", "state_dict",
    "load_state_dict", "zero_grad", "requires_grad_", "apply", "register_buffer", "register_forward_hook",
    "register_full_backward_hook", "register_forward_pre_hook", "add_module", "get_submodule", "share_memory"})


def _environment_step(assign: cst.Assign) -> bool:
    """`obs, reward, done, info = envs.step(action)` (or Gym's five names, `terminated` and `truncated`): a
    `.step(...)` with arguments whose result is unpacked into four or five targets. A scheduler's or an
    optimizer's `step` returns one value (`x = scheduler.step(eps, t, x).prev_sample`)."""
    value = assign.value
    return len(assign.targets) == 1 and isinstance(assign.targets[0].target, (cst.Tuple, cst.List)) and \
        len(assign.targets[0].target.elements) in (4, 5) and isinstance(value, cst.Call) and \
        isinstance(value.func, cst.Attribute) and value.func.attr.value == "step" and bool(value.args)


def _episode_loop(loop: Loop, walk=None) -> bool:
    """An environment's episode or rollout loop (branch recall61): a `while` loop (`while not done:`, `while
    True:`) or a `for` loop (`for t in trange(1, n_steps + 1):`) whose own body steps an environment (`obs, reward, done, info =
    env.step(action)`, `_environment_step`) with an action a method of another object computed in the same body
    from the observation the environment returned (`action = agent.select_action(state)` after `state =
    next_state`, `algo.predict(np.expand_dims(observation, 0))[0]`): a policy call per environment step, in an
    evaluation's episodes as in training. Not a step of many arguments (a beam search's `search.step(step,
    lprobs, scores, ...)` unpacked into five names), not a random policy (`env.action_space.sample()`, a method of the
    environment itself), nor an action no call of the body computes from the observation (a fixed schedule), nor
    a loop of a handful of iterations written out (`range(3)`)."""
    if _few_range_iterations(loop):
        return False
    steps: list = []
    assigns: list = []
    for node in (walk or _walk_body)(loop, into_loops=False):
        if type(node) is cst.Assign:
            if _environment_step(node):
                steps.append(node)
            else:
                assigns.append(node)
    if not steps:
        return False
    # the observation: what the environment's step returns, and the names bound from it in the body
    observed = {name for step in steps for name in _target_names(step.targets[0].target)}
    changed = True
    while changed:
        changed = False
        for node in assigns:
            if any(type(n) is cst.Name and n.value in observed for n in _names_under(node.value)):
                for target in node.targets:
                    new = set(_target_names(target.target)) - observed
                    if new:
                        observed |= new
                        changed = True
    environments = {dotted_name(step.value.func.value) for step in steps}
    for step in steps:
        if len(step.value.args) != 1 or step.value.args[0].keyword is not None or step.value.args[0].star:
            continue  # an environment takes one action (Gym's `step(action)`); a beam search's step takes scores
        actions = {n.value for a in step.value.args for n in _names_under(a.value) if type(n) is cst.Name}
        for node in assigns:
            if not actions.intersection(n for t in node.targets for n in _target_names(t.target)):
                continue
            for call in descendants(node.value):
                if type(call) is not cst.Call or type(call.func) is not cst.Attribute or \
                        call.func.attr.value.startswith("_"):
                    continue
                receiver = dotted_name(call.func.value)
                if receiver is None or receiver in environments or \
                        any(receiver.startswith(f"{e}.") for e in environments if e):
                    continue
                if any(type(n) is cst.Name and n.value in observed for a in call.args for n in _names_under(a.value)):
                    return True
    return False


def _names_under(expr: cst.CSTNode):
    """The `Name` nodes of an expression (lambdas included: they are read where they are written)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            yield node
        stack.extend(child_nodes(node))


def _under_branch(index: SyntaxIndex, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """`node` sits in an `if`, a conditional expression or a loop of `fn` (not in every call of it)."""
    for ancestor in index.ancestors(node):
        if ancestor is fn:
            return False
        if type(ancestor) in (cst.If, cst.IfExp, cst.For, cst.While, cst.Try):
            return True
    return False


def _stops_at_count(stmt: cst.CSTNode, counter: str) -> bool:
    """`if i == n - 1: break` / `if i >= n: break` / `if i + 1 == n: break` on the loop's own counter `i`."""
    if type(stmt) is not cst.If or stmt.orelse is not None or type(stmt.body) is not cst.IndentedBlock or \
            len(stmt.body.body) != 1 or type(stmt.body.body[0]) is not cst.SimpleStatementLine or \
            [type(s) for s in stmt.body.body[0].body] != [cst.Break]:
        return False
    test = stmt.test
    if type(test) is not cst.Comparison or len(test.comparisons) != 1 or \
            type(test.comparisons[0].operator) not in (cst.Equal, cst.GreaterThanEqual, cst.GreaterThan):
        return False
    left = test.left
    if type(left) is cst.BinaryOperation and type(left.operator) is cst.Add:
        left = left.left
    return type(left) is cst.Name and left.value == counter


def _runs_training(node: cst.CSTNode, into_loops: bool) -> bool:
    """A backward pass or an optimizer step (`.backward(`, `.step(`) in the loop's body."""
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in ("backward", "step")
               for n in _walk_body(node, into_loops=into_loops))  # type: ignore[arg-type]


def _walk_scope(scope: cst.CSTNode):
    """Nodes of a function's or module's body, skipping nested function/class definitions."""
    return own_scope_nodes(list(scope.body.body if type(scope) is cst.FunctionDef and  # type: ignore[attr-defined]
                                type(scope.body) is cst.IndentedBlock else getattr(scope, "body", ())))


def _walk_body(loop: Union[Loop, cst.FunctionDef], into_loops: bool):
    """Nodes of the body, skipping nested function/class definitions (and nested loops unless asked)."""
    stack: list[cst.CSTNode] = [loop.body]
    if type(loop) is cst.While:
        stack.append(loop.test)
    while stack:
        node = stack.pop()
        yield node
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if not into_loops and type(node) in (cst.For, cst.While):
            continue
        stack.extend(reversed(child_nodes(node)))


def _terms(node: cst.BaseExpression, operator: type) -> list[cst.BaseExpression]:
    """`a + b * c + d` with `cst.Add`: [a, b * c, d] (left to right); a node of another kind: [node]."""
    if type(node) is cst.BinaryOperation and isinstance(node.operator, operator):
        return _terms(node.left, operator) + _terms(node.right, operator)
    return [node]


# exceptions a program raises and catches as control flow (the end of an iterator, a missing key or attribute, an
# optional import, a parse that may fail): their handlers may run every step. Not `OverflowError`: fp16 training
# catches it when the loss scale overflowed (fairseq's trainer), a failure that skips the step, now and then
_CONTROL_FLOW_EXCEPTIONS = frozenset({
    "StopIteration", "StopAsyncIteration", "KeyError", "IndexError", "LookupError", "AttributeError", "ImportError",
    "ModuleNotFoundError", "TypeError", "ValueError", "NotImplementedError", "queue.Empty", "Empty", "EOFError",
    "FileNotFoundError", "OSError", "IOError", "UnicodeDecodeError", "ZeroDivisionError"})


def error_handler(node: Optional[cst.CSTNode]) -> bool:
    """`except RuntimeError:`, `except torch.cuda.OutOfMemoryError:`, `except Exception:` or a bare `except:`
    (alone or in a tuple that names no control-flow exception): a handler of a failure, such as an out-of-memory
    fallback, which runs once per failure, not every step (the stance on error paths)."""
    if type(node) is not cst.ExceptHandler:
        return False
    if node.type is None:
        return True
    names = node.type.elements if type(node.type) is cst.Tuple else [node.type]
    for name in names:
        code = dotted_name(name.value if type(name) is cst.Element else name)
        if code is None or code in _CONTROL_FLOW_EXCEPTIONS or code.rsplit(".", 1)[-1] in _CONTROL_FLOW_EXCEPTIONS:
            return False
    return True


def in_error_handler(index: SyntaxIndex, node: cst.CSTNode) -> bool:
    """`node` sits in the body of an error handler (`error_handler`) of its own function."""
    for parent in index.ancestors(node):
        if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            return False
        if error_handler(parent):
            return True
    return False


def _constant_test(test: cst.BaseExpression) -> Optional[tuple[cst.Name, tuple]]:
    """`name == <constant>`, `<constant> == name` or `name in (<constants>)`: the name and the constants."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    left, right = test.left, target.comparator
    if type(target.operator) is cst.Equal:
        if type(left) is not cst.Name:
            left, right = right, left
        items = [right]
    elif type(target.operator) is cst.In and type(right) in (cst.Tuple, cst.List, cst.Set):
        items = [el.value for el in right.elements]  # type: ignore[attr-defined]
    else:
        return None
    if type(left) is not cst.Name or not items:
        return None
    values = tuple(_constant_value(item) for item in items)
    if any(v is _NOT_CONSTANT for v in values):
        return None
    return left, values


def _assigns_self(body: cst.CSTNode, attr: str) -> bool:
    """Some statement under `body` (not in a nested function) assigns `self.<attr> = ...`."""
    stack = [body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.Lambda, cst.ClassDef) and node is not body:
            continue
        if type(node) is cst.Assign and any(
                type(t.target) is cst.Attribute and type(t.target.value) is cst.Name
                and t.target.value.value == "self" and t.target.attr.value == attr for t in node.targets):
            return True
        stack.extend(node.children)
    return False


def _tested_missing(test: cst.BaseExpression) -> Optional[str]:
    """`attr` of `not hasattr(self, "attr")`."""
    if type(test) is not cst.UnaryOperation or type(test.operator) is not cst.Not:
        return None
    call = test.expression
    if type(call) is not cst.Call or type(call.func) is not cst.Name or call.func.value != "hasattr" or \
            len(call.args) != 2 or type(call.args[0].value) is not cst.Name or call.args[0].value.value != "self":
        return None
    return string_value(call.args[1].value)


def _tested_empty(test: cst.BaseExpression) -> Optional[str]:
    """`name` of `len(name) == 0` or `not name`: a test that a plain name's container is empty."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and type(test.expression) is cst.Name:
        return test.expression.value
    if type(test) is cst.Comparison and len(test.comparisons) == 1 and \
            type(test.comparisons[0].operator) is cst.Equal and type(test.comparisons[0].comparator) is cst.Integer \
            and test.comparisons[0].comparator.value == "0" and type(test.left) is cst.Call and \
            type(test.left.func) is cst.Name and test.left.func.value == "len" and len(test.left.args) == 1 and \
            type(test.left.args[0].value) is cst.Name:
        return test.left.args[0].value.value
    return None


def _assigned_names(node: cst.CSTNode) -> list:
    """The plain names an assignment-like statement binds (`a = ...`, `a, b = ...`, `a += ...`, `del a`)."""
    if type(node) is cst.Assign:
        targets = [t.target for t in node.targets]
    elif type(node) in (cst.AnnAssign, cst.AugAssign, cst.NamedExpr):
        targets = [node.target]
    elif type(node) is cst.Del:
        targets = [node.target]
    else:
        return []
    found = []
    for target in targets:
        if type(target) is cst.Name:
            found.append(target)
        elif type(target) in (cst.Tuple, cst.List):
            found.extend(e.value for e in target.elements if type(e.value) is cst.Name)
    return found
