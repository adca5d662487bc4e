"""A top-level function that another module's per-step model code calls: per-step code too.

`from pointnet_utils import feature_transform_reguliarzer`, then `loss += feature_transform_reguliarzer(t)` in
the `forward` of a loss module a training loop calls every step: the helper runs every step, though no training
file names it. `forward.member_site` finds only the helpers a hot loop calls itself; this finds the call in the
`forward` of a project module class (or in a top-level function) of another module, whose own call is per-step
(`forward.per_step_site`, `forward.member_site`), and answers with that call.

Decided on `ast` trees alone (the callers are not parsed with LibCST), bounded like the other searches: the files
whose text names the helper, at most `_CALLERS` of them, two modules deep. A call under an `if` that tests a
step counter (`if step % 100 == 0:`) or a flag parameter of the caller is left out: it may not run every step.
"""

from __future__ import annotations

import ast
import weakref
from gpulint import ast_walk
from pathlib import Path
from typing import Optional

_CALLERS = 8
_EXAMINED = 24  # files naming the helper looked at, importing it or not
_DEPTH = 2


def imported_helper_site(project, path: Path, name: str, depth: int = 0):
    """The per-step call, in another module, of the top-level function `name` defined in `path`; None when none
    is found."""
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("imported helper", path, name),
                       lambda: _find(project, path, name, depth))


def _find(project, path: Path, name: str, depth: int):
    from gpulint.analysis.forward import CallSite, member_site, per_step_site
    from gpulint.analysis.framework_steps import framework_step_call
    from gpulint.analysis.overrides import override_site

    looked_at = 0
    helper = name
    for examined, file in enumerate(project.files_naming(helper)):
        if examined == _EXAMINED:
            break  # a name many files mention (`build`, `create_model`): bounded, like the other searches
        if project.is_test(file) or project._resolved(file) == path:
            continue
        info = project.module(file)
        if info is None:
            continue
        spellings = _spellings(project, info, helper, path)
        if not spellings:
            continue
        if looked_at == _CALLERS:
            break
        looked_at += 1
        name = spellings  # what `_called_in` looks for: `name(...)`, `module.name(...)`
        for cls in info.classes.values():
            forward = cls.methods.get("forward")
            call = _called_in(forward, name) if forward is not None else None
            if call is None and forward is not None:  # in a method `forward` calls through `self`
                call = next((c for c in (_called_in(cls.methods[m], name) for m in _self_called(forward)
                                         if m in cls.methods and m not in ("forward", "__init__")) if c), None)
            if call is None and forward is None and cls.bases and project.is_module_class(cls):
                # a hook a project base's per-step `forward` runs through `self` (`self.compute_loss(...)`,
                # defined by this subclass): the helper it calls runs every step too
                for method in sorted(m for m in cls.methods if m not in ("forward", "__init__")):
                    call = _called_in(cls.methods[method], name)
                    if call is not None and override_site(project, cls.path, cls.name, method) is not None:
                        return CallSite(info.path.resolve(), call.lineno, f"{_spelt(call)}(...)", helper, cls.name,
                                        arguments=_arguments(call))
                continue
            if call is None or not project.is_module_class(cls):
                continue
            site = per_step_site(project, cls.path, cls.name)
            if site is not None:
                return CallSite(info.path.resolve(), call.lineno, f"{_spelt(call)}(...)", helper, cls.name,
                                arguments=_arguments(call))
        call = framework_step_call(project, info, name, _called_in)  # `_update_with_batch`, `training_step`
        if call is not None:
            return CallSite(info.path.resolve(), call.lineno, f"{_spelt(call)}(...)", helper,
                            arguments=_arguments(call))
        if depth + 1 >= _DEPTH:
            continue
        for fname, fn in info.functions.items():
            call = _called_in(fn, name)
            if call is None:
                continue
            site = member_site(project, info.path, None, fname) or \
                imported_helper_site(project, info.path, fname, depth + 1)
            if site is not None:
                return CallSite(info.path.resolve(), call.lineno, f"{_spelt(call)}(...)", helper,
                                arguments=_arguments(call))
    return None


