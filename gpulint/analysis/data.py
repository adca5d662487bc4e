"""What a transfer rule needs to know about a loader: whether GPU201 would pin it, whether it is pinned (or will
be once GPU201's fix is applied), and which tensor factories compute the same values on the device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Optional

import libcst as cst

from gpulint.analysis import LoopRole
from gpulint.analysis.data_facts import data_facts, has_star_args, is_dataloader, is_false, keyword, star_keywords
from gpulint.analysis.flags import flag_defaults
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.pyg_loaders import PYG_LOADERS
from gpulint.syntax import argument

if TYPE_CHECKING:  # only for annotations: analysis never imports the rule layer
    from gpulint.rule import Rule



def _true() -> cst.Name:
    return cst.Name("True")


def _dataset(call: cst.Call) -> Optional[cst.BaseExpression]:
    arg = argument(call, "dataset", 0)
    return arg.value if arg is not None else None


_UNKNOWN = cst.Name("__unknown__")  # `pin_memory_of`: `**options` may carry one that cannot be read


def pin_memory_of(rule: Rule, loader: cst.Call) -> Optional[cst.BaseExpression]:
    """The `pin_memory` the call passes: its value, read from a keyword or from a `**options` dict built in the
    module (`kw = {"pin_memory": True}; DataLoader(ds, **kw)`, analysis/data_facts.star_keywords); None when it
    passes none; `_UNKNOWN` when `**options` may carry one that cannot be read."""
    pin = keyword(loader, "pin_memory")
    if pin is not None:
        return pin.value
    if not has_star_args(loader):
        return None
    keys = star_keywords(rule.analysis, loader)
    if keys is None:
        return _TRUE if _options_passed_pinned(rule.analysis, loader) else _UNKNOWN
    if "pin_memory" not in keys:
        return None
    return keys["pin_memory"] if keys["pin_memory"] is not None else _UNKNOWN


_TRUE = cst.Name("True")  # `pin_memory_of`: pinning every caller passes in a dict of options


def _options_passed_pinned(analysis, loader: cst.Call) -> bool:
    """`DataLoader(..., **loader_kwargs)` in a top-level function whose parameter `loader_kwargs` every call in the
    project fills with `pin_memory=True` (analysis/passed_pinning.py `passed_option`: EDM's `training_loop(**c)`
    with `c.data_loader_kwargs = EasyDict(pin_memory=True, ...)` in another file)."""
    stars = [a for a in loader.args if a.star]
    if len(stars) == 1 and stars[0].star == "**" and _stored_options_pinned(analysis, stars[0].value):
        return True
    if len(stars) != 1 or stars[0].star != "**" or type(stars[0].value) is not cst.Name:
        return False
    name: cst.Name = stars[0].value
    bindings = analysis.index.visible_bindings(name)
    if len(bindings) != 1 or bindings[0].kind != "param" or type(bindings[0].source) is not cst.FunctionDef:
        return False
    fn: cst.FunctionDef = bindings[0].source
    if not isinstance(analysis.index.up.get(id(fn)), cst.Module):
        return False
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.passed_pinning import passed_option

    calls = analysis.fact(project_calls)
    return calls is not None and passed_option(calls.project, calls.path, fn.name.value, name.value,
                                               "pin_memory") is True


def _stored_options_pinned(analysis, value: cst.BaseExpression) -> bool:
    """`DataLoader(ds, **args.dataloader_kwargs)` (or `**cfg["loader_args"]`): options a config object carries
    under a key, which every assignment of that key in the project (`vars(args)['dataloader_kwargs'] = {...,
    'pin_memory': True}`, `cfg.loader_args = dict(pin_memory=True)`) fills with `pin_memory=True`
    (analysis/passed_pinning.py `stored_option`)."""
    key = None
    if type(value) is cst.Attribute:
        key = value.attr.value
    elif type(value) is cst.Subscript and len(value.slice) == 1 and \
            type(value.slice[0].slice) is cst.Index and type(value.slice[0].slice.value) is cst.SimpleString:
        key = value.slice[0].slice.value.evaluated_value
    if not isinstance(key, str) or not key.isidentifier():
        return False
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.passed_pinning import stored_option

    calls = analysis.fact(project_calls)
    return calls is not None and stored_option(calls.project, key, "pin_memory") is True


def would_pin(rule: Rule, loader: cst.Call) -> bool:
    """GPU201 asks for `pin_memory=True` on this `DataLoader(...)`: its batches go to an accelerator."""
    facts = data_facts(rule.analysis)
    found = facts.would_pin.get(id(loader))
    if found is None:
        found = facts.would_pin[id(loader)] = _would_pin(rule, facts, loader)
    return found


def _would_pin(rule: Rule, facts, loader: cst.Call) -> bool:
    if facts.prepared(loader):
        return False  # Accelerate moves the batches itself
    from gpulint.analysis.collate_moves import collate_copies

    if id(loader) in collate_copies(rule.analysis).by_loader:
        return False  # its collate_fn copies the batch to the device: pinning CUDA tensors raises
    made = facts.factory(loader)
    if made is not None:
        if made.pinned is not False:
            return False
    elif pin_memory_of(rule, loader) is not None and not _written_false(loader, rule):
        return False
    if facts.on_device(_dataset(loader)):
        return False  # pinning a CUDA tensor raises: the data is on the device already
    from gpulint.analysis.data_path import data_path_facts

    paths = data_path_facts(rule.analysis)
    if paths.device_items(paths.dataset_class(_dataset(loader))):
        return False  # its `__getitem__` moves every sample to the device: pinning CUDA tensors raises
    loops = facts.loops_over(loader)
    if loops and all(rule.analysis.loops.role(loop) is LoopRole.COLD for loop in loops) and \
            _only_iterated_by(rule, loader, loops):
        return False  # every pass over it runs once (a capped dump of the first batches before training)
    if any(facts.moves_batches(loop) for loop in loops):
        return True
    if rule.analysis.qualified(loader.func) in PYG_LOADERS:
        return False  # PyG's loaders: only where a loop of this module is seen moving their batches
    if made is None and _written_false(loader, rule) and \
            setting_default(rule.analysis, keyword(loader, "pin_memory").value) is not False:  # type: ignore
        # a choice written out, or a command-line flag a shipped recipe may pass (wenet's run.sh scripts pass
        # `--pin_memory`): reported only where the batches are seen going to the device. A yacs setting off by
        # default that no YAML file of the project sets (`pin_memory=cfg.PIN_MEMORY`) is off in every shipped
        # run: judged as a loader that passes no `pin_memory`, below
        return False
    if not loops:
        from gpulint.analysis.handed_loaders import moved_by_a_class

        if moved_by_a_class(rule.analysis, loader) is not None:
            return True  # kept by a trainer class whose loop copies its batches to the GPU (handed_loaders.py)
    # No copy in sight (a step helper or a trainer does it): trust a module that plainly targets CUDA, unless
    # every loop over this loader is visibly CPU work (it neither copies anything nor trains).
    if not facts.clearly_cuda():
        return False
    if loops and all(_batch_only_indexes(rule, loop) for loop in loops):
        return False  # the batches only pick items of host containers: no batch is copied, pinning none helps
    return not loops or any(_feeds_a_step(rule, loop) for loop in loops)


def _only_iterated_by(rule: Rule, loader: cst.Call, loops: list) -> bool:
    """`loader` is bound to a name (`test_loader = DataLoader(...)`) whose every other use in its function (or
    the module) is the iterable of one of `loops`: no other code (a training function handed it) takes batches."""
    analysis = rule.analysis
    assign = analysis.parent(loader)
    if type(assign) is not cst.Assign or len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
        return False
    name = assign.targets[0].target.value
    scope = analysis.index.enclosing_function(loader) or analysis.module
    for node in _walk_names(scope.body if type(scope) is cst.FunctionDef else scope):
        if node.value != name or node is assign.targets[0].target:
            continue
        if not any(analysis.index.is_ancestor_or_self(loop.iter, node) for loop in loops if type(loop) is cst.For):
            return False
    return True


def _batch_names(target: cst.BaseExpression, names: set) -> bool:
    if type(target) is cst.Name:
        names.add(target.value)
        return True
    if type(target) in (cst.Tuple, cst.List):
        return all(_batch_names(e.value, names) for e in target.elements if not isinstance(e, cst.StarredElement))
    return False


def _batch_only_indexes(rule: Rule, loop) -> bool:
    """`for step, batch in enumerate(loader): adj = train_adj[batch[0]].to(device)`: every use of the loop's
    batch in its body is an index (or an index's element) into another container, so what goes to the GPU is
    that container's item, never the batch: the loader's pinned memory would be copied by nobody. A batch used
    any other way (handed to a call, moved, unpacked, rebound, its length taken) keeps GPU201's stance."""
    if type(loop) is not cst.For:
        return False
    target, it = loop.target, loop.iter
    if type(it) is cst.Call and dotted_name(it.func) == "enumerate":
        if type(target) not in (cst.Tuple, cst.List) or len(target.elements) != 2:
            return False
        target = target.elements[1].value
    names: set = set()
    if not _batch_names(target, names) or not names:
        return False
    analysis = rule.analysis
    seen = False
    for node in _walk_names(loop.body):
        if node.value not in names:
            continue
        seen = True
        child = node
        parent = analysis.parent(child)
        while type(parent) is cst.Subscript and child is parent.value:  # `batch[0]`
            child, parent = parent, analysis.parent(parent)
        if type(parent) is not cst.Index:
            return False
        element = analysis.parent(parent)
        holder = analysis.parent(element) if type(element) is cst.SubscriptElement else None
        if type(holder) is not cst.Subscript or holder.value is child:
            return False
    return seen


def _walk_names(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            yield current
            continue
        if type(current) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        stack.extend(current.children)


def _written_false(loader: cst.Call, rule: Optional[Rule] = None) -> bool:
    """`pin_memory=False` written on the call: the same pageable copies as none passed (GPU201 reports it); also
    `pin_memory=args.pin_mem` for a flag of the module's parser that is off by default (analysis/flags.py)."""
    pin = keyword(loader, "pin_memory")
    return pin is not None and (is_false(pin.value) or rule is not None and flag_off(rule, pin.value))


def flag_off(rule: Rule, value: cst.BaseExpression) -> bool:
    """`value` reads a boolean flag of the module's own parser that is False by default (`--pin-mem`,
    `action='store_true'`), or a yacs setting the project declares False and no YAML file sets
    (`pin_memory=cfg.PIN_MEMORY` with `_C.PIN_MEMORY = False`: analysis/config_defaults.py)."""
    found = rule.analysis.fact(flag_defaults).default(value)
    if found is not None:
        return found is False
    return setting_default(rule.analysis, value) is False


def setting_default(analysis, value: cst.BaseExpression) -> Optional[bool]:
    """The declared default of the yacs setting `value` reads (`cfg.DATA_LOADER.PIN_MEMORY`: upper-case
    attributes after a root name), where the project's declarations agree and no YAML file sets it; else None."""
    parts = []
    while type(value) is cst.Attribute:
        parts.append(value.attr.value)
        value = value.value
    if type(value) is not cst.Name or not parts or not all(p.isupper() for p in parts) or analysis.path is None:
        return None
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.config_defaults import config_default

    calls = analysis.fact(project_calls)
    return config_default(calls.project, tuple(reversed(parts))) if calls is not None else None


def _feeds_a_step(rule: Rule, loop: cst.For) -> bool:
    """A hot loop whose own body trains or hands its batch to one of the module's functions."""
    if rule.analysis.loops.role(loop) is not LoopRole.HOT:
        return False
    for node in data_facts(rule.analysis).body_calls(loop):
        if rule.analysis.loops.is_training_call(node, follow_helpers=True) or \
                rule.analysis.loops.local_function(node) is not None:
            return True
    return False


def accelerator_loops(rule: Rule, loader: cst.Call) -> list:
    """The hot loops over `loader` whose batches go to an accelerator: the loop copies them (`moves_batches`), or
    the module plainly targets CUDA and the loop trains or hands its batch to one of the module's functions
    (`_feeds_a_step`). In loop order. What GPU204, GPU409 and GPU420 ask before judging a loader's options."""
    facts = data_facts(rule.analysis)
    return [loop for loop in facts.loops_over(loader) if rule.analysis.loops.role(loop) is LoopRole.HOT and
            (facts.moves_batches(loop) or facts.clearly_cuda() and _feeds_a_step(rule, loop))]


def loader_workers(analysis, call: cst.CSTNode) -> Optional[tuple[Optional[cst.Arg], Optional[cst.Arg]]]:
    """(`num_workers=`, `persistent_workers=`) as written on a `DataLoader(...)` call whose options can all be
    read (no `*args`/`**options`), either None where left out; None for any other call (GPU409, GPU420)."""
    if not is_dataloader(analysis, call) or has_star_args(call):  # type: ignore[arg-type]
        return None
    return keyword(call, "num_workers"), keyword(call, "persistent_workers")  # type: ignore[arg-type]


def no_workers(workers: Optional[cst.Arg]) -> bool:
    """`num_workers` left out or a literal `0`: the main process loads every batch."""
    return workers is None or type(workers.value) is cst.Integer and workers.value.evaluated_value == 0


def whole_batches(call: cst.Call) -> bool:
    """`batch_size=None`: a batch sampler hands whole batches, its dataset fetches each at once (no per-sample
    work or indexing; GPU204, GPU409)."""
    size = keyword(call, "batch_size")
    return size is not None and type(size.value) is cst.Name and size.value.value == "None"


def pinned(rule: Rule, loader: cst.Call) -> bool:
    """The loader pins its batches, or will once GPU201's fix is applied (same `--fix` run)."""
    facts = data_facts(rule.analysis)
    if facts.prepared(loader) or facts.library_prefetched(loader):
        return False  # Accelerate (or timm's prefetcher) moves the batches itself: the user's `.to(device)` copies nothing
    made = facts.factory(loader)
    if made is not None:
        # a factory's loader gets no fix here; one GPU201 reports at this call is to be pinned in the factory
        return made.pinned is True or made.pinned is False and would_pin(rule, loader)
    pin = pin_memory_of(rule, loader)
    if pin is _UNKNOWN:
        return False
    if pin is _TRUE:
        return True
    if pin is not None:
        return not is_false(pin) and not flag_off(rule, pin)
    return would_pin(rule, loader)


def pinning_unknown(rule: Rule, loader: cst.Call) -> bool:
    """Whether the loader pins cannot be told: a project factory whose `pin_memory` is not a literal, or a
    `DataLoader(..., **options)` that may carry it (an Accelerate-prepared loader is known: it moves itself)."""
    facts = data_facts(rule.analysis)
    if facts.prepared(loader):
        return False
    made = facts.factory(loader)
    if made is not None:
        return made.pinned is None
    return pin_memory_of(rule, loader) is _UNKNOWN


_FACTORIES = {"zeros", "ones", "empty", "full", "arange", "range", "linspace", "logspace", "eye", "tensor", "as_tensor",
              "zeros_like", "ones_like", "empty_like", "full_like", "rand", "randn", "randint", "randperm",
              "rand_like", "randn_like", "randint_like",
              # window functions: the STFT window a spectrogram helper builds (`torch.hann_window(n).to(y.device)`)
              "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"}


# Computed with `cos` (or a Bessel function): a device kernel may differ from the CPU's in the last bits.
_WINDOWS = {"hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"}

_RANDOM = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like"}


# Methods between the factory and the copy that compute the same values on either device.
_SAME_ON_DEVICE = {"float", "double", "half", "bfloat16", "long", "int", "short", "bool", "unsqueeze", "view",
                   "reshape", "expand", "repeat", "t", "flatten", "squeeze", "contiguous", "clone",
                   "expand_as", "view_as", "reshape_as"}  # `_as(other)`: other's shape only, on any device
