"""A module that names no device but moves its data with a project helper that copies to a CUDA device.

Device-generic projects keep the device in one place and copy through a helper:

    def select_device(gpu_id):                          # utils/torch_utils.py
        if gpu_id >= 0:
            Config.DEVICE = torch.device('cuda:%d' % gpu_id)
        else:
            Config.DEVICE = torch.device('cpu')

    def tensor(x):
        return torch.from_numpy(np.asarray(x, dtype=np.float32)).to(Config.DEVICE)

    def to_np(t):
        return t.cpu().detach().numpy()

An agent module calls `tensor(rewards)` and `to_np(prediction['action'])` without ever naming a device. The
tensors it builds through `tensor(...)` and the network outputs it reads back live where the helper copies, on
the GPU in a CUDA run. The stance (the labelled sets' stance on device-generic code): the module is GPU code when
it calls a project function (of another module) that copies host data to a device on every call
(`FunctionSummary.copies_host`, host_copies.py) and that function's module names CUDA (`cuda`, not just
`device`): a CPU-only project never names CUDA, and stays quiet. Asked by `forward.feeds_a_gpu`, only for a
module whose own text has no device hint; the module's calls by a plain name are looked at, each callee once.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import libcst as cst

_CUDA = re.compile(r"\bcuda\b|cuda[\"':]", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _names_cuda(path: Path) -> bool:
    try:
        return _CUDA.search(path.read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False


def copies_through_a_cuda_helper(analysis) -> bool:
    """`analysis`'s module calls `helper(...)`, a project function of another module that copies host data to a
    device on every call, in a module naming CUDA."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.node_types import of_types

    if analysis.path is None:
        return False
    calls = analysis.fact(project_calls)
    if calls is None:
        return False
    own = Path(analysis.path).resolve()
    seen: set = set()
    for node in of_types(analysis.index, cst.Call):
        func = node.func  # type: ignore[attr-defined]
        if type(func) is not cst.Name or func.value in seen:
            continue
        seen.add(func.value)
        target = calls.callee(node)  # type: ignore[arg-type]
        if target is None:
            continue
        summary = target[1]
        sink = summary.copies_host
        if sink is None or Path(summary.path).resolve() == own:
            continue
        if _names_cuda(Path(sink.path).resolve()):
            return True
    return False