def _self_called(fn: ast.FunctionDef) -> list:
    """The names of the methods `fn` calls through `self` (`self._update_context(...)`), in order, once each."""
    names: list = []
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "self" and node.func.attr not in names:
            names.append(node.func.attr)
    return names


def _spellings(project, info, name: str, path: Path) -> frozenset:
    """How the module `info` calls the top-level function `name` of `path`: `name` (`from module import name`),
    `alias.name` for each `import module [as alias]` or `from package import module [as alias]` binding
    that module (`monotonic_align.maximum_path`, `lmu.convert_to_pairs`), and a top-level name bound once to
    it (`criterion = MODEL.get_loss`: `ModuleInfo.aliases`)."""
    from gpulint.analysis.forward import _resolved
    from gpulint.analysis.import_aliases import bound_aliases
    from gpulint.analysis.project import ClassSummary, FunctionSummary

    def names_it(dotted: str) -> bool:  # the function, or a plain class whose construction runs its `__init__`
        found = project.lookup(info.path, dotted)
        if isinstance(found, ClassSummary):
            return found.name == name and _resolved(project, found.path) == path and "__init__" in found.methods and \
                "forward" not in found.methods and all(b in ("", "object") for b in found.bases)
        return isinstance(found, FunctionSummary) and found.qualname == name and _resolved(project, found.path) == path

    spelt = set()
    found = info.imports.get(name)
    if found is not None and found[1] is not None and names_it(name):
        spelt.add(name)
    for alias, (module, attr, _level) in info.imports.items():
        # `import utils as U` and `from ..utils import loss_utils as lmu` (a module imported from its package)
        if alias != name and (attr is None or attr[:1].islower()) and names_it(f"{alias}.{name}"):
            spelt.add(f"{alias}.{name}")
    # `criterion = MODEL.get_loss` (a module imported by name) or `= losses.get_loss`, then `criterion(...)`
    spelt.update(alias for alias in bound_aliases(info, name) if names_it(alias))
    return frozenset(spelt)


def _spelt(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "?"


def _arguments(call: ast.Call) -> Optional[tuple]:
    """(positional count, keywords passed with a value other than None) of a call; None with `*`/`**`."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    def certain(value) -> bool:  # certainly not None: a literal (a name passed on may itself be None)
        return isinstance(value, (ast.Tuple, ast.List, ast.Dict)) or \
            isinstance(value, ast.Constant) and value.value is not None

    definite = frozenset([k.arg for k in call.keywords if certain(k.value)] +
                         [i for i, a in enumerate(call.args) if certain(a)])
    return len(call.args), frozenset(k.arg for k in call.keywords
                                     if not (isinstance(k.value, ast.Constant) and k.value.value is None)), definite


def _called_in(fn: ast.FunctionDef, name) -> Optional[ast.Call]:
    """A call `name(...)` in `fn` that is not under a periodic or flag test, else None (`name`: one spelling, or a
    set of them: `f`, `module.f`). The function's calls are indexed once (`_unconditional_calls`): the same
    method is asked about every helper name a caller file is searched for, and every parameter's methods."""
    firsts = _unconditional_calls(fn)
    if isinstance(name, str):
        found = firsts.get(name)
        return found[1] if found is not None else None
    best = None
    for spelling in name:
        found = firsts.get(spelling)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    return best[1] if best is not None else None


# function node -> its `_unconditional_calls` (weak: a module's tree dropped, its entries go with it)
_CALLS_OF: "weakref.WeakKeyDictionary[ast.AST, dict]" = weakref.WeakKeyDictionary()


def _unconditional_calls(fn: ast.FunctionDef) -> dict:
    """Spelling (`f`, `module.f`) -> (position, the first call so spelt) of the calls in `fn` not under a periodic
    or flag test, in the order a search of the body meets them: statements in order, an `if`'s test before its
    body (left out under `_conditional`), then its `else`; each expression breadth-first. The first call of a
    set of spellings is the one of lowest position. Computed once per function node."""
    found = _CALLS_OF.get(fn)
    if found is not None:
        return found
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    firsts: dict = {}

    def add(expr: ast.AST) -> None:
        for node in ast_walk.walk(expr):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name):
                key = func.id
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                key = f"{func.value.id}.{func.attr}"
            else:
                continue
            if key not in firsts:
                firsts[key] = (len(firsts), node)

    def search(body: list) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.If):
                add(stmt.test)
                if not _conditional(stmt.test, params):
                    search(stmt.body)
                search(stmt.orelse)  # an `else:` of a flag is the default path
                continue
            for child in ast_walk.iter_child_nodes(stmt):
                if not isinstance(child, ast.stmt):
                    add(child)
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    search([s for h in inner for s in (h.body if isinstance(h, ast.ExceptHandler) else [h])])

    search(fn.body)
    _CALLS_OF[fn] = firsts
    return firsts


