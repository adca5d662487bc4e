"""GPU302 `synced-accumulation`."""

from __future__ import annotations

from gpulint.rule import Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules._examples import ACCUMULATING_STEP
from gpulint.rules.accumulation.synced_base import _SyncedAccumulationRule


class SyncedLossAccumulation(_SyncedAccumulationRule):
    """`running_loss += loss.item()` (or `float(loss)`) every iteration.

    ## What it does
    Flags a running sum fed with `.item()`, `float()` or `.cpu()` of a tensor on every iteration of a training
    or evaluation loop, including `running_loss += loss.item() * inputs.size(0)`.

    ## Why it is slow
    Each `.item()` waits for the GPU to finish every kernel queued so far, once per step, only to add a number
    that nobody reads until the next log line.

    ## Example
    ```python
    running_loss = 0.0
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        ...
        running_loss += loss.item()
        if step % 100 == 99:
            print(f"loss {running_loss / 100:.3f}")
            running_loss = 0.0
    ```
    Use instead (`running_loss` becomes a 0-dim tensor on the device; the f-string reads it once per log line):
    ```python
        running_loss += loss.detach()
    ```

    ## Fix
    Replaces `loss.item()` with `loss.detach()`. Reads of the accumulator that format it with a format spec
    (`f"{running_loss / 100:.3f}"`) stay as they are: a 0-dim tensor formats like its value. Every other read,
    where the value leaves as a Python number (`print(running_loss)`, `history.append(running_loss)`,
    `json.dump`, `np.array`, comparisons, `return`), is converted once with `float()` (or `int()` for integer
    sums) so the sum stays on the device between them.

    ## Fix safety
    Unsafe: the sum is computed in the loss's dtype (float32, not Python's float64), so printed values can
    differ in the last digits; a half-precision loss would sum in half precision. No fix when the accumulator
    is an attribute or a dict entry, `global`/`nonlocal`, read by a nested function, read on every iteration
    (the sync would only move), or read where it leaves and its dtype is unknown (`float()` could turn an
    integer count into a float).

    ## When it is fine
    Periodic accumulation (`if step % 100 == 0:`), once-per-epoch sums, CPU-only modules.
    """

    code = "GPU302"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "synced-accumulation"
    message = "summing `.item()` every step syncs with the GPU each time; sum the detached tensor on the device"
    family = Family.ACCUMULATION
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(
        Safety.UNSAFE, "the sum is computed in the loss's dtype on the device, so printed values can differ in "
                       "the last digits")
    VALID = [ACCUMULATING_STEP + "    total += loss.detach()\nprint(total)\n"]
    INVALID = [
        Example(ACCUMULATING_STEP + "    total += loss.item()\nprint(total)\n",
                message="summing `.item()` every step syncs with the GPU each time",
                fixed=ACCUMULATING_STEP + "    total += loss.detach()\nprint(float(total))\n"),
    ]
    metric = False
