"""The nodes of a module by type, in document order: `of_types(index, cst.Call)`.

`type(node) is cst.Call` goes through `ABCMeta.__instancecheck__` (LibCST's nodes are ABCs): about a
microsecond a test, and a scan of every node of a module per question made it a fifth of a cold run. The
module's nodes are grouped by exact type once (one `type()` per node), and a question about classes is the
union of the exact types that are subclasses of them, merged back into document order: the same nodes, in the
same order, as `[n for n in index.nodes if isinstance(n, classes)]`.
"""

from __future__ import annotations

import heapq
from typing import Any

import libcst as cst

_GROUPS = "_gpulint_nodes_by_type"


def of_types(index: Any, *classes: type) -> list[cst.CSTNode]:
    """The nodes of `index` (a SyntaxIndex) that are instances of `classes`, in document order."""
    groups = getattr(index, _GROUPS, None)
    if groups is None:
        groups = {}
        for position, node in enumerate(index.nodes):
            groups.setdefault(type(node), []).append(position)
        setattr(index, _GROUPS, groups)
        index._gpulint_asked = {}
    asked: dict = index._gpulint_asked
    found = asked.get(classes)
    if found is None:
        lists = [positions for t, positions in groups.items() if issubclass(t, classes)]
        positions = lists[0] if len(lists) == 1 else list(heapq.merge(*lists))
        nodes = index.nodes
        found = asked[classes] = [nodes[p] for p in positions]
    return found


def of_types_within(index: Any, node: cst.CSTNode, *classes: type) -> list[cst.CSTNode]:
    """The nodes of `index` under `node` (itself included) that are instances of `classes`, in document order:
    `of_types` cut to the node's subtree by bisection, so that a question about one function of a module of
    thousands costs the function's size, not the module's."""
    from bisect import bisect_left, bisect_right

    span = index.subtree(node)
    if span is None:
        return []
    of_types(index, cst.Module)  # the groups by type, built once
    groups = getattr(index, _GROUPS)
    first, last = span
    lists = [positions[bisect_left(positions, first):bisect_right(positions, last)]
             for t, positions in groups.items() if issubclass(t, classes)]
    positions = lists[0] if len(lists) == 1 else list(heapq.merge(*lists))
    nodes = index.nodes
    return [nodes[p] for p in positions]