def _in_expr(expr: ast.AST, name) -> Optional[ast.Call]:
    """A call of `name` (a plain name, or a set of spellings: `f`, `module.f`) in `expr`."""
    names = (name,) if isinstance(name, str) else name
    for node in ast_walk.walk(expr):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in names or isinstance(func, ast.Attribute) \
                and isinstance(func.value, ast.Name) and f"{func.value.id}.{func.attr}" in names:
            return node
    return None


def _conditional(test: ast.expr, params: set) -> bool:
    """A test that may be false on most steps: a modulo, an equality with a counter, or a parameter used as a
    flag (`if collect_stats:`); a test of the module's own configuration (`if self.feature_transform:`) is not.
    Of `a or b` the call runs when either holds: it is conditional only when every operand is (DINO's `if
    self.dn_number > 0 or targets is not None:`); of `a and b`, when any operand is."""
    if isinstance(test, ast.BoolOp):
        parts = [_conditional(v, params) for v in test.values]
        return all(parts) if isinstance(test.op, ast.Or) else any(parts)
    for node in ast_walk.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq) for op in node.ops):
            return True
        if isinstance(node, ast.Name) and node.id in params and node.id not in ("self", "cls"):
            return True  # a flag parameter; `self.x` is the object's configuration
    return False


def helpers_feed_a_gpu(analysis, project, path: Path) -> bool:
    """A module that names no device whose top-level helper a training loop calls every step (`eval_metrics(
    output, target)` in the trainer's loop), or that another module's per-step `forward` imports and calls,
    from a file that names one: the tensors it is given are on that device."""
    import libcst as cst

    from gpulint.analysis.forward import called_in_a_hot_loop, member_site, site_names_a_device

    for stmt in analysis.module.body:
        if type(stmt) is not cst.FunctionDef:
            continue
        name = stmt.name.value
        site = member_site(project, path, None, name) if called_in_a_hot_loop(project, name) else None
        if site is not None and not _passes_a_tensor(project, site, name):
            continue  # `tensor2img([visuals["result"]])`: nothing known to be a device tensor is handed in
        if site is None:
            site = imported_helper_site(project, path, name)
        if site_names_a_device(project, site, sites=6):  # up the owners' chain to the training file
            return True
    return loops_fed_by_a_gpu_file(analysis, project, path) or methods_handed_device_tensors(analysis, project)


def loops_fed_by_a_gpu_file(analysis, project, path: Path) -> bool:
    """A top-level function of the module whose hot loop (over batches, a training or evaluation step) runs a
    network the function is handed (`def evaluate(config, model, data_iter): for x, y in data_iter: out =
    model(x)`), called from another project file that names a device (`model = Model(cfg).to(cfg.device)`, then
    `train(config, model, ...)`, which calls `evaluate`): the network, and what it computes each step, are on
    that device. The call need not be per-step (a train or evaluation function runs once per run; its loop is
    the step)."""
    import libcst as cst

    return any(type(stmt) is cst.FunctionDef and _loop_runs_a_parameter(analysis, stmt) and
               called_from_a_gpu_file(project, path, stmt.name.value) for stmt in analysis.module.body)


