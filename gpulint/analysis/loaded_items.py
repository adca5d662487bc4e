"""Host tensors a loop loads itself, one item at a time: what GPU410 reports when they are copied to the GPU.

A loop that does not draw batches from a `DataLoader` often makes its input on the host in its own body, one
item per iteration, and copies it to the device:

- an item of a map-style dataset indexed directly (`image1, image2, flow = val_dataset[i]`, then
  `image1[None].cuda()`; `sample = dataset[i]`, then `sample["rays"].cuda()`): a project class deriving from a
  `Dataset` whose `__getitem__` (its own or a project base's) moves nothing to a device, or a
  `torchvision.datasets` class;
- the output of torchvision's `ToTensor()` / `transforms.functional.to_tensor(...)`, or of a `Compose([...])`
  pipeline that ends in `ToTensor()`, called on an image read this iteration (`transforms.ToTensor()(img)`);
- `torch.from_numpy(array)` of an array read this iteration.

The value is followed through the names the step binds on the way (`x = torch.from_numpy(x).permute(2, 0, 1)`,
`x = Variable(x.unsqueeze(0))`, `x = x.cuda()`), through methods that keep a tensor where it is (`.float()`,
`.unsqueeze(0)`, `.permute(...)`), through subscripts (`image1[None]`, `sample["rays"]`) and tuple unpacking of a
dataset item. Only the binding of the name that the copy reads in this step counts, and only when that binding
runs on every path to the copy: a binding under an `if`, `try`, `with` or an inner loop of the step (between it
and the loop body, or the function body for per-step code of a function) makes the value unknown. A binding
with another value (a loader batch, a call of a project helper, anything not listed) makes it unknown too.

`loaded_on_host(analysis, expr, copy, boundary)` answers with a short description of the source (`` `val_dataset[...]` ``
, `` `ToTensor()` ``, `` `torch.from_numpy` ``) or None.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.data import _SAME_ON_DEVICE

# Methods whose result is the same tensor (or a view, or a converted copy) where the tensor is.
_STAYS = _SAME_ON_DEVICE | {"permute", "transpose", "detach", "unsqueeze_", "squeeze_", "div", "sub", "mul",
                            "add", "div_", "sub_", "mul_", "add_"}
# Wrappers that hand back their argument (the pre-0.4 autograd wrapper).
_WRAPPERS = {"torch.autograd.Variable", "torch.autograd.variable.Variable"}
_TO_TENSOR = {"torchvision.transforms.ToTensor", "torchvision.transforms.transforms.ToTensor",
              "torchvision.transforms.PILToTensor", "torchvision.transforms.v2.ToTensor"}
_TO_TENSOR_FUNCS = {"torchvision.transforms.functional.to_tensor", "torchvision.transforms.functional.pil_to_tensor"}
_COMPOSE = {"torchvision.transforms.Compose", "torchvision.transforms.transforms.Compose",
            "torchvision.transforms.v2.Compose"}
# Readers of a file into a new host tensor (torchaudio's returns `(waveform, sample_rate)`).
_FILE_READERS = {"torchaudio.load", "torchvision.io.read_image", "torchvision.io.decode_image",
                 "torchvision.io.image.read_image"}
_TENSOR_TRANSFORMS = {f"torchvision.transforms.{n}" for n in ("Normalize", "Resize", "CenterCrop")} | \
                     {f"torchvision.transforms.transforms.{n}" for n in ("Normalize", "Resize", "CenterCrop")}
_DEPTH = 8
_BLOCKS = (cst.If, cst.Try, cst.For, cst.While, cst.With, cst.Else, cst.ExceptHandler, cst.Finally)


def loaded_on_host(analysis, expr: cst.BaseExpression, copy: cst.CSTNode, boundary: cst.CSTNode,
                   depth: int = 0) -> Optional[str]:
    """What loads `expr` on the host in this step (a description), else None. `copy` is the node reading
    `expr` (bindings after it do not count); `boundary` is the block that is one step (the loop's body, or the
    per-step function's body): bindings are followed within it only."""
    if depth > _DEPTH:
        return None
    while True:
        if type(expr) is cst.Subscript:
            item = _dataset_item(analysis, expr)
            if item is not None:
                return item  # `dataset[i][0].cuda()`
            expr = expr.value
        elif type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _STAYS:
            expr = expr.func.value
        elif type(expr) is cst.Call and len(expr.args) == 1 and not expr.args[0].keyword and \
                not expr.args[0].star and (analysis.qualified(expr.func) in _WRAPPERS
                                           or _tensor_transform(analysis, expr.func)):
            expr = expr.args[0].value  # `Variable(x)`, `normalize(x)` of a torchvision `Normalize(...)`
        else:
            break
    if type(expr) is cst.Call:
        return _source(analysis, expr)
    if type(expr) is not cst.Name:
        return None
    binding = _step_binding(analysis, expr, copy, boundary)
    if binding is None or binding.kind != "assign" or binding.value is None:
        return None
    value = binding.value
    if binding.index is not None:  # `image1, image2, flow = dataset[i]`: an element of a dataset item
        if binding.index == 0 and type(value) is cst.Call and analysis.qualified(value.func) in _FILE_READERS:
            return f"`{analysis.qualified(value.func)}`"  # `wav, sr = torchaudio.load(path)`
        return _dataset_item(analysis, value)
    return _dataset_item(analysis, value) or loaded_on_host(analysis, value, binding.source, boundary, depth + 1)


def _step_binding(analysis, name: cst.Name, copy: cst.CSTNode, boundary: cst.CSTNode):
    """The binding of `name` that `copy` reads in this step: the last one in `boundary` before `copy`, when it
    runs on every path (no branch, `try`, `with` or inner loop between it and `boundary`); else None."""
    index = analysis.index
    before = [b for b in analysis.index.visible_bindings(name)
              if b.source is not None and index.is_ancestor_or_self(boundary, b.source)
              and index.order(b.source) < index.order(copy) and not index.is_ancestor_or_self(b.source, copy)]
    if not before:
        return None
    last = max(before, key=lambda b: index.order(b.source))
    node = analysis.parent(last.source)
    while node is not None and node is not boundary:
        if type(node) in _BLOCKS:
            return None
        node = analysis.parent(node)
    return last if node is boundary else None


def _tensor_transform(analysis, func: cst.BaseExpression) -> bool:
    """`func` is a name bound only to torchvision tensor transforms (`Normalize(...)`), which keep a tensor where
    it is."""
    if type(func) is not cst.Name:
        return False
    values = [b.value for b in analysis.index.visible_bindings(func)]
    return bool(values) and all(type(v) is cst.Call and analysis.qualified(v.func) in _TENSOR_TRANSFORMS
                                for v in values)


def _source(analysis, call: cst.Call) -> Optional[str]:
    q = analysis.qualified(call.func)
    if q == "torch.from_numpy" or q in _FILE_READERS:
        return f"`{q}`"
    if q in _TO_TENSOR_FUNCS:
        return f"`{q.rsplit('.', 1)[-1]}`"
    if type(call.func) is cst.Call and _converts(analysis, call.func):
        return "`ToTensor()`"
    if type(call.func) is cst.Name:
        values = [b.value for b in analysis.index.visible_bindings(call.func)]
        if values and all(type(v) is cst.Call and _converts(analysis, v) for v in values):
            return f"`{call.func.value}` (a pipeline ending in `ToTensor()`)"
    return None


def _converts(analysis, built: cst.Call) -> bool:
    """`ToTensor()`, or `Compose([..., ToTensor(), ...])` of a literal list whose last step makes a tensor on the
    host (a later step is a tensor transform such as `Normalize`, which keeps it there)."""
    q = analysis.qualified(built.func)
    if q in _TO_TENSOR:
        return True
    if q not in _COMPOSE or len(built.args) != 1 or type(built.args[0].value) not in (cst.List, cst.Tuple):
        return False
    steps = [e.value for e in built.args[0].value.elements]
    found = [i for i, s in enumerate(steps) if type(s) is cst.Call and analysis.qualified(s.func) in _TO_TENSOR]
    if not found:
        return False
    later = steps[found[-1] + 1:]
    return all(type(s) is cst.Call and (analysis.qualified(s.func) or "").startswith("torchvision.transforms.")
               for s in later)


def _dataset_item(analysis, value: cst.BaseExpression) -> Optional[str]:
    """`dataset[i]` of a map-style dataset whose items are host tensors: its description, else None."""
    if type(value) is cst.Call:
        return _item_method(analysis, value)
    if type(value) is not cst.Subscript or len(value.slice) != 1 or \
            type(value.slice[0].slice) is not cst.Index or type(value.value) is not cst.Name:
        return None
    holder = value.value
    bindings = analysis.index.visible_bindings(holder)
    if not bindings or any(b.kind != "assign" or b.index is not None or type(b.value) is not cst.Call
                           for b in bindings):
        return None
    for b in bindings:
        if not (analysis.qualified(b.value.func) or "").startswith("torchvision.datasets.") and \
                not _host_dataset(analysis, b.value):
            return None
    return f"`{holder.value}[...]` (an item of a dataset, built on the host)"


def _item_method(analysis, call: cst.Call) -> Optional[str]:
    """`dataset.pull_item(i)`: a method of a project map-style dataset that its own `__getitem__` serves its items
    with (`def __getitem__(self, index): im, gt, h, w = self.pull_item(index); return im, gt`), called with one
    index, on an object every binding (or every call site, for a parameter) makes an instance of such a class
    whose `__getitem__` moves nothing to a device: the same host item as `dataset[i]`."""
    func = call.func
    if type(func) is not cst.Attribute or type(func.value) is not cst.Name or len(call.args) != 1 or \
            call.args[0].keyword is not None or call.args[0].star or func.attr.value.startswith("__"):
        return None
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    classes = calls.instance_classes(func.value)
    if not classes or not all(_host_items(calls.project, cls) and _serves_items_with(calls.project, cls,
                                                                                       func.attr.value)
                              for cls in classes):
        return None
    return f"`{func.value.value}.{func.attr.value}(...)` (an item of a dataset, built on the host)"


def _serves_items_with(project, cls, method: str) -> bool:
    """The class's `__getitem__` (its own or a project base's) calls `self.<method>(<its index parameter>)`."""
    from gpulint.analysis.hierarchy import first_bases

    chain = list(first_bases(project, cls, 6))
    getitem = next((c.methods["__getitem__"] for c in chain if "__getitem__" in c.methods), None)
    if getitem is None or len(getitem.args.args) != 2:
        return False
    index = getitem.args.args[1].arg
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method and
               isinstance(node.func.value, ast.Name) and node.func.value.id == "self" and len(node.args) == 1 and
               isinstance(node.args[0], ast.Name) and node.args[0].id == index for node in ast_walk.walk(getitem))


