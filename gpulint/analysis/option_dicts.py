"""Options a project function hands back as a dict of literal keys (`**loader_kwargs` of a `DataLoader`).

    # config.py                                      # data.py
    def loader_options():                            loader_kwargs = config.loader_options()
        kwargs = {}                                  DataLoader(ds, batch_size=8, **loader_kwargs)
        if platform.system() == "Darwin":
            kwargs = {"multiprocessing_context": "forkserver", "persistent_workers": True}
        return kwargs

`returned_keys` reads, from the function's `ast` node, the keys every `return` may hand back: a dict literal of
string keys, or a local name only ever bound to such literals (and filled with `name["key"] = value`); None when
any return, binding or use of that name may add a key it cannot read. `call_keys` answers it for a call in a
linted module (`analysis/data_facts.py` `_literal_keys`: what `**loader_kwargs` carries, so `pin_memory_of` knows
that no `pin_memory` is passed). The values are not followed: a key's value is unknown.
"""

from __future__ import annotations

import ast

from gpulint import ast_walk
from typing import Optional

import libcst as cst

from gpulint.analysis.imports import dotted_name


def _literal(node: ast.AST) -> Optional[frozenset]:
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                          for k in node.keys):
        return frozenset(k.value for k in node.keys)  # type: ignore[union-attr]
    return None


def returned_keys(fn: ast.FunctionDef) -> Optional[frozenset]:
    """The keys of the dicts `fn` returns (see the module docstring), else None."""
    nodes = list(ast_walk.scope_nodes(fn))
    returns = [n for n in nodes if isinstance(n, ast.Return)]
    if not returns or any(r.value is None for r in returns) or \
            any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes):
        return None
    keys: set = set()
    names: set = set()
    for ret in returns:
        found = _literal(ret.value)
        if found is not None:
            keys |= found
        elif isinstance(ret.value, ast.Name):
            names.add(ret.value.id)
        else:
            return None
    if len(names) > 1 or any(isinstance(a, ast.arg) and a.arg in names for a in ast_walk.walk(fn.args)):
        return None
    for name in names:
        parents = {id(child): node for node in nodes for child in ast_walk.iter_child_nodes(node)}
        for node in nodes:
            if not isinstance(node, ast.Name) or node.id != name:
                continue
            parent = parents.get(id(node))
            if isinstance(node.ctx, ast.Store):
                found = _literal(parent.value) if isinstance(parent, ast.Assign) and parent.targets == [node] \
                    else None
                if found is None:
                    return None
                keys |= found
            elif isinstance(parent, ast.Return):
                continue
            elif isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store) and \
                    isinstance(parent.slice, ast.Constant) and isinstance(parent.slice.value, str):
                keys.add(parent.slice.value)
            else:
                return None  # `kwargs.update(other)`, handed to a call, `del`: keys it cannot read
    return frozenset(keys)


def call_keys(analysis, call: cst.Call) -> Optional[frozenset]:
    """The keys of the dict a call of a top-level project function returns (`config.loader_options()`), else
    None."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.project import FunctionSummary

    if call.args:
        return None  # options chosen by arguments: the returned keys may depend on them in ways not followed
    dotted = dotted_name(call.func)
    calls = analysis.fact(project_calls)
    if dotted is None or calls is None:
        return None
    found = calls.project.lookup(calls.path, dotted)
    if not isinstance(found, FunctionSummary) or "." in found.qualname:
        return None
    info = calls.project.module(found.path)
    fn = info.functions.get(found.qualname) if info is not None else None
    return returned_keys(fn) if isinstance(fn, ast.FunctionDef) else None
