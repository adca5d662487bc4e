"""Helpers that copy host data to the GPU on every call, for the summaries of `project.py`.

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
`device=` (directly, through methods that keep the tensor where it is, or a name bound to one), moved with
`.cuda()` or `.to(<a device>)`: a target that names a device (`device`, `dev()`, `x.device`, `"cuda"`), never a
dtype or the CPU. `torch.stack`/`torch.cat` are left out (their inputs may be device tensors), and so is
`torch.as_tensor` (a no-op on a tensor already on the device).
"""

from __future__ import annotations

import ast
from typing import Optional

# Builders of a new tensor in pageable host memory from host data (NumPy arrays, Python lists and numbers).
HOST_DATA_BUILDERS = frozenset(("torch.from_numpy", "torch.tensor", "torch.Tensor", "torch.LongTensor",
                                "torch.FloatTensor", "torch.IntTensor", "torch.BoolTensor", "torch.DoubleTensor"))
# Tensor methods whose result stays where the tensor is.
_STAYS = frozenset(("view", "reshape", "long", "float", "int", "double", "half", "bool", "contiguous", "clone",
                    "unsqueeze", "squeeze", "flatten", "t", "permute", "transpose", "type", "expand",
                    "repeat", "detach"))
_DEVICE_WORDS = ("device", "dev", "cuda", "gpu")


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
        if qualified in HOST_DATA_BUILDERS and not any(kw.arg in ("device", None) for kw in value.keywords):
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
    from gpulint.analysis.project import _default_of

    default = _default_of(summarizer.fn, param)
    return isinstance(default, ast.Constant) and default.value is None


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
