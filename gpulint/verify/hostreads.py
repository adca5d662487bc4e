"""A portable count of host reads: the Tensor methods that bring a value to the host.

On a GPU each of these, on a device tensor, is a blocking sync; on the CPU they cost nothing, but counting them
shows, on any machine, how many syncs the same code would make on a GPU. Only calls made by the user's code
count: torch's own internals (`Tensor.__format__` calling `.item()`, Adam reading its step counter) and the
probe are skipped by looking at the caller's file. The wrappers add a Python call and a counter bump, never a sync.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections import Counter

CALLERS = 3  # user frames kept above each read (the caller chain shown for reads no rule flagged)

# Methods whose result lives on the host, so they wait for the device.
READ_METHODS = ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__", "__index__",
                "__complex__", "__format__", "__repr__", "__array__", "__contains__")
# Methods whose output size depends on the data: PyTorch reads a count back to size the result.
SHAPE_METHODS = ("nonzero", "unique", "unique_consecutive", "masked_select", "argwhere")
SHAPE_FUNCTIONS = ("nonzero", "unique", "unique_consecutive", "masked_select", "argwhere")


class HostReads:
    """Counts host reads made by the user's code. Two counters only grow: reads of any tensor, and reads of
    tensors on an accelerator (the ones that are syncs there); the step recorder snapshots both and keeps the
    second for programs that use a GPU, the first for programs that run on the CPU."""

    def __init__(self, torch) -> None:
        self.torch = torch
        self.count = 0
        self.device_count = 0
        self.counting = True
        self.sites: Counter = Counter()  # (file, line, method, on a device) -> reads while `self.counting`
        self.window = 0  # the step window now running (set by the step recorder)
        self.site_windows: Counter = Counter()  # site -> windows it was read in
        self._last_window: dict = {}
        self.callers: dict = {}  # site -> Counter of caller chains ((file, line, function), ...) of user frames
        here = os.path.dirname(os.path.abspath(__file__))
        self._skip = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
                      os.path.dirname(here) + os.sep)
        paths = sysconfig.get_paths()
        libraries = {os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
                     if paths.get(k)}
        self._not_user = self._skip + tuple(sorted(libraries)) + ("<",)

    def install(self) -> None:
        tensor = self.torch.Tensor
        for name in READ_METHODS + SHAPE_METHODS:
            if hasattr(tensor, name):
                setattr(tensor, name, self._wrap(getattr(tensor, name), name, method=True))
        setattr(tensor, "to", self._wrap_to(tensor.to))
        for name in SHAPE_FUNCTIONS:
            if hasattr(self.torch, name):
                setattr(self.torch, name, self._wrap(getattr(self.torch, name), f"torch.{name}", method=False))

    def _note(self, name: str, on_device: bool) -> None:
        frame = sys._getframe(2)
        filename = frame.f_code.co_filename
        if filename.startswith(self._skip):
            return
        self.count += 1
        self.device_count += on_device
        if self.counting:
            site = (filename, frame.f_lineno, name, on_device)
            self.sites[site] += 1
            if self._last_window.get(site) != self.window:
                self._last_window[site] = self.window
                self.site_windows[site] += 1
            self.callers.setdefault(site, Counter())[self._chain(frame.f_back)] += 1

    def _chain(self, frame) -> tuple:
        """The user frames above a read (a few, nearest first): files of torch, gpulint, the standard library and
        installed packages are passed over. A handful of attribute reads per host read, no traceback object."""
        chain = []
        while frame is not None and len(chain) < CALLERS:
            filename = frame.f_code.co_filename
            if not filename.startswith(self._not_user):
                chain.append((filename, frame.f_lineno, frame.f_code.co_name))
            frame = frame.f_back
        return tuple(chain)

    def _wrap(self, original, name: str, *, method: bool):
        def wrapper(*args, **kwargs):
            if args:
                device = getattr(args[0], "device", None)
                if device is not None:
                    self._note(name, device.type != "cpu")
            return original(*args, **kwargs)

        wrapper.__name__ = getattr(original, "__name__", name)
        wrapper.__doc__ = getattr(original, "__doc__", None)
        wrapper.__wrapped__ = original
        return wrapper

    def _wrap_to(self, original):
        """`.to("cpu")` of a device tensor is a read; `.to(device)` of a host tensor is not (it goes to the GPU)."""

        def to(tensor, *args, **kwargs):
            if tensor.device.type != "cpu":
                target = kwargs.get("device", args[0] if args else None)
                if _is_cpu(target) and not kwargs.get("non_blocking", False):
                    self._note("to('cpu')", True)
            return original(tensor, *args, **kwargs)

        to.__name__, to.__doc__, to.__wrapped__ = "to", original.__doc__, original
        return to


def _is_cpu(target) -> bool:
    if isinstance(target, str):
        return target.split(":")[0] == "cpu"
    return getattr(target, "type", None) == "cpu" and not hasattr(target, "shape")