def methods_handed_device_tensors(analysis, project) -> bool:
    """A method of a top-level class of the module runs every step through a call (`forward.per_step_caller`:
    the caller's own call, a base class's `self.save_result(output, batch, results)`, ...) that hands it a tensor
    the caller built from a copy to an accelerator (`translator.translate_sentence(src.to(device))`:
    `DataFacts.on_device`) or a network's output (`_network_output`), and that the caller's kinds do not place
    on the host where the call reads it: the tensors the method works on are on that device. A call handing over
    only host copies or values of unknown device (SlowFast's wrong-prediction visualiser gets `preds` after `preds
    = preds.cpu()`, a loader's batch never moved) says nothing."""
    import libcst as cst

    from gpulint.analysis.data_facts import data_facts
    from gpulint.analysis.forward import _hot_calls, _line_of, per_step_caller

    checked = set()
    for stmt in analysis.module.body:
        if type(stmt) is not cst.ClassDef or type(stmt.body) is not cst.IndentedBlock:
            continue
        for method in stmt.body.body:
            if type(method) is not cst.FunctionDef or method.name.value == "__init__":
                continue
            site = per_step_caller(analysis, method)
            if site is None or (site.path, site.line, site.code) in checked:
                continue
            checked.add((site.path, site.line, site.code))
            for caller, node, _ in _hot_calls(project, Path(site.path)):
                if f"{caller.code(node.func)}(...)" != site.code or _line_of(caller, node) != site.line:
                    continue
                facts = data_facts(caller)
                if any(not a.star and caller.is_device_tensor(a.value) and
                       (facts.on_device(a.value) or _network_output(caller, a.value)) for a in node.args):
                    return True
    return False


def function_fed_by_a_gpu_file(project, path: Path, fn: ast.FunctionDef) -> bool:
    """For the prefilter (`forward.may_run_every_step`, on `ast`): `fn` has a loop whose body calls one of its
    parameters (`model(x)`), and a project file that names a device calls it: `loops_fed_by_a_gpu_file` may
    hold, so the file is worth LibCST's parse."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)} - {"self"}
    if not params or not any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in params
                             for c in ast_walk.walk(fn)):
        return False  # no call of a parameter at all (most functions): one walk, not one per loop statement
    if not any(
            isinstance(loop, (ast.For, ast.While)) and any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in params
                for statement in loop.body for c in ast_walk.walk(statement))
            for loop in ast_walk.walk(fn)):
        return False
    return called_from_a_gpu_file(project, path, fn.name)


def called_from_a_gpu_file(project, path: Path, name: str) -> bool:
    """Another project file (tests left out) that names a device (`GPU_HINT`) calls the top-level function
    `name` of `path`. The callers' text is a dependency of the cached result."""
    from gpulint.analysis import GPU_HINT
    from gpulint.analysis.forward import _remembered, _resolved
    from gpulint.analysis.passed_pinning import _project_calls
    from gpulint.textsearch import found_in

    def search() -> bool:
        for caller, _, _ in _project_calls(project, resolved, name):
            try:
                text = Path(caller.path).read_text(errors="replace")  # already read by the project model
            except OSError:
                continue
            if found_in(GPU_HINT, text):
                return True
        return False

    resolved = _resolved(project, path)
    return bool(_remembered(project, ("called from a gpu file", resolved, name), search))


def _loop_runs_a_parameter(analysis, fn) -> bool:
    """`fn` holds a hot loop (`LoopAnalysis.role`) whose body calls one of `fn`'s parameters, not rebound in
    `fn` (`model(x)` of `def evaluate(config, model, data_iter)`): the network it is handed runs every step."""
    import libcst as cst

    from gpulint.analysis.loops import LoopRole
    from gpulint.analysis.tree import descendants

    for loop in descendants(fn.body):
        if type(loop) not in (cst.For, cst.While) or analysis.loops.role(loop) is not LoopRole.HOT:
            continue
        for node in descendants(loop.body):
            if type(node) is cst.Call and type(node.func) is cst.Name:
                found = analysis.index.parameter_of(node.func)
                if found is not None and found[0] is fn:
                    return True
    return False


def none_test(test, child, branch) -> Optional[tuple[str, bool]]:
    """For `if p is None:` / `if p is not None:` (a LibCST `If` `branch`, `child` its body or its `else`/`elif`):
    (p, whether `child` runs only when p is None)."""
    import libcst as cst

    if type(test) is not cst.Comparison or len(test.comparisons) != 1 or type(test.left) is not cst.Name:
        return None
    target = test.comparisons[0]
    if not (type(target.comparator) is cst.Name and target.comparator.value == "None"):
        return None
    if type(target.operator) is cst.Is:
        when_none = True
    elif type(target.operator) is cst.IsNot:
        when_none = False
    else:
        return None
    if child is branch.body:
        return test.left.value, when_none
    if child is branch.orelse:
        return test.left.value, not when_none
    return None


