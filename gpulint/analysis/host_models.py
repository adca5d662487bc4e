"""Loops that run only a host model: no GPU step, whatever the rest of the project does.

An RL project trains a learner model on the GPU and runs actors on the CPU: the actor process (`def act(flags,
actor_index, ..., model, buffers)`, started with `ctx.Process(target=act, args=(..., model, ...))`) runs the shared
model, which the launching function built (`model = Net(...)`) and never moved, on observations that a
gym environment wrapper builds on the host, and reads `.item()` of its actions every environment step. A
`test()` function builds the network, loads a checkpoint with `map_location="cpu"`, and plays episodes with it.
Such a loop computes tensors every iteration but never waits for a GPU: `.item()`, `bool()` or a host copy there
costs nothing a linter of GPU stalls should report, even though the module (the learner beside it) names CUDA.

`host_model_loop(analysis, loop)` answers True when:
- the loop is inside a function none of whose code (nested functions included, and the module's own functions the
  loop calls, two calls deep) names a device or moves anything: no `cuda`, `.to(`, `device`, `gpu`, `DataParallel`
  or `prepare` name or attribute, no string naming CUDA or a GPU, no `torch.load` without `map_location`
  (a checkpoint may hold CUDA tensors);
- the loop's body (its nested loops included) runs a model (`model(x)`, `agent.act(obs)`), and every model it
  runs is a name that holds a host model: bound in the function only to a constructor of a torch/torchvision
  module or of a project class whose `__init__` names no device either, or a parameter of the function that every
  call of it in the module (and every `Process`/`Thread(target=fn, args=(...))`) passes such a name, bound in the
  caller to a host constructor and never moved there (no `name.to(...)`/`name.cuda()`, no wrapper such as
  `DataParallel(name)`, no other binding).
Anything unsure answers False, and the loop's role is decided as before.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.node_types import of_types
from gpulint.analysis.tree import descendants

if TYPE_CHECKING:
    from gpulint.analysis import ModuleAnalysis

# Names and attributes that place or move something on an accelerator (or hand a model to a library that does).
_DEVICE_WORDS = frozenset({
    "cuda", "to", "device", "devices", "gpu", "gpus", "DataParallel", "DistributedDataParallel",
    "FullyShardedDataParallel", "FSDP", "DDP", "prepare", "set_device", "device_ids", "xpu", "mps", "npu", "tpu",
    "xla", "accelerator", "Accelerator", "Fabric", "non_blocking", "pin_memory", "cuda_", "to_device",
    "move_to_device", "use_cuda", "use_gpu", "gpu_id", "gpu_ids", "local_rank", "autocast", "amp",
})
_DEVICE_TEXT = ("cuda", "gpu", "xla", "mps")
_THREAD_STARTERS = ("Process", "Thread")
# Layers that hold parameters: a module built of them computes where they are (a loss or an activation, which
# holds none, computes where its input lives, so it says nothing of the device).
_LAYERS = frozenset({"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                     "ConvTranspose3d", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "Embedding",
                     "EmbeddingBag", "MultiheadAttention", "Transformer", "TransformerEncoder",
                     "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer"})
_DEPTH = 2


def host_model_loop(analysis: "ModuleAnalysis", loop: cst.CSTNode) -> bool:
    fn = _enclosing_function(analysis, loop)
    if fn is None or _names_a_device(analysis, fn, 0):
        return False
    loops = analysis.loops
    calls = [node for node in descendants(loop) if type(node) is cst.Call]
    host = [call for call in calls if _host_model_call(analysis, call, fn)]
    if not host:
        return False  # asked first (cheap, most loops run no host-built model): no model of the loop is one
    for call in calls:
        helper = loops.local_function(call)
        if helper is not None and helper is not fn and _names_a_device(analysis, helper, 1):
            return False
    host_ids = {id(call) for call in host}
    return any(loops._runs_a_model(call) for call in host) and \
        not any(id(call) not in host_ids and loops._runs_a_model(call) for call in calls)


def _enclosing_function(analysis: "ModuleAnalysis", node: cst.CSTNode) -> Optional[cst.FunctionDef]:
    return next((a for a in analysis.index.ancestors(node) if type(a) is cst.FunctionDef), None)


def _names_a_device(analysis: "ModuleAnalysis", fn: cst.FunctionDef, depth: int) -> bool:
    """`fn` (or a function of the module it calls, `_DEPTH` calls deep) names a device or moves something."""
    cache = analysis.fact(_device_cache)
    key = id(fn)
    if key in cache:
        return cache[key]
    cache[key] = True  # a recursive call is unsure until decided
    found = False
    loops = analysis.loops
    for node in descendants(fn):
        t = type(node)
        if t is cst.Name and node.value in _DEVICE_WORDS or \
                t is cst.Attribute and node.attr.value in _DEVICE_WORDS:
            found = True
        elif t is cst.SimpleString and any(w in node.value.lower() for w in _DEVICE_TEXT):
            found = True
        elif t is cst.Call:
            if analysis.qualified(node.func) == "torch.load" and not any(
                    a.keyword is not None and a.keyword.value == "map_location" for a in node.args):
                found = True
            elif depth < _DEPTH:
                helper = loops.local_function(node)
                if helper is not None and helper is not fn and _names_a_device(analysis, helper, depth + 1):
                    found = True
        if found:
            break
    cache[key] = found
    return found


def _device_cache(analysis: "ModuleAnalysis") -> dict:
    return {}


def _host_model_call(analysis: "ModuleAnalysis", call: cst.Call, fn: cst.FunctionDef) -> bool:
    func = call.func
    root = func if type(func) is cst.Name else func.value if type(func) is cst.Attribute else None
    return type(root) is cst.Name and _host_model_name(analysis, root, fn, 0)


def _host_model_name(analysis: "ModuleAnalysis", name: cst.Name, fn: cst.FunctionDef, depth: int) -> bool:
    """`name`, read in `fn`, holds a model that was built in host memory and never moved."""
    bindings = analysis.index.visible_bindings(name)
    if not bindings or any(b.scope is not fn for b in bindings):
        return False
    if len(bindings) == 1 and bindings[0].kind == "param":
        return depth < _DEPTH and _passed_host_models(analysis, fn, bindings[0].name, depth)
    return all(b.kind == "assign" and b.index is None and type(b.value) is cst.Call and
               _host_constructor(analysis, b.value) for b in bindings)


def _host_constructor(analysis: "ModuleAnalysis", call: cst.Call) -> bool:
    """`Net(...)` of a project class whose `__init__` names no device, or a torch/torchvision module's."""
    if type(call.func) not in (cst.Name, cst.Attribute):
        return False
    if any(a.keyword is not None and a.keyword.value in _DEVICE_WORDS for a in call.args):
        return False
    qualified = analysis.qualified(call.func) or ""
    if qualified.startswith("torchvision.models."):
        return True
    if qualified.startswith("torch.nn."):
        return qualified.rsplit(".", 1)[-1] in _LAYERS
    if analysis.path is None:
        return False
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.project import ClassSummary

    calls = analysis.fact(project_calls)
    if calls is None:
        return False
    func = call.func
    found = calls._lookup(func)
    for _ in range(2):
        # `Net = AtariNet` at module level, then `Net(...)`: the alias's one binding names the class
        if found is not None or type(func) is not cst.Name:
            break
        bindings = analysis.index.lookup(func.value, analysis.module)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
                type(bindings[0].value) not in (cst.Name, cst.Attribute):
            break
        func = bindings[0].value
        found = calls._lookup(func)
    if not isinstance(found, ClassSummary) or not calls.project.is_module_class(found):
        return False
    init = found.methods.get("__init__")
    if init is None or not any(type(n) is ast.Call and (
            type(n.func) is ast.Attribute and n.func.attr in _LAYERS or type(n.func) is ast.Name and n.func.id in
            _LAYERS) for n in ast_walk.walk(init)):
        return False  # no parameter layer of its own in sight: a loss or a wrapper computes where its input is
    return not any(
        type(n) is ast.Name and n.id in _DEVICE_WORDS or type(n) is ast.Attribute and n.attr in _DEVICE_WORDS or
        type(n) is ast.Constant and type(n.value) is str and any(w in n.value.lower() for w in _DEVICE_TEXT)
        for n in ast_walk.walk(init))


