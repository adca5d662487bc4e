"""GPU104 `cpu-in-loop`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.analysis.host_reads import _to_host_call


class CpuInLoop(GpuRule):
    """`.cpu()` or `.to("cpu")` of a tensor every iteration.

    ## What it does
    Flags blocking device-to-host copies, `.cpu()` and `.to("cpu")`, on every iteration of a training/eval loop.

    ## Why it is slow
    A blocking copy to pageable host memory waits for every queued kernel to finish; the GPU then idles until
    Python enqueues the next step.

    ## Example
    ```python
    for x, y in loader:
        out = model(x.cuda())
        all_preds.append(out.argmax(1).cpu())
    ```
    Keep the tensors on the device and copy once after the loop:
    ```python
        all_preds.append(out.argmax(1))
    all_preds = torch.cat(all_preds).cpu()
    ```

    ## Fix
    None. (`non_blocking=True` on a device-to-host copy is not a fix: the host may read the buffer before the
    copy lands.)

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic logging, end-of-epoch metrics, `.to("cpu", non_blocking=True)` followed by an explicit event or
    stream sync, models moved with `model.cpu()`.
    """

    code = "GPU104"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "cpu-in-loop"
    message = "blocking copy to the host every iteration waits for the GPU; keep the tensor on the device and " \
              "copy once"
    family = Family.HOST_SYNC
    defers_to = ("GPU302", "GPU303")  # `total += loss.item()`: their finding carries the fix
    VALID = [TRAIN_STEP + "host = loss.cpu()\n"]
    INVALID = [
        Example(TRAIN_STEP + "    host = loss.cpu()\n",
                message="blocking copy to the host every iteration waits for the GPU"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not _to_host_call(self, node):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)
