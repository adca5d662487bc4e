"""Early-leaving periodic guards, read from CPython's `ast` by the project summarizer (`_Summarizer._block`).

`if step % 100 != 0: return` (or `continue`) at the top of a helper makes the rest of its block run only every
N calls; so does a nest of guards every way through which that does not leave passes a periodic test (a sampling
helper: `if steps == 0: <if not at_first: return> else: <if steps % every != 0: return>`). The in-module
counterpart on LibCST trees is `LoopAnalysis._skip_guard` (analysis/loops.py).
"""
from __future__ import annotations

import ast
import re

from gpulint import ast_walk

_DEPTH = 4


def skip_guard(stmt: ast.If, depth: int = 0) -> bool:
    """Every way through `stmt` that reaches the next statement passes a periodic test."""
    if depth > _DEPTH:
        return False
    falls_body = not _leaves(stmt.body)
    if falls_body and not (_periodic(stmt.test) or _block_guard(stmt.body, depth)):
        return False
    if not stmt.orelse:
        return _periodic(stmt.test, negated=True)
    if _never_falls(stmt.orelse):
        return falls_body
    return _periodic(stmt.test, negated=True) or _block_guard(stmt.orelse, depth)


def _block_guard(body: list[ast.stmt], depth: int) -> bool:
    return any(isinstance(stmt, ast.If) and skip_guard(stmt, depth + 1) for stmt in body)


def _leaves(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Continue))


def _never_falls(body: list[ast.stmt]) -> bool:
    if _leaves(body):
        return True
    last = body[-1] if body else None
    return isinstance(last, ast.If) and _leaves(last.body) and bool(last.orelse) and _never_falls(last.orelse)


def _periodic(test: ast.expr, negated: bool = False) -> bool:
    """`test` (or its negation) holds on some calls only: `step % N == 0` (negated: `step % N != 0`), `step == 0`,
    a conjunction with such a term (a disjunction of them)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _periodic(test.operand, not negated)
    if isinstance(test, ast.BoolOp):
        terms = [_periodic(v, negated) for v in test.values]
        return any(terms) if isinstance(test.op, ast.And) != negated else all(terms)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    op = test.ops[0]
    if not isinstance(op, ast.NotEq if negated else ast.Eq):
        return False
    sides = (test.left, test.comparators[0])
    if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for s in sides for n in ast_walk.walk(s)):
        if sharding(test.left, test.comparators[0]):
            return False  # `idx % world_size != rank`: this process's share of the items, each of them
        return not any(isinstance(s, ast.Constant) and s.value == 1 for s in _moduli(sides))
    return any(isinstance(s, ast.Constant) and type(s.value) is int for s in sides) and any(_counter(s) for s in sides)


# The number of processes items are dealt among, and this process's place among them.
_PROCESS_COUNT = re.compile(r"^(world_size|num_replicas|num_processes|nprocs|n_procs|num_procs|num_ranks|nranks|"
                            r"n_gpus|ngpus|num_gpus|gpu_count|num_shards|n_shards|num_workers|nworkers)$", re.I)
_PROCESS_INDEX = re.compile(r"^(rank|local_rank|global_rank|process_index|proc_id|process_id|worker_id|gpu_id|"
                            r"shard_id|shard_index|my_rank)$", re.I)


def _last_name(node) -> str:
    """The last name of `x`, `a.b.x`, `x()` / `a.get_x()` (`get_` dropped), as an `ast` or LibCST node."""
    for _ in range(3):
        inner = getattr(node, "func", None)
        if inner is None:
            break
        node = inner
    name = getattr(node, "id", None) or getattr(getattr(node, "attr", None), "value", None) or \
        getattr(node, "attr", None) or getattr(node, "value", None)
    if not isinstance(name, str):
        return ""
    return name[4:] if name.startswith("get_") else name


def sharding(left, right) -> bool:
    """`idx % world_size == rank` (or `!=`, either side): a loop dealing its items among processes, not a
    periodic test. Each process runs the block for its own share of the items, every one of them when it is the
    only process; it works in `ast` and in LibCST trees alike."""
    for one, other in ((left, right), (right, left)):
        operator = getattr(one, "op", None) or getattr(one, "operator", None)
        if type(operator).__name__ == "Mod" or type(operator).__name__ == "Modulo":
            if _PROCESS_COUNT.match(_last_name(one.right)) and _PROCESS_INDEX.match(_last_name(other)):
                return True
    return False


def _moduli(sides) -> list:
    return [n.right for s in sides for n in ast_walk.walk(s) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)]


def _counter(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    name = name.lower()
    return name in ("step", "steps", "global_step", "global_steps", "iteration", "it", "itr", "i", "epoch") or \
        name.endswith(("_step", "_iter", "_idx", "step", "_epoch"))
