"""Calls of project loader factories are loaders, whatever the name they are bound to.

`data = load_data(data_dir=..., batch_size=...)` where `load_data` (another module of the project) builds a
`DataLoader` and returns it, or is a generator handing on its batches (`while True: yield from loader`): `data`
holds batches, so `next(data)` draws one and `for batch in data` is a pass over them. Names that read as loaders
(`train_loader`) were already loaders by name; this makes the kind follow the factory's summary
(`FunctionSummary.returns_loader`), for a factory returning the loader itself (not one element of a tuple, which
`DataFacts._unpacked_loaders` binds by place).
"""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.imports import dotted_name


def project_loader_call(analysis, call: cst.Call) -> bool:
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.project import FunctionSummary

    func = call.func
    if type(func) not in (cst.Name, cst.Attribute):
        return False
    dotted = dotted_name(func)
    if dotted is None or dotted.split(".")[0] == "self":
        return False
    calls = analysis.fact(project_calls)
    if calls is None:
        return False
    found = calls._lookup(func)
    return isinstance(found, FunctionSummary) and found.returns_loader is not None and \
        found.returns_loader_at is None and found.path != calls.path
