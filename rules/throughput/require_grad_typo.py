"""GPU401 `require-grad-typo`."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety

_TYPO = "require_grad"


class RequireGradTypo(Rule):
    """`p.require_grad = False`: a typo of `requires_grad`, so nothing is frozen.

    ## What it does
    Flags an assignment to `.require_grad` (without the `s`) on a parameter, tensor or module, such as
    `param.require_grad = False` in a loop over `model.parameters()`.

    ## Why it is slow
    PyTorch's attribute is `requires_grad`. Setting `require_grad` just adds a new Python attribute: no error,
    and the parameters the program meant to freeze still get gradients. The backward pass computes (and the
    optimizer applies) every one of them, so fine-tuning "only the head" costs the whole network's backward
    and optimizer memory and time, and trains layers that were meant to stay fixed.

    ## Example
    ```python
    for p in backbone.parameters():
        p.require_grad = False
    ```

    ## Fix
    Renames the attribute: `p.requires_grad = False`.

    ## Fix safety
    Unsafe: the program then really freezes (or unfreezes) those parameters, so training changes: frozen layers
    stop learning, and an optimizer built before the change may hold parameters that no longer get gradients.

    ## When it is fine
    An object of your own class that defines a `require_grad` attribute in the same file (the rule then stays
    silent on it). Suppress anything else deliberate with `# noqa: GPU401`.
    """

    code = "GPU401"
    name = "require-grad-typo"
    message = "`.require_grad` is not a PyTorch attribute: nothing is frozen; did you mean `.requires_grad`?"
    needs_text = re.compile(r"\brequire_grad\b")
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.ALWAYS
    fix_safety = FixSafety(Safety.UNSAFE, "the parameters then really freeze or unfreeze, which changes training")
    VALID = [
        "for p in model.parameters():\n    p.requires_grad = False\n",
        "class Flags:\n    def __init__(self):\n        self.require_grad = True\n\nflags = Flags()\n"
        "flags.require_grad = False\n",
    ]
    INVALID = [
        Example("for p in model.parameters():\n    p.require_grad = False\n", message="did you mean",
                fixed="for p in model.parameters():\n    p.requires_grad = False\n"),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            attr = target.target
            if type(attr) is cst.Attribute and attr.attr.value == _TYPO and not self._own_attribute(attr):
                fix = self.fix("Rename to `requires_grad`",
                               {attr.attr: attr.attr.with_changes(value="requires_grad")}, safe=False)
                self.report(attr, fix=fix)

    def _own_attribute(self, attr: cst.Attribute) -> bool:
        """The receiver is an object of a class of this module that has a `require_grad` attribute."""
        owners = self._owner_classes()
        if not owners:
            return False
        receiver = attr.value
        if type(receiver) is cst.Name and receiver.value == "self":
            return any(self.analysis.index.is_ancestor_or_self(cls, attr) for cls in owners.values())
        if type(receiver) is cst.Name:
            scope = self.analysis.index.enclosing_scope(receiver)
            bindings = self.analysis.index.lookup(receiver.value, scope) if scope is not None else []
            return bool(bindings) and all(_constructs(b.value, owners) for b in bindings)
        return False

    def _owner_classes(self) -> dict[str, cst.ClassDef]:
        return {name: cls for name, cls in self.analysis.index.classes.items()
                if _TYPO in self.analysis.code(cls)}


def _constructs(value: Optional[cst.BaseExpression], owners: dict[str, cst.ClassDef]) -> bool:
    return type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in owners