def _host_dataset(analysis, built: cst.Call) -> bool:
    """`built` makes an instance of a project map-style dataset class whose `__getitem__` moves nothing to a
    device (and is not given device tensors to serve)."""
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    if calls is None:
        return False
    # one class, or each class of a registry (`dataset_dict[args.dataset_name](**kwargs)`): all must serve host items
    classes = calls.instance_classes(built) or calls.registry_classes(built.func)
    return bool(classes) and all(_host_items(calls.project, cls) for cls in classes) and \
        not any(_names_device(analysis, a.value) for a in built.args)


def _host_items(project, cls) -> bool:
    from gpulint.analysis.hierarchy import first_bases

    chain = list(first_bases(project, cls, 6))
    if not any(base.rsplit(".", 1)[-1] == "Dataset" for c in chain for base in c.bases):
        return False
    getitem = next((c.methods["__getitem__"] for c in chain if "__getitem__" in c.methods), None)
    if getitem is None:
        return False
    for node in ast_walk.walk(getitem):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("cuda", "to"):
            return False  # it may move its items itself (`.to(self.device)`): not told here
        if isinstance(node, ast.keyword) and node.arg == "device":
            return False
    return True


def _names_device(analysis, expr: cst.BaseExpression) -> bool:
    text = analysis.code(expr)
    return "cuda" in text or "device" in text
