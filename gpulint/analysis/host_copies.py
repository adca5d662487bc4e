"""Helpers that copy host data to the GPU on every call: GPU112's function summaries (`project.py`) and GPU410's
per-step helper calls.

A sampler's `sample(batch_size, device)` that draws indices with NumPy and returns
`torch.from_numpy(indices).long().to(device)`, or a diffusion's `_extract_into_tensor(arr, t, shape)` that does
`torch.from_numpy(arr).to(device=t.device)[t]`, builds a tensor in pageable host memory and copies it to the
device on every call: the copy blocks the CPU until it is done, behind every kernel queued before it on the
stream. GPU410/GPU203 report the copy inside the helper; the summary field `copies_host` lets GPU112 report the
per-step call of the helper too, where the cost is paid (and where a reader of the loop looks), the same way a
helper's `.item()` is reported at its call. Transitive: `q_sample(x, t)` calling `_extract_into_tensor(...)`
copies too.

Only copies whose source is certainly built on the host from host data are counted: `torch.from_numpy(...)`,
`torch.tensor(...)` / `torch.LongTensor(...)` / `torch.FloatTensor(...)` / `torch.Tensor(...)` without
`device=`, and the size factories (`torch.eye(n)`, `torch.arange(n)`, `torch.ones(...)`, `torch.rand(...)`: a
loss's `torch.arange(b).view(-1, 1).to(device)`) without it (directly, through methods that keep the tensor where
it is, or a name bound to one), moved with
`.cuda()` or `.to(<a device>)`: a target that names a device (`device`, `dev()`, `x.device`, `"cuda"`), never a
dtype or the CPU. `torch.stack`/`torch.cat` are left out (their inputs may be device tensors), and so is
`torch.as_tensor` (a no-op on a tensor already on the device).

Both summaries of "this function copies host data to the device on every call" live here, one per consumer:

- `copy_of_host_data`/`bind_host_data` feed `FunctionSummary.copies_host` (GPU112), read by project.py's
  summarizer as it walks a function: copies of tensors *built* on the host in the function.
- `host_copy(project, path, qualname)` (GPU410's per-step call of a helper) reads a function's `ast` on its own:
  copies of arrays the helper is *given* (its section below). The two look for different sources (a tensor built
  here vs. a parameter's array), and their device tests differ accordingly (a target that names a device vs. a
  parameter whose default is the CPU), so they stay two functions over one module's helpers.

## GPU410: helpers that copy a given host array

Project helpers that copy a host (numpy) array to the accelerator on every call (issue 11, heldout10's tianshou,
heldout8's stable-baselines3).

Reinforcement-learning libraries keep their replay buffers in numpy and convert each sampled batch with a
helper: tianshou's `to_torch_as(batch.returns, q)` ends in `torch.from_numpy(x)` ... `x.to(device)`; SB3's
`obs_as_tensor(obs, device)` is `th.as_tensor(obs, device=device)` of an `np.ndarray`. Every per-step call is a
blocking copy from pageable memory, paid where the call is written. `host_copy(project, path, qualname)` answers,
from the function's `ast`, where such a copy happens on every call that reaches it:

- `torch.from_numpy(a).to(d)` / `.cuda()`, or a name bound to `torch.from_numpy(...)` later copied with
  `.to(d)`/`.cuda()` (`to_torch`);
- `torch.tensor(p, device=d)` / `torch.as_tensor(p, device=d)` of a parameter annotated as a numpy array;
- a call of another project function or method (`to_torch(...)`, `self.to_torch(...)`, `map(self.to_torch, ...)`)
  with that fact, two calls deep.

A copy to a device given by a parameter whose default is a CPU string (`device="cpu"`) counts only where the
call passes that parameter (`to_torch(x)` alone stays on the host); a literal `"cpu"` target never counts. Copies
in exception handlers are left out. The helper's module is a text dependency of the caller's lint.
"""

from __future__ import annotations

import ast

from gpulint import ast_walk
import threading
from pathlib import Path
from typing import Optional

# Builders of a new tensor in pageable host memory from host data (NumPy arrays, Python lists and numbers).
HOST_DATA_BUILDERS = frozenset(("torch.from_numpy", "torch.tensor", "torch.Tensor", "torch.LongTensor",
                                "torch.FloatTensor", "torch.IntTensor", "torch.BoolTensor", "torch.DoubleTensor"))
# Constants a function rebuilds on the host on every call (`torch.hann_window(n_fft).to(y.device)` in an STFT
# helper): the same pageable copy, of values that never change.
HOST_CONSTANTS = frozenset(f"torch.{w}" for w in ("hann_window", "hamming_window", "blackman_window",
                                                  "bartlett_window", "kaiser_window"))
