"""Host reads of a parameter's elements, one by one, inside a helper (issue 11, sixth set).

A greedy CTC decoder written in Python walks the predicted indices of each sample and tests every element:

    def decode(self, text_index, length):
        for index, l in enumerate(length):
            t = text_index[index, :]
            for i in range(l):
                if t[i] != 0 and not (i > 0 and t[i - 1] == t[i]):
                    chars.append(self.character[t[i]])

and an attention decoder looks every element up in a list (`[self.character[i] for i in text_index[index, :]]`).
Given a tensor on the GPU, each `if` on an element converts a 0-dim device tensor with `bool()`, and each list
lookup converts one with `__index__()`: a host read per element, for every sample of every call. The helper's
summary records the parameter as reaching a host read (`FunctionSummary.sink_params`), so a loop that calls it
with a tensor every step is reported at the call (GPU112); a call given a list or a host copy is not (the call
site's own checks: `calls.ProjectCalls._cost`).

What counts, on the function's `ast` (decided without any kind inference, so kept narrow):
- an element `v[i]` (a scalar index: a name, an integer, arithmetic of those) of a parameter, of a row of one
  (`p[k, :]`, `p[k]`, a slice `p[start:start + n]` of a flat one), or of a local name every assignment of which
  is such a row;
- compared in a branch's test (`if`, `while`, a conditional expression, a comprehension's `if`), with `==`,
  `!=`, `<`, ... (not `is`, `in`);
- in either case not itself inside another branch of the function (`if args.v2: ... if ids[j, 1] == eos:` runs
  only under an option the summary cannot see);
- or a loop variable over such a row (`for i in p[k, :]`), or over the parameter itself (`for i in x:`), used as the index of a subscript of something that is
  not the parameter's (a list or dict lookup: `names[i]`), or converted by `int(i)`.
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint import ast_walk

_COMPARE_SKIPPED = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def element_read(fn: ast.FunctionDef) -> Optional[tuple[str, int, str]]:
    """(parameter, line, what) for the first per-element host read of a parameter in `fn`, or None."""
    args = fn.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self", "cls"}
    if not params:
        return None
    nodes = list(ast_walk.walk(fn))  # one walk of the function, shared by the questions below
    views = _row_views(nodes, params)
    # parameters the function never rebinds: a loop over one of them iterates what the call passed (not
    # `text = list(t)` rebinding `text` before `[self.dict[c] for c in text]`)
    kept = params - _rebound(nodes)
    parents = {id(child): node for node in nodes for child in ast_walk.iter_child_nodes(node)}
    found: list[tuple[int, str, str]] = []
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not fn:
            continue  # nested scopes are walked too by ast_walk; their names are theirs, but rare: kept simple
        if not isinstance(node, (ast.If, ast.While, ast.IfExp, ast.comprehension, ast.For)) or \
                _under_a_branch(node, fn, parents):
            continue  # read only where an option or a state we cannot see holds (`if args.v2:`): not the call's
        tests: list[ast.expr] = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests.extend(node.ifs)
        for test in tests:
            param = _compared_element(test, params, views)
            if param is not None:
                found.append((test.lineno, param, "a host read of every element, tested by `if`"))
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            param = _row_source(node.iter, params, views, kept)
            if param is not None:
                scope = node.body if isinstance(node, ast.For) else [_comprehension_owner(nodes, node)]
                line = _index_use(node.target.id, scope, param, views)
                if line is not None:
                    found.append((line, param, "a host read of every element, used as an index"))
    if not found:
        return None
    line, param, what = min(found)
    return param, line, what


def _under_a_branch(node: ast.AST, fn: ast.FunctionDef, parents: dict) -> bool:
    """`node` sits in the body of an `if`, `while` or conditional expression of `fn` (loops, `with` and `try`
    run their bodies unconditionally)."""
    current = parents.get(id(node))
    while current is not None and current is not fn:
        if isinstance(current, (ast.If, ast.While, ast.IfExp)):
            return True
        current = parents.get(id(current))
    return False


def _row_views(nodes: list, params: set) -> dict[str, str]:
    """Local names every assignment of which is a row of a parameter (`t = text_index[index, :]`), from the
    nodes of the function."""
    values: dict[str, list] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            values.setdefault(node.target.id, []).append(None)
        elif isinstance(node, (ast.For, ast.comprehension)):
            for name in ast_walk.walk(node.target):
                if isinstance(name, ast.Name):
                    values.setdefault(name.id, []).append(None)
    views: dict[str, str] = {}
    for name, assigned in values.items():
        if name in params:
            continue
        sources = {_row_of(v, params) for v in assigned}
        if len(sources) == 1 and None not in sources:
            views[name] = sources.pop()  # type: ignore[assignment]
    return views


def _rebound(nodes: list) -> set:
    """The names the function's nodes assign, loop over or bind otherwise (`with ... as n`, `except ... as n`)."""
    names: set = set()
    for node in nodes:
        targets: list = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        elif isinstance(node, ast.NamedExpr):
            targets = [node.target]
        for target in targets:
            names.update(n.id for n in ast_walk.walk(target) if isinstance(n, ast.Name))
    return names


