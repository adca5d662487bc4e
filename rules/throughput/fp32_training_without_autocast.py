"""GPU403 `fp32-training-without-autocast`."""

from __future__ import annotations

import re

from typing import Optional

import libcst as cst

from gpulint.analysis import Kind
from gpulint.analysis.training import training_facts
from gpulint.analysis.tree import child_nodes
from gpulint.rule import Example, Family, Fix, FixAvailability, FixSafety, GpuRule, Safety
from gpulint.syntax import statement_of

AUTOCAST = 'torch.autocast("cuda", dtype=torch.bfloat16)'


_GPT = ("import torch\nfrom model import GPT\nmodel = GPT().cuda()\nopt = torch.optim.AdamW(model.parameters(), fused=True)\n"
        "for x, y in loader:\n{forward}    opt.zero_grad(set_to_none=True)\n    loss.backward()\n    opt.step()\n")


class Fp32TrainingWithoutAutocast(GpuRule):
    """A CUDA training step computed entirely in fp32: no autocast, no half-precision model.

    ## What it does
    Flags the forward pass of a training step that runs every iteration (the step's first model call before
    `loss.backward()`, or the first call handed the model, such as `diffusion.training_losses(model, x, t)`;
    else the call the back-propagated loss is read back to through the step's assignments (`loss, acc =
    segmentation_module(batch)` then `loss = loss.mean()`; `outputs, losses = self.process_batch(inputs)` then
    `losses["loss"].backward()`; the trainer's method called on its own line that assigns what the loss reads,
    `self.netG_forward()` setting `self.E` before `loss = self.lossfn(self.E, self.H)`), never a loss module
    (`self.G_lossfn(...)`, `criterion(...)`) while another call qualifies, one finding per step function for the
    losses read back this way (a GAN's discriminator losses); `loss.backward()` itself where none is found), in a module that trains on CUDA (in a loop over
    batches, or a `while` loop drawing a batch every iteration: `while True: x = next(it)`) and never mentions
    reduced precision: no `torch.autocast` / `torch.amp.autocast` / `torch.cuda.amp.autocast`,
    no `.half()` / `.bfloat16()`, no `dtype=` argument (other than a NumPy float64 one: a schedule's host arrays;
    an integer dtype counts, as measured: autocast slowed the launch-bound shapes that name only token-id or
    image dtypes), no GradScaler, no `mixed_precision` or `precision` setting
    (`precision=`, `args.precision`, `--precision`; a detection metric's `precision, recall = ...` is none;
    neither is a NumPy float64 or float32 host array). The step may also be a method or function of this module
    that a loop of another project module runs every step (a trainer's `forward_backward(data)` called by its
    engine's batch loop, an algorithm's `update(minibatches)` called by the training script) and steps an
    optimizer there (not Grad-CAM's `score.backward()` for a saliency map): reported when either module names
    CUDA and neither chooses a precision, with the loop's call as related location. A module names CUDA also
    where it moves its model to a device it imports from a project module that binds it to CUDA at its top level
    (`from conf import *` with conf.py's `device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")`). A call
    of a method of the class (or a function of the module) that runs the model (`self.predict(x)`,
    `self.process_batch(inputs)`) is the forward pass when the step has no model call of its own.

    ## Why it is slow
    In fp32 the matmuls and convolutions of the forward and backward pass run on the slow fp32 path (or TF32),
    and every activation takes twice the memory traffic of bf16. Under `torch.autocast(..., dtype=torch.bfloat16)`
    those ops run on the bf16 tensor cores while reductions, softmax and losses stay in fp32 (PyTorch "Automatic
    Mixed Precision" docs). bf16 autocast was one of the two levers left after the data path on an H100 (the
    project's measurements in /work/shared/facts.md; the guides' "mixed precision" sections).

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
    ```
    Use instead:
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
            loss = criterion(out, y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix
    Wraps the statements that compute the forward pass and the loss (from the first model call up to, not
    including, `backward()`) in `with torch.autocast("cuda", dtype=torch.bfloat16):`. bf16 has fp32's exponent
    range, so no GradScaler is needed; the fix never writes fp16. Offered only when those statements are
    consecutive simple assignments in the same block as `backward()`, include the model call itself (not only
    a loss over an output computed earlier, behind a `zero_grad()` or in another block), and `torch` is
    imported as `torch`; otherwise the finding has no fix.

    ## Fix safety
    Unsafe: the forward pass is computed in bf16 (8 bits of mantissa), so activations, the loss and the
    gradients change; most models train to the same accuracy, some (very deep nets without normalisation,
    losses computed by hand in low precision) need care. Tensors assigned inside the block (the model output)
    are bf16 afterwards.

    ## When it is fine
    CPU-only modules, modules that already choose a precision anywhere (autocast, `.half()`, `dtype=`,
    accelerate's `mixed_precision`, TF32 settings), projects that set torch's default dtype to anything but fp32
    (`torch.set_default_dtype(torch.float64)`, directly or through a project helper given an option: a float64
    model on purpose, such as an interatomic potential), inference-only loops, and models whose accuracy is known
    to need fp32: suppress with `# noqa: GPU403`. No automatic fix where the module builds `nn.GroupNorm`
    layers (a diffusion UNet): autocast runs `group_norm` in fp32, so every GroupNorm casts the bf16 activations
    around it, and on an H100 a small UNet ran slower with bf16 than without (docs/benchmarks.md, the UNet
    ablation); it is still reported, to be measured with `gpulint verify`. Also left alone: a program whose only model is one layer
    (`torch.nn.Linear(20, 1)`, a tutorial's placeholder: nothing for Tensor Cores to do) and test modules.
    """

    code = "GPU403"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "fp32-training-without-autocast"
    message = "CUDA training step runs in fp32; bf16 `torch.autocast` around forward and loss uses the tensor cores"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "forward pass and loss are computed in bf16: values change")
    added_in = "0.2.0"
    VALID = (
        "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n"
        "        loss = model(x).sum()\n    loss.backward()\n    opt.step()\n",
        "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10))\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n",
        # a placeholder model of one layer (a DDP tutorial): nothing for Tensor Cores
        "import torch\nmodel = torch.nn.Linear(20, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n",
    )
    INVALID = (
        Example("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for x in loader:\n    out = model(x)\n    loss = out.sum()\n    loss.backward()\n    opt.step()\n",
                message="autocast",
                fixed="import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()\n"
                      "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                      "for x in loader:\n    with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n"
                      "        out = model(x)\n        loss = out.sum()\n    loss.backward()\n    opt.step()\n"),
        # GroupNorm layers (a diffusion UNet): reported, no automatic fix (autocast casts around each GroupNorm)
        Example("import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Conv2d(3, 64, 3), nn.GroupNorm(8, 64), "
                "nn.Conv2d(64, 256, 3)).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for x in loader:\n    out = model(x)\n    loss = out.sum()\n    loss.backward()\n    opt.step()\n",
                message="autocast"),
        # a model that returns its loss (nanoGPT style), `zero_grad()` between the forward and `backward()`
        Example(_GPT.format(forward="    loss = model(x, y)\n"), message="autocast",
                fixed=_GPT.format(forward="    with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n"
                                          "        loss = model(x, y)\n")),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._reported: set[int] = set()
        self._steps: set[int] = set()  # the functions (training steps) reported
        self._fed: set[int] = set()  # forward calls found by reading the loss back (`_feeding_call`)

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) is not cst.Attribute or node.func.attr.value != "backward":
            return
        receiver = node.func.value
        head = receiver.value if type(receiver) is cst.Name else None
        if head is not None and head in self.analysis.index.imports.aliases:
            return  # `torch.autograd.backward(...)`, `dist_autograd.backward(ctx, ...)`: not a loss tensor
        facts = training_facts(self.analysis)
        where = self.where(node)
        if where is None or not where.every_iteration or facts.chose_precision() or not facts.worth_a_lever():
            return
        if not facts.trains_on_cuda() and not (self._steps_an_optimizer(node) and facts.trains_through_caller(where)):
            return  # no CUDA training loop here, nor a loop elsewhere running this step on CUDA in fp32
        forward = self._forward(node, where.loop)
        if forward is not None and id(forward) in self._reported:
            return  # `if fp16: (loss * scale).backward() else: loss.backward()`: one forward pass, one finding
        if facts.project_chose_dtype():
            return  # `torch.set_default_dtype(torch.float64)` in the project: a float64 model on purpose
        step = self.analysis.index.enclosing_function(node)
        if forward is not None and id(forward) in self._fed and self._no_network(forward, step):
            return  # no model in the step: custom kernels, or a harness timing the callables it is given
        if forward is not None and id(forward) in self._fed and id(step) in self._steps:
            return  # a GAN's discriminator losses, read back to their forward: the step is reported already
        self._steps.add(id(step))
        self._reported.add(id(forward or node))
        self.report(forward or node, fix=self._fix(node) if facts.imports_torch_as_torch() else None, where=where)

    def _forward(self, backward: cst.Call, loop: Optional[cst.CSTNode]) -> Optional[cst.Call]:
        """Where the fp32 work is: the step's first model call before `backward()` (in its block, or in the
        blocks around it inside the loop: `out = model(x)`), or else the first call handed a model
        (`diffusion.training_losses(model, x, t)`)."""
        parent = self.analysis.parent
        line = statement_of(backward, parent)
        before: list[cst.CSTNode] = []
        while line is not None and line is not loop and type(line) not in (cst.FunctionDef, cst.ClassDef):
            block = parent(line)
            if type(block) is cst.IndentedBlock:
                # `if phase == 'train': outputs = model(inputs) else: with torch.no_grad(): ...`: a branch's
                # forward pass comes before what the step computes from it (`nn.Softmax(dim=1)(outputs)`)
                before[:0] = [s for s in block.body[:list(block.body).index(line)]
                              if type(s) in (cst.SimpleStatementLine, cst.If)]
            line = parent(block) if block is not None else None
            while line is not None and not isinstance(line, cst.BaseStatement):
                line = parent(line)  # from an `else:` to its `if`
        calls = [n for stmt in before for n in _in_order(stmt, skip=self._without_grad) if type(n) is cst.Call]
        criteria = []
        for call in calls:
            if self.analysis.kind(call.func) is Kind.MODULE:
                if _criterion_named(call.func):
                    criteria.append(call)  # `self.G_lossfn(self.E, self.H)`: a loss module, not the forward pass
                    continue
                return call
        for call in calls:
            if self._runs_a_model(call):
                return call  # `outputs, losses = self.process_batch(inputs)`: the forward pass is in there
        for call in calls:
            if any(self.analysis.kind(a.value) is Kind.MODULE for a in call.args):
                return call
        fed = self._feeding_call(backward, before)
        if fed is not None:
            self._fed.add(id(fed))
            return fed
        return criteria[0] if criteria else None

    def _feeding_call(self, backward: cst.Call, before: list[cst.CSTNode]) -> Optional[cst.Call]:
        """The call the back-propagated loss is computed from, read back through the step's assignments
        (`loss, acc = segmentation_module(batch)` then `loss = loss.mean()`, `outputs, losses =
        self.process_batch(inputs)` then `losses["loss"].backward()`): the nearest call that is neither a loss
        (`criterion(out, y)`, `F.cross_entropy`), a torch function, a builtin nor a tensor method. Or the method
        of the class called on its own line before the loss that assigns what the loss reads (`self.netG_forward()`
        setting `self.E`, then `loss = self.lossfn(self.E, self.H)`). None where nothing is found."""
        wanted = _read_names(backward.func.value)  # type: ignore[attr-defined]
        local = {t for stmt in before for t in _bound_names(stmt)}
        inside: list[cst.Call] = []  # `lossfn(netD(fake), True)`: a call given to a loss, kept as the last resort
        for stmt in reversed(before):
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in reversed(stmt.body):
                if type(small) in (cst.Assign, cst.AugAssign, cst.AnnAssign) and small.value is not None:
                    targets = _bound_names(small)
                    if not targets & wanted:
                        continue
                    given = {id(n) for c in _in_order(small.value) if type(c) is cst.Call and
                             type(c.func) in (cst.Name, cst.Attribute) and _criterion_named(c.func)
                             for a in c.args for n in _nodes(a)}
                    for call in (n for n in _in_order(small.value) if type(n) is cst.Call):
                        if self._a_forward(call, local):
                            if id(call) not in given:
                                return call
                            inside.append(call)
                    kept = targets if type(small) is cst.AugAssign else set()
                    wanted = (wanted - targets) | kept | _read_names(small.value)
                elif type(small) is cst.Expr and type(small.value) is cst.Call and not small.value.args:
                    fn = self.analysis.loops.local_function(small.value)
                    if fn is not None and type(small.value.func) is cst.Attribute and \
                            _assigned_self_attributes(fn) & wanted:
                        return small.value
        return inside[0] if inside else None

    def _a_forward(self, call: cst.Call, local: set[str]) -> bool:
        func = call.func
        if type(func) not in (cst.Name, cst.Attribute) or _criterion_named(func):
            return False
        if type(func) is cst.Name and func.value in _BUILTINS:
            return False
        q = self.analysis.qualified(func) or ""
        if q.startswith(("torch.", "numpy.", "math.", "builtins.")):
            return False
        if type(func) is cst.Attribute:
            if func.attr.value in _TENSOR_METHODS:
                return False
            root = func.value
            while type(root) in (cst.Attribute, cst.Subscript, cst.Call):
                root = root.value if type(root) is not cst.Call else root.func
            if type(root) is cst.Name and root.value in local:
                return False  # a method of a value computed in the step (`outputs.float()`, `logits.log_softmax`)
        return True

    def _no_network(self, forward: cst.Call, step: Optional[cst.FunctionDef]) -> bool:
        """The forward pass read back from the loss (`_feeding_call`, no module call in the step) is no network:
        - a callable the loop takes from a collection (`for func, inputs, name in zip(funcs, ...): out =
          func(*args)`): a benchmark harness timing whatever it is given, its precision the measured setting;
        - or the step's function optimises bare tensors only (`optim.Adam([self.means, self.scales], lr)`, no
          `.parameters()`): a fit of explicit parameters through custom kernels (a rasterizer), where autocast
          reaches no matmul or convolution.
        """
        func = forward.func
        if type(func) is cst.Name:
            bindings = self.analysis.index.visible_bindings(func)
            if bindings and all(b.kind == "for" for b in bindings):
                return True
        if step is None:
            return False
        built = [n for n in _nodes(step.body) if type(n) is cst.Call and
                 type(n.func) in (cst.Name, cst.Attribute) and
                 (self.analysis.qualified(n.func) or "").startswith("torch.optim.") and n.args]
        if not built:
            return False
        for call in built:
            first = call.args[0].value
            if type(first) not in (cst.List, cst.Tuple) or not first.elements:
                return False
            for element in first.elements:
                value = element.value
                if type(value) not in (cst.Name, cst.Attribute) or \
                        self.analysis.kind(value) in (Kind.MODULE, Kind.MODULE_CLASS):
                    return False  # `[model.weight, ...]` is fine, but a dict of groups or a module is not bare
        return True

    def _without_grad(self, node: cst.With) -> bool:
        """`with torch.no_grad():` / `torch.inference_mode()` / `torch.set_grad_enabled(False)`."""
        for item in node.items:
            call = item.item
            q = self.analysis.qualified(call.func) if type(call) is cst.Call and \
                type(call.func) in (cst.Name, cst.Attribute) else None
            if q in ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad") or \
                    q == "torch.set_grad_enabled" and call.args and type(call.args[0].value) is cst.Name and \
                    call.args[0].value.value == "False":
                return True
        return False

    def _steps_an_optimizer(self, backward: cst.Call) -> bool:
        """The function holding `backward()` also steps an optimizer (`self.optimizer.step()`,
        `scaler.step(opt)`): a training step, not gradients taken for a saliency map (Grad-CAM's `score.backward()`)."""
        fn = self.analysis.index.enclosing_function(backward)
        return fn is not None and any(
            type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "step"
            for n in _nodes(fn.body))

    def _runs_a_model(self, call: cst.Call, depth: int = 0) -> bool:
        """`call` is of a method of this class or a function of this module (`self.predict(x)`,
        `self.process_batch(inputs)`) whose body calls a model, itself or one such call further (two deep)."""
        helper = self.analysis.loops.local_function(call)
        if helper is None:
            return False
        for node in _nodes(helper.body):
            if type(node) is not cst.Call:
                continue
            if self.analysis.kind(node.func) is Kind.MODULE:
                return True
            if depth < 1 and self._runs_a_model(node, depth + 1):
                return True
        return False

    def _fix(self, call: cst.Call) -> Optional[Fix]:
        if self._builds_group_norm():
            return None  # autocast runs group_norm in fp32: casts around every GroupNorm (a UNet measured slower)
        line = statement_of(call, self.analysis.parent)
        block = self.analysis.parent(line)
        loss = call.func.value  # type: ignore[union-attr]
        if type(line) is not cst.SimpleStatementLine or len(line.body) != 1 or \
                type(block) is not cst.IndentedBlock or type(loss) is not cst.Name:
            return None
        run: list[cst.SimpleStatementLine] = []
        for stmt in reversed(block.body[:list(block.body).index(line)]):
            if not run and _zeroes_gradients(stmt):
                continue  # `optimizer.zero_grad()` between the loss and `backward()`: it stays outside the block
            if not (type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1
                    and isinstance(stmt.body[0], cst.Assign)):
                break
            run.insert(0, stmt)
        start = next((i for i, stmt in enumerate(run) if self._runs_model(stmt)), None)
        if start is None:
            return None
        run = run[start:]
        if len(run) == 1 and not self._runs_model(run[0].body[0].value, nested_only=True) and \
                not _calls_the_model(run[0].body[0].value):  # type: ignore[attr-defined]
            return None  # only `loss = criterion(out, y)`: the forward pass is elsewhere
        if not any(type(t.target) is cst.Name and t.target.value == loss.value
                   for stmt in run for t in stmt.body[0].targets):  # type: ignore[attr-defined]
            return None
        inner = [run[0].with_changes(leading_lines=())] + run[1:]
        wrapped = cst.With(items=[cst.WithItem(cst.parse_expression(AUTOCAST))],
                           body=cst.IndentedBlock(body=inner), leading_lines=run[0].leading_lines)
        changes = {run[0]: wrapped, **{stmt: cst.RemoveFromParent() for stmt in run[1:]}}
        return self.fix("Wrap the forward pass and the loss in bf16 `torch.autocast`", changes, safe=False)

    def _builds_group_norm(self) -> bool:
        """Once per module, not once per finding (every call was walked for each training loop: quadratic)."""
        from gpulint.analysis.node_types import of_types

        known = self.__dict__.get("_group_norm")
        if known is None or known[0] is not self.analysis:
            known = self.__dict__["_group_norm"] = (self.analysis, any(
                self.analysis.qualified(n.func) == "torch.nn.GroupNorm"  # type: ignore[attr-defined]
                for n in of_types(self.analysis.index, cst.Call)))
        return known[1]

    def _runs_model(self, stmt: cst.CSTNode, nested_only: bool = False) -> bool:
        """`stmt` calls a model (with `nested_only`: somewhere below its outermost call, as in
        `criterion(model(x), y)` or `model(x).sum()`)."""
        return any(type(n) is cst.Call and self.analysis.kind(n.func) is Kind.MODULE
                   for n in _nodes(stmt) if not (nested_only and n is stmt))