# Factories that allocate a new tensor in pageable host memory when given no `device=` (`torch.eye(n).to(device)`,
# `torch.arange(b).view(-1, 1).to(device)` in a loss's forward): the same pageable copy on every call.
HOST_SIZE_BUILDERS = frozenset(f"torch.{w}" for w in ("eye", "arange", "ones", "zeros", "full", "linspace",
                                                      "rand", "randn", "randint", "randperm", "tril_indices",
                                                      "triu_indices"))
# Tensor methods whose result stays where the tensor is.
_STAYS = frozenset(("view", "reshape", "long", "float", "int", "double", "half", "bool", "contiguous", "clone",
                    "unsqueeze", "squeeze", "flatten", "t", "permute", "transpose", "type", "expand",
                    "repeat", "detach"))
_DEVICE_WORDS = ("device", "dev", "cuda", "gpu")
_NOT_CONSTANT = object()  # `_constant_default`: no constant default


def host_built(summarizer, value: ast.expr, depth: int = 0) -> Optional[str]:
    """The builder (`torch.from_numpy`) of a tensor `value` built on the host from host data, through slices,
    methods that keep it where it is and names bound to one in the function; else None."""
    if depth > 4:
        return None
    while True:
        if isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _STAYS:
            value = value.func.value
        else:
            break
    if isinstance(value, ast.Call):
        from gpulint.analysis.project import _dotted

        qualified = summarizer.info.qualify(_dotted(value.func) or "")
        if (qualified in HOST_DATA_BUILDERS or qualified in HOST_CONSTANTS or qualified in HOST_SIZE_BUILDERS) and \
                not any(kw.arg in ("device", None) for kw in value.keywords):
            return qualified
        return None
    if isinstance(value, ast.Name):
        bound = summarizer.host_data_names.get(value.id)
        return bound
    return None


def device_target(call: ast.Call) -> Optional[ast.expr]:
    """The device of `x.to(<device>)` / `x.to(device=...)`, or the call itself for `x.cuda()`; None where the
    target is not certainly a GPU device (a dtype, another tensor, the CPU, nothing)."""
    from gpulint.analysis.project import _dotted, _is_cpu, _is_dtype

    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "cuda":
        return call
    if func.attr != "to":
        return None
    target = next((k.value for k in call.keywords if k.arg == "device"), None)
    if target is None and call.args:
        target = call.args[0]
    if target is None or _is_cpu(target) or _is_dtype(target):
        return None
    if isinstance(target, ast.Constant):
        return target if isinstance(target.value, str) and target.value.startswith("cuda") else None
    named = target.func if isinstance(target, ast.Call) else target
    if isinstance(target, ast.Attribute) and _rooted_at_self(target):
        return None  # `self.loss_device`: set where the object is built, which may be the CPU
    text = (_dotted(named) or "").lower()
    last = text.rsplit(".", 1)[-1]
    if any(word in last for word in _DEVICE_WORDS):
        return target
    return None


def none_by_default(summarizer, param: str) -> bool:
    """The function's parameter `param` defaults to None (a device a call may leave out)."""
    return _constant_default(summarizer.fn, param) is None


def _cpu_by_default(fn: ast.FunctionDef, param: str) -> bool:
    """`param` defaults to None or a CPU string (`device="cpu"`): a device a call must pass for a copy."""
    default = _constant_default(fn, param)
    return default is None or isinstance(default, str) and default.startswith("cpu")


def _constant_default(fn: ast.AST, param: str):
    """The constant default of the function's parameter `param` (None for `=None`); `_NOT_CONSTANT` where it has
    no default or another expression is its default."""
    from gpulint.analysis.project import _default_of

    default = _default_of(fn, param)
    return default.value if isinstance(default, ast.Constant) else _NOT_CONSTANT


def _rooted_at_self(expr: ast.expr) -> bool:
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name) and expr.id == "self"


def copy_of_host_data(summarizer, call: ast.Call) -> Optional[tuple[str, Optional[str]]]:
    """(what, device parameter) when `call` copies a tensor built here from host data to the GPU: what names
    the builder; the device parameter is the function's parameter the target device is (`def sample(self, n,
    device)`: `.to(device)`), so a call passing the CPU copies nothing."""
    target = device_target(call)
    if target is None:
        return None
    from gpulint.analysis.project import _is_cpu

    builder = host_built(summarizer, call.func.value)  # type: ignore[attr-defined]
    if builder is None:
        return None
    param = None
    if isinstance(target, ast.Name) and summarizer.taint.get(target.id) == target.id:
        if none_by_default(summarizer, target.id):
            return None  # `def set_timesteps(n, device=None)`: `.to(device=None)` keeps the tensor on the host
        param = target.id
    elif isinstance(target, ast.Name) and any(_is_cpu(v) for v in summarizer.values.get(target.id, ())):
        return None  # `device = torch.device("cpu")` on some path of the function
    short = builder.replace("torch.", "torch.", 1)
    return f"`{short}(...).{call.func.attr}(...)`", param  # type: ignore[attr-defined]