def _passed_host_models(analysis: "ModuleAnalysis", fn: cst.FunctionDef, param: str, depth: int) -> bool:
    """Every call of `fn` in the module passes a host model for `param` (a direct call, or a thread or process
    started with `target=fn, args=(...)`); False when there is none."""
    params = fn.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if param not in positional and param not in [p.name.value for p in params.kwonly_params]:
        return False
    position = positional.index(param) if param in positional else None
    passed = []
    for call in analysis.loops.calls_to(fn):
        passed.append(_argument(call.args, position, param))
    for call in analysis.fact(_started_targets).get(fn.name.value, []):
        args = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "args"), None)
        if type(args) is not cst.Tuple or position is None:
            return False
        elements = [e.value for e in args.elements]
        if any(type(e) is cst.StarredElement for e in args.elements) or position >= len(elements):
            return False
        passed.append(elements[position])
    if not passed:
        return False
    for value in passed:
        if type(value) is not cst.Name:
            return False
        caller = _enclosing_function(analysis, value)
        if caller is None or caller is fn or not _host_model_name(analysis, value, caller, depth + 1) or \
                _moved_in(analysis, caller, value.value):
            return False
    return True


def _argument(args, position: Optional[int], keyword: str) -> Optional[cst.BaseExpression]:
    for a in args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    if position is None:
        return None
    plain = [a for a in args if a.keyword is None]
    if any(a.star for a in plain[:position + 1]) or position >= len(plain):
        return None
    return plain[position].value


