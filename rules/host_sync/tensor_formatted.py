"""GPU107 `tensor-formatted`."""

from __future__ import annotations

import string

import libcst as cst

from gpulint.analysis.kinds import is_text
from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.syntax import method_call, positional


class TensorFormatted(GpuRule):
    """Printing or formatting a tensor every iteration.

    ## What it does
    Flags `print(t)`, f-strings `f"{t}"`/`f"{t:.3f}"`, `str(t)`, `repr(t)`, `format(t)`, `"...".format(t)` and
    `"%f" % t` where `t` is a tensor, on every iteration of a training/eval loop.

    ## Why it is slow
    Formatting reads the tensor's values on the host: a blocking copy that waits for the GPU.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = train_step(x, y)
        print(f"step {step} loss {loss:.4f}")
    ```
    Print periodically: `if step % 100 == 0: print(...)`.

    ## Fix
    None: how often to log is the author's choice.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging (`if step % log_every == 0:`), end-of-epoch summaries, printing shapes or dtypes. A value
    formatted with the string presentation type (`f"{name:25s}"`) is text: a tensor cannot take that format. So is
    a part of a batch whose name says it is a file path or name (`imgs, labels, img_paths = batch`, `input_file =
    batch["input"][0]`): a loader collates strings into lists of `str`. A message printed in the body of an `if`
    whose condition is itself a device tensor (`if torch.min(y) < -1.: print("min value is", torch.min(y))`): the
    print runs only when the branch is taken (an out-of-range warning), and the per-step wait is the condition,
    which GPU106 reports.
    """

    code = "GPU107"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "tensor-formatted"
    message = "formatting a tensor every iteration copies it to the host and waits for the GPU; log periodically"
    family = Family.HOST_SYNC
    VALID = [TRAIN_STEP + "text = f'{loss}'\n",
             # a string presentation type: the value is text (a tensor would raise), here a batch of file names
             "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nfor x, y in loader:\n    loss = model(x).sum()\n"
             "    loss.backward()\n    for name in y:\n        print(f'{name:25s}')\n",
             # printed only on an out-of-range branch: the wait is the tensor condition (GPU106's finding)
             TRAIN_STEP + "    if loss.max() > 1e4:\n        print('loss out of range', loss.max())\n"]
    INVALID = [
        Example(TRAIN_STEP + "    text = f'{loss}'\n",
                message="formatting a tensor every iteration copies it to the host an"),
    ]

    def _flag(self, expr: cst.BaseExpression) -> None:
        if self.analysis.is_device_tensor(expr) and not self._under_tensor_condition(expr):
            where = self.where(expr)
            if where:
                self.report(expr, where=where)

    def _under_tensor_condition(self, expr: cst.BaseExpression) -> bool:
        """`expr` is in a statement directly in the body of an `if`/`elif` whose test is a device tensor (GPU106's
        report): formatted only on that branch, after the wait the test already paid."""
        child: cst.CSTNode = expr
        for parent in self.analysis.index.ancestors(expr):
            if type(parent) is cst.IndentedBlock:
                owner = self.analysis.parent(parent)
                return type(owner) is cst.If and owner.body is parent and type(child) is not cst.If and \
                    self.analysis.is_device_tensor(owner.test)
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return False
            child = parent
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst.Name and func.value in ("print", "str", "repr", "format"):
            args = positional(node)
            for arg in args if func.value == "print" else args[:1]:
                self._flag(arg)
        elif method_call(node, "format") and type(func.value) in (cst.SimpleString, cst.ConcatenatedString):
            for arg in node.args:
                self._flag(arg.value)
            self._flag_fields(node)

    def _flag_fields(self, node: cst.Call) -> None:
        """`"{top1.avg:.3f}".format(top1=top1)`: a field reading an attribute of an argument, which a meter kept
        from a device tensor handed to it earlier in the function (analysis/kept_values.py)."""
        from gpulint.analysis.kept_values import kept_device_attribute

        text = node.func.value.evaluated_value  # type: ignore[attr-defined]
        if not isinstance(text, str) or "." not in text:
            return
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(text) if f]
        except ValueError:
            return
        positional_args = [a.value for a in node.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        for field in dict.fromkeys(fields):
            name, _, attribute = field.partition(".")
            if not attribute or not attribute.isidentifier():
                continue  # `{0.avg}`, `{top1.avg}`; not `{x.a.b}` nor `{x.a[0]}`
            value = positional_args[int(name)] if name.isdigit() and int(name) < len(positional_args) else \
                keywords.get(name)
            if value is not None and kept_device_attribute(self.analysis, value, attribute, node):
                where = self.where(node)
                if where and not self._under_tensor_condition(node):
                    self.report(node, where=where)  # the call whose text names the field: once
                return

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        if _string_spec(node):
            return  # `f"{name:25s}"`: a tensor cannot take an `s` format (TypeError); the value is text
        self._flag(node.expression)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        # `"%g" % t`, `("%11s" * 2 + "%11.4g" * 3) % (epoch, *mloss)`: each tensor formatted, a starred one too
        # (its elements are formatted one by one: still one copy to the host per tensor).
        if type(node.operator) is cst.Modulo and is_text(node.left):
            right = node.right
            for expr in [e.value for e in right.elements] if type(right) is cst.Tuple else [right]:
                self._flag(expr)


def _string_spec(node: cst.FormattedStringExpression) -> bool:
    """The format spec is written out and ends in the string presentation type `s` (`:25s`, `:<10s`, `:s`)."""
    spec = node.format_spec
    if not spec or not all(type(part) is cst.FormattedStringText for part in spec):
        return False
    text = "".join(part.value for part in spec)  # type: ignore[union-attr]
    return text.endswith("s")
