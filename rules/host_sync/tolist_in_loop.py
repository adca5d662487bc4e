"""GPU102 `tolist-in-loop`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.syntax import method_call
from gpulint.analysis.host_reads import _on_host_already


class TolistInLoop(GpuRule):
    """`.tolist()` on a tensor every iteration.

    ## What it does
    Flags `tensor.tolist()` running on every iteration of a training/eval loop.

    ## Why it is slow
    It copies the whole tensor to the host and waits for the GPU first, like `.item()`, and builds Python
    objects for every element on top.

    ## Example
    ```python
    for x, y in loader:
        preds.extend(model(x).argmax(1).tolist())
    ```
    Collect on the device, convert once:
    ```python
        preds.append(model(x).argmax(1))
    preds = torch.cat(preds).tolist()
    ```

    ## Fix
    None: the list goes wherever the code sends it.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging, end-of-epoch conversions, numpy arrays' `.tolist()`, code outside loops.
    """

    code = "GPU102"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "tolist-in-loop"
    message = "`.tolist()` every iteration copies the tensor to the host and waits for the GPU; collect on the " \
              "device and convert once"
    family = Family.HOST_SYNC
    VALID = [TRAIN_STEP + "rows = x.tolist()\n"]
    INVALID = [
        Example(TRAIN_STEP + "    rows = x.tolist()\n",
                message="`.tolist()` every iteration copies the tensor to the host an"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "tolist")
        if attr is None or node.args or _on_host_already(self, attr.value):
            return
        if not self.analysis.is_device_tensor(attr.value):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)