def ruled_out(fn, guards: list, site) -> bool:
    """`fn` (LibCST) runs every step through `site`, a call that passes `site.arguments`: some `if p is None:`
    block walked out of cannot run there (the call passes `p`), or some `else:` of one cannot (the call leaves
    `p` at its default None)."""
    arguments = getattr(site, "arguments", None)
    if not guards or arguments is None or getattr(site, "runs", None) != fn.name.value:
        return False  # the call's arguments are those of the function it runs, not of what that one calls
    positional, keywords, definite = arguments
    params = [*fn.params.posonly_params, *fn.params.params]
    names = [p.name.value for p in params]
    defaults = {p.name.value: p.default for p in (*params, *fn.params.kwonly_params)}
    for name, when_none in guards:
        if name not in defaults:
            continue  # not a parameter of this function
        passed = name in keywords or (name in names and names.index(name) < positional)
        default = defaults[name]
        if when_none and (name in definite or name in names and names.index(name) in definite):
            return True  # the call passes a literal: `if p is None:` cannot hold
        if not when_none and not passed and default is not None and type(default).__name__ == "Name" and \
                default.value == "None":
            return True
    return False


def _passes_a_tensor(project, site, name: str) -> bool:
    """The loop's call at `site` hands the helper a tensor its own analysis does not place on the host
    (`eval_metrics(output, target)` of a model's output): evidence that the helper's tensors are on the device."""
    from gpulint.analysis.forward import _hot_calls, _line_of
    from gpulint.analysis.kinds import Kind

    from gpulint.analysis.import_aliases import local_names

    info = project.module(Path(site.path))
    names = local_names(info, name) if info is not None else frozenset((name,))  # `import f as g`, then `g(x)`
    for analysis, node, func in _hot_calls(project, Path(site.path)):
        last = func.attr.value if type(func).__name__ == "Attribute" else getattr(func, "value", None)
        if last not in names or _line_of(analysis, node) != site.line:
            continue
        return any(analysis.kind(a.value) is Kind.TENSOR and not analysis.kinds.on_host(a.value) or
                   _network_output(analysis, a.value) for a in node.args if not a.star)
    return False


def _network_output(analysis, value) -> bool:
    """`value` is a name every binding of which unpacks what a network returned (`y_d_hat_r, y_d_hat_g, _, _ =
    net_d(y, y_hat.detach())`, lists of the discriminators' outputs): the network's results, on its device. The
    network is a module, or a plain name of no known kind (`net_g, net_d = nets`, handed in by the caller) run
    on a device tensor; never a library or project function (whose result the tables and summaries describe)."""
    if type(value).__name__ != "Name":
        return False
    bindings = analysis.index.visible_bindings(value)
    return bool(bindings) and all(
        b.kind == "assign" and b.index is not None and type(b.value).__name__ == "Call" and
        _runs_a_network(analysis, b.value) for b in bindings)


def _runs_a_network(analysis, call) -> bool:
    """`call` runs a network (`_network_output`): a module, or a name handed in or assigned run on a device tensor."""
    from gpulint.analysis.kinds import Kind

    func = call.func
    if analysis.kinds.on_host(func):
        return False
    if analysis.kind(func) is Kind.MODULE:
        return True
    if type(func).__name__ != "Name" or analysis.kind(func) is not Kind.UNKNOWN:
        return False
    bindings = analysis.index.visible_bindings(func)
    if not bindings or any(b.kind not in ("assign", "param") for b in bindings):
        return False  # a function defined or imported under that name: not a network handed in
    return any(not a.star and analysis.kind(a.value) is Kind.TENSOR and not analysis.kinds.on_host(a.value)
               for a in call.args)


