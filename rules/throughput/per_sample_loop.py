"""GPU416 `per-sample-loop`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import Kind
from gpulint.analysis.data_facts import _walk
from gpulint.rule import Example, Family, GpuRule
from gpulint.syntax import string_value

_MOVES = {"to", "cuda", "float", "half", "bfloat16", "contiguous"}
_ON_DEVICE = {"cuda", "to"}


class PerSampleLoop(GpuRule):
    """A model run on one sample at a time, or a device tensor filled element by element, in a Python loop.

    ## What it does
    Flags two loop shapes in modules that use a GPU (a preview rule: it runs when selected, `--select GPU4`):

    - per-sample inference: inside `for x in samples:` (or `for i in range(n):` over `data[i]`), a model called
      on the loop's item made into a batch of one: `model(x.unsqueeze(0))`, `model(x[None])`,
      `model(data[i].unsqueeze(0).to(device))`, with that single argument;
    - per-element writes: `for i in range(n): out[i] = ...` where `out` was created on a device
      (`torch.zeros(n, device=device)`, `.cuda()`, `.to(device)`), in a model's `forward` or on every
      iteration of a training/eval loop.

    ## Why it is slow
    A batch of one uses a sliver of the GPU: each layer becomes a handful of tiny kernels whose launch cost
    (a few microseconds each, plus Python dispatch) exceeds the arithmetic, so N samples cost N times the
    launches of one batched call that does the same arithmetic in the same kernels. Writing a device tensor
    element by element is one kernel (and one host-to-device copy of the value) per element, and reading
    `out[i]` back in the loop a sync each time (PyTorch "Performance Tuning Guide": batch the work; the
    project's guides on GPU utilisation).

    ## Example
    ```python
    preds = []
    for x in samples:
        preds.append(model(x.unsqueeze(0).to(device)).argmax(-1))
    ```
    Use instead:
    ```python
    loader = DataLoader(samples, batch_size=256)
    preds = [model(xb.to(device)).argmax(-1) for xb in loader]
    ```
    and `out = torch.stack([...])` / one vectorised expression (`out = a[idx] * w`) instead of `out[i] = ...`.

    ## Fix
    None: batching changes shapes (padding of variable-length samples), memory and the order of results.

    ## Fix safety
    No automatic fix.

    ## When it is fine
    Interactive or demo code that classifies a handful of samples, latency-bound serving where requests come
    one at a time, autoregressive decoding (each step depends on the previous one: the rule only flags calls
    on the loop's own item, with a single argument, so `model(tokens[None])` on a growing sequence and
    recurrent cells fed their hidden state stay silent), samples of different shapes that cannot be stacked,
    host tensors filled element by element (no kernel launches), and device tensors filled once (building a
    re-parameterised kernel at load time, as timm's `reparameterize()` methods do).
    """

    code = "GPU416"
    name = "per-sample-loop"
    message = "model run on one sample at a time in a loop: a batch of one per call; batch the samples"
    family = Family.THROUGHPUT
    added_in = "0.2.0"
    preview = True
    VALID = (
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor xb in loader:\n    model(xb.cuda())\n",
        # autoregressive decoding: the input is the running sequence, not the loop's item
        "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nx = torch.zeros(4).cuda()\nfor t in range(10):\n"
        "    x = model(x.unsqueeze(0))[0]\n",
        "import torch\nout = torch.zeros(8)\nfor i in range(8):\n    out[i] = i * 2\nmodel = model.cuda()\n",
    )
    INVALID = (
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\npreds = []\nfor x in samples:\n"
                "    preds.append(model(x.unsqueeze(0).cuda()))\n",
                message="one sample at a time"),
        Example("import torch\ndevice = torch.device('cuda')\nfor x in loader:\n"
                "    out = torch.zeros(100, device=device)\n    for i in range(100):\n        out[i] = x[i] * 2\n"
                "    model(out).sum().backward()\n",
                message="element by element"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.analysis.targets_gpu or len(node.args) != 1 or node.args[0].keyword is not None:
            return
        if self.analysis.kind(node.func) is not Kind.MODULE:
            return
        loop = _enclosing_for(self.analysis, node)
        if loop is None:
            return
        item = self._batch_of_one(node.args[0].value, loop)
        if item:
            self.report(node)

    def visit_For(self, node: cst.For) -> None:
        if not self.analysis.targets_gpu or type(node.target) is not cst.Name or not _is_range(node.iter):
            return
        if not self._runs_often(node):
            return  # a one-time construction (re-parameterising a layer at load time) costs nothing per step
        body = node.body.body if type(node.body) is cst.IndentedBlock else ()
        writes = [s.body[0] for s in body if type(s) is cst.SimpleStatementLine and len(s.body) == 1
                  and isinstance(s.body[0], cst.Assign)]
        if not writes or len(writes) != len(body):
            return
        for assign in writes:
            target = assign.targets[0].target
            if len(assign.targets) == 1 and type(target) is cst.Subscript and \
                    type(target.value) is cst.Name and _indexed_by(target, node.target.value) and \
                    self._device_tensor(target.value):
                self.report(node, "a device tensor written element by element in a Python loop: one kernel and "
                                  "one copy per element; build it with one vectorised expression")
                return

    def _runs_often(self, loop: cst.For) -> bool:
        """Every step of a training/eval loop, or in a model's `forward` (which those loops call)."""
        if self.analysis.execution(loop).every_iteration:
            return True
        fn = next((a for a in self.analysis.index.ancestors(loop) if type(a) is cst.FunctionDef), None)
        return fn is not None and fn.name.value == "forward"

    # -- per-sample inference ------------------------------------------------------------------------------------
    def _batch_of_one(self, expr: cst.BaseExpression, loop: cst.For, depth: int = 0) -> bool:
        expr = _strip_moves(expr)
        inner = _unbatched(expr)
        if inner is not None:
            return self._item_of(_strip_moves(inner), loop)
        if type(expr) is cst.Name and depth < 2:
            bindings = self.analysis.index.visible_bindings(expr)
            in_loop = [b for b in bindings if b.source is not None and
                       self.analysis.index.is_ancestor_or_self(loop, b.source)]
            return bool(in_loop) and all(b.kind == "assign" and b.index is None and b.value is not None and
                                         self._batch_of_one(b.value, loop, depth + 1) for b in in_loop)
        return False

    def _item_of(self, expr: cst.BaseExpression, loop: cst.For) -> bool:
        """`expr` is the loop's item: its target (`x`, or one of `x, y`), or a container indexed by it."""
        targets = _target_names(loop.target)
        if type(expr) is cst.Name:
            return expr.value in targets
        if type(expr) is cst.Subscript and _is_range(loop.iter) and len(expr.slice) == 1:
            index = expr.slice[0].slice
            return type(index) is cst.Index and type(index.value) is cst.Name and \
                index.value.value in targets
        return False

    # -- per-element writes ----------------------------------------------------------------------------------------
    def _device_tensor(self, name: cst.Name) -> bool:
        bindings = [b for b in self.analysis.index.visible_bindings(name) if b.kind == "assign"]
        return bool(bindings) and all(b.value is not None and b.index is None and _on_device(b.value)
                                      for b in bindings)


def _enclosing_for(analysis, node: cst.CSTNode) -> Optional[cst.For]:
    for ancestor in analysis.index.ancestors(node):
        if type(ancestor) is cst.For:
            return ancestor
        if type(ancestor) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            return None
    return None


def _strip_moves(expr: cst.BaseExpression) -> cst.BaseExpression:
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _MOVES:
        expr = expr.func.value
    return expr


def _unbatched(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`x` for `x.unsqueeze(0)`, `x[None]`, `x[None, ...]`, `x[None, :]`: a batch of one made from `x`."""
    if type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
            expr.func.attr.value == "unsqueeze" and len(expr.args) == 1 and \
            isinstance(expr.args[0].value, cst.Integer) and expr.args[0].value.value == "0":
        return expr.func.value
    if type(expr) is cst.Subscript and expr.slice:
        first = expr.slice[0].slice
        if type(first) is cst.Index and type(first.value) is cst.Name and first.value.value == "None" and \
                all(type(e.slice) is cst.Slice or (type(e.slice) is cst.Index and
                                                        type(e.slice.value) is cst.Ellipsis)
                    for e in expr.slice[1:]):
            return expr.value
    return None


def _target_names(target: cst.BaseExpression) -> set[str]:
    if type(target) is cst.Name:
        return {target.value}
    if type(target) in (cst.Tuple, cst.List):
        return {n for e in target.elements for n in _target_names(e.value)}
    return set()


def _is_range(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "range"


def _indexed_by(target: cst.Subscript, var: str) -> bool:
    return any(type(e.slice) is cst.Index and type(e.slice.value) is cst.Name and
               e.slice.value.value == var for e in target.slice)


def _on_device(value: cst.BaseExpression) -> bool:
    """Created on an accelerator: a `device=` other than "cpu", or ending in `.cuda()` / `.to(<device>)`."""
    if type(value) is not cst.Call:
        return False
    if type(value.func) is cst.Attribute and value.func.attr.value in _ON_DEVICE:
        if value.func.attr.value == "cuda":
            return True
        return bool(value.args) and string_value(value.args[0].value) not in ("cpu",) and \
            value.args[0].keyword is None and not isinstance(value.args[0].value, cst.Attribute)
    for node in _walk(value):
        if type(node) is cst.Arg and node.keyword is not None and node.keyword.value == "device":
            return string_value(node.value) != "cpu"
    return False
