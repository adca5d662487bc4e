"""Copies of a batch GPU202 could not see before: loaders handed in from other modules, and legacy type casts.

- **A loader passed as a parameter** (`def evaluate(net, dataloader, device): for batch in tqdm(dataloader):`),
  where the calls are in other modules of the project (`evaluate(model, val_loader, ...)` in train.py, with
  `val_loader = DataLoader(val_set, **loader_args)` and `loader_args = dict(..., pin_memory=True)`): the loader
  every call site passes (`Project.parameter_loader`) says whether the batches are pinned.
- **`x.type(torch.cuda.FloatTensor)`** (or a name bound to it: `Tensor = torch.cuda.FloatTensor if cuda else
  torch.FloatTensor`, then `imgs.type(Tensor)`): a host-to-device copy like `.cuda()`, blocking unless it is
  given `non_blocking=True` (`Tensor.type(dtype, non_blocking=False)`).
"""

from __future__ import annotations

from typing import Optional

from gpulint.analysis.progress_wrappers import is_progress_wrapper
import libcst as cst

from gpulint.analysis.imports import dotted_name
from gpulint.syntax import positional, positional_names

# Iteration wrappers whose elements are the loader's batches (`zip` pairs them: left out).
_SAME_ELEMENTS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "islice",
                            "itertools.islice"})


