"""Host reads of device tensors a helper iterates in a comprehension, for the summaries of `project.py`.

A helper that gathers device tensors into lists and reads each one back (a loss-aware timestep sampler:
`sizes = [torch.tensor([0], device=t.device) for _ in range(world)]`, `dist.all_gather(sizes, ...)`, then
`sizes = [x.item() for x in sizes]`; `[x.item() for y, n in zip(batches, sizes) for x in y[:n]]` over
`batches = [torch.zeros(m).to(losses) for ...]`) synchronises on every call, whatever it is given: each `.item()`
waits for the GPU. The summary's own reads see a comprehension's variable as a tensor of unknown place; here
the variable takes the place of what its `for` iterates (a list of device tensors the function built, or an
element or slice of one), so a read of it is a read of a device tensor.
"""

from __future__ import annotations

import ast

from gpulint import ast_walk
from typing import Optional


def device_read(summarizer, comp: ast.expr) -> Optional[tuple[int, str]]:
    """(line, what) of a host read (`.item()`, `.tolist()`, `float(x)`, ...) of a variable of the comprehension
    `comp` bound to device tensors the function built; else None."""
    from gpulint.analysis.project import DEVICE_TENSOR

    if not isinstance(comp, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return None
    saved = dict(summarizer.tensors)
    try:
        bound = False
        for generator in comp.generators:
            level = summarizer._tensor_level(generator.iter)
            names = [n.id for n in ast_walk.walk(generator.target) if isinstance(n, ast.Name)]
            for name in names:  # the variables shadow the function's names inside the comprehension
                if level == DEVICE_TENSOR and isinstance(generator.target, ast.Name):
                    summarizer.tensors[name] = DEVICE_TENSOR
                    bound = True
                else:
                    summarizer.tensors.pop(name, None)
        if not bound:
            return None
        elements = [comp.key, comp.value] if isinstance(comp, ast.DictComp) else [comp.elt]
        for element in elements:
            for node in ast_walk.walk(element):
                if not isinstance(node, ast.Call):
                    continue
                read = summarizer._read_of(node)
                if read is not None and summarizer._tensor_level(read[1]) == DEVICE_TENSOR:
                    return node.lineno, read[0]
        return None
    finally:
        summarizer.tensors.clear()
        summarizer.tensors.update(saved)