# -- a method of an object another module's per-step method is handed ----------------------------------------------
# `agent.update(self.replay_buffer, self.logger, step)` every step, then in `SACAgent.update(self, replay_buffer,
# logger, step)`: `replay_buffer.sample(batch_size)` and `self.update_critic(..., logger, step)` whose body calls
# `logger.log(...)`. `ReplayBuffer.sample` and `Logger.log` run every step, although no hot loop calls them: the
# object is a parameter of per-step code of another module, and the per-step call passes an instance of the class.
_PASSED_DEPTH = 3


def passed_object_site(project, path: Path, owner: str, member: str):
    """The call `p.member(...)`, in a per-step method of another module's class, of a parameter `p` that the
    per-step call hands an instance of the class `owner` (defined in `path`); None when none is found. Bounded
    like `imported_helper_site`: the files naming `member`, at most `_CALLERS` of them holding such a call."""
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("passed object", path, owner, member),
                       lambda: _find_passed(project, path, owner, member))


def _find_passed(project, path: Path, owner: str, member: str):
    from gpulint.analysis.forward import CallSite, _remembered, _resolved

    info = project.module(path)
    cls = info.classes.get(owner) if info is not None else None
    if cls is None or member not in cls.methods and project.method(cls, member) is None:
        return None  # (a method of its own: no need for its summary, `project.method`, to know it is there)
    looked_at = 0
    for examined, file in enumerate(project.files_naming(member)):
        if examined == _EXAMINED:
            break
        if project.is_test(file) or _resolved(project, file) == path:
            continue
        # what the file's per-step methods hand `p.member(...)` does not depend on `owner`: asked once per
        # file and member for every class with a method of that name (`update`, `sample`, `step`, ...)
        passed = _remembered(project, ("passed calls", _resolved(project, file), member),
                             lambda: _passed_calls(project, file, member))
        if passed is None:
            continue
        if looked_at == _CALLERS:
            break
        looked_at += 1
        for caller_path, call, classes in passed:
            if all(_resolved(project, c.path) == path and c.name == owner for c in classes):
                return CallSite(caller_path, call.lineno, f"{_spelt(call)}(...)", f"{owner}.{member}",
                                arguments=_arguments(call))
    return None


def _passed_calls(project, file: Path, member: str) -> Optional[tuple]:
    """[(caller path, call, classes)] of the calls `p.member(...)` in the per-step methods of `file` whose
    parameter `p` holds instances of the project `classes` (never empty) at the per-step call; None when the
    module has no such call on a parameter (it does not count as a caller looked at)."""
    from gpulint.analysis.forward import caller_analysis, per_step_caller

    caller = project.module(file)
    if caller is None:
        return None
    found = _parameter_calls(project, caller).get(member)  # (class, method name, parameter, call)
    if not found:
        return None
    analysis = caller_analysis(project, caller.path)
    if analysis is None:
        return ()
    passed = []
    for other, name, param, call in found:
        fn = _cst_method(analysis, other.name, name)
        site = per_step_caller(analysis, fn) if fn is not None else None
        if site is None:
            continue
        classes = _parameter_classes(project, analysis, other, name, param, site, 0)
        if classes:
            passed.append((caller.path.resolve(), call, classes))
    return tuple(passed)


def _parameter_calls(project, info) -> dict:
    """{member: [(class, method name, parameter, call)]} of the module's methods that call `p.member(...)` on a
    parameter `p` on every call (`_called_in`: not under a periodic or flag test): once per module content."""
    key = ("parameter calls", info.path, info.digest)
    known = project.per_step_sites.get(key)
    if known is None:
        known = {}
        for other in info.classes.values():
            for name, fn in other.methods.items():
                params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)][1:]
                if not params:
                    continue  # no parameter but `self`: nothing to find (no walk)
                called, handlers = set(), []  # one walk of the method for both
                for n in ast_walk.walk(fn):
                    if isinstance(n, ast.Call):
                        if isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and \
                                n.func.value.id in params:
                            called.add(n.func.attr)
                    elif isinstance(n, ast.ExceptHandler):
                        handlers.append((n.lineno, n.end_lineno or n.lineno))
                if not called:
                    continue
                returns = _early_return(fn, set(params))
                for member in sorted(called):
                    call = _called_in(fn, frozenset(f"{p}.{member}" for p in params))
                    if call is not None and (returns is None or call.lineno < returns) and \
                            not any(first <= call.lineno <= last for first, last in handlers):  # an error path
                        known.setdefault(member, []).append((other, name, call.func.value.id, call))
        project.per_step_sites[key] = known
    return known