def bind_host_data(summarizer, target: ast.expr, value: ast.expr) -> None:
    """Remember `indices = torch.from_numpy(a).long()` (a host tensor of host data) for later `.to(device)`;
    a rebinding to anything else forgets it."""
    if not isinstance(target, ast.Name):
        return
    built = host_built(summarizer, value)
    if built is not None:
        summarizer.host_data_names[target.id] = built
    else:
        summarizer.host_data_names.pop(target.id, None)


# -- GPU410: a helper that copies a host array it is given (`host_copy`) ----------------------------------------------
_DEPTH = 3
_CACHE: dict = {}
_LOCK = threading.Lock()
_NUMPY_BUILDERS = {"torch.tensor", "torch.as_tensor"}


def host_copy(project, path: Path, qualname: str, depth: int = 0) -> Optional[tuple]:
    """(path, line, the copying function's qualname, the device parameter a call must pass or None) when the
    project function `qualname` of `path` copies a host array to a device on its main path; else None."""
    from gpulint.analysis.project import _find_function, text_dependency

    with text_dependency():
        info = project.module(path)
    if info is None or depth > _DEPTH:
        return None
    key = (str(path), info.digest, qualname)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        _CACHE[key] = None  # recursion guard
    fn, cls = _find_function(info, qualname)
    found = None
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        found = _copies(project, info, fn, cls, qualname, depth)
    with _LOCK:
        _CACHE[key] = found
    return found


def _own_nodes(fn: ast.FunctionDef):
    """The nodes of `fn`'s body, not of nested functions, classes, lambdas or exception handlers, nor the body
    of a lazily filled cache (`if key not in cache:`, `if cache is None:`: the copy runs once)."""
    from gpulint.analysis.memo_guards import after_memo_returns, memo_fill

    memoised = after_memo_returns(fn)  # after `if k in self.cache: return self.cache[k]`: once per key
    stack: list = [stmt for stmt in fn.body if id(stmt) not in memoised]
    while stack:
        node = stack.pop()
        if id(node) in memoised:
            continue
        yield node
        if isinstance(node, ast.If) and _tests_own_state(node.test):
            stack.append(node.test)  # `if self.onnx: ... elif self.pt: ...`: the object's configuration picks
            continue  # one branch; a copy in some of them is not a copy on every call
        if isinstance(node, ast.If) and (_fills_once(node.test, node) or memo_fill(node, fn)):
            stack.append(node.test)
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            # a helper that loops over data copies once per item of its own loop: that loop's business, not a
            # copy per call (an evaluator's per-video loop)
            stack.append(node.iter if not isinstance(node, ast.While) else node.test)
            continue
        for child in ast_walk.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                                      ast.ExceptHandler)):
                stack.append(child)


def _tests_own_state(test: ast.expr) -> bool:
    """The test reads an attribute of `self` (a backend flag, a mode): configuration, not the data given."""
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
               for n in ast_walk.walk(test))


def _fills_once(test: ast.expr, block: ast.If) -> bool:
    """`key not in cache` (filled under that same key in the block), `cache is None`, `not hasattr(self, "x")`:
    a block that fills a cache once. A cache tested under one key and filled under another (`if fmax not in
    mel_basis: mel_basis[str(fmax) + "_" + dev] = ...`) never hits: its copy runs on every call."""
    if isinstance(test, ast.BoolOp):
        return any(_fills_once(v, block) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.NotIn):
            key, cache = ast.unparse(test.left), ast.unparse(right)
            return any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == cache and ast.unparse(t.slice) == key
                       for n in ast_walk.walk(block) if isinstance(n, ast.Assign) for t in n.targets)
        return isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None
    return isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call) \
        and isinstance(test.operand.func, ast.Name) and test.operand.func.id == "hasattr"


