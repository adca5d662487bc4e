"""Memoised builders, read from CPython's `ast` by the project summarizer (`_Summarizer._block`/`_statement`).

A method that keeps what it built in its object (or a module-level dict) and hands the kept value back when it has
one runs its build once per key, not once per call:

    if shape == self.last_shape and device in self.cache:   # a present test of the store ...
        return self.cache[device]                            # ... handing the kept value back
    anchors = torch.from_numpy(np.vstack(...)).to(device)    # built on a miss only
    self.cache[device] = anchors                             # ... and kept: a memo

    if self.grid is None or self.grid.shape[2:] != x.shape[2:]:   # a missing test of the store
        self.grid = self._make_grid(...).to(x.device)              # filled on a miss only

What such a build costs (a host array copied to the GPU, a read) is not the call's: it is paid on the first call
for a key (an image size, a device). The store must be read in the test and written after the early return (or
in the filled body), so a plain `if x is None: return None` guard or a counter reset (`if self.n > 9: self.n = 0`)
is no memo.
"""
from __future__ import annotations

import ast
from typing import Optional

from gpulint import ast_walk


def _store(expr: ast.expr) -> Optional[str]:
    """The store `expr` names: `self.cache` for `self.cache`, `self.cache[k]`, `self.cache.get(k)`; `CACHE` for a
    subscript or `.get` of a bare name (a module-level dict); None otherwise."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "get":
        expr = expr.func.value
        bare_ok = True
    elif isinstance(expr, ast.Subscript):
        expr = expr.value
        bare_ok = True
    else:
        bare_ok = False
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in ("self", "cls"):
        return f"{expr.value.id}.{expr.attr}"
    if bare_ok and isinstance(expr, ast.Name):
        return expr.id
    return None


def _tests(test: ast.expr, store: str, present: bool) -> bool:
    """`test` holds when the store has (`present`) or lacks (not `present`) the kept value: `k in S`, `S is not
    None`, `S` / `k not in S`, `S is None`, `not S`; a conjunct of an `and` (present) or a term of an `or`
    (missing) counts."""
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == present:
            return any(_tests(v, store, present) for v in test.values)
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _tests(test.operand, store, not present)
    if _store(test) == store and not isinstance(test, ast.Call):
        return present  # `if self.cache:` / `if self.cache[k]:`
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)) and _named(right) == store:
            return isinstance(op, ast.In) == present
        if isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
            side = left if isinstance(right, ast.Constant) and right.value is None else \
                right if isinstance(left, ast.Constant) and left.value is None else None
            if side is not None and _store(side) == store:
                return isinstance(op, (ast.IsNot, ast.NotEq)) == present
    return False


def _named(expr: ast.expr) -> Optional[str]:
    """`self.cache` / `CACHE` as a whole (the right side of an `in`)."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in ("self", "cls"):
        return f"{expr.value.id}.{expr.attr}"
    if isinstance(expr, ast.Name):
        return expr.id
    return None


def _keys(test: ast.expr, store: str) -> set:
    """The keys `test` looks up in the store (`k in S`, `k not in S`), as `ast.dump` texts."""
    found = set()
    for node in ast_walk.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and _named(node.comparators[0]) == store:
            found.add(ast.dump(node.left))
    return found


def _writes(body: list, store: str, keys: frozenset = frozenset()) -> bool:
    """Some statement of `body` (nested blocks included, nested definitions not) keeps a value in the store:
    `self.cache = v`, `self.cache[k] = v`, `CACHE[k] = v`, `self.cache.update(...)`/`.setdefault(...)`. With
    `keys` (what the test looks up), a subscript write counts under one of them only: a cache tested under one
    key and filled under another (`if d not in F: F[str(d) + "_bank"] = ...`) never hits."""
    bare = "." not in store
    for stmt in body:
        for node in ast_walk.walk(stmt):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for part in ast_walk.walk(target):
                        if isinstance(part, ast.Subscript) and _store(part) == store and \
                                (not keys or ast.dump(part.slice) in keys):
                            return True
                        if not bare and isinstance(part, ast.Attribute) and _named(part) == store:
                            return True
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("update", "setdefault", "__setitem__") and _named(node.func.value) == store:
                return True
    return False


