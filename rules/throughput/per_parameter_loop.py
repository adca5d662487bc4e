"""GPU411 `per-parameter-loop`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.calls import _call_argument, module_calls, project_calls
from gpulint.analysis.param_loops import per_parameter_loop_line
from gpulint.analysis.project import display_path
from gpulint.diagnostics import Related
from gpulint.analysis.data_facts import _walk
from gpulint.analysis.libraries import Effect
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.tree import descendants
from gpulint.analysis.training import training_facts
from gpulint.fixes import fresh_name
from gpulint.rule import Example, Family, FixAvailability, FixSafety, GpuRule, Safety

# In-place tensor methods that update a parameter, its `.data` or its `.grad` (an optimizer or EMA step by hand).
_UPDATES = {"mul_", "add_", "sub_", "div_", "lerp_", "copy_", "addcmul_", "addcdiv_", "clamp_", "clip_",
            "nan_to_num_", "mul", "add", "sub"}
_ITERATORS = {"parameters", "named_parameters"}
_REDUCTIONS = {"norm", "sum", "vector_norm", "matrix_norm"}
_BUFFERS = {"buffers", "named_buffers"}
_HOST_READS = {"item", "tolist", "cpu", "numpy"}  # a value read back to the host: a statistic, not a shadow tensor
# Methods of a module that leave its Parameter objects as they are (what a list of them built once still holds).
# Not `modules()`/`children()`: they hand out submodules, whose parameters can then be replaced.
_KEEPING = {"parameters", "named_parameters", "buffers", "named_buffers", "state_dict", "load_state_dict", "train",
            "eval", "zero_grad", "forward", "requires_grad_"}


class PerParameterLoop(GpuRule):
    """A hand-written update that loops over the model's parameters in Python every step.

    ## What it does
    Flags, on every iteration of a training loop, a `for` loop over `model.parameters()` /
    `named_parameters()` (or `zip(...)` of two of them, the EMA shape) whose body updates each parameter in
    place: `p.data.mul_(m).add_(...)`, `p.add_(p.grad, alpha=-lr)`, `p.grad.clamp_(-c, c)`,
    `ema_p.copy_(...)`, `p.grad.nan_to_num_(...)`, or a torch function (or a project wrapper of one) writing it through `out=`
    (`torch.nan_to_num(p.grad, nan=0, out=p.grad)`, a NaN clean-up of every gradient). A module's `buffers()` /
    `named_buffers()` copied the same way (an EMA model's batch-norm statistics, `b_ema.copy_(b)` every step)
    count as well, without the fix (buffers may hold integers, which the foreach kernels reject). The parameters may also come as a `list(...)` of them, a dict of named parameters
    (`OrderedDict(model.named_parameters())`, iterated with `.items()` or indexed by the loop's key:
    `ema_params[name].mul_(d)`, or iterated by key: `for k in par.keys(): par[k].data.mul_(d)`), a sequence
    named for them (`target_params`, `self.master_params`: a helper's arguments; `zip(..., strict=True)` too, and
    a `zip` of such a sequence with another one, the parameters' variable updated: `param.copy_(master)`;
    not an attribute the module also fills with fp16 master copies built by `_flatten_dense_tensors`, a few flat
    tensors),
    or an optimizer's parameter group (`for p in group["params"]:` in a hand-written
    `step` or a clipping method of an optimizer wrapper), each also through `enumerate(...)` (`for i, p in
    enumerate(params):`, the shape of torch's own for-loop optimizers); updates through `p.detach()` count. So does an EMA's shadow kept per parameter
    under the loop's key (`for name, p in m.named_parameters():` rewriting `self.shadow[name]` in place, through
    `.data`, or from itself and `p`: `shadow[name] = d * shadow[name] + (1 - d) * p`); not a dict filled from the
    parameters alone (`grads[name] = p.grad.clone()`) or with numbers read back to the host. A norm or sum of each
    parameter or gradient added into an accumulator every step (`grad_norm += p.grad.norm() ** 2`, an L2
    penalty `reg += torch.sum(p ** 2)`, or the same as one expression: `sum([torch.sum(p ** 2) for p in params])`,
    over the parameters or a comprehension filtering them) is reported with its own message (no fix; `torch._foreach_norm` or
    `torch.nn.utils.get_total_norm`), not where each term is read back with `.item()` (GPU101's sync). A helper holding such a loop is reported where
    it is written when a loop (in this module or another) calls it every step. The per-step call of a project
    function or method whose every call runs such a loop (`accumulate(g_ema, g)`, `polyak_update(
    critic.parameters(), target.parameters(), tau)`, `ema.update(model)`) is reported at the call too, with the
    loop as related location: not where the loop sits under a condition or after an early `return` under a
    test, nor where the call passes something other than parameters for the sequence the loop iterates (a list
    of batch-norm statistics). So is a library call known to
    run such a loop (`model_ema.update(model)` of timm's `ModelEma`/`ModelEmaV2`, analysis/libraries.py), also
    where the object reaches the loop as a parameter every call of the function passes it to (or `None`).
    A loop written unconditionally in the `step` of a hand-written optimizer (a top-level class deriving from a
    `torch.optim` optimizer: a project's RAdam or AdamW) is reported too where no loop is seen to call it, as the
    training loop steps it every iteration whoever calls `step` (built by name from a config:
    `getattr(optimizers, config.get("optimizer_type", "RAdam"))(...)`): in a project that moves models or tensors
    to CUDA, when another non-test module (not a package's `__init__.py`) names the class beyond its imports (a
    call, an attribute, a string equal to its name). Not an optimizer zoo only re-exported, nor one whose name a
    later import rebinds.

    ## Why it is slow
    Each in-place call is at least one kernel launch per parameter: a model with 200 parameter tensors runs 200
    to 600 tiny kernels (and as many Python dispatches) per step, each too small to fill the GPU. The
    `torch._foreach_*` functions take the whole list and launch a handful of multi-tensor kernels instead; this
    is how `torch.optim` runs by default on CUDA (GPU MODE lecture 6, "Optimizing Optimizers in PyTorch", in the
    project's guides: the for-loop implementation is the slowest of for-loop, foreach and fused).

    ## Example
    ```python
    for x, y in loader:
        loss_fn(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            for ema_p, p in zip(ema.parameters(), model.parameters()):
                ema_p.mul_(0.999).add_(p, alpha=0.001)
    ```
    Use instead:
    ```python
    ema_params, params = list(ema.parameters()), list(model.parameters())
    for x, y in loader:
        loss_fn(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            torch._foreach_mul_(ema_params, 0.999)
            torch._foreach_add_(ema_params, params, alpha=0.001)
    ```
    Gradient clipping by hand: `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm, foreach=True)` or
    `clip_grad_value_(..., foreach=True)`; SGD or weight decay by hand: a `torch.optim` optimizer
    (`torch.optim.swa_utils.AveragedModel(..., use_buffers=True)` or `get_ema_multi_avg_fn` for EMA).

    ## Fix
    Offered for the EMA loop `for e, p in zip(ema.parameters(), model.parameters()):` whose body is one update
    of a recognised shape, where the weights (`d`, `w`) do not depend on the loop's variables:
    - `e.mul_(d).add_(p, alpha=w)` and `e.data = d * e.data + w * p.data` (operands in either order) become
      `torch._foreach_mul_(E, d)` then `torch._foreach_add_(E, P, alpha=w)`: the same two operations per
      element, in the same order;
    - `e.lerp_(p, w)` becomes `torch._foreach_lerp_(E, P, w)`.

    `E` and `P` are the two parameter lists, taken the way the loop took each element: `list(ema.parameters())`
    for `e`, `[e.data for e in ema.parameters()]` for `e.data`, `[p.detach() for p in model.parameters()]` for
    `p.detach()`, so the fixed code runs in the same autograd mode as the loop did.

    A plain list (`list(ema.parameters())`) is built once, before the outermost loop around the update in the
    same function (`ema_params = list(ema.parameters())`), where it holds the same Parameter objects on every
    step: the module is a name bound only before that loop, in the same scope, never named in a `global`, and
    every later use of it, in the loop or in any function that can see it, is a call of the module
    (`model(x)`) or of a method that keeps its parameters (`parameters()`, `named_parameters()`, `buffers()`,
    `state_dict()`, `load_state_dict(...)` without `assign=`, `train()`, `eval()`, `zero_grad()`,
    `requires_grad_()`). Anything else (`modules()` and `children()`, which hand out submodules whose parameters
    can be replaced; a submodule or parameter assigned; the module passed to a function, rebound; `self.ema`)
    keeps the list per step, as does an update inside a helper with no loop of its own. `.data` and `.detach()` lists always stay per step: `.to()`, `.half()` and
    `load_state_dict(..., assign=True)` give a parameter new `.data`, which a list built once would miss. The
    per-step `list(m.parameters())` costs a walk over the module tree in Python on every step (three per step
    for an EMA's two lists), which is what the hoisting saves. Other loop bodies
    (conditions on `p.grad is None`, per-name exclusions, buffers copied alongside, hand-written SGD or
    clipping) have no fix; write the foreach shape by hand. Needs `import torch`.

    ## Fix safety
    Unsafe. The multi-tensor kernels may round differently from the per-tensor ones on a GPU (the results agree
    to the last bits, not bit for bit), and `zip` stops at the shorter of the two lists where the foreach
    functions raise when the lists differ in length (an EMA model with other parameters than the model). The
    loop's variables are no longer bound after it (code that reads `p` after the loop needs its own).

    ## When it is fine
    Loops that run once (initialisation, freezing with `requires_grad_(False)`), periodically (an EMA updated
    every N steps, with `--report-periodic` off), or outside the training loop; CPU-only code; and tiny models
    with a few parameter tensors where the launches cost microseconds. Zeroing gradients in such a loop is
    GPU405's finding.
    """

    code = "GPU411"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "per-parameter-loop"
    message = ("parameters updated one by one in a Python loop every step: one kernel per parameter; "
               "`torch._foreach_*` (or `clip_grad_norm_(..., foreach=True)`) updates them all at once")
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "the foreach kernels may round differently in the last bits, and they "
                                          "raise where zip() would stop at the shorter parameter list")
    added_in = "0.2.0"
    VALID = (
        # once, before training
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor p in model.parameters():\n"
        "    p.data.mul_(0.5)\nfor x in loader:\n    model(x).sum().backward()\n",
        # reading the parameters is not updating them
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor x in loader:\n    model(x).sum().backward()\n"
        "    norms = [p.grad.norm() for p in model.parameters()]\n",
        # a list of numbers named like parameters is not parameters: `num_params` counts
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nnum_params = [1, 2]\nfor x in loader:\n"
        "    model(x).sum().backward()\n    for n in num_params:\n        total += n\n",
        # zeroing is GPU405's
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor x in loader:\n"
        "    for p in model.parameters():\n        p.grad.zero_()\n    model(x).sum().backward()\n",
    )
    INVALID = (
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nema = torch.nn.Linear(4, 2).cuda()\n"
                "for x in loader:\n    model(x).sum().backward()\n    with torch.no_grad():\n"
                "        for e, p in zip(ema.parameters(), model.parameters()):\n"
                "            e.mul_(0.99).add_(p, alpha=0.01)\n",
                message="torch._foreach_",
                fixed="import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nema = torch.nn.Linear(4, 2).cuda()\n"
                      "ema_params = list(ema.parameters())\nmodel_params = list(model.parameters())\n"
                      "for x in loader:\n    model(x).sum().backward()\n    with torch.no_grad():\n"
                      "        torch._foreach_mul_(ema_params, 0.99)\n"
                      "        torch._foreach_add_(ema_params, model_params, alpha=0.01)\n"),
        # the model's parameter set may change inside the loop (a submodule replaced): the lists stay per step
        Example("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 2)).cuda()\n"
                "ema = torch.nn.Sequential(torch.nn.Linear(4, 2)).cuda()\n"
                "for step, x in enumerate(loader):\n    if step == 100:\n"
                "        model[0] = torch.nn.Linear(4, 2).cuda()\n    model(x).sum().backward()\n"
                "    with torch.no_grad():\n        for e, p in zip(ema.parameters(), model.parameters()):\n"
                "            e.lerp_(p, 0.01)\n",
                message="torch._foreach_",
                fixed="import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 2)).cuda()\n"
                      "ema = torch.nn.Sequential(torch.nn.Linear(4, 2)).cuda()\n"
                      "ema_params = list(ema.parameters())\n"
                      "for step, x in enumerate(loader):\n    if step == 100:\n"
                      "        model[0] = torch.nn.Linear(4, 2).cuda()\n    model(x).sum().backward()\n"
                      "    with torch.no_grad():\n"
                      "        torch._foreach_lerp_(ema_params, list(model.parameters()), 0.01)\n"),
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nema = torch.nn.Linear(4, 2).cuda()\n"
                "d = 0.999\nfor x in loader:\n    model(x).sum().backward()\n"
                "    for e, p in zip(ema.parameters(), model.parameters()):\n"
                "        e.data = d * e.data + (1 - d) * p.data\n",
                message="torch._foreach_",
                fixed="import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nema = torch.nn.Linear(4, 2).cuda()\n"
                      "d = 0.999\nfor x in loader:\n    model(x).sum().backward()\n"
                      "    torch._foreach_mul_([e.data for e in ema.parameters()], d)\n"
                      "    torch._foreach_add_([e.data for e in ema.parameters()], [p.data for p in "
                      "model.parameters()], alpha=(1 - d))\n"),
        Example("import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nfor x in loader:\n"
                "    model(x).sum().backward()\n    for p in model.parameters():\n"
                "        p.data.add_(p.grad.data, alpha=-0.1)\n",
                message="one kernel per parameter"),
        # an EMA over dicts of named parameters, the key indexing the other dict (DiT's `update_ema`)
        Example("import torch\nfrom collections import OrderedDict\n\n\n@torch.no_grad()\n"
                "def update_ema(ema, model, decay=0.9999):\n    ema_params = OrderedDict(ema.named_parameters())\n"
                "    model_params = OrderedDict(model.named_parameters())\n"
                "    for name, param in model_params.items():\n"
                "        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)\n\n\n"
                "model = torch.nn.Linear(4, 2).cuda()\nema = torch.nn.Linear(4, 2).cuda()\nfor x in loader:\n"
                "    model(x).sum().backward()\n    update_ema(ema, model)\n",
                message="one kernel per parameter"),
        # a helper given sequences of parameters, updating each through `.detach()`
        Example("import torch\n\n\ndef update_ema(target_params, source_params, rate=0.99):\n"
                "    for targ, src in zip(target_params, source_params):\n"
                "        targ.detach().mul_(rate).add_(src, alpha=1 - rate)\n\n\n"
                "model = torch.nn.Linear(4, 2).cuda()\nema = [p.clone() for p in model.parameters()]\n"
                "for x in loader:\n    model(x).sum().backward()\n"
                "    update_ema(ema, list(model.parameters()))\n",
                message="one kernel per parameter"),
    )

    library = ("`{call}(...)` runs {what} every step: {reason}; use a foreach implementation (timm's "
               "`ModelEmaV3`, whose `foreach=True` is the default)")

    reduction = ("a norm or sum of each parameter (or gradient) accumulated in a Python loop every step: one or "
                 "more kernels per parameter; `torch._foreach_norm` (or `torch.nn.utils.get_total_norm`) computes "
                 "them all at once")

    helper = ("`{call}(...)` updates parameters one by one in a Python loop every step (in `{callee}`): one "
              "kernel per parameter; `torch._foreach_*` updates them all at once")

    def visit_Call(self, node: cst.Call) -> None:
        """A library call of the table (analysis/libraries.py) that loops over the model's tensors in Python, or
        the per-step call of a project helper that does (analysis/param_loops.py), or a sum of per-parameter
        reductions (`sum([torch.sum(p ** 2) for p in params])`)."""
        if type(node.func) is cst.Name and node.func.value == "sum":
            self._summed_reductions(node)
            return
        if type(node.func) is not cst.Attribute or node.func.attr.value != "update":
            self._helper_call(node)
            return
        fact = module_calls(self.analysis).library_fact(node)
        if fact is None:
            self._helper_call(node)  # a project EMA's `update`
            return
        if fact.effect is not Effect.PER_PARAMETER_LOOP:
            return
        where = self.where(node)
        if where is not None:
            self.report(node, self.library.format(call=self.analysis.code(node.func),
                                                  what=f"`{fact.target.rsplit('.', 2)[-2]}.update`",
                                                  reason=fact.reason), where=where)

    def _summed_reductions(self, node: cst.Call) -> None:
        """`sum([torch.sum(p ** 2) for p in params_without_bn])`, `sum(p.norm() for p in model.parameters())`: an
        L2 penalty (or a norm) written as a comprehension over the parameters, every step: the loop of
        `_reduction`, one expression long (Fast AutoAugment's weight decay, heldout32a)."""
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star or \
                type(node.args[0].value) not in (cst.ListComp, cst.GeneratorExp):
            return
        comp = node.args[0].value
        if comp.for_in.inner_for_in is not None or comp.for_in.ifs and any(
                _HOST_READS & {n.attr.value for n in _walk(c) if type(n) is cst.Attribute} for c in comp.for_in.ifs):
            return
        target = _each_parameter(comp.for_in, self.analysis, None)
        if target is None or not _reduces(comp.elt, {target.value}):
            return
        where = self.where(node)
        if where is not None:
            self.report(node, self.reduction, where=where)

    def _helper_call(self, node: cst.Call) -> None:
        """`accumulate(g_ema, g, decay)` every step, where the project function runs a per-parameter update loop
        on every call: reported at the call, with the loop as related location."""
        if type(node.func) not in (cst.Name, cst.Attribute):
            return
        calls = self.analysis.fact(project_calls)  # one per module, its lookups remembered (not one per call)
        if calls is None or calls.project.is_test(Path(self.analysis.path)):
            return  # a test's loop steps a toy model: not a training step worth a finding
        where = self.where(node)
        if where is None:
            return
        found = calls.local_callee(node) or calls.callee(node)
        if found is None:
            return
        _, summary, bound = found
        loop = per_parameter_loop_line(calls.project, summary.path, summary.qualname)
        if loop is None:
            return
        line, passed = loop
        for name, position in passed:  # what the loop iterates as given must be parameters at this call
            if position is not None and bound:
                position -= 1
            value = _call_argument(node, position, name)
            if value is None or _yields_parameters(value, self.analysis, None) != "each":
                return
        shown = display_path(summary.path)
        self.report(node, self.helper.format(call=self.analysis.code(node.func), callee=summary.qualname,
                                             ), where=where,
                    related=(Related(shown, line, f"the loop over parameters in `{summary.qualname}`"),))

    def visit_For(self, node: cst.For) -> None:
        names = _parameter_names(node, self.analysis)
        if (not names or _update(node, names) is None) and _shadow_update(node, self.analysis) is None:
            if names and _reduction(node, names) is not None:
                where = self.where(node)
                if where is not None:
                    self.report(node, self.reduction, where=where)
            return
        where = self.where(node)
        if where is None:
            step = self._optimizer_step(node)
            if step is not None:
                self.report(node, f"{self.message} (in `{step}`, which runs on every optimizer step)")
            return
        fix = None
        statements = _foreach_statements(node) if training_facts(self.analysis).imports_torch_as_torch() else None
        if statements is not None:
            hoisted = self._hoisted(node, statements)
            before: list = []
            if hoisted is not None:
                outer, lists, statements = hoisted
                before = [cst.parse_statement(f"{name} = list({iterable})\n") for iterable, name in lists.items()]
            new = statements
            changes = {node: lambda updated: cst.FlattenSentinel(
                [new[0].with_changes(leading_lines=updated.leading_lines), *new[1:]])}
            if before:
                changes[outer] = lambda updated: cst.FlattenSentinel(
                    [before[0].with_changes(leading_lines=updated.leading_lines), *before[1:],
                     updated.with_changes(leading_lines=())])
            fix = self.fix("Update all parameters at once with `torch._foreach_*`", changes, safe=False)
        self.report(node, where=where, fix=fix)

    def _optimizer_step(self, loop: cst.For) -> Optional[str]:
        """`Cls.step` where `loop` is written, unconditionally, in the `step` method of a top-level class of this
        module deriving from a `torch.optim` optimizer (a hand-written RAdam or AdamW): the training loop steps it
        every iteration, whoever calls it (built from a config by name, `getattr(optimizers, name)(...)`), in a
        project that moves models or tensors to CUDA, where the class is named beyond its `class` line (not dead
        code) and not in test code. None otherwise."""
        from gpulint.analysis.trained_modules import stepped_optimizer

        a = self.analysis
        fn = a.index.enclosing_function(loop)
        if fn is None or fn.name.value != "step":
            return None
        for node in a.index.ancestors(loop):
            if node is fn:
                break
            if type(node) in (cst.If, cst.Try, cst.While, cst.Else, cst.IfExp, cst.FunctionDef, cst.Lambda):
                return None  # an optional branch (`if group["amsgrad"]:`) or a nested function
        cls = a.parent(a.parent(fn))
        if type(cls) is not cst.ClassDef or not isinstance(a.parent(cls), cst.Module):
            return None
        calls = a.fact(project_calls)
        if calls is None or a.path is None or not stepped_optimizer(calls.project, Path(a.path), cls.name.value):
            return None
        return f"{cls.name.value}.step"

    def _hoisted(self, loop: cst.For, statements):
        """(the outermost loop around `loop` in its scope, {`m.parameters()`: list name}, the foreach statements
        reading those names) where the plain parameter lists can be built once before that loop, else None.

        Sound when the list holds the same Parameter objects on every step: `m` is a name bound only before
        that loop in the same scope (no `global`), and every later use of it, here or in any function that can
        see it, is a call of the module or of a method that keeps its parameters (`parameters()`, `state_dict()`,
        `load_state_dict(...)` without `assign=`, `train()`, `eval()`, `zero_grad()`, ...): nothing re-assigns a
        submodule or a parameter. `[p.data for p in ...]` and `[p.detach() ...]` are left per step (`.to()`,
        `.half()` give a parameter new `.data`)."""
        a = self.analysis
        scope = a.index.enclosing_scope(loop)
        outer = None
        for node in a.index.ancestors(loop):
            if node is scope:
                break
            if type(node) in (cst.For, cst.While):
                outer = node
        if outer is None:
            return None
        code = [_CODE(s) for s in statements]
        lists: dict[str, str] = {}
        built = self._built_before(outer, scope)  # lists an earlier fix built before the same loop
        for arg in loop.iter.args:  # type: ignore[attr-defined]
            iterable = _CODE(arg.value)
            module = arg.value.func.value  # `m` of `m.parameters()`
            if f"list({iterable})" not in "".join(code) or iterable in lists or \
                    type(module) is not cst.Name or not self._keeps_parameters(module.value, scope, outer):
                continue
            lists[iterable] = built.get(iterable) or fresh_name(a, f"{module.value}_params")
        if not lists:
            return None
        for iterable, name in lists.items():
            code = [c.replace(f"list({iterable})", name) for c in code]
        return outer, {i: n for i, n in lists.items() if i not in built}, [cst.parse_statement(c) for c in code]

    def _built_before(self, outer: cst.CSTNode, scope) -> dict[str, str]:
        """{`m.parameters()`: name} for the `name = list(m.parameters())` statements right before `outer`, each
        name bound once and read only by `torch._foreach_*` calls (what this fix writes), for a second update
        in the same loop to reuse."""
        a = self.analysis
        block = a.parent(outer)
        body = list(getattr(block, "body", ()))
        if outer not in body:
            return {}
        found: dict[str, str] = {}
        for line in reversed(body[:body.index(outer)]):
            stmt = line.body[0] if type(line) is cst.SimpleStatementLine and len(line.body) == 1 else None
            if not (type(stmt) is cst.Assign and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target,
                    cst.Name) and type(stmt.value) is cst.Call and type(stmt.value.func) is cst.Name
                    and stmt.value.func.value == "list" and len(stmt.value.args) == 1
                    and _is_parameters_call(stmt.value.args[0].value)):
                break
            name = stmt.targets[0].target.value
            if len(a.index.lookup(name, scope)) != 1 or any(
                    not (isinstance(a.parent(n), cst.Arg) and isinstance(a.parent(a.parent(n)), cst.Call)
                         and _CODE(a.parent(a.parent(n)).func).startswith("torch._foreach_"))
                    for n in a.index.names(name) if n is not stmt.targets[0].target):
                continue
            found.setdefault(_CODE(stmt.value.args[0].value), name)
        return found

    def _keeps_parameters(self, name: str, scope, outer: cst.CSTNode) -> bool:
        a = self.analysis
        index = a.index
        bindings = index.lookup(name, scope)
        if not bindings or any(b.kind != "assign" or b.source is None or index.order(b.source) > index.order(outer)
                               or index.is_ancestor_or_self(outer, b.source) for b in bindings):
            return False
        for node in index.names(name):
            parent = a.parent(node)
            if type(parent) is cst.NameItem:  # `global name` / `nonlocal name`
                return False
            where = index.enclosing_scope(node)
            if where is scope and index.order(node) < index.order(outer):
                continue  # before the lists are built
            if where is not scope and index.lookup(name, where):
                continue  # another function's own `name`
            grand = a.parent(parent) if parent is not None else None
            if type(parent) is cst.Call and parent.func is node:
                continue  # `model(x)`
            if type(parent) is cst.Attribute and parent.value is node and parent.attr.value in _KEEPING and \
                    type(grand) is cst.Call and grand.func is parent and \
                    not any(arg.keyword is not None and arg.keyword.value == "assign" for arg in grand.args):
                continue
            return False
        return True


def _is_parameters_call(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
        expr.func.attr.value in _ITERATORS


def _is_buffers_call(expr: cst.BaseExpression) -> bool:
    """`m.buffers()` / `m.named_buffers()`: iterated like parameters, never given the foreach fix (a module's
    buffers may hold integers, `num_batches_tracked`, which `torch._foreach_lerp_` and `_mul_` reject)."""
    return type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
        expr.func.attr.value in _BUFFERS


def _parameter_names(loop: cst.For, analysis=None) -> set[str]:
    """The loop variables that stand for one parameter each (`p`, `name, p`, or the pairs of a zip), and the
    names of dicts of parameters the body indexes (`ema_params[name]`). `for i, p in enumerate(params):` (the
    for-loop shape of torch's own optimizers) iterates what `enumerate` is given, its index aside."""
    it, target = _unenumerated(loop.iter, loop.target)
    kind = _yields_parameters(it, analysis, loop)
    if kind == "named":
        if type(target) is cst.Tuple and len(target.elements) == 2:
            target = target.elements[1].value
        else:
            return set()
        return ({target.value} | _parameter_dicts(analysis, loop)) if type(target) is cst.Name else set()
    if kind == "each":
        return {target.value} if type(target) is cst.Name else set()
    if kind == "keys":  # `for k in params.keys():` / `for k in params:`, the body indexing the dicts by `k`
        return _parameter_dicts(analysis, loop) if type(target) is cst.Name else set()
    # `zip(a, b)`, `zip(a, b, strict=True)`: the keyword is an option of zip's, not a sequence
    zipped = [a for a in it.args if a.keyword is None] if type(it) is cst.Call else []
    if type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "zip" and \
            zipped and not any(a.star for a in zipped) and type(target) is cst.Tuple and \
            len(target.elements) == len(zipped):
        # the variables of the sequences that yield parameters: `for param, master in zip(model_params,
        # unflatten(...)): param.copy_(master)` copies into one parameter at a time like an EMA's pairs
        each = [_yields_parameters(a.value, analysis, loop) == "each" for a in zipped]
        return {e.value.value for e, yes in zip(target.elements, each) if yes and type(e.value) is cst.Name}
    return set()


def _unenumerated(it: cst.BaseExpression, target: cst.BaseExpression):
    """(what is iterated, the variables bound to each element): `enumerate(X)` iterated as `i, T` is `X` iterated
    as `T` (a `start=` aside); any other loop as written."""
    if type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "enumerate" and it.args \
            and it.args[0].keyword is None and not it.args[0].star \
            and all(a.keyword is not None and a.keyword.value == "start" for a in it.args[1:]) \
            and type(target) is cst.Tuple and len(target.elements) == 2:
        return it.args[0].value, target.elements[1].value
    return it, target


def _yields_parameters(expr: cst.BaseExpression, analysis, loop: cst.For, depth: int = 0) -> Optional[str]:
    """"each" when iterating `expr` yields a parameter at a time, "named" for (name, parameter) pairs, else None:
    `m.parameters()`, `m.named_parameters()`, `list(...)` of one, a dict of named parameters' `.items()` /
    `.values()`, a name bound only to one of these, or a sequence named for parameters (`model_params`,
    `self.master_params`, a helper's `target_params` argument)."""
    if depth > 3:
        return None
    if _is_parameters_call(expr):
        return "named" if expr.func.attr.value == "named_parameters" else "each"  # type: ignore[attr-defined]
    if _is_buffers_call(expr):  # an EMA's buffers copied alongside its parameters: one copy per buffer as well
        return "named" if expr.func.attr.value == "named_buffers" else "each"  # type: ignore[attr-defined]
    if type(expr) is cst.Call and not expr.args and type(expr.func) is cst.Attribute and \
            expr.func.attr.value in ("items", "values", "keys") and \
            _dict_of_parameters(expr.func.value, analysis, loop):
        return {"items": "named", "values": "each", "keys": "keys"}[expr.func.attr.value]
    if type(expr) is cst.Name and analysis is not None and depth == 0 and \
            _dict_of_parameters(expr, analysis, loop):
        return "keys"  # `for name in ema_params:` iterates a dict's keys
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value in ("list", "tuple") \
            and len(expr.args) == 1 and not expr.args[0].star:
        return _yields_parameters(expr.args[0].value, analysis, loop, depth + 1)
    if _param_group_params(expr, analysis):
        return "each"
    if type(expr) in (cst.ListComp, cst.GeneratorExp) and expr.for_in.inner_for_in is None and \
            type(expr.elt) is cst.Name:
        # `[p for name, p in model.named_parameters() if "bn" not in name]`: a filtered list of parameters
        target = _each_parameter(expr.for_in, analysis, loop, depth + 1)
        return "each" if target is not None and target.value == expr.elt.value else None
    if type(expr) is cst.Call and not expr.args and type(expr.func) is cst.Name and analysis is not None:
        return _stored_parameter_methods(expr.func, analysis)
    name = expr.value if type(expr) is cst.Name else (
        expr.attr.value if type(expr) is cst.Attribute and type(expr.value) is cst.Name
        and expr.value.value == "self" else None)
    if name is None:
        return None
    if type(expr) is cst.Name and analysis is not None:
        values = _single_value(analysis, expr)
        if values is not None:
            return _yields_parameters(values, analysis, loop, depth + 1)
    lowered = name.lower()
    if type(expr) is cst.Attribute and analysis is not None and _flattened_attribute(analysis, name):
        return None  # `self.master_params = make_master_params(...)`: a few flat tensors, not one per parameter
    return "each" if lowered.endswith(("params", "parameters")) and not lowered.startswith("num_") else None


def _each_parameter(for_in: cst.CompFor, analysis, loop, depth: int = 0) -> Optional[cst.Name]:
    """The variable a comprehension's `for` binds to one parameter at a time (`p` of `for p in params`, of `for
    name, p in model.named_parameters()`, of `for i, p in enumerate(...)`), else None."""
    it, target = _unenumerated(for_in.iter, for_in.target)
    kind = _yields_parameters(it, analysis, loop, depth)
    if kind == "named" and type(target) is cst.Tuple and len(target.elements) == 2:
        target = target.elements[1].value
    elif kind != "each":
        return None
    return target if type(target) is cst.Name else None


def _stored_parameter_methods(func: cst.Name, analysis) -> Optional[str]:
    """`gen_params()` of `for gen_params in self.param_list:` where every value the class assigns to
    `self.param_list` is a list of bound parameter methods (`[self.named_parameters]`, `[self.fc.parameters]`):
    "named" or "each" when they agree, else None (a regulariser's list of the modules it covers: SI, EWC)."""
    bindings = analysis.index.visible_bindings(func)
    if len(bindings) != 1 or bindings[0].kind != "for" or bindings[0].index is not None:
        return None
    container = bindings[0].value
    if not (type(container) is cst.Attribute and type(container.value) is cst.Name and
            container.value.value == "self"):
        return None
    calls = project_calls(analysis)
    values = calls.self_attributes(container) if calls is not None else []
    kinds = set()
    for value in values:
        if type(value) is not cst.List or not value.elements:
            return None
        for element in value.elements:
            method = element.value
            if type(element) is not cst.Element or type(method) is not cst.Attribute or \
                    method.attr.value not in ("parameters", "named_parameters"):
                return None
            kinds.add("named" if method.attr.value == "named_parameters" else "each")
    return kinds.pop() if len(kinds) == 1 else None


def _flattened_attribute(analysis, attr: str) -> bool:
    """`self.<attr>` is assigned, somewhere in the module, what a function of the module builds with
    `_flatten_dense_tensors` (fp16 master parameters: one flat tensor per parameter group, as apex and the diffusion
    trainers keep them): a loop over it runs a handful of kernels, not one per parameter."""
    from gpulint.analysis.data_facts import data_facts

    for value in data_facts(analysis).self_attributes().get(attr, ()):
        fn = analysis.loops.local_function(value) if type(value) is cst.Call else None
        if fn is not None and any(type(n) is cst.Name and n.value == "_flatten_dense_tensors" or
                                  type(n) is cst.Attribute and n.attr.value == "_flatten_dense_tensors"
                                  for n in descendants(fn)):
            return True
    return False


def _single_value(analysis, name: cst.Name) -> Optional[cst.BaseExpression]:
    bindings = analysis.index.visible_bindings(name)
    if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].index is None and \
            bindings[0].value is not None:
        return bindings[0].value
    return None


def _dict_of_parameters(expr: cst.BaseExpression, analysis, loop: cst.For) -> bool:
    """`OrderedDict(m.named_parameters())` / `dict(...)`, `m.state_dict()`, or a name bound only to one."""
    if type(expr) is cst.Name and analysis is not None:
        value = _single_value(analysis, expr)
        return value is not None and _dict_of_parameters(value, analysis, loop)
    if type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value == "state_dict" \
            and not expr.args:
        # `m.state_dict()`: its tensors share storage with the module's parameters and buffers, so updating
        # them in place updates the module (an EMA written over state dicts)
        return True
    return type(expr) is cst.Call and (dotted_name(expr.func) or "").rsplit(".", 1)[-1] in (
        "OrderedDict", "dict") and len(expr.args) == 1 and not expr.args[0].star and \
        _is_parameters_call(expr.args[0].value) and expr.args[0].value.func.attr.value == "named_parameters"


def _parameter_dicts(analysis, loop: cst.For) -> set[str]:
    """Names the loop's body indexes that hold dicts of named parameters (`ema_params[name]`)."""
    found = set()
    for node in _walk(loop.body):
        if type(node) is cst.Subscript and type(node.value) is cst.Name and \
                _dict_of_parameters(node.value, analysis, loop):
            found.add(node.value.value)
    return found


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    """`p` for `p`, `p.data`, `p.grad`, `p.grad.data`, and chained in-place calls on them."""
    while True:
        if type(expr) is cst.Attribute and expr.attr.value in ("data", "grad"):
            expr = expr.value
        elif type(expr) is cst.Call and not expr.args and type(expr.func) is cst.Attribute and \
                expr.func.attr.value == "detach":
            expr = expr.func.value  # `p.detach().mul_(d)`: a view of the same storage
        elif type(expr) is cst.Subscript and type(expr.value) is cst.Name:
            expr = expr.value  # `ema_params[name]`: a dict of parameters indexed by the loop's key
        elif type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
                expr.func.attr.value in _UPDATES:
            expr = expr.func.value
        else:
            break
    return expr.value if type(expr) is cst.Name else None


def _param_group_params(expr: cst.BaseExpression, analysis=None) -> bool:
    """`group["params"]`: the parameters of an optimizer's parameter group (`for group in self.param_groups:`,
    or a method's `group` / `param_group` argument), the model's parameters an optimizer or a clipping helper
    walks one at a time. Any name bound only by `for g in <x>.param_groups:` counts too (LARS's `g["params"]`)."""
    if type(expr) is not cst.Subscript or len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
        return False
    key = expr.slice[0].slice.value
    if not (type(key) is cst.SimpleString and key.evaluated_value == "params" and type(expr.value) is cst.Name):
        return False
    if expr.value.value.lower().endswith("group"):
        return True
    bindings = analysis.index.visible_bindings(expr.value) if analysis is not None else []
    return bool(bindings) and all(b.kind == "for" and type(b.value) is cst.Attribute
                                  and b.value.attr.value == "param_groups" for b in bindings)


def _update(loop: cst.For, names: set[str]) -> Optional[cst.CSTNode]:
    """The first in-place update of a loop variable (or its `.data`/`.grad`) in the loop's body."""
    for node in _walk(loop.body):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                node.func.attr.value.endswith("_") and node.func.attr.value in _UPDATES and \
                _root_name(node.func.value) in names:
            return node
        if type(node) in (cst.Assign, cst.AugAssign):
            targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
            if any(type(t) is cst.Attribute and t.attr.value == "data" and _root_name(t.value) in names
                   for t in targets):
                return node
            if type(node) is cst.AugAssign and _root_name(node.target) in names:
                return node  # `p -= lr * p.grad` (under no_grad), `p.grad *= scale`
        if type(node) is cst.Call and _written_out(node, names):
            return node  # `torch.nan_to_num(p.grad, nan=0, out=p.grad)`: written in place through `out=`
    return None


def _shadow_update(loop: cst.For, analysis=None) -> Optional[cst.CSTNode]:
    """The first update, in the body of `for name, p in m.named_parameters():` (or a dict of parameters'
    `.items()`), of a tensor kept per parameter under the loop's key: an EMA's shadow copies
    (`self.shadow[name].data = (1 - mu) * p.data + mu * self.shadow[name].data`, `avg[name].mul_(d)`,
    `self.backup[name] = d * self.backup[name] + (1 - d) * p`). The keyed tensor is written in place (a
    method of `_UPDATES`, its `.data` assigned, `+=`), or rebound to a value computed from itself and the
    parameter: a recurrence over the parameter's values, one or more kernels per parameter. Not a dict filled
    from the parameters alone (`grads[name] = p.grad.clone()`) nor a number (`norms[name] += p.norm().item()`)."""
    if _yields_parameters(loop.iter, analysis, loop) != "named" or type(loop.target) is not cst.Tuple or \
            len(loop.target.elements) != 2:
        return None
    key, param = (e.value for e in loop.target.elements)
    if type(key) is not cst.Name or type(param) is not cst.Name:
        return None

    def keyed(expr: cst.BaseExpression) -> bool:
        while True:
            if type(expr) is cst.Attribute and expr.attr.value == "data":
                expr = expr.value
            elif type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _UPDATES:
                expr = expr.func.value
            else:
                break
        return type(expr) is cst.Subscript and len(expr.slice) == 1 and type(expr.slice[0].slice) is cst.Index \
            and type(expr.slice[0].slice.value) is cst.Name and expr.slice[0].slice.value.value == key.value

    def from_parameter(value: cst.BaseExpression, target: Optional[cst.BaseExpression]) -> bool:
        nodes = list(_walk(value))
        reads_param = any(type(n) is cst.Name and n.value == param.value for n in nodes)
        to_host = any(type(n) is cst.Call and (type(n.func) is cst.Attribute and n.func.attr.value in _HOST_READS
                                              or type(n.func) is cst.Name and n.func.value in ("float", "int"))
                      for n in nodes)
        itself = target is None or any(type(n) is cst.Subscript and n.deep_equals(target) for n in nodes)
        return reads_param and not to_host and itself

    for node in _walk(loop.body):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value.endswith("_") \
                and node.func.attr.value in _UPDATES and keyed(node.func.value):
            return node
        if type(node) is cst.AugAssign and keyed(node.target) and from_parameter(node.value, None):
            return node
        if type(node) is cst.Assign and len(node.targets) == 1:
            target = node.targets[0].target
            if type(target) is cst.Attribute and target.attr.value == "data" and keyed(target.value) and \
                    from_parameter(node.value, None):
                return node
            if keyed(target) and type(target) is cst.Subscript and from_parameter(node.value, target):
                return node
    return None


def _reduction(loop: cst.For, names: set[str]) -> Optional[cst.AugAssign]:
    """`total += p.grad.norm() ** 2` (or `torch.sum(p ** 2)`, `torch.norm(p.grad)`, `p.abs().sum()`) in the body
    of a loop over parameters: a per-parameter reduction added into an accumulator that is not a loop variable,
    a tensor kept on the device (not a number read back with `.item()`/`float()`, a sync GPU1xx reports)."""
    for node in _walk(loop.body):
        if type(node) is not cst.AugAssign or type(node.operator) is not cst.AddAssign or \
                type(node.target) is not cst.Name or node.target.value in names:
            continue
        if _reduces(node.value, names):
            return node
    return None


def _reduces(expr: cst.BaseExpression, names: set[str]) -> bool:
    """`expr` reduces one of `names` on the device: `p.grad.data.norm()`, `p.pow(2).sum()`, `torch.norm(p.grad)`,
    `torch.sum(p ** 2)`; not when it reads the value back (`.item()`, `float(...)`: a sync GPU1xx reports)."""
    values = list(_walk(expr))
    if any(type(n) is cst.Call and (type(n.func) is cst.Attribute and n.func.attr.value in _HOST_READS or
                                    type(n.func) is cst.Name and n.func.value in ("float", "int"))
           for n in values):
        return False
    for n in values:
        if type(n) is not cst.Call:
            continue
        if type(n.func) is cst.Attribute and n.func.attr.value in _REDUCTIONS and \
                _root_name(n.func.value) in names:
            return True
        name = dotted_name(n.func) or ""
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _REDUCTIONS and n.args and \
                any(type(m) is cst.Name and m.value in names for m in _walk(n.args[0].value)):
            return True
    return False


def _written_out(call: cst.Call, names: set[str]) -> bool:
    """`torch.<op>(..., out=p.grad)`, or a project wrapper of one (`misc.nan_to_num(p.grad, nan=0, out=p.grad)`),
    whose `out=` is a loop variable (or its `.data`/`.grad`): written in place, one call per parameter."""
    out = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "out"), None)
    name = dotted_name(call.func) or ""
    return out is not None and name != "" and _root_name(out) in names


# -- the fix: recognised EMA loops -----------------------------------------------------------------------------
_CODE = cst.Module([]).code_for_node


def _element(expr: cst.BaseExpression, names: set[str]) -> Optional[tuple[str, str]]:
    """(loop variable, how the loop took it: "", ".data" or ".detach()") for `e`, `e.data`, `e.detach()`."""
    if type(expr) is cst.Name and expr.value in names:
        return expr.value, ""
    if type(expr) is cst.Attribute and expr.attr.value == "data" and type(expr.value) is cst.Name and \
            expr.value.value in names:
        return expr.value.value, ".data"
    if type(expr) is cst.Call and not expr.args and type(expr.func) is cst.Attribute and \
            expr.func.attr.value == "detach" and type(expr.func.value) is cst.Name and \
            expr.func.value.value in names:
        return expr.func.value.value, ".detach()"
    return None


def _free_of(expr: cst.BaseExpression, names: set[str]) -> bool:
    return not any(type(n) is cst.Name and n.value in names for n in _walk(expr)) and \
        not (type(expr) is cst.Name and expr.value in names)


def _weighted(expr: cst.BaseExpression, names: set[str]) -> Optional[tuple[tuple[str, str], cst.BaseExpression]]:
    """`w * x` or `x * w` with `x` a loop element and `w` free of the loop's variables."""
    if not (type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Multiply):
        return None
    for element, weight in ((expr.left, expr.right), (expr.right, expr.left)):
        taken = _element(element, names)
        if taken is not None and _free_of(weight, names):
            return taken, weight
    return None


def _ema_update(statement: cst.BaseSmallStatement, names: set[str]):
    """("muladd" | "lerp", target element, source element, d or None, w) for a recognised EMA update."""
    if type(statement) is cst.Expr and type(statement.value) is cst.Call:
        call = statement.value
        method = call.func.attr.value if type(call.func) is cst.Attribute else None
        if method == "lerp_" and len(call.args) == 2 and call.args[0].keyword is None and \
                (call.args[1].keyword is None or call.args[1].keyword.value == "weight"):
            target, source = _element(call.func.value, names), _element(call.args[0].value, names)
            if target and source and target[1] != ".detach()" and _free_of(call.args[1].value, names):
                return "lerp", target, source, None, call.args[1].value
        if method == "add_" and len(call.args) == 2 and call.args[0].keyword is None and \
                call.args[1].keyword is not None and call.args[1].keyword.value == "alpha":
            inner = call.func.value
            if type(inner) is cst.Call and type(inner.func) is cst.Attribute and \
                    inner.func.attr.value == "mul_" and len(inner.args) == 1 and inner.args[0].keyword is None:
                target, source = _element(inner.func.value, names), _element(call.args[0].value, names)
                d, w = inner.args[0].value, call.args[1].value
                if target and source and target[1] != ".detach()" and _free_of(d, names) and _free_of(w, names):
                    return "muladd", target, source, d, w
    if type(statement) is cst.Assign and len(statement.targets) == 1:
        target = _element(statement.targets[0].target, names)
        value = statement.value
        if target and target[1] == ".data" and type(value) is cst.BinaryOperation and \
                type(value.operator) is cst.Add:
            for kept, added in ((value.left, value.right), (value.right, value.left)):
                a, b = _weighted(kept, names), _weighted(added, names)
                if a and b and a[0] == target and b[0][0] != target[0]:
                    return "muladd", target, b[0], a[1], b[1]
    return None


def _foreach_statements(loop: cst.For) -> Optional[list[cst.BaseStatement]]:
    """The foreach statements that replace an EMA loop over `zip(a.parameters(), b.parameters())`, or None."""
    if loop.orelse is not None or loop.asynchronous is not None or type(loop.target) is not cst.Tuple:
        return None
    it = loop.iter
    if not (type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "zip" and
            len(it.args) == 2 and all(_is_parameters_call(a.value) and not a.value.args and a.keyword is None
                                      and a.star == "" for a in it.args)):
        return None
    variables = [e.value.value if type(e.value) is cst.Name else None for e in loop.target.elements]
    if len(variables) != 2 or None in variables or variables[0] == variables[1]:
        return None
    body = loop.body.body if type(loop.body) is cst.IndentedBlock else [loop.body]
    if len(body) != 1 or not isinstance(body[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)) or \
            len(body[0].body) != 1:
        return None
    update = _ema_update(body[0].body[0], set(variables))
    if update is None:
        return None
    kind, target, source, d, w = update
    iterables = dict(zip(variables, (_CODE(a.value) for a in it.args)))

    def listed(element: tuple[str, str]) -> str:
        name, taken = element
        return f"list({iterables[name]})" if not taken else f"[{name}{taken} for {name} in {iterables[name]}]"

    if kind == "lerp":
        lines = [f"torch._foreach_lerp_({listed(target)}, {listed(source)}, {_CODE(w)})"]
    else:
        lines = [f"torch._foreach_mul_({listed(target)}, {_CODE(d)})",
                 f"torch._foreach_add_({listed(target)}, {listed(source)}, alpha={_CODE(w)})"]
    return [cst.parse_statement(line + "\n") for line in lines]
