"""For the prefilter (gpulint/prefilter.py): may a loop's body compute a tensor, as `KindInference` would say?

`LoopAnalysis._iterates_tensor_math` makes a `range`/`while` loop hot only when its body computes a tensor
(`_computes_tensor`): an operator or a call whose kind is `Kind.TENSOR`, or `.cpu()`/`.item()` of a value
computed there. Before this, the prefilter let every such loop with a call or an operator through, and most of
a model library's loops are of that shape (`for i in range(depth): blocks.append(Block(...))`): on timm, 50 of
the 72 files parsed with LibCST had no hot loop.

This is a may-analysis on CPython's `ast`: every expression `KindInference` can call `TENSOR` is called "may be
a tensor" here, never the other way round. It over-approximates kinds.py rule by rule:

- a name may be a tensor if any binding of that name anywhere in the module (ignoring scopes: a superset) may
  give one: an assignment, augmented assignment or `:=` of a value that may be a tensor (pairwise for
  `a, b = x, y`, else each name of the target from the whole value, as `tree.py` binds them); an annotation
  that mentions `Tensor`, or a name back-propagated with `name.backward()` or `scaler.scale(name).backward()`; a `for`/comprehension target over anything but `range(...)`, unless what it iterates
  can yield no tensor. `with ... as x`, imports, `def`, `class` and names nothing binds are never tensors in
  kinds.py (`_kind_from_name` never says `TENSOR`);
- a call may be a tensor when it may name something in `torch.` (under any alias), is a method of a value that
  may be a tensor or a model, is `.to`/`.cuda`/`.scale`/`.detach`, is `abs`/`max`/`min`/`sum` of a tensor, or calls
  something that may be a model (the prefilter's `_may_be_model`), or anything not a plain name or attribute;
- `self.x` may be a tensor only in a module that registers buffers; any other attribute, subscript or operator
  only through a part that may be one; literals, displays and comprehensions never.

tests/test_prefilter.py checks that every expression of the fixtures and rule examples that `KindInference` calls
TENSOR (5,600 of them) may be a tensor here, and the prefilter against LibCST's loop analysis on every fixture,
rule example and, with GPULINT_PREFILTER_CORPORA, on real repositories.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

from gpulint.analysis.progress_wrappers import is_progress_wrapper
from gpulint import ast_walk

# kinds.py: calls of these builtins are numbers or other Python values, never tensors.
_NOT_TENSOR_BUILTINS = {"float", "int", "bool", "len", "round", "complex", "ord", "hash", "id", "str", "repr",
                        "format", "list", "dict", "tuple", "set", "frozenset", "range", "sorted", "print",
                        "open", "isinstance", "type", "getattr", "hasattr", "vars", "iter", "map", "filter"}
_ITERATION_WRAPPERS = {"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "islice", "itertools.islice",
                       "reversed", "zip"}
_DISPLAYS = (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
             ast.SetComp, ast.GeneratorExp, ast.Lambda)


class TensorFacts:
    """Which names and expressions of one module may be tensors (see the module's docstring)."""

    def __init__(self, tree: ast.AST, qualified: Callable[[ast.AST], set], may_be_model: Callable[[ast.AST], bool],
                 names_a_loader: bool) -> None:
        self._qualified = qualified
        self._may_be_model = may_be_model
        self._loaders = names_a_loader  # some value of the module may be a `DataLoader` (Kind.LOADER)
        self._buffers = False  # the module calls `.register_buffer(...)` (found by `_collect`)
        # name -> what binds it: ("value", expr) | ("iterates", expr) | ("tensor", None)
        self._bindings: dict[str, list[tuple[str, Optional[ast.AST]]]] = {}
        self._collect(tree)
        self.names = self._fixpoint()

    # -- bindings ----------------------------------------------------------------------------------------------
    def _collect(self, tree: ast.AST) -> None:
        for node in ast_walk.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value)
            elif isinstance(node, ast.AnnAssign):
                if _mentions_tensor(node.annotation):
                    self._bind_all(node.target, ("tensor", None))
                self._bind(node.target, node.value if node.value is not None else node.annotation)
            elif isinstance(node, (ast.AugAssign, ast.NamedExpr)):
                self._bind_all(node.target, ("value", node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._bind_all(node.target, ("iterates", node.iter))
            elif isinstance(node, ast.Attribute) and node.attr == "register_buffer":
                self._buffers = True
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "backward" and isinstance(node.func.value, ast.Name) and not node.args:
                self._bindings.setdefault(node.func.value.id, []).append(("tensor", None))  # `loss.backward()`
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "backward" and not node.args and isinstance(node.func.value, ast.Call) and \
                    isinstance(node.func.value.func, ast.Attribute) and node.func.value.func.attr == "scale" and \
                    len(node.func.value.args) == 1 and isinstance(node.func.value.args[0], ast.Name):
                # `scaler.scale(loss).backward()`: kinds.py's `_scaled_backward`
                self._bindings.setdefault(node.func.value.args[0].id, []).append(("tensor", None))
            elif isinstance(node, ast.arg):
                if node.annotation is not None and _mentions_tensor(node.annotation):
                    self._bindings.setdefault(node.arg, []).append(("tensor", None))

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        """As tree.py's `bind`: `a, b = x, y` pairwise, `a, b = pair` each name from the whole value."""
        if isinstance(target, ast.Name):
            self._bindings.setdefault(target.id, []).append(("value", value))
        elif isinstance(target, ast.Starred):
            self._bind(target.value, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for element, part in zip(target.elts, value.elts):
                    if not isinstance(part, ast.Starred):
                        self._bind(element, part)
            else:
                for element in target.elts:
                    self._bind(element, value)

    def _bind_all(self, target: ast.AST, how: tuple[str, Optional[ast.AST]]) -> None:
        for node in ast_walk.walk(target):
            if isinstance(node, ast.Name):
                self._bindings.setdefault(node.id, []).append(how)

    def _fixpoint(self) -> set[str]:
        names: set[str] = set()
        pending = dict(self._bindings)
        changed = True
        while changed:
            changed = False
            for name in list(pending):
                if any(self._binding_may_be_tensor(how, value, names) for how, value in pending[name]):
                    names.add(name)
                    del pending[name]
                    changed = True
        return names

    def _binding_may_be_tensor(self, how: str, value: Optional[ast.AST], names: set[str]) -> bool:
        if how == "tensor":
            return True
        if how == "iterates":
            return self._may_yield_tensor(value, names)  # type: ignore[arg-type]
        return self.may_be_tensor(value, names)  # type: ignore[arg-type]

    # -- expressions -------------------------------------------------------------------------------------------
    def _may_yield_tensor(self, iterable: ast.AST, names: set[str]) -> bool:
        """kinds.iteration_kind may say TENSOR."""
        if isinstance(iterable, ast.Call):
            func = iterable.func
            dotted = _dotted(func)
            if dotted == "range":
                return False
            if dotted in _ITERATION_WRAPPERS or is_progress_wrapper(dotted):
                return any(self._may_yield_tensor(a.value if isinstance(a, ast.Starred) else a, names)
                           for a in iterable.args)
            if isinstance(func, ast.Attribute) and func.attr in ("parameters", "items", "keys", "values"):
                return True
        if isinstance(iterable, ast.Name):
            # `_iterated_bindings`: the elements of a list or tuple the name is assigned
            for how, value in self._bindings.get(iterable.id, ()):
                if how == "value" and isinstance(value, (ast.List, ast.Tuple)) and any(
                        self.may_be_tensor(e, names) for e in value.elts if not isinstance(e, ast.Starred)):
                    return True
        # a tensor (its rows), or a loader (its batches: only in a module that may name one)
        return self.may_be_tensor(iterable, names) or self._loaders and not isinstance(iterable, _DISPLAYS)

    def may_be_tensor(self, node: ast.AST, names: Optional[set[str]] = None) -> bool:
        names = self.names if names is None else names
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, _DISPLAYS):
            return False
        if isinstance(node, ast.Call):
            return self._call_may_be_tensor(node, names)
        if isinstance(node, ast.Attribute):
            qualified = self._qualified(node)
            if qualified and all(q.startswith("numpy.") for q in qualified):
                return False
            if isinstance(node.value, ast.Name) and node.value.id == "self" and self._buffers:
                return True
            return self.may_be_tensor(node.value, names)
        if isinstance(node, ast.Subscript):
            return self.may_be_tensor(node.value, names)
        if isinstance(node, ast.BinOp):
            return self.may_be_tensor(node.left, names) or self.may_be_tensor(node.right, names)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.may_be_tensor(node.operand, names)
        if isinstance(node, ast.Compare):
            return len(node.ops) == 1 and not isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.In, ast.NotIn)) \
                and (self.may_be_tensor(node.left, names) or self.may_be_tensor(node.comparators[0], names))
        if isinstance(node, ast.IfExp):
            return self.may_be_tensor(node.body, names) or self.may_be_tensor(node.orelse, names)
        if isinstance(node, ast.BoolOp):
            return any(self.may_be_tensor(v, names) for v in node.values)
        if isinstance(node, ast.NamedExpr):
            return self.may_be_tensor(node.value, names)
        return False  # await, yield, starred, slices: UNKNOWN in kinds.py

    def _call_may_be_tensor(self, call: ast.Call, names: set[str]) -> bool:
        func = call.func
        if not isinstance(func, (ast.Name, ast.Attribute)):
            return True  # `self.blocks[i](x)`, `make()(x)`: whatever the callee is
        qualified = self._qualified(func)
        if any(q == "torch" or q.startswith("torch.") for q in qualified):
            return True
        if self._may_be_model(func):
            return True  # a model's output
        if isinstance(func, ast.Name):
            if func.id in ("abs", "max", "min", "sum"):
                return any(self.may_be_tensor(a.value if isinstance(a, ast.Starred) else a, names)
                           for a in call.args)
            return False  # builtins, functions and classes of the module: never TENSOR in kinds.py
        method = func.attr
        if method in ("item", "tolist", "numpy") and not call.args:
            return False
        if method in ("to", "cuda", "scale", "forward", "generate", "__call__", "detach"):
            return True
        return self.may_be_tensor(func.value, names) or self._may_be_model(func.value)

    def body_may_compute_tensor(self, nodes) -> bool:
        """`LoopAnalysis._computes_tensor` may hold for some call or operator among `nodes` (a loop's body)."""
        for node in nodes:
            if isinstance(node, ast.BinOp):
                if self.may_be_tensor(node):
                    return True
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in ("cpu", "item") and not node.args \
                        and not node.keywords and isinstance(func.value, (ast.Call, ast.BinOp)):
                    return True  # `(a * b).sum().cpu()`: kinds.py's UNKNOWN counts there too
                if self.may_be_tensor(node):
                    return True
        return False


def _mentions_tensor(annotation: ast.AST) -> bool:
    """kinds._annotation_kind may say TENSOR: `torch.Tensor`, `Tensor`, `FloatTensor`, `"Tensor"`..."""
    return any(isinstance(n, ast.Name) and "Tensor" in n.id or isinstance(n, ast.Attribute) and "Tensor" in n.attr
               or isinstance(n, ast.Constant) and isinstance(n.value, str) and "Tensor" in n.value
               for n in ast_walk.walk(annotation))


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