def memo_return(stmt: ast.If, rest: list, fn: ast.AST) -> bool:
    """`stmt` hands back a kept value when the store has it (`if k in self.cache: return self.cache[k]`), and
    `rest` (the statements after it) keeps what it builds in that store: `rest` runs once per key. A bare-name
    store must not be bound in `fn` (a dict made per call keeps nothing across calls)."""
    if stmt.orelse or not stmt.body or not isinstance(stmt.body[-1], ast.Return) or stmt.body[-1].value is None:
        return False
    value = stmt.body[-1].value
    store = _store(value) or _named(value)
    if store is None or (isinstance(value, ast.Name)):
        return False  # a local name returned is no kept value
    return _tests(stmt.test, store, True) and _writes(rest, store, frozenset(_keys(stmt.test, store))) and \
        _kept(store, fn)


def _kept(store: str, fn: ast.AST) -> bool:
    return "." in store or not any(isinstance(n, ast.Name) and n.id == store and isinstance(n.ctx, ast.Store)
                                   for n in ast_walk.walk(fn))


def memo_fill(stmt: ast.If, fn: ast.AST) -> bool:
    """`stmt` fills a store when it lacks the value (`if self.grid is None or ...: self.grid = build()`): its body
    runs once per key."""
    if stmt.orelse:
        return False
    stores = set()
    for node in ast_walk.walk(stmt.test):
        name = _store(node) if isinstance(node, (ast.Subscript, ast.Call)) else \
            _named(node) if isinstance(node, (ast.Attribute, ast.Name)) else None
        if name is not None:
            stores.add(name)
    return any(_tests(stmt.test, store, False) and _writes(stmt.body, store, frozenset(_keys(stmt.test, store)))
               and _kept(store, fn) for store in stores)


def after_memo_returns(fn: ast.AST) -> set:
    """The ids of the statements of `fn` (its nested blocks included) that follow a memo's early return in their
    block (`memo_return`): they run once per key."""
    skipped: set = set()
    for node in ast_walk.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block[:-1]):
                if isinstance(stmt, ast.If) and memo_return(stmt, block[i + 1:], fn):
                    skipped.update(id(s) for s in block[i + 1:])
                    break
    return skipped


# -- the same stances on LibCST trees (analysis/loops.py: what runs every time a per-step function runs) --------
def _returns_kept(stmt) -> bool:
    """A cheap LibCST test: `stmt` is an `if` without `else` whose body ends in `return self.x...`/`return N[k]`."""
    import libcst as cst

    if type(stmt) is not cst.If or stmt.orelse is not None or type(stmt.body) is not cst.IndentedBlock or \
            not stmt.body.body:
        return False
    last = stmt.body.body[-1]
    if type(last) is not cst.SimpleStatementLine or type(last.body[-1]) is not cst.Return:
        return False
    value = last.body[-1].value
    return type(value) in (cst.Attribute, cst.Subscript, cst.Call)


def _parsed(nodes) -> Optional[list]:
    import libcst as cst

    empty = cst.Module(body=[])
    try:
        return ast.parse("\n".join(empty.code_for_node(n) for n in nodes)).body
    except (SyntaxError, ValueError):
        return None


def cst_memo_return(block, child, cache: dict) -> bool:
    """`child` (a statement of the LibCST `block`) comes after a memo's early return (`memo_return`)."""
    for i, stmt in enumerate(block.body):
        if stmt is child:
            return False
        if not _returns_kept(stmt):
            continue
        key = (id(block), i)
        found = cache.get(key)
        if found is None:
            parsed = _parsed(block.body[i:])
            found = bool(parsed) and isinstance(parsed[0], ast.If) and \
                memo_return(parsed[0], parsed[1:], ast.Module(body=parsed, type_ignores=[]))
            cache[key] = found
        if found:
            return True
    return False


def _may_test_missing(test) -> bool:
    """A cheap LibCST test: `test` could hold when a store lacks its value (`memo_fill`'s `_tests` with
    `present=False` needs a `not`, a `not in` or a `None`), so ordinary `if`s are never printed and parsed."""
    import libcst as cst

    stack = [test]
    while stack:
        node = stack.pop()
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
            return True
        if type(node) is cst.ComparisonTarget and type(node.operator) is cst.NotIn:
            return True
        if type(node) is cst.Name and node.value == "None":
            return True
        stack.extend(node.children)
    return False


def cst_memo_fill(stmt, cache: dict) -> bool:
    """The LibCST `if` `stmt` fills a memo (`memo_fill`)."""
    if stmt.orelse is not None or not _may_test_missing(stmt.test):
        return False
    found = cache.get(id(stmt))
    if found is None:
        parsed = _parsed([stmt])
        found = bool(parsed) and isinstance(parsed[0], ast.If) and memo_fill(parsed[0], parsed[0])
        cache[id(stmt)] = found
    return found
