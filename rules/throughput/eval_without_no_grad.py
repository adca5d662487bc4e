"""GPU421 `eval-without-no-grad`."""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

from gpulint.analysis import Kind
from gpulint.analysis.accumulators import under_no_grad
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.node_types import of_types
from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, Fix, FixAvailability, FixSafety, GpuRule, Safety

# What in the loop (or in a per-step function) needs the graph the forward pass records: a backward pass,
# gradients of inputs (an adversarial evaluation), or code that turns gradients on itself.
_NEEDS_GRAPH = re.compile(r"\.backward\(|\bautograd\.grad\(|\bgrad\(|\brequires_grad|\benable_grad\b|"
                          r"\bset_grad_enabled\b|\.step\(")
# A module that may turn gradients off around its loops (a file that cannot be read as Python: its text).
_GRAD_OFF = re.compile(r"\bno_grad\b|\binference_mode\b|\bset_grad_enabled\b")
_VOLATILE = re.compile(r"\bvolatile\s*=\s*True\b")  # `Variable(x, volatile=True)`: no graph before PyTorch 0.4
# A whole model frozen (`model.requires_grad_(False)`, `for p in model.parameters(): p.requires_grad = False`; not
# a few batch-norm weights) or gradients turned off by a statement of their own.
_FROZEN = re.compile(r"requires_grad_\(\s*False\s*\)|"
                     r"for (\w+) in [\w.]+\.parameters\(\)\s*:\s*\n?\s*\1\.requires_grad\s*=\s*False|"
                     r"^\s*torch\.(?:autograd\.)?set_grad_enabled\(\s*False\s*\)", re.MULTILINE)
_EXAMINED = 24  # project files naming the evaluation function that are read for a `no_grad` around its call

_HEAD = "import torch\nfrom model import UNet\n\nnet = UNet().cuda()\nnet.load_state_dict(torch.load('unet.pth'))\n"
_LOOP = "for x, y in loader:\n    pred = net(x.cuda(non_blocking=True))\n    save(pred.argmax(1), y)\n"


_EVERY_NAME: frozenset = frozenset({"*"})  # a file that turns gradients off for every call (or cannot be read)
_GRAD_OFF_CONTEXTS = ("no_grad", "inference_mode", "set_grad_enabled")


def _last_name(func: ast.AST) -> Optional[str]:
    """`no_grad` of `torch.no_grad`, `evaluate` of `evaluate`: what a call names, else None."""
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _grad_off_call(node: ast.AST) -> bool:
    """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(<anything>)` (`phase == "train"`:
    off for the evaluation phase), as a context, a decorator or a call (`@torch.no_grad`)."""
    return _last_name(node.func if isinstance(node, ast.Call) else node) in _GRAD_OFF_CONTEXTS


def _called_with_grad_off(tree: ast.Module) -> Optional[frozenset]:
    """The names (last part) of what `tree` calls with gradients off: inside a grad-off context or a decorated
    function, or inside one of its own functions that it calls so (followed a few levels); `_EVERY_NAME` for a
    module that turns gradients off by a statement (`torch.set_grad_enabled(False)`)."""
    functions: dict[str, list] = {}
    covered: set = set()
    names: set = set()

    def visit(node: ast.AST, off: bool) -> bool:
        """Record what `node` calls with gradients off; True at a statement that turns them off for good."""
        for child in ast.iter_child_nodes(node):
            child_off = off
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault(child.name, []).append(child)
                if any(_grad_off_call(d) for d in child.decorator_list):
                    covered.add(child.name)
                if visit(child, False):
                    return True
                continue
            if isinstance(child, (ast.With, ast.AsyncWith)) and any(
                    _grad_off_call(item.context_expr) for item in child.items):
                child_off = True
            if isinstance(child, ast.Expr) and isinstance(child.value, ast.Call) and \
                    _last_name(child.value.func) == "set_grad_enabled" and child.value.args and \
                    isinstance(child.value.args[0], ast.Constant) and child.value.args[0].value is False:
                return True
            if isinstance(child, ast.Call) and child_off:
                name = _last_name(child.func)
                if name is not None:
                    names.add(name)
            if visit(child, child_off):
                return True
        return False

    if visit(tree, False):
        return _EVERY_NAME
    names |= covered
    for _ in range(3):  # a function called with gradients off calls the rest with them off too
        grown = False
        for fn_name in list(names):
            for fn in functions.get(fn_name, ()):
                for call in ast.walk(fn):
                    if isinstance(call, ast.Call):
                        name = _last_name(call.func)
                        if name is not None and name not in names:
                            names.add(name)
                            grown = True
        if not grown:
            break
    return frozenset(names)


