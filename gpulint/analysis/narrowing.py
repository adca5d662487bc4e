"""Names a guard turns into a loader (issue 11, heldout8: SpeechBrain's `Brain.fit`).

A framework method that accepts either a dataset or a loader converts the first into the second under a type
test, and iterates the result in its step loop (through a helper method it hands it to):

    if not isinstance(train_set, DataLoader):
        train_set = self.make_dataloader(train_set, ...)
    ...
    self._fit_train(train_set=train_set)        # for batch in tqdm(train_set): ...

Whatever the parameter held, after that statement it is a `DataLoader`: either it was one, or the guarded
assignment made one (that is what the test asks for). The test may name several classes (`isinstance(x,
DataLoader) or isinstance(x, LoopedLoader)`, `isinstance(x, (DataLoader, LoopedLoader))`), each a loader class
of torch or a class whose name ends in `Loader`, and may sit beside a test that the name is not `None`
(`if valid_set is not None and not isinstance(valid_set, DataLoader):`: a `None` holds no batches).

`guarded_into_loader` decides it for the bindings of one name in one scope: every binding is the parameter
itself, a guarded assignment, or `None`; and one guarded assignment at least.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from gpulint.analysis.tree import Binding, SyntaxIndex

_TORCH_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
                            "torchdata.stateful_dataloader.StatefulDataLoader"})


def guarded_into_loader(index: SyntaxIndex, name: str, bindings: list[Binding],
                        qualified: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    """Every binding of `name` in its scope is the parameter, `None`, or an assignment run only when a test
    says the name does not hold a loader (`if not isinstance(name, DataLoader): name = ...`), and one is such
    an assignment: the name holds a loader wherever it is read after the guard."""
    guarded = False
    for b in bindings:
        if b.kind == "param":
            continue
        if b.kind != "assign" or b.index is not None or b.value is None:
            return False
        if type(b.value) is cst.Name and b.value.value == "None":
            continue
        if not _under_loader_guard(index, name, b, qualified):
            return False
        guarded = True
    return guarded


def _under_loader_guard(index: SyntaxIndex, name: str, b: Binding,
                        qualified: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    """`b` sits in the body (not the `else`) of the nearest `if` around it, whose test says `name` is not a
    loader (alone, or beside `name is not None`), with nothing but statements of that body in between."""
    node = b.source
    if node is None:
        return False
    for parent in index.ancestors(node):
        if type(parent) in (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.For, cst.While, cst.With, cst.Try):
            return False
        if type(parent) is cst.If:
            if not index.is_ancestor_or_self(parent.body, node):
                return False  # in the `else`/`elif` branch: the test held there
            return _not_a_loader_test(parent.test, name, qualified)
    return False


def _not_a_loader_test(test: cst.BaseExpression, name: str,
                       qualified: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    test = _unparenthesized(test)
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        left, right = test.left, test.right
        if _is_not_none(left, name):
            return _not_a_loader_test(right, name, qualified)
        if _is_not_none(right, name):
            return _not_a_loader_test(left, name, qualified)
        return False
    if type(test) is not cst.UnaryOperation or type(test.operator) is not cst.Not:
        return False
    return _is_a_loader_test(_unparenthesized(test.expression), name, qualified)


def _is_a_loader_test(test: cst.BaseExpression, name: str,
                      qualified: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    """`isinstance(name, C)` (or several classes, in a tuple or joined by `or`), every class a loader class
    and one of torch's among them."""
    tests = []
    stack = [test]
    while stack:
        current = _unparenthesized(stack.pop())
        if type(current) is cst.BooleanOperation and type(current.operator) is cst.Or:
            stack.extend((current.left, current.right))
        else:
            tests.append(current)
    classes: list[cst.BaseExpression] = []
    for t in tests:
        if type(t) is not cst.Call or type(t.func) is not cst.Name or t.func.value != "isinstance" or \
                len(t.args) != 2 or type(t.args[0].value) is not cst.Name or t.args[0].value.value != name:
            return False
        second = t.args[1].value
        classes.extend(e.value for e in second.elements) if type(second) is cst.Tuple else classes.append(second)
    names = [(qualified(c) if type(c) in (cst.Name, cst.Attribute) else None) for c in classes]
    if not names or any(n is None for n in names):
        return False
    torch_loader = any(n in _TORCH_LOADERS for n in names)
    return torch_loader and all(n in _TORCH_LOADERS or n.rsplit(".", 1)[-1].endswith("Loader") for n in names)


def _is_not_none(test: cst.BaseExpression, name: str) -> bool:
    test = _unparenthesized(test)
    if type(test) is cst.Name:
        return test.value == name  # `if valid_set and not isinstance(...)`
    return type(test) is cst.Comparison and type(test.left) is cst.Name and test.left.value == name and \
        len(test.comparisons) == 1 and type(test.comparisons[0].operator) is cst.IsNot and \
        type(test.comparisons[0].comparator) is cst.Name and test.comparisons[0].comparator.value == "None"


def _unparenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    return node