def _row_of(value: Optional[ast.expr], params: set) -> Optional[str]:
    """`p[k, :]` / `p[k]` of a parameter `p`: the parameter."""
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id in params and \
            _row_index(value.slice):
        return value.value.id
    return None


def _row_index(index: ast.expr) -> bool:
    """`[k, :]`, `[k]`, or a slice of a flat parameter (`[start:start + n]`)."""
    if isinstance(index, ast.Slice):
        return index.step is None
    if isinstance(index, ast.Tuple):
        return bool(index.elts) and _scalar(index.elts[0]) and all(
            isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None for e in index.elts[1:])
    return _scalar(index)


def _scalar(index: ast.expr) -> bool:
    """A scalar index: a name, an integer, arithmetic of those (`i - 1`)."""
    if isinstance(index, ast.Name):
        return True
    if isinstance(index, ast.Constant):
        return isinstance(index.value, int) and not isinstance(index.value, bool)
    if isinstance(index, ast.BinOp) and isinstance(index.op, (ast.Add, ast.Sub)):
        return _scalar(index.left) and _scalar(index.right)
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        return _scalar(index.operand)
    return False


def _row_source(expr: ast.expr, params: set, views: dict, kept: set) -> Optional[str]:
    """A row of a parameter, spelt out (`p[k, :]`) or through a view name (`t`), or a parameter itself that the
    function never rebinds (`for i in x: vocab.itos[i]`: a list lookup takes a one-element index only, so each
    `i` is an element)."""
    if isinstance(expr, ast.Name):
        return expr.id if expr.id in kept else views.get(expr.id)
    return _row_of(expr, params)


def _element(expr: ast.expr, params: set, views: dict) -> Optional[str]:
    """`t[i]` of a row view, or `p[k, i]` / `p[k][i]` of a parameter: the parameter."""
    if not isinstance(expr, ast.Subscript) or not _scalar(expr.slice) and not (
            isinstance(expr.slice, ast.Tuple) and len(expr.slice.elts) == 2 and all(map(_scalar, expr.slice.elts))):
        return None
    base = expr.value
    if isinstance(base, ast.Name):
        if base.id in views:
            return views[base.id] if _scalar(expr.slice) else None
        if base.id in params and isinstance(expr.slice, ast.Tuple):
            return base.id  # `p[k, i]`: one element of a 2-d parameter
        return None
    return _row_of(base, params) if _scalar(expr.slice) else None


def _compared_element(test: ast.expr, params: set, views: dict) -> Optional[str]:
    if isinstance(test, ast.BoolOp):
        for value in test.values:
            param = _compared_element(value, params, views)
            if param is not None:
                return param
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _compared_element(test.operand, params, views)
    if isinstance(test, ast.Compare) and not any(isinstance(op, _COMPARE_SKIPPED) for op in test.ops):
        for operand in (test.left, *test.comparators):
            param = _element(operand, params, views)
            if param is not None:
                return param
    return None


def _comprehension_owner(nodes: list, comp: ast.comprehension) -> ast.AST:
    for node in nodes:
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and comp in node.generators:
            return node
    return comp


def _index_use(name: str, scope: list, source: str, views: dict) -> Optional[int]:
    """The line where the loop variable `name` (an element of the parameter `source`) indexes a lookup
    (`names[i]`, also of another parameter: `def idx_to_word(x, vocab): for i in x: vocab[i]`) or is converted
    by `int(i)`."""
    for root in scope:
        for node in ast_walk.walk(root):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id == name:
                base = node.value
                if isinstance(base, ast.Name) and (base.id == source or views.get(base.id) == source):
                    continue  # indexing the tensor itself: left alone
                return node.lineno
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" and \
                    len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == name:
                return node.lineno
    return None
