"""Values known to live in host memory that the kinds alone cannot tell (`KindInference.on_host`'s hooks).

- A torch factory called without `device=` (`torch.randint(0, n, (b,))`, `torch.zeros(n)`, `torch.arange(n)`)
  builds its tensor on the CPU, unless the program sets a CUDA default tensor type or device
  (`analysis/default_device.py`) or the call runs inside a `with` that names a device (`with torch.device(...)`).
- A tokenizer or processor call given `return_tensors="pt"` (analysis/tokenizers.py) hands back CPU tensors.
- A call that names the CPU as its `device=` (`sample(population, k, device="cpu")`) builds its result there.
- A call of a project function or method every `return` of which is a host copy (`return loss.detach().cpu()`:
  `FunctionSummary.returns_host_copy`) holds a host value.
- A parameter of a function or method of this module is a host value where the function's every call in the
  module (`self.update_average(loss, avg)`, `helper(x)`) passes one and no other project file names the
  function (a caller elsewhere could pass anything). A method the module never calls, run every step by a hot
  loop of another file (`forward.member_site`: `model.feed_data(train_data)` of a model wrapper), is given what
  that call passes: the loop's batch, straight from the loader, is in host memory (`data['sf'].cpu()` in
  `feed_data` waits for no GPU).

Reading such a value (`.item()`, `if x < 0:`, `torch.isfinite(x)` in a branch) waits for no GPU.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.tree import of_types
from gpulint.syntax import passed_argument

# Factories whose tensor is created where `device=` says, the CPU without it (not `*_like`, which follow their
# input, nor `torch.tensor`/`as_tensor`, which keep a tensor argument's device).
_FACTORIES = frozenset(f"torch.{name}" for name in (
    "rand", "randn", "randint", "randperm", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace",
    "eye", "range"))


def host_call(analysis, call: cst.Call) -> bool:
    func = call.func
    if type(func) not in (cst.Name, cst.Attribute):
        return False
    if analysis.qualified(func) in _FACTORIES:
        return _host_factory(analysis, call)
    from gpulint.analysis.tokenizers import host_tensors_call

    if host_tensors_call(call):
        return True  # `tokenizer(text, return_tensors="pt")`: tokenized into CPU tensors
    if type(func) is cst.Attribute and func.attr.value in ("cpu", "numpy", "tolist", "item", "to", "cuda"):
        return False  # copies: `on_host` reads those itself
    device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is not None:
        from gpulint.analysis.data_facts import CPU, data_facts

        return data_facts(analysis).device_of(device) == CPU  # `sample(n, k, device="cpu")`: built there
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    target = (calls.callee(call, own_module=True) or calls.local_callee(call)) if calls is not None else None
    if target is None:
        return False
    return target[1].returns_host_copy or _cpu_by_default(analysis, calls, call, target)


def _cpu_by_default(analysis, calls, call: cst.Call, target) -> bool:
    """`sample_affine(p, batch, h, w)` of `def sample_affine(p, size, height, width, device="cpu")`: a project
    function whose device parameter defaults to the CPU, called without one and given no device tensor, builds
    what it returns on the host (it moves nothing itself: no `.cuda()`, no `.to(...)` but to that parameter)."""
    import ast

    from gpulint.analysis.kinds import Kind
    from gpulint.analysis.data_facts import has_star_args

    _, summary, bound = target
    if has_star_args(call) or summary.returns_on_cuda or not summary.returns_tensor:
        return False
    info = calls.project.module(summary.path)
    if info is None:
        return False
    fn = info.functions.get(summary.qualname)  # a top-level function (a method's `self` state is not read)
    if not isinstance(fn, ast.FunctionDef):
        return False
    args = fn.args.posonlyargs + fn.args.args
    defaults = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
    pairs = list(zip(args, defaults)) + list(zip(fn.args.kwonlyargs, fn.args.kw_defaults))
    cpu = [a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value == "cpu"]
    if len(cpu) != 1:
        return False
    positional = [a for a in call.args if a.keyword is None]
    names = [a.arg for a in args][1 if bound else 0:]
    passed = set(names[:len(positional)]) | {a.keyword.value for a in call.args if a.keyword is not None}
    if cpu[0] in passed:
        return False
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr == "cuda" or node.func.attr == "to" and not (
                    len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == cpu[0])):
            return False
    kinds = analysis.kinds
    return all(kinds.of(a.value) is not Kind.TENSOR or kinds.on_host(a.value) for a in call.args)


def _host_factory(analysis, call: cst.Call) -> bool:
    if any(a.star or a.keyword is not None and a.keyword.value in ("device", "out") for a in call.args):
        return False
    from gpulint.analysis.default_device import cuda_default

    if analysis.fact(cuda_default) is not None:
        return False
    for parent in analysis.index.ancestors(call):
        if type(parent) is cst.With and any("device" in analysis.code(item.item) for item in parent.items):
            return False  # `with torch.device("cuda"):` makes the factories build there
        if type(parent) in (cst.Module, cst.ClassDef):
            break
    return True


def host_param(analysis, name: cst.Name, depth: int) -> bool:
    found = analysis.index.parameter_of(name)
    if found is None:
        return False
    fn, param = found
    method = _method_of(analysis, fn)
    params = list(fn.params.posonly_params) + list(fn.params.params)
    if param not in params:
        return False  # keyword-only, `*args`, `**kwargs`: not matched by position
    position = params.index(param) - (1 if method else 0)
    if position < 0:
        return False  # `self`
    sites = [call for call in of_types(analysis.index, cst.Call) if _calls(call, fn.name.value, method)]
    if not sites and method and analysis.path is not None:
        return _host_from_per_step_caller(analysis, fn, param, position, depth)
    if not sites or analysis.path is None:
        return False
    from pathlib import Path

    from gpulint.analysis.project import project_for

    project = project_for(Path(analysis.path).resolve())
    here = Path(analysis.path).resolve()
    if any(Path(f).resolve() != here for f in project.files_naming(fn.name.value)):
        return False  # called (or overridden) elsewhere too: what other callers pass is not read here
    for call in sites:
        arg = passed_argument(call, position, param.name.value)
        if not isinstance(arg, cst.Arg) or not analysis.kinds.on_host(arg.value, depth):
            return False
    return True


def _method_of(analysis, fn: cst.FunctionDef) -> Optional[bool]:
    """True for a method of a top-level class, False for a top-level function, None otherwise."""
    block = analysis.index.up.get(id(fn))
    owner = analysis.index.up.get(id(block)) if type(block) is cst.IndentedBlock else block
    if type(owner) is cst.Module:
        return False
    if type(owner) is cst.ClassDef and type(analysis.index.up.get(id(owner))) is cst.Module:
        return True
    return None


def _calls(call: cst.Call, name: str, method: Optional[bool]) -> bool:
    func = call.func
    if method:
        return type(func) is cst.Attribute and func.attr.value == name and type(func.value) is cst.Name and \
            func.value.value == "self"
    if method is False:
        return type(func) is cst.Name and func.value == name
    return False


# Calls a function may make and still compute where its tensor arguments live: Python builtins, and functions of
# these modules called without `device=` (the module name as the program spells it).
_BUILTINS = frozenset({"isinstance", "len", "range", "min", "max", "abs", "int", "float", "round", "list", "tuple",
                       "zip", "enumerate", "sum", "any", "all", "hasattr", "type", "bool", "reversed", "sorted"})
_NUMERIC_MODULES = frozenset({"torch", "np", "numpy", "math", "F"})


def computed_where_given(analysis, call: cst.Call) -> Optional[list]:
    """The positional arguments of `call` when it calls a top-level project function that computes its result
    where they live: YOLO's `xyxy2xywh(x)` (`y = x.clone() ...; y[:, 0] = (x[:, 0] + x[:, 2]) / 2; return y`)
    gives a host tensor for a host tensor. The function names no device and no CUDA, moves nothing (`.to`,
    `.cuda`, `.pin_memory`), and calls only builtins, functions of torch/numpy/math without `device=`, and
    methods of its own values; every `return` hands back a value. Else None."""
    if type(call.func) not in (cst.Name, cst.Attribute) or any(a.star for a in call.args) or not call.args:
        return None
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    target = (calls.callee(call, own_module=True) or calls.local_callee(call)) if calls is not None else None
    if target is None:
        return None
    summary = target[1]
    method = target[2] or "." in summary.qualname
    if method and not (type(call.func) is cst.Attribute and type(call.func.value) is cst.Name and
                       call.func.value.value == "self" and summary.params and summary.params[0] == "self"):
        return None  # a method of another object: what it is cannot be told here
    cache = analysis.fact(_where_given_answers)
    key = (str(summary.path), summary.qualname)
    if key not in cache:
        # a method counts only where it never reads `self` (YOLO's `self.calculate_iou(gt_box, anchors)`): `self`
        # may hold a model or a device
        cache[key] = _computes_where_given(analysis, summary, "self" if method else None)
    if not cache[key]:
        return None
    return [a.value for a in call.args if a.keyword is None]


def _where_given_answers(analysis) -> dict:
    """Fact provider: (path, function) -> `_computes_where_given`."""
    return {}


def _computes_where_given(analysis, summary, receiver: Optional[str] = None) -> bool:
    import ast

    from gpulint.analysis.forward import _project_of
    from gpulint.analysis.project import _find_function

    project, _ = analysis.fact(_project_of)
    info = project.module(summary.path)
    fn = _find_function(info, summary.qualname)[0] if info is not None else None
    if not isinstance(fn, ast.FunctionDef) or fn.decorator_list:
        return False
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    if fn.args.vararg or fn.args.kwarg:
        return False
    if receiver is not None and any(isinstance(n, ast.Name) and n.id == receiver
                                    for stmt in fn.body for n in ast_walk.walk(stmt)):
        return False
    local = params | {n.id for n in ast_walk.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    returns = 0
    for node in (n for stmt in fn.body for n in ast_walk.walk(stmt)):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal, ast.Lambda, ast.FunctionDef,
                             ast.AsyncFunctionDef, ast.ClassDef, ast.Await)):
            return False
        if isinstance(node, ast.Return):
            if node.value is None or isinstance(node.value, ast.Constant) and node.value.value is None:
                return False
            returns += 1
        if isinstance(node, ast.Name) and ("device" in node.id.lower() or "cuda" in node.id.lower()):
            return False
        if isinstance(node, ast.Attribute) and (node.attr in ("to", "cuda", "pin_memory", "device", "type")
                                                or "cuda" in node.attr.lower()):
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "cuda" in node.value.lower():
            return False
        if isinstance(node, ast.keyword) and node.arg in (None, "device", "out"):
            return False
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                if func.id not in _BUILTINS or func.id in local:
                    return False
                continue
            root = func
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, (ast.BinOp, ast.UnaryOp)) and all(
                    n.id in local or n.id in _NUMERIC_MODULES for n in ast.walk(root) if isinstance(n, ast.Name)):
                continue  # `(a[:, 2] - a[:, 0]).unsqueeze(1)`: a method of arithmetic on the function's own values
            if not isinstance(root, ast.Name) or not (root.id in _NUMERIC_MODULES or root.id in local):
                return False
    return returns > 0


_ASKING: set = set()  # (path, function) questions under way: a caller's kinds may ask about this module again


def _host_from_per_step_caller(analysis, fn: cst.FunctionDef, param: cst.Param, position: int, depth: int) -> bool:
    """The parameter of a method of a top-level class that no call in its module gives, where the per-step call
    in another file (`member_site`) passes a host value (in that file's kinds) for it."""
    from pathlib import Path

    from gpulint.analysis.forward import caller_analysis, member_site
    from gpulint.analysis.project import project_for

    block = analysis.index.up.get(id(fn))
    owner = analysis.index.up.get(id(block)) if type(block) is cst.IndentedBlock else None
    if type(owner) is not cst.ClassDef:
        return False
    here = Path(analysis.path).resolve()
    key = (here, owner.name.value, fn.name.value)
    if key in _ASKING:
        return False
    _ASKING.add(key)
    try:
        project = project_for(here)
        site = member_site(project, here, owner.name.value, fn.name.value)
        if site is None or site.path.resolve() == here:
            return False
        caller = caller_analysis(project, site.path)
        if caller is None:
            return False
        calls = [c for c in of_types(caller.index, cst.Call) if type(c.func) is cst.Attribute
                 and c.func.attr.value == fn.name.value and _line(caller, c) == site.line]
        if len(calls) != 1:
            return False
        arg = passed_argument(calls[0], position, param.name.value)
        if not isinstance(arg, cst.Arg) or arg.star:
            return False
        return caller.kinds.on_host(arg.value, depth) or _loader_batch(caller, arg.value, calls[0])
    finally:
        _ASKING.discard(key)


def _line(analysis, node: cst.CSTNode) -> int:
    from gpulint.analysis.forward import _line_of

    return _line_of(analysis, node)


def _loader_batch(analysis, value: cst.BaseExpression, call: cst.Call) -> bool:
    """`value` is the whole batch a loop over `DataLoader`s binds (`for i, train_data in enumerate(loader)`),
    never rebound: the loader collates it in host memory (not a loader Accelerate or a prefetcher moves)."""
    from gpulint.analysis.data_facts import data_facts

    if type(value) is not cst.Name:
        return False
    bindings = analysis.index.visible_bindings(value)
    if len(bindings) != 1 or bindings[0].kind != "for":
        return False
    facts = data_facts(analysis)
    loop = facts.batch_loop(value, call)
    if loop is None or bindings[0].source is not loop:
        return False
    loaders = facts.loop_loaders(loop)
    return bool(loaders) and not any(facts.prepared(c) or facts.library_prefetched(c) for c in loaders)