def _copies(project, info, fn: ast.FunctionDef, cls, qualname: str, depth: int) -> Optional[tuple]:
    from gpulint.analysis.project import FunctionSummary, _dotted

    nodes = list(_own_nodes(fn))
    numpy_params = _numpy_params(fn)
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)} - {"self", "cls"}
    from_numpy = {t.id for n in nodes if isinstance(n, ast.Assign) and _is_from_numpy(info, n.value, params)
                  for t in n.targets if isinstance(t, ast.Name)}
    for node in sorted((n for n in nodes if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)):
        func = node.func
        target = _copy_target(node)
        if target is not None:
            receiver = func.value  # type: ignore[union-attr]
            if _is_from_numpy(info, receiver, params) or (isinstance(receiver, ast.Name) and receiver.id in from_numpy):
                needs = _device_needed(target, fn)
                if needs is not False:
                    return (info.path, node.lineno, qualname, needs)
            continue
        dotted = _dotted(func)
        if dotted is not None and info.qualify(dotted) in _NUMPY_BUILDERS and node.args and \
                isinstance(node.args[0], ast.Name) and node.args[0].id in numpy_params:
            device = next((k.value for k in node.keywords if k.arg == "device"), None)
            needs = _device_needed(device, fn) if device is not None else False
            if needs is not False:
                return (info.path, node.lineno, qualname, needs)
            continue
        # a project function or method that copies: `to_torch(x, device=d)`, `self.to_torch(a)`, `map(f, xs)`
        callees = [(func, node)]
        if isinstance(func, ast.Name) and func.id == "map" and node.args:
            callees = [(node.args[0], None)]
        for callee, call in callees:
            summary = _resolve(project, info, callee, cls)
            if not isinstance(summary, FunctionSummary):
                continue
            found = host_copy(project, summary.path, summary.qualname, depth + 1)
            if found is None:
                continue
            needed = found[3]
            if needed is not None and (call is None or not _passes(call, summary, needed)):
                continue
            return (found[0], found[1], found[2], None)
    return None


def _resolve(project, info, callee: ast.expr, cls):
    """What `callee` names: a project function (`to_torch`, `utils.to_torch`) or a method of the enclosing
    class or its project bases (`self.to_torch`)."""
    from gpulint.analysis.project import _dotted

    if isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name) and callee.value.id == "self":
        return project.method(cls, callee.attr) if cls is not None else None
    dotted = _dotted(callee)
    return project.lookup(info.path, dotted) if dotted is not None else None


def _passes(call: ast.Call, summary, name: str) -> bool:
    """The call passes the parameter `name` of the callee (by keyword, or by position)."""
    if any(k.arg == name or k.arg is None for k in call.keywords):
        return True
    params = list(summary.params)
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    return name in params and params.index(name) < len(call.args)


def _is_from_numpy(info, node: ast.expr, params: set) -> bool:
    """`torch.from_numpy(a)` (an array the helper is given, or one it builds on every call: a sampler's
    indices, as heldout7 labels `schedule_sampler.sample(...)`), possibly converted (`.float()`)."""
    from gpulint.analysis.project import _dotted

    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in ("float", "long", "int", "double", "half", "type", "contiguous", "view", "reshape"):
        node = node.func.value  # `torch.from_numpy(a).float()`
    if not isinstance(node, ast.Call):
        return False
    dotted = _dotted(node.func)
    return dotted is not None and info.qualify(dotted) == "torch.from_numpy"


def _copy_target(node: ast.Call) -> Optional[ast.expr]:
    """The device of `x.to(d)` / `x.cuda()` (a `"cuda"` constant for the latter), else None."""
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "cuda":
        return ast.Constant("cuda")
    if func.attr == "to":
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
        return given
    return None


def _device_needed(device: Optional[ast.expr], fn: ast.FunctionDef):
    """False: not a copy to an accelerator (`"cpu"`, a dtype); None: a copy; a name: a copy only where the call
    passes that parameter (its default is a CPU string)."""
    if device is None:
        return False
    if isinstance(device, ast.Constant):
        return None if isinstance(device.value, str) and not device.value.startswith("cpu") else False
    if isinstance(device, ast.Attribute) and device.attr.endswith("dtype") or \
            isinstance(device, ast.Attribute) and isinstance(device.value, ast.Name) and device.value.id == "torch" \
            and device.attr in ("float32", "float16", "bfloat16", "float", "half", "long", "int64", "int32"):
        return False
    if isinstance(device, ast.Name) and _cpu_by_default(fn, device.id):
        return device.id
    if isinstance(device, ast.Attribute) and device.attr != "device":
        return False  # `self.loss_device` may well be the CPU (a loss computed on the host): not known
    return None


def _numpy_params(fn: ast.FunctionDef) -> set:
    """Parameters annotated as numpy arrays (`array: np.ndarray`, `obs: Union[np.ndarray, dict[str, np.ndarray]]`)."""
    found = set()
    for arg in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
        if arg.annotation is not None and "ndarray" in ast.unparse(arg.annotation) and \
                "Tensor" not in ast.unparse(arg.annotation):
            found.add(arg.arg)
    return found