def _started_targets(analysis: "ModuleAnalysis") -> dict:
    """`ctx.Process(target=act, args=(...))`, `threading.Thread(target=fn, ...)`: the calls, by the target's name."""
    found: dict = {}
    for call in of_types(analysis.index, cst.Call):
        func = call.func
        last = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else None
        if last not in _THREAD_STARTERS:
            continue
        target = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "target"), None)
        if type(target) is cst.Name:
            found.setdefault(target.value, []).append(call)
    return found


def _moved_in(analysis: "ModuleAnalysis", scope: cst.FunctionDef, name: str, depth: int = 0) -> bool:
    """`name.to(...)`, `name.cuda()` or `Wrapper(name)` of a device word anywhere in `scope`, or in a function
    of the module `scope` hands it to (`model.cuda()` moves the object in place, for every holder of it)."""
    for node in descendants(scope):
        if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == name and \
                node.attr.value in _DEVICE_WORDS:
            return True
        if type(node) is cst.Call and any(type(a.value) is cst.Name and a.value.value == name for a in node.args):
            func = node.func
            last = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else ""
            if last in _DEVICE_WORDS:
                return True
            callee = analysis.loops.local_function(node)
            if callee is scope:
                continue
            if callee is None:
                # `Wrapper(model).cuda()`: an object or function that is not followed may hold the model and
                # move it in place: unsure
                return True
            if depth >= _DEPTH:
                return True  # unsure
            params = callee.params
            positional = [p.name.value for p in (*params.posonly_params, *params.params)]
            if positional and positional[0] == "self" and type(func) is cst.Attribute:
                positional = positional[1:]
            plain = [a for a in node.args if a.keyword is None]
            for i, a in enumerate(node.args):
                if not (type(a.value) is cst.Name and a.value.value == name):
                    continue
                if a.star:
                    return True
                if a.keyword is not None:
                    received = a.keyword.value
                else:
                    k = plain.index(a)
                    if any(p.star for p in plain[:k]) or k >= len(positional):
                        return True  # through `*args`: unsure
                    received = positional[k]
                if _moved_in(analysis, callee, received, depth + 1):
                    return True
    return False
