"""Values known to live in host memory that the kinds alone cannot tell (`KindInference.on_host`'s hooks).

- A torch factory called without `device=` (`torch.randint(0, n, (b,))`, `torch.zeros(n)`, `torch.arange(n)`)
  builds its tensor on the CPU, unless the program sets a CUDA default tensor type or device
  (`analysis/default_device.py`) or the call runs inside a `with` that names a device (`with torch.device(...)`).
- A call that names the CPU as its `device=` (`sample(population, k, device="cpu")`) builds its result there.
- A call of a project function or method every `return` of which is a host copy (`return loss.detach().cpu()`:
  `FunctionSummary.returns_host_copy`) holds a host value.
- A parameter of a function or method of this module is a host value where the function's every call in the
  module (`self.update_average(loss, avg)`, `helper(x)`) passes one and no other project file names the
  function (a caller elsewhere could pass anything).

Reading such a value (`.item()`, `if x < 0:`, `torch.isfinite(x)` in a branch) waits for no GPU.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

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
    if type(func) is cst.Attribute and func.attr.value in ("cpu", "numpy", "tolist", "item", "to", "cuda"):
        return False  # copies: `on_host` reads those itself
    device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is not None:
        from gpulint.analysis.data_facts import CPU, data_facts

        return data_facts(analysis).device_of(device) == CPU  # `sample(n, k, device="cpu")`: built there
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    target = (calls.callee(call, own_module=True) or calls.local_callee(call)) if calls is not None else None
    return target is not None and target[1].returns_host_copy


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
