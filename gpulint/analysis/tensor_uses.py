"""A name its function reads as a tensor (`x.shape`, `x.device`, `x.view(...)`, `torch.isfinite(x)`).

The kinds say what a value is from where it comes; a function's parameter often comes from nowhere gpulint can see
(`def spectro(x, n_fft)`). What the function does with it still says what it is: only a tensor has `.shape` and
`.device` and `.view(...)` together with being an argument of `.to(...)`. GPU203 asks this of the argument of
`.to(other)` (`torch.hann_window(n).to(x)`): a tensor there is a cast to `other`'s device and dtype, a dtype or a
device is not (a device is judged as a copy target elsewhere, a dtype copies nothing).

The evidence is local and read on the function that holds the use (through lambdas): another `Name` of the same
spelling in it is the receiver of a tensor-only attribute or method, or the first argument of a `torch.*` function
that takes tensors (not a factory, which takes sizes, nor a dtype or device helper).
"""
from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data import _FACTORIES
from gpulint.analysis.kinds import TENSOR_ATTRS_OTHER, TENSOR_METHODS_NUMBER, TENSOR_METHODS_OTHER

# tensor methods no dtype, device, string or number has (numpy arrays have some, but a numpy array is never a
# valid argument of `.to(...)`, so they cannot mislead the one question asked here)
_TENSOR_ONLY_METHODS = frozenset(TENSOR_METHODS_NUMBER | TENSOR_METHODS_OTHER) - {"type", "__repr__", "__str__",
                                                                                   "__format__", "__bool__",
                                                                                   "__float__", "__int__",
                                                                                   "__len__", "equal"} | {
    "view", "reshape", "clone", "detach", "contiguous", "unsqueeze", "squeeze", "permute", "transpose",
    "masked_fill", "masked_fill_", "sub_", "div_", "mul_", "add_", "sum", "mean", "float", "half", "long"}
_TENSOR_ONLY_ATTRS = frozenset(TENSOR_ATTRS_OTHER - {"names", "itemsize"}) | {"device", "real", "imag"}
# `torch.*` functions whose first argument is not a tensor (sizes, dtypes, devices, seeds) or may be anything
_NOT_A_TENSOR_ARGUMENT = frozenset({
    "device", "dtype", "finfo", "iinfo", "is_tensor", "is_storage", "set_default_dtype", "set_default_tensor_type",
    "set_default_device", "promote_types", "can_cast", "manual_seed", "Size", "tensor", "as_tensor", "from_numpy",
    "Generator", "typename", "no_grad", "enable_grad", "set_grad_enabled", "get_default_dtype", "load", "save"})


def read_as_tensor(analysis, expr: cst.BaseExpression) -> bool:
    """`expr` (a name, or `name.real`/`name.imag`/`name.data`) is read as a tensor elsewhere in its function."""
    if type(expr) is cst.Attribute and expr.attr.value in ("real", "imag", "data"):
        expr = expr.value
    if type(expr) is not cst.Name:
        return False
    index = analysis.index
    function = next((p for p in index.ancestors(expr) if type(p) is cst.FunctionDef), None)
    if function is None:
        return False
    for other in index.names(expr.value):
        if other is not expr and index.is_ancestor_or_self(function, other) and _tensor_use(analysis, other):
            return True
    return False


def _tensor_use(analysis, name: cst.Name) -> bool:
    parent = analysis.parent(name)
    if type(parent) is cst.Attribute and parent.value is name:
        attr = parent.attr.value
        if attr in _TENSOR_ONLY_ATTRS:
            return True
        return attr in _TENSOR_ONLY_METHODS and type(analysis.parent(parent)) is cst.Call
    if type(parent) is cst.Arg and parent.keyword is None and not parent.star:
        call = analysis.parent(parent)
        if type(call) is not cst.Call or not call.args or call.args[0] is not parent:
            return False
        q = analysis.qualified(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
        if q is None or not q.startswith("torch.") or q.count(".") != 1:
            return False
        function = q.split(".")[1]
        return function not in _FACTORIES and function not in _NOT_A_TENSOR_ARGUMENT and function[:1].islower()
    return False


def names_an_accelerator(analysis) -> bool:
    """`targets_gpu`, on evidence other than a `.to(` call: `.to(x)` itself says nothing of a GPU (on a CPU-only
    program every tensor is on the host, and the cast copies nothing)."""
    return analysis.fact(_names_an_accelerator)


_HINT_BUT_TO = re.compile(GPU_HINT.pattern.replace(r"|\.to\(", ""), re.IGNORECASE)


def _names_an_accelerator(analysis) -> bool:
    if not analysis.targets_gpu:
        return False
    text = analysis.source if analysis.source is not None else analysis.module.code
    if _HINT_BUT_TO.search(text) is not None:
        return True
    from gpulint.analysis.forward import feeds_a_gpu

    return feeds_a_gpu(analysis)  # a model file run every step by a loop that names the device


def given_tensor(analysis, expr: cst.BaseExpression) -> bool:
    """`expr` (a name, or `name.real`/`name.imag`/`name.data`) is a parameter of its function, maybe rebound from
    itself (`x = x.reshape(-1, n)`): what the caller passes, not a loader's batch or a value built here."""
    if type(expr) is cst.Attribute and expr.attr.value in ("real", "imag", "data"):
        expr = expr.value
    if type(expr) is not cst.Name:
        return False
    bindings = analysis.index.visible_bindings(expr)
    return any(b.kind == "param" for b in bindings) and all(
        b.kind == "param" or b.kind == "assign" and b.index is None and _from_itself(b.value, expr.value)
        for b in bindings)


def _from_itself(value, name: str) -> bool:
    """`value` is a chain of method calls (or subscripts) on `name`: `x.reshape(-1, n)`, `z.view(a, b)[0]`."""
    while type(value) in (cst.Call, cst.Subscript, cst.Attribute):
        if type(value) is cst.Call:
            if type(value.func) is not cst.Attribute:
                return False
            value = value.func.value
        else:
            value = value.value
    return type(value) is cst.Name and value.value == name