def cuda_type_copy(analysis, call: cst.Call) -> bool:
    """`x.type(T)` where T is a CUDA tensor type (`torch.cuda.FloatTensor`, `"torch.cuda.HalfTensor"`, or a name
    every binding of which may be one)."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value != "type" or not call.args:
        return False
    first = call.args[0]
    if first.star or (first.keyword is not None and first.keyword.value != "dtype"):
        return False
    return _cuda_type(analysis, first.value, 0)


def _cuda_type(analysis, expr: cst.BaseExpression, depth: int) -> bool:
    if depth > 3:
        return False
    if type(expr) is cst.SimpleString:
        text = expr.evaluated_value
        return isinstance(text, str) and text.startswith("torch.cuda.") and text.endswith("Tensor")
    if type(expr) is cst.Attribute:
        name = analysis.qualified(expr) or ""
        return name.startswith("torch.cuda.") and name.endswith("Tensor")
    if type(expr) is cst.IfExp:  # `torch.cuda.FloatTensor if cuda else torch.FloatTensor`: a GPU run copies
        return _cuda_type(analysis, expr.body, depth + 1) or _cuda_type(analysis, expr.orelse, depth + 1)
    if type(expr) is cst.Name:
        bindings = analysis.index.visible_bindings(expr)
        return bool(bindings) and len(bindings) <= 4 and all(
            b.kind == "assign" and b.index is None and b.value is not None and
            _cuda_type(analysis, b.value, depth + 1) for b in bindings)
    return False


def passed_loader(analysis, loop: cst.CSTNode):
    """The LoaderFact of the loader every project call site passes to the top-level function whose parameter
    `loop` iterates (`for batch in tqdm(dataloader)` in `def evaluate(net, dataloader, ...)`); None when the
    loop iterates something else, or the call sites cannot be told or disagree."""
    found = _iterated_parameter(analysis, loop)
    if found is None:
        return None
    calls, function, name = found
    if type(function) is tuple:
        return None  # a method's parameter: only its pinning is told (`pinned_passed_loader`)
    return calls.project.parameter_loader(calls.path, function, name)


def _iterated_parameter(analysis, loop: cst.CSTNode, iterable: Optional[cst.BaseExpression] = None):
    """(project calls, the top-level function's name, the parameter's name) where `loop` iterates a parameter of
    a top-level function of the module; or ("Class.__init__", the parameter) where it iterates `self.<name>` that
    a top-level class stores from its `__init__` parameter (`self.train_ds = train_ds`, then `for batch in
    self.train_ds:` in `train()`): its constructions pass the loader. Else None."""
    if type(loop) is not cst.For:
        return None
    if iterable is None:  # else one branch of the loop's chosen iterable (`_chosen_parameters`)
        iterable = analysis.kinds.wrapper_bound_to(loop.iter)
    for _ in range(4):
        if type(iterable) is not cst.Call:
            break
        if dotted_name(iterable.func) not in _SAME_ELEMENTS and not is_progress_wrapper(dotted_name(iterable.func)):
            handed = _generator_argument(analysis, iterable)
            if handed is None:
                break
            iterable = analysis.kinds.wrapper_bound_to(handed)  # `metric_logger.log_every(data_loader, 10)`
            continue
        args = positional(iterable)
        if not args:
            return None
        iterable = analysis.kinds.wrapper_bound_to(args[0])
    if type(iterable) is cst.Attribute and type(iterable.value) is cst.Name and iterable.value.value == "self":
        return _iterated_attribute(analysis, iterable)
    if type(iterable) is not cst.Name:
        return None
    bindings = analysis.index.visible_bindings(iterable)
    if len(bindings) != 1 or bindings[0].kind != "param" or type(bindings[0].source) is not cst.FunctionDef:
        return None
    fn: cst.FunctionDef = bindings[0].source
    from gpulint.analysis.calls import project_calls

    if not isinstance(analysis.index.up.get(id(fn)), cst.Module):
        owner = _top_level_class(analysis, fn)
        if owner is None or analysis.path is None or analysis.loops.calls_to(fn):
            return None  # a nested function, or a method its own module calls: not plain calls of its name
        calls = analysis.fact(project_calls)
        return (calls, (owner.name.value, fn.name.value), iterable.value) if calls is not None else None

    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    return calls, fn.name.value, iterable.value


def _generator_argument(analysis, call: cst.Call) -> Optional[cst.BaseExpression]:
    """The argument `call` passes to a project generator (of this module, or another module's, or a method
    resolved through its instance: `metric_logger.log_every(data_loader, print_freq, header)`) whose every `yield`
    hands on an item of that parameter; else None. The loop over the call takes one item of it per iteration."""
    from gpulint.analysis.data_facts import data_facts

    facts = data_facts(analysis)
    handed = facts._generator_source(call) if analysis.loops.local_function(call) is not None else None
    if handed is None:
        handed = facts.project_generator_source(call)
    return handed if type(handed) in (cst.Name, cst.Attribute) else None


def _top_level_class(analysis, fn: cst.FunctionDef) -> Optional[cst.ClassDef]:
    """The top-level class whose body defines the method `fn`, else None."""
    block = analysis.index.up.get(id(fn))
    owner = analysis.index.up.get(id(block)) if type(block) is cst.IndentedBlock else None
    if type(owner) is not cst.ClassDef or type(analysis.index.up.get(id(owner))) is not cst.Module:
        return None
    return owner


def _iterated_attribute(analysis, attribute: cst.Attribute):
    from gpulint.analysis import stored_init_parameter
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls) if analysis.path is not None else None
    stored = stored_init_parameter(analysis, calls, attribute) if calls is not None else None
    return (calls, *stored) if stored is not None else None


def pinned_passed_loader(analysis, loop: cst.CSTNode) -> Optional[bool]:
    """Whether the loaders the callers pass to the parameter `loop` iterates pin: the one loader every call site
    passes, else what all the loaders the calls found pass agree on (analysis/passed_pinning.py: callers that
    import the function under an alias, or hand it different loaders)."""
    found = _iterated_parameter(analysis, loop)
    if found is None:
        # `loader = test_loader if test else valid_loader`, both parameters: what both pass, when they agree
        branches = _chosen_parameters(analysis, loop)
        if not branches:
            return None
        answers = {_passed_pinning(analysis, b) for b in branches}
        return answers.pop() if len(answers) == 1 else None
    return _passed_pinning(analysis, found)


def _chosen_parameters(analysis, loop: cst.CSTNode) -> list:
    """For a loop over a name bound once, in its function, to `a if cond else b` of two names each iterated as
    a parameter (`_iterated_parameter`): those two findings; else []."""
    if type(loop) is not cst.For:
        return []
    iterable: cst.BaseExpression = loop.iter
    while type(iterable) is cst.Call and (dotted_name(iterable.func) in _SAME_ELEMENTS or
                                          is_progress_wrapper(dotted_name(iterable.func))) and positional(iterable):
        iterable = positional(iterable)[0]
    if type(iterable) is not cst.Name:
        return []
    bindings = analysis.index.visible_bindings(iterable)
    if len(bindings) != 1 or bindings[0].kind != "assign" or type(bindings[0].value) is not cst.IfExp:
        return []
    choice = bindings[0].value
    found = [_iterated_parameter(analysis, loop, branch) for branch in (choice.body, choice.orelse)]
    return found if all(f is not None for f in found) else []


def _passed_pinning(analysis, found) -> Optional[bool]:
    calls, function, name = found
    if type(function) is tuple:  # a method's parameter: `obj.train_loop(epoch, loader, opt)` in other files
        from gpulint.analysis.passed_pinning import passed_method_pinning

        return passed_method_pinning(calls.project, calls.path, function[0], function[1], name)
    made = calls.project.parameter_loader(calls.path, function, name)
    if made is not None:
        return made.pinned
    from gpulint.analysis.passed_pinning import passed_pinning

    return passed_pinning(calls.project, calls.path, function, name)


def parameter_is_loader(analysis, binding) -> bool:
    """A parameter every call of its function passes a loader (KindInference's `parameter_hook`):
    `def beam(model, data_iter, args)` called as `beam(net, valid_loader, args)`, so `for idx, data in
    enumerate(data_iter):` is a pass over batches. The calls of this module are read first (each must pass
    something whose kind is a loader); a top-level function no call of this module reaches is resolved through
    the project's call sites (`Project.parameter_loader`). A parameter with a default, or `*args`, is not."""
    from gpulint.analysis.kinds import Kind
    from gpulint.syntax import argument_for

    fn = binding.source
    param = binding.value
    if type(fn) is not cst.FunctionDef or type(param) is not cst.Param or param.default is not None or \
            param.star:
        return False
    names = positional_names(fn)
    if binding.name not in names and binding.name not in [p.name.value for p in fn.params.kwonly_params]:
        return False
    calls = analysis.loops.calls_to(fn)
    if calls:
        for call in calls:
            if any(a.star for a in call.args):
                return False
            arg = argument_for(call, names, binding.name)
            if arg is None or analysis.kinds.of(arg.value) is not Kind.LOADER:
                return False
        return True
    if analysis.path is None or not isinstance(analysis.index.up.get(id(fn)), cst.Module):
        return False
    from gpulint.analysis.calls import project_calls

    project = analysis.fact(project_calls)
    if project is None:
        return False
    if project.project.parameter_loader(project.path, fn.name.value, binding.name) is not None:
        return True
    # different loaders at the call sites (`gen = DataLoader(...)` built again when the backbone unfreezes):
    # every call passes a loader where their pinning agrees (analysis/passed_pinning.py)
    from gpulint.analysis.passed_pinning import passed_pinning

    return passed_pinning(project.project, project.path, fn.name.value, binding.name) is not None