class EvalWithoutNoGrad(GpuRule):
    """An evaluation loop that runs a model in eval mode without `torch.no_grad()`: every batch records the graph.

    ## What it does
    Flags the model call of a per-batch loop (a validation, test or inference pass) when the model was put in
    evaluation mode in the same function before it (`model.eval()`, `net = net.eval()`, `model.train(False)`),
    and nothing turns gradients off around it: no `with torch.no_grad():` / `torch.inference_mode()` /
    `torch.set_grad_enabled(False)` around the call, no such decorator on its function, and no call of that
    function under one (in its module, or in a project file that calls it inside such a context, or inside a
    function of its own that runs under one; `torch.set_grad_enabled(phase == "train")` counts as off), and no
    `Variable(x, volatile=True)` in the loop (PyTorch 0.3's way of turning the graph off). Only where nothing in
    the loop needs the graph: no `backward()`, `torch.autograd.grad`, `requires_grad`, `enable_grad` or optimizer
    `step()` in it (a training loop, an adversarial evaluation), and, for a per-step function run from a loop
    elsewhere, none in that function either. One finding per loop.

    ## Why it is slow
    `model.eval()` only switches dropout and batch norm to their inference behaviour; autograd still records
    every operation of the forward pass and keeps its activations alive for a backward pass that never comes.
    Each evaluation batch then allocates the memory of a training step's activations (the batch size that fits
    is smaller, and the caching allocator grows), and every operation pays the bookkeeping of building the
    graph. Under `torch.no_grad()` the activations are freed as soon as the next layer has read them; under
    `torch.inference_mode()` the version-counter and view tracking are skipped too (PyTorch's "Autograd
    mechanics: locally disabling gradient computation", https://pytorch.org/docs/stable/notes/autograd.html).

    ## Example
    ```python
    net.eval()
    for x, y in loader:
        pred = net(x.cuda(non_blocking=True))
    ```
    Use instead:
    ```python
    net.eval()
    with torch.no_grad():
        for x, y in loader:
            pred = net(x.cuda(non_blocking=True))
    ```

    ## Fix
    Wraps the loop in `with torch.no_grad():`. Offered when the loop and the model call are in the same
    function (or both at the module's top level), the loop is a statement of its own block, and the module
    imports `torch` as `torch`.

    ## Fix safety
    Unsafe: tensors computed in the loop no longer carry autograd history, so code after the loop that calls
    `backward()` on them, or reads their `grad_fn`, fails; the values themselves are unchanged.

    ## When it is fine
    A loop whose text names `no_grad` (a comment recording why it is left out: "no_grad() here breaks
    torch.compile"). Loops that need gradients (saliency maps, adversarial examples, test-time training) and
    frozen models (`model.requires_grad_(False)`, or `p.requires_grad = False` in a loop over its
    `parameters()`: the rule stays silent when the module says so; freezing a few batch-norm weights does not
    count). Inference wrapped by a caller the rule cannot see: suppress with `# noqa: GPU421`.
    """

    code = "GPU421"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "eval-without-no-grad"
    message = ("evaluation forward pass without `torch.no_grad()` records the autograd graph and keeps every "
               "activation of each batch alive; wrap the loop in `torch.no_grad()`")
    needs_text = re.compile(r"\.eval\(\)|\.train\(\s*False\s*\)")
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "tensors computed in the loop lose their autograd history")
    added_in = "0.2.0"
    VALID = [
        _HEAD + "net.eval()\nwith torch.no_grad():\n" + "".join("    " + line + "\n" for line in _LOOP.splitlines()),
        # a training loop: the graph is needed
        _HEAD + "opt = torch.optim.AdamW(net.parameters(), fused=True)\nnet.train()\n"
        "for x, y in loader:\n    loss = net(x.cuda(non_blocking=True)).sum()\n    opt.zero_grad()\n"
        "    loss.backward()\n    opt.step()\n",
        # gradients of the input (a saliency map) in eval mode
        _HEAD + "net.eval()\nfor x, y in loader:\n    x = x.cuda(non_blocking=True).requires_grad_()\n"
        "    net(x).max().backward()\n    save(x.grad, y)\n",
        # a frozen model
        _HEAD + "net.requires_grad_(False)\nnet.eval()\n" + _LOOP,
        # an evaluation function its caller runs under no_grad
        _HEAD + "def evaluate(loader):\n    net.eval()\n" + "".join("    " + line + "\n" for line in _LOOP.splitlines())
        + "\nwith torch.no_grad():\n    evaluate(loader)\n",
    ]
    INVALID = [
        Example(_HEAD + "net.eval()\n" + _LOOP, message="without `torch.no_grad()`",
                fixed=_HEAD + "net.eval()\nwith torch.no_grad():\n"
                + "".join("    " + line + "\n" for line in _LOOP.splitlines())),
        Example(_HEAD + "def evaluate(loader):\n    net.eval()\n"
                + "".join("    " + line + "\n" for line in _LOOP.splitlines()) + "\nevaluate(loader)\n",
                message="without `torch.no_grad()`",
                fixed=_HEAD + "def evaluate(loader):\n    net.eval()\n    with torch.no_grad():\n"
                + "".join("        " + line + "\n" for line in _LOOP.splitlines()) + "\nevaluate(loader)\n"),
    ]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._loops: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        receiver = dotted_name(func) if type(func) in (cst.Name, cst.Attribute) else None
        if receiver is None or receiver not in self._mode_switches():
            return  # cheap tests first: a module of thousands of loops asks the costly ones only of eval models
        fn = self.analysis.index.enclosing_function(node)
        if not self._put_in_eval(receiver, node, fn) or self._module_turns_grad_off() or \
                under_no_grad(self.analysis, node):
            return
        where = self.where(node)
        if where is None or not where.every_iteration or where.via is not None:
            return
        loop = where.loop
        key = id(loop) if loop is not None else id(node)
        if key in self._loops or self.analysis.kind(func) is not Kind.MODULE:
            return
        same_scope = loop is not None and self.analysis.index.enclosing_function(loop) is fn
        if loop is not None and (_NEEDS_GRAPH.search(self.analysis.code(loop)) or
                                 _GRAD_OFF.search(self.analysis.code(loop)) or
                                 _VOLATILE.search(self.analysis.code(loop))):
            # needs the graph; or names `no_grad` (a comment: "no_grad() breaks torch.compile here"); or feeds the
            # model `Variable(x, volatile=True)`, PyTorch 0.3's no_grad
            return
        if not same_scope and fn is not None and _NEEDS_GRAPH.search(self.analysis.code(fn)):
            return
        if fn is not None and self._called_without_grad(fn):
            return
        self._loops.add(key)
        self.report(node, where=where, fix=self._fix(loop) if same_scope else None)

    def _put_in_eval(self, receiver: str, call: cst.Call, fn: Optional[cst.FunctionDef]) -> bool:
        """The last mode switch of the called model before the call, in the same function (or at the top
        level for a top-level loop), puts it in evaluation mode: `model.eval()`, `net = net.eval()`,
        `model.train(False)` (not `model.train()` / `model.train(True)`)."""
        index = self.analysis.index
        start = index.order(call)
        if start is None:
            return False
        last: Optional[tuple[int, bool]] = None
        for order, evaluating in self._mode_switches().get(receiver, {}).get(id(fn) if fn is not None else None, ()):
            if order < start and (last is None or order > last[0]):
                last = (order, evaluating)
        return last is not None and last[1]

    def _mode_switches(self) -> dict:
        """The module's `X.eval()` / `X.train(...)` calls by the dotted name `X`, then by the enclosing function
        (its `id`, None at the top level): (document order, whether it switches to evaluation). Built once per
        module (a module of thousands of evaluation loops asks once per loop)."""
        known = self.__dict__.get("_switches")
        if known is None or known[0] is not self.analysis:
            switches: dict = {}
            index = self.analysis.index
            for other in of_types(index, cst.Call):
                f = other.func
                if type(f) is not cst.Attribute or f.attr.value not in ("eval", "train"):
                    continue
                if f.attr.value == "eval":
                    if other.args:
                        continue
                    evaluating = True
                else:
                    evaluating = len(other.args) == 1 and type(other.args[0].value) is cst.Name and \
                        other.args[0].value.value == "False"
                order = index.order(other)
                name = dotted_name(f.value)
                if order is not None and name is not None:
                    fn = index.enclosing_function(other)
                    switches.setdefault(name, {}).setdefault(id(fn) if fn is not None else None, []).append(
                        (order, evaluating))
            known = self.__dict__["_switches"] = (self.analysis, switches)
        return known[1]

    def _module_turns_grad_off(self) -> bool:
        """The module freezes a model (`requires_grad_(False)`) or turns gradients off by a statement
        (`torch.set_grad_enabled(False)`): asked once per module."""
        known = self.__dict__.get("_grad_off")
        if known is None or known[0] is not self.analysis:
            source = self.analysis.source  # the text it was parsed from: no codegen of the whole module
            text = source if source is not None else self.analysis.module.code
            known = self.__dict__["_grad_off"] = (self.analysis, bool(_FROZEN.search(text)))
        return known[1]

    def _called_without_grad(self, fn: cst.FunctionDef) -> bool:
        """A call of `fn` in this module runs under `no_grad` (or a decorator turns it off), or a project
        file that names it calls it with gradients off (`_turns_grad_off`; or too many name it to read)."""
        if under_no_grad(self.analysis, fn.body):
            return True
        name = fn.name.value
        if name in self._called_under_no_grad():
            return True
        project = self._project()
        if project is None:
            return False
        here = self.analysis.path.resolve() if self.analysis.path is not None else None
        files = [p for p in project.files_naming(name) if p != here]
        if len(files) > _EXAMINED:
            return True
        return any(self._turns_grad_off(project, path, name) for path in files)

    def _turns_grad_off(self, project, path, name: str) -> bool:
        """The project file calls `name` with gradients off (under a `no_grad`/`inference_mode`/`set_grad_enabled`
        context or decorator, or inside a function of its own that is called so), or turns them off for the
        whole program (a `torch.set_grad_enabled(False)` statement), or cannot be read as Python (then: whether
        its text mentions them). Read once per file for this module's questions."""
        known = self.__dict__.get("_file_grad_off")
        if known is None or known[0] is not self.analysis:
            known = self.__dict__["_file_grad_off"] = (self.analysis, {})
        if path not in known[1]:
            info = project.module(path)
            tree = getattr(info, "tree", None)
            callees = _called_with_grad_off(tree) if isinstance(tree, ast.Module) else None
            if callees is None:
                text = project.text_of(path)
                if text is None:
                    try:
                        text = path.read_text(encoding="utf-8", errors="replace")
                    except OSError:
                        text = None
                callees = _EVERY_NAME if text is None or _GRAD_OFF.search(text) is not None else frozenset()
            known[1][path] = callees
        callees = known[1][path]
        return callees is _EVERY_NAME or name in callees

    def _called_under_no_grad(self) -> frozenset:
        """The names (last part) of the functions this module calls somewhere under `no_grad`: once per module."""
        known = self.__dict__.get("_no_grad_calls")
        if known is None or known[0] is not self.analysis:
            names = set()
            for call in of_types(self.analysis.index, cst.Call):
                f = call.func
                called = f.value if type(f) is cst.Name else f.attr.value if type(f) is cst.Attribute else None
                if called is not None and called not in names and under_no_grad(self.analysis, call):
                    names.add(called)
            known = self.__dict__["_no_grad_calls"] = (self.analysis, frozenset(names))
        return known[1]

    def _project(self):
        from gpulint.analysis.calls import project_calls

        calls = self.analysis.fact(project_calls) if self.analysis.path is not None else None
        return calls.project if calls is not None else None

    def _fix(self, loop: Optional[cst.CSTNode]) -> Optional[Fix]:
        if type(loop) not in (cst.For, cst.While) or not training_facts(self.analysis).imports_torch_as_torch():
            return None
        block = self.analysis.parent(loop)
        if type(block) not in (cst.IndentedBlock, cst.Module):
            return None
        inner = loop.with_changes(leading_lines=())  # type: ignore[union-attr]
        wrapped = cst.With(items=[cst.WithItem(cst.parse_expression("torch.no_grad()"))],
                           body=cst.IndentedBlock(body=[inner]), leading_lines=loop.leading_lines)  # type: ignore
        return self.fix("Wrap the loop in `torch.no_grad()`", {loop: wrapped}, safe=False)

