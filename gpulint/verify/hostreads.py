"""A portable count of host reads: the Tensor methods that bring a value to the host.

On a GPU each of these is a blocking sync; on the CPU they cost nothing, but counting them shows, on any machine,
how many syncs the same code would make on a GPU. Only calls made by the user's code count: torch's own
internals (`Tensor.__format__` calling `.item()`, Adam reading its step counter) and the probe are skipped by
looking at the caller's file. The wrappers add a Python call and a counter bump, never a sync.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

# Methods whose result lives on the host, so they wait for the device.
READ_METHODS = ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__", "__index__",
                "__complex__", "__format__", "__repr__", "__array__", "__contains__")
# Methods whose output size depends on the data: PyTorch reads a count back to size the result.
SHAPE_METHODS = ("nonzero", "unique", "unique_consecutive", "masked_select", "argwhere")
SHAPE_FUNCTIONS = ("nonzero", "unique", "unique_consecutive", "masked_select", "argwhere")


class HostReads:
    """Counts host reads made by the user's code; `count` only grows, the step recorder snapshots it."""

    def __init__(self, torch, *, accelerator_only: bool) -> None:
        self.torch = torch
        # On a GPU run only reads of device tensors are syncs; on a CPU run every read stands for one.
        self.accelerator_only = accelerator_only
        self.count = 0
        self.counting = True
        self.sites: Counter = Counter()  # (file, line, method) -> reads while `self.counting`
        here = os.path.dirname(os.path.abspath(__file__))
        self._skip = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
                      os.path.dirname(here) + os.sep)

    def install(self) -> None:
        tensor = self.torch.Tensor
        for name in READ_METHODS + SHAPE_METHODS:
            if hasattr(tensor, name):
                setattr(tensor, name, self._wrap(getattr(tensor, name), name, method=True))
        setattr(tensor, "to", self._wrap_to(tensor.to))
        for name in SHAPE_FUNCTIONS:
            if hasattr(self.torch, name):
                setattr(self.torch, name, self._wrap(getattr(self.torch, name), f"torch.{name}", method=False))

    def _note(self, name: str) -> None:
        frame = sys._getframe(2)
        filename = frame.f_code.co_filename
        if filename.startswith(self._skip):
            return
        self.count += 1
        if self.counting:
            self.sites[(filename, frame.f_lineno, name)] += 1

    def _counts(self, value) -> bool:
        if not self.accelerator_only:
            return True
        device = getattr(value, "device", None)
        return device is not None and device.type != "cpu"

    def _wrap(self, original, name: str, *, method: bool):
        def wrapper(*args, **kwargs):
            if args and self._counts(args[0]):
                self._note(name)
            return original(*args, **kwargs)

        wrapper.__name__ = getattr(original, "__name__", name)
        wrapper.__doc__ = getattr(original, "__doc__", None)
        wrapper.__wrapped__ = original
        return wrapper

    def _wrap_to(self, original):
        """`.to("cpu")` of a device tensor is a read; on a CPU run `.to(device)` is not (it means "to the GPU")."""

        def to(tensor, *args, **kwargs):
            if self.accelerator_only and tensor.device.type != "cpu":
                target = kwargs.get("device", args[0] if args else None)
                if _is_cpu(target) and not kwargs.get("non_blocking", False):
                    self._note("to('cpu')")
            return original(tensor, *args, **kwargs)

        to.__name__, to.__doc__, to.__wrapped__ = "to", original.__doc__, original
        return to


def _is_cpu(target) -> bool:
    if isinstance(target, str):
        return target.split(":")[0] == "cpu"
    return getattr(target, "type", None) == "cpu" and not hasattr(target, "shape")