_CRITERION = re.compile(r"criterion|loss", re.IGNORECASE)
_BUILTINS = frozenset({"sum", "len", "float", "int", "max", "min", "abs", "next", "iter", "zip", "enumerate", "range",
                       "list", "tuple", "dict", "print", "getattr", "isinstance", "round", "map", "sorted"})
# methods of a tensor or a container that compute nothing a model does
_TENSOR_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "double", "long", "int", "mean", "sum", "view",
                             "reshape", "contiguous", "squeeze", "unsqueeze", "detach", "item", "permute",
                             "transpose", "flatten", "size", "get", "items", "values", "keys", "pop", "format",
                             "append", "update", "clone", "zero_grad", "step", "type", "type_as", "masked_fill",
                             "split", "chunk", "softmax", "log_softmax", "sigmoid", "exp", "log", "norm", "pow"})


def _criterion_named(func: cst.BaseExpression) -> bool:
    """`criterion(...)`, `self.G_lossfn(...)`, `loss_fn(...)`: named for a loss."""
    name = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else ""
    return bool(_CRITERION.search(name))  # type: ignore[arg-type]


def _read_names(expr: cst.CSTNode) -> set[str]:
    """The names `expr` reads, `self.<attr>` as one name (`losses`, `self.E`)."""
    found: set[str] = set()
    attrs = set()
    for node in _nodes(expr):
        if type(node) is cst.Attribute:
            attrs.add(id(node.attr))
            if type(node.value) is cst.Name and node.value.value == "self":
                found.add(f"self.{node.attr.value}")
        elif type(node) is cst.Name and id(node) not in attrs and node.value != "self":
            found.add(node.value)
    return found


