"""Receivers narrowed by an `isinstance` test to a project class.

`if isinstance(self.schedule_sampler, LossAwareSampler): self.schedule_sampler.update_with_local_losses(t, l)`:
whatever the attribute holds in general (a parameter, `sampler or UniformSampler(...)`), inside the branch it is an
instance of `LossAwareSampler` or of a subclass. When the class is a project class, the call runs that class's
method (or an override in a subclass, which `_Instances._matches` and `Project.method` already account for), so the
member-site search (forward.member_site) and the call-site summaries (calls.ProjectCalls.instance_classes) resolve
the receiver to it.

Only the `if` body is narrowed (not `else`), the test may be the `isinstance(...)` call alone or one conjunct of an
`and`, and the tested expression must be written the same way as the receiver (`self.sampler`, `sampler`). A name
rebound inside the branch before the call is rare enough to ignore; a tuple of classes narrows to nothing.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.imports import dotted_name

_FUNCTION_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)


def narrowing_class_expr(index, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The class expression `C` of an enclosing `if isinstance(<expr>, C):` whose body holds `expr`, else None."""
    target = dotted_name(expr) if type(expr) in (cst.Name, cst.Attribute) else None
    if target is None:
        return None
    child: cst.CSTNode = expr
    for parent in index.ancestors(expr):
        if isinstance(parent, _FUNCTION_SCOPES):
            return None
        if type(parent) is cst.If and child is parent.body:
            found = _tested_class(parent.test, target)
            if found is not None:
                return found
        child = parent
    return None


def _tested_class(test: cst.BaseExpression, target: str) -> Optional[cst.BaseExpression]:
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return _tested_class(test.left, target) or _tested_class(test.right, target)
    if type(test) is not cst.Call or dotted_name(test.func) != "isinstance" or len(test.args) != 2 or \
            any(a.keyword is not None or a.star for a in test.args):
        return None
    tested, cls = test.args[0].value, test.args[1].value
    if type(cls) not in (cst.Name, cst.Attribute) or type(tested) not in (cst.Name, cst.Attribute):
        return None
    return cls if dotted_name(tested) == target else None


def narrowed_class(calls, expr: cst.BaseExpression):
    """The project class (`ClassSummary`) an `isinstance` test narrows `expr` to at this place, else None."""
    from gpulint.analysis.project import ClassSummary

    if not _mentions_isinstance(calls.analysis):
        return None
    cls_expr = narrowing_class_expr(calls.index, expr)
    if cls_expr is None:
        return None
    found = calls._lookup(cls_expr)
    return found if isinstance(found, ClassSummary) else None


def _mentions_isinstance(analysis) -> bool:
    return analysis.fact(_has_isinstance)


def _has_isinstance(analysis) -> bool:
    text = analysis.source if analysis.source is not None else analysis.module.code
    return "isinstance(" in text


def narrowed_from_tensors(analysis, expr: cst.BaseExpression) -> bool:
    """`expr` is no tensor here: the body of `if not isinstance(<expr>, torch.Tensor):` (or of `if not
    torch.is_tensor(<expr>):`), or the `else` of the positive test, holds it (`if not isinstance(bound,
    torch.Tensor): bound = torch.tensor(bound, device=device)`: a number or a list, on the host)."""
    target = dotted_name(expr) if type(expr) in (cst.Name, cst.Attribute) else None
    if target is None or not _mentions_isinstance(analysis) and "is_tensor(" not in analysis.module.code:
        return False
    child: cst.CSTNode = expr
    for parent in analysis.index.ancestors(expr):
        if isinstance(parent, _FUNCTION_SCOPES):
            return False
        if type(parent) is cst.If:
            test = parent.test
            negated = type(test) is cst.UnaryOperation and type(test.operator) is cst.Not
            if negated and child is parent.body and _tests_a_tensor(analysis, test.expression, target):
                return True
            if not negated and child is parent.orelse and _tests_a_tensor(analysis, test, target):
                return True
        child = parent
    return False


def _tests_a_tensor(analysis, test: cst.BaseExpression, target: str) -> bool:
    """`isinstance(<target>, torch.Tensor)` or `torch.is_tensor(<target>)`."""
    if type(test) is not cst.Call or any(a.keyword is not None or a.star for a in test.args):
        return False
    if dotted_name(test.func) == "isinstance":
        cls = _tested_class(test, target)
        return cls is not None and analysis.qualified(cls) == "torch.Tensor"
    return analysis.qualified(test.func) == "torch.is_tensor" and len(test.args) == 1 and \
        type(test.args[0].value) in (cst.Name, cst.Attribute) and dotted_name(test.args[0].value) == target