def _early_return(fn: ast.FunctionDef, params: set) -> Optional[int]:
    """The line of the first top-level `if <test>: return` of `fn` whose test may be false on most steps
    (`if not self._should_log(step, freq): return`, `_conditional`): the calls after it may not run every step."""
    for stmt in fn.body:
        if isinstance(stmt, ast.If) and any(isinstance(s, (ast.Return, ast.Raise)) for s in stmt.body) and \
                _conditional(stmt.test, params):
            return stmt.lineno
    return None


def _cst_method(analysis, class_name: str, name: str):
    import libcst as cst

    for stmt in analysis.module.body:
        if type(stmt) is cst.ClassDef and stmt.name.value == class_name:
            return next((s for s in stmt.body.body if type(s) is cst.FunctionDef and s.name.value == name), None)
    return None


def _parameter_classes(project, analysis, cls, method: str, param: str, site, depth: int) -> tuple:
    """The project classes the parameter `param` of `cls.method` holds when the per-step call `site` runs it:
    the argument of that call (`site.runs` names the method), or, for a method the entry reaches through `self`,
    the argument of its `self.method(...)` calls, followed back parameter by parameter; () when unknown or
    when the calls disagree."""
    fn = cls.methods.get(method)
    if fn is None or depth > _PASSED_DEPTH:
        return ()
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]
    position = params.index(param) if param in params else None
    if site.runs.rsplit(".", 1)[-1] == method and site.runs.split(".")[0] == cls.name:
        return _site_argument_classes(project, site, method, position, param)
    agreed = None
    for caller_name, caller_fn in cls.methods.items():
        if caller_name == method:
            continue
        caller_params = {a.arg for a in (*caller_fn.args.posonlyargs, *caller_fn.args.args)}
        for node in ast_walk.walk(caller_fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
                continue
            argument = _ast_argument(node, position, param)
            if not (isinstance(argument, ast.Name) and argument.id in caller_params):
                return ()
            classes = _parameter_classes(project, analysis, cls, caller_name, argument.id, site, depth + 1)
            if not classes or agreed is not None and {id(c) for c in classes} != {id(c) for c in agreed}:
                return ()
            agreed = classes
    return agreed or ()


def handed_classes(project, path: Path, class_name: str, method: str, param: str, site) -> tuple:
    """The project classes the parameter `param` of `class_name.method` (in `path`) holds when the per-step call
    `site` runs it (`_parameter_classes`); () when unknown."""
    info = project.module(path)
    cls = info.classes.get(class_name) if info is not None else None
    return _parameter_classes(project, None, cls, method, param, site, 0) if cls is not None else ()


def _ast_argument(call: ast.Call, position: Optional[int], name: str):
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if position is not None and position < len(call.args):
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _site_argument_classes(project, site, method: str, position: Optional[int], name: str) -> tuple:
    """The classes of what the per-step call at `site` passes as the parameter (its `position`, or keyword
    `name`): the call of `.method(...)` on that line of the caller's file, resolved by its `project_calls`."""
    import libcst as cst

    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.forward import _line_of, caller_analysis

    analysis = caller_analysis(project, site.path)
    calls = analysis.fact(project_calls) if analysis is not None else None
    if calls is None:
        return ()
    candidates = [n for n in analysis.index.nodes if type(n) is cst.Call and type(n.func) is cst.Attribute
                  and n.func.attr.value == method]
    if len(candidates) > 1:
        candidates = [n for n in candidates if _line_of(analysis, n) == site.line]
    if len(candidates) != 1 or any(a.star for a in candidates[0].args):
        return ()
    args = candidates[0].args
    positional = [a for a in args if a.keyword is None]
    argument = positional[position].value if position is not None and position < len(positional) else next(
        (a.value for a in args if a.keyword is not None and a.keyword.value == name), None)
    return tuple(calls.instance_classes(argument)) if argument is not None else ()
