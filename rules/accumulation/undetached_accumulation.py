"""GPU301 `undetached-accumulation`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules._examples import ACCUMULATING_STEP, SCRIPT_HEAD
from gpulint.syntax import method_call
from gpulint.analysis.accumulators import (_backwarded_names, _base_name, _bindings, _method, _returned_names,
                                           _self_referencing, backwarded_in, carries_graph, certainly_tensor,
                                           under_no_grad)


class UndetachedAccumulation(GpuRule):
    """A loss or model output accumulated across iterations without `.detach()`.

    ## What it does
    Flags `total += loss`, `total = total + loss`, `losses.append(loss)` and `history[k] += out` every
    iteration of a training or evaluation loop, when the accumulator outlives the iteration and the value still
    carries autograd history (a loss, a model output, or math on them without `.detach()`, `.item()` or
    `torch.no_grad()`).

    ## Why it is slow
    The sum (or the list) holds a reference to each step's autograd graph, so the activations of every step
    stay in GPU memory until the accumulator is dropped: memory grows each step, and the graph is walked again
    when anything backpropagates through the sum. The PyTorch FAQ: "Don't accumulate history across your
    training loop".

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```
    Use instead:
    ```python
        total_loss += loss.detach()
    ```

    ## Fix
    Appends `.detach()` to the accumulated value (parenthesised where needed).

    ## Fix safety
    Safe: the values are the same; only the graph is dropped, and nothing backpropagates through the
    accumulator (the rule stays silent when it does). No fix when the value may not be a tensor (a bare model
    output can be a tuple or a dict): the finding is reported without one.

    ## When it is fine
    Deliberate gradient accumulation, where the accumulator (or a value built from it) is later `.backward()`-ed
    or returned for that; loops under `torch.no_grad()`/`torch.inference_mode()` (with-blocks or decorators);
    values that are already detached or Python numbers; sums reset inside the iteration (`loss += aux_loss`).
    """

    code = "GPU301"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "undetached-accumulation"
    message = "accumulating a value that carries autograd history keeps every step's graph alive; add `.detach()`"
    family = Family.ACCUMULATION
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(
        Safety.SAFE, "the values are the same; only the autograd graph, which nothing backpropagates through, "
                     "is dropped")
    VALID = [
        ACCUMULATING_STEP + "    total += loss.detach()\nprint(total)\n",
        # gradient accumulation through an alias: the sum is backpropagated, not leaked
        SCRIPT_HEAD + "acc = 0\nfor step, (x, y) in enumerate(loader):\n    acc = acc + criterion(model(x), y)\n"
                      "    if step % 4 == 3:\n        scaled = acc / 4\n        scaled.backward()\n        acc = 0\n",
        # `no_grad` around the loop
        SCRIPT_HEAD + "with torch.no_grad():\n    total = 0\n    for x, y in loader:\n"
                      "        total += criterion(model(x), y)\n",
        # `set_grad_enabled(False)` is `no_grad`
        SCRIPT_HEAD + "total = 0\nwith torch.set_grad_enabled(False):\n    for x, y in loader:\n"
                      "        total += criterion(model(x), y)\n",
    ]
    _SUM_PRINTED = ("total = 0\nfor x, y in loader:\n    loss = criterion(model(x), y)\n    loss.backward()\n"
                    "    total += loss{}\nprint(f\"{{total:.3f}}\")\n")
    _OUTPUT_LIST = ("class Net(nn.Module):\n    def forward(self, x):\n        return x, x\nnet = Net()\nouts = []\n"
                    "for x, y in loader:\n    net(x)[0].sum().backward()\n    outs.append(net(x))\n")
    INVALID = [
        Example(ACCUMULATING_STEP + "    total += loss\nprint(total)\n",
                message="accumulating a value that carries autograd history keeps eve",
                fixed=ACCUMULATING_STEP + "    total += loss.detach()\nprint(total)\n"),
        # an undetached sum printed with a format spec: detached, then quiet
        Example(SCRIPT_HEAD + _SUM_PRINTED.format(""), fixed=SCRIPT_HEAD + _SUM_PRINTED.format(".detach()")),
        # a list of model outputs that may be tuples: reported, no fix
        Example(SCRIPT_HEAD + _OUTPUT_LIST),
    ]

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if type(node.operator) in (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign):
            self._check(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if len(node.targets) != 1 or type(value) is not cst.BinaryOperation or \
                type(value.operator) not in (cst.Add, cst.Subtract):
            return
        target = node.targets[0].target
        code = self.analysis.code(target)
        if self.analysis.code(value.left) == code:
            self._check(node, target, value.right)
        elif self.analysis.code(value.right) == code and type(value.operator) is cst.Add:
            self._check(node, target, value.left)

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "append")
        if attr is not None and len(node.args) == 1 and node.args[0].keyword is None:
            self._check(node, attr.value, node.args[0].value)

    def _check(self, node: cst.CSTNode, accumulator: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if carries_graph(self.analysis, value) is not True:
            return
        where = self.where(node)
        if not where or where.loop is None:
            return
        if not self._outlives_iteration(accumulator, where.loop):
            return
        if under_no_grad(self.analysis, node) or under_no_grad(self.analysis, where.loop):
            return
        name = _base_name(accumulator)
        scope = self.analysis.index.enclosing_scope(node)
        if name is not None and name.value in _backwarded_names(self.analysis, scope):
            return
        # Returned for the caller to backpropagate: fine, unless the loop already ran backward through the
        # value each step (then the returned accumulator only keeps every step's spent graph alive).
        if name is not None and name.value in _returned_names(self.analysis, scope) and \
                not backwarded_in(self.analysis, where.loop.body, value):
            return
        fix = None
        if certainly_tensor(self.analysis, value):
            fix = self.fix("Append `.detach()`", {value: _method(value, "detach")}, safe=True)
        self.report(node, where=where, fix=fix)

    def _outlives_iteration(self, accumulator: cst.BaseExpression, loop) -> bool:
        """Bound before the loop and not rebound inside it: the value carries over from step to step."""
        name = _base_name(accumulator)
        if name is None:
            return False
        bindings = [b for b in _bindings(self.analysis, name) if b.kind != "augassign"]
        index = self.analysis.index
        scope = index.enclosing_scope(accumulator)
        # In a per-step helper the loop is in its caller: a plain binding of the helper's own local runs on each
        # call (`loss = a * ce` then `loss += b * mlm` in `step()`), so it is rebound every iteration too.
        helper = type(scope) is cst.FunctionDef and not index.is_ancestor_or_self(scope, loop)
        inside = [b for b in bindings if b.source is not None and (
            index.is_ancestor_or_self(loop.body, b.source) or
            helper and b.scope is scope and b.kind == "assign")]
        outside = [b for b in bindings if b not in inside]
        # A reset under `if step % N == 0:` still lets N steps' graphs pile up; one every step does not.
        rebinds = [b for b in inside if not (type(b.source) is cst.Assign and _self_referencing(
            self.analysis, b.source, name.value)) and self.analysis.execution(b.source).every_iteration]
        return bool(outside) and not rebinds