def _bound_names(stmt: cst.CSTNode) -> set[str]:
    """The names (and `self.<attr>`) an assignment binds; for a statement line, all of its assignments."""
    if type(stmt) is cst.SimpleStatementLine:
        return {n for small in stmt.body for n in _bound_names(small)}
    if type(stmt) is cst.Assign:
        targets = [t.target for t in stmt.targets]
    elif type(stmt) in (cst.AugAssign, cst.AnnAssign):
        targets = [stmt.target]  # type: ignore[attr-defined]
    else:
        return set()
    found: set[str] = set()
    for target in targets:
        for node in ([e.value for e in target.elements] if type(target) in (cst.Tuple, cst.List) else [target]):
            if type(node) is cst.Name:
                found.add(node.value)
            elif type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
                found.add(f"self.{node.attr.value}")
    return found


def _assigned_self_attributes(fn: cst.FunctionDef) -> set[str]:
    return {n for node in _nodes(fn.body) if type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign)
            for n in _bound_names(node) if n.startswith("self.")}


def _calls_the_model(value: cst.BaseExpression) -> bool:
    """`model(x, y)` (a model that returns its loss, nanoGPT style), not `criterion(out, y)`/`loss_fn(...)`."""
    return type(value) is cst.Call and type(value.func) in (cst.Name, cst.Attribute) and \
        not _CRITERION.search(value.func.value if type(value.func) is cst.Name else value.func.attr.value)


def _zeroes_gradients(stmt: cst.CSTNode) -> bool:
    return type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 and \
        isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call) and \
        isinstance(stmt.body[0].value.func, cst.Attribute) and stmt.body[0].value.func.attr.value == "zero_grad"


def _in_order(node: cst.CSTNode, skip=None):
    """`node` and the nodes below it, in the order they are written (layout tokens left out). Read from the
    fields (`tree.child_nodes`): LibCST's `children` rebuilds every node it passes, and this walk ran over every
    statement before each `backward()` (a fifth of the rules' time on a module of many training loops). The
    fields' order is the written one except in `a if test else b`, whose children are put back in that order."""
    stack = [node]
    while stack:
        current = stack.pop()
        if skip is not None and type(current) is cst.With and skip(current):
            continue  # an evaluation branch's forward pass, outside autograd: not the training step's
        yield current
        if type(current) is cst.IfExp:
            stack.extend((current.orelse, current.test, current.body))
        else:
            stack.extend(reversed(child_nodes(current)))


def _nodes(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))
