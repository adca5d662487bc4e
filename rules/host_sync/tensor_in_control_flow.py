"""GPU106 `tensor-in-control-flow`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.analysis import Kind
from gpulint.analysis.host_reads import nan_check


class TensorInControlFlow(GpuRule):
    """Python control flow on a tensor's value (`if loss > x:`, `while t.any():`, `assert t`).

    ## What it does
    Flags `if`, `elif`, `while`, `assert`, conditional expressions, a comprehension's `if` filter and
    `and`/`or`/`not` whose condition is a tensor, on every iteration of a training/eval loop; also a chained
    comparison with a tensor before its last operator (`S_min <= t_cur <= S_max`: Python calls `bool()` on
    `S_min <= t_cur` to decide whether to go on).

    ## Why it is slow
    Python must know the value to pick a branch, so it calls `bool()` on the tensor: a blocking copy to the host
    that waits for the GPU to finish all queued work.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        if loss > best:
            best = loss
    ```
    Keep the decision on the device: `best = torch.minimum(best, loss.detach())`, or decide periodically.

    ## Fix
    None: the branch needs a host value; restructure with `torch.where`, `torch.minimum`, or a periodic check.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic checks, early-stopping decisions once per epoch, conditions on Python numbers.
    NaN/Inf checks have their own rule with a fix (GPU108).
    """

    code = "GPU106"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "tensor-in-control-flow"
    message = "branching on a tensor's value calls `bool()` on it every iteration: the CPU waits for the GPU"
    family = Family.HOST_SYNC
    VALID = [TRAIN_STEP + "if loss > 0:\n    pass\n",
             # torch's settings and flags are not tensors
             "import torch\nfor x in loader:\n    dtype = torch.get_autocast_gpu_dtype()\n"
             "    if dtype == torch.bfloat16 and torch.is_autocast_cache_enabled():\n        x = x.cuda()\n"
             "    model(x).sum().backward()\n",
             # a chained comparison of a batch object's counts (PyG's `num_graphs`, Python ints)
             "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nfor batch in loader:\n    batch = batch.cuda()\n"
             "    assert batch.num_graphs == len(batch) == 2\n    model(batch.x).sum().backward()\n",
             # a comprehension filtering a Python list: host values
             TRAIN_STEP + "    sizes = [3, 0, 2]\n    kept = [i for i, n in enumerate(sizes) if n > 0]\n",
             # the builtin over host values (`.item()` copies) or with a `key=`
             TRAIN_STEP + "    scores = []\n    scores.append(loss.item())\n    best = max(scores)\n"
             "    longest = max([loss, loss], key=len)\n"]
    INVALID = [
        Example(TRAIN_STEP + "    if loss > 0:\n        pass\n",
                message="branching on a tensor's value calls `bool()` on it every ite"),
        # a chained comparison decides on `0 < loss` before it compares `loss < 10`
        Example(TRAIN_STEP + "    scale = 2 if 0 < loss < 10 else 1\n",
                message="branching on a tensor's value calls `bool()` on it every ite"),
        # a comprehension over a device tensor filters on each element's value: one `bool()` per element
        Example(TRAIN_STEP + "    picked = [i for i, v in enumerate(loss.view(-1)) if v > 0]\n",
                message="a comprehension's `if` filter on a tensor's value calls `bool()`"),
        # the builtin `max` compares the collected device tensors with Python
        Example(TRAIN_STEP + "    scores = []\n    scores.append(loss.detach())\n    best = max(scores)\n",
                message="`max(...)` compares device tensors in Python"),
    ]

    filter_message = "a comprehension's `if` filter on a tensor's value calls `bool()` on each element every " \
                     "iteration: the CPU waits for the GPU; select on the device (`torch.nonzero(mask)`, " \
                     "`t[mask]` once) or copy the values to the host once (`.tolist()`)"
    builtin_message = "`{builtin}(...)` compares device tensors in Python: each comparison calls `bool()` on a " \
                      "tensor every iteration and the CPU waits for the GPU; stack them and reduce on the device " \
                      "(`torch.stack(xs).max()`, `torch.maximum(a, b)`)"

    def _check(self, test: cst.BaseExpression) -> None:
        if not self.analysis.is_device_tensor(test) and not self._truthiness_of_tensor(test):
            return
        if nan_check(self.analysis, test) is not None:
            return
        where = self.where(test)
        if where:
            self.report(test, where=where)

    def _truthiness_of_tensor(self, test: cst.BaseExpression) -> bool:
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            return self.analysis.is_device_tensor(test.expression)
        if type(test) is cst.BooleanOperation:
            return self.analysis.is_device_tensor(test.left) or self._truthiness_of_tensor(test.left)
        return False

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        # `[i for i, w in enumerate(next_words) if w != end]`: the filter calls `bool()` on each element's test;
        # reported on the comprehension (where its statement starts when it is written over several lines)
        test = node.test
        if not self.analysis.is_device_tensor(test) and not self._truthiness_of_tensor(test):
            return
        if nan_check(self.analysis, test) is not None:
            return
        shown = next((a for a in self.analysis.index.ancestors(node)
                      if type(a) in (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)), test)
        where = self.where(test)
        if where:
            self.report(shown, self.filter_message, where=where)

    def visit_Call(self, node: cst.Call) -> None:
        """`max(scores)` of a list of device tensors (or of a device tensor, iterated), `min(loss, best)`: the
        builtin compares with Python, one `bool()` of a device tensor per comparison."""
        func = node.func
        if type(func) is not cst.Name or func.value not in _COMPARING_BUILTINS or \
                self.analysis.index.visible_bindings(func):
            return
        if any(a.star or a.keyword is not None and a.keyword.value == "key" for a in node.args):
            return  # `max(xs, key=len)`: the key decides what is compared
        values = [a.value for a in node.args if a.keyword is None]
        if not values or func.value == "sorted" and len(values) != 1:
            return
        if len(values) == 1:
            compared = self.analysis.is_device_tensor(values[0]) and self.analysis.kind(values[0]) is not Kind.NUMBER \
                or self._device_tensors_collected(values[0])
        else:
            compared = any(self.analysis.is_device_tensor(v) for v in values)
        if not compared:
            return
        where = self.where(node)
        if where:
            self.report(node, self.builtin_message.format(builtin=func.value), where=where)

    def _device_tensors_collected(self, value: cst.BaseExpression) -> bool:
        """A name bound only to empty lists (`scores = []`, `list()`) that this scope fills with device tensors
        only (`scores.append(loss)`, `scores.extend(top_scores[done])`)."""
        if type(value) is not cst.Name:
            return False
        bindings = self.analysis.index.visible_bindings(value)
        if not bindings or any(b.kind != "assign" or b.index is not None or not _empty_list(b.value)
                               for b in bindings):
            return False
        scope = bindings[0].scope
        added = []
        for name in self.analysis.index.names(value.value):
            attribute = self.analysis.parent(name)
            if type(attribute) is not cst.Attribute or attribute.value is not name:
                continue
            call = self.analysis.parent(attribute)
            if attribute.attr.value in ("append", "extend", "insert") and type(call) is cst.Call and \
                    call.func is attribute and self.analysis.index.enclosing_scope(name) is scope:
                if not call.args:
                    return False
                added.append(call.args[-1].value)
        return bool(added) and all(self.analysis.is_device_tensor(a) for a in added)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `lo <= t <= hi` is `(lo <= t) and (t <= hi)`: every link but the last goes through `bool()`
        if len(node.comparisons) < 2 or any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn)
                                            for c in node.comparisons[:-1]):
            return
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        # not an attribute of a batch object (`batch.num_graphs == len(batch) == 2`: PyG's counts are Python ints)
        if not any(type(o) is not cst.Attribute and self.analysis.is_device_tensor(o) for o in operands[:-1]):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)


# Python builtins that order their arguments (or the items of one iterable) by comparing them
_COMPARING_BUILTINS = frozenset({"max", "min", "sorted"})


def _empty_list(value) -> bool:
    """`[]` or `list()`."""
    return type(value) is cst.List and not value.elements or type(value) is cst.Call and \
        type(value.func) is cst.Name and value.func.value == "list" and not value.args
