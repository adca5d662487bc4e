"""GPU303 `metric-synced-each-step`."""

from __future__ import annotations

from gpulint.rule import Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules._examples import ACCUMULATING_STEP
from gpulint.rules.accumulation.synced_base import _SyncedAccumulationRule


class MetricSyncedEachStep(_SyncedAccumulationRule):
    """`correct += (pred == y).sum().item()`: a metric pulled to the host every step only to be summed.

    ## What it does
    Flags accuracy-style counters (sums of comparisons, `argmax` matches, their means) accumulated with
    `.item()`, `float()`, `int()` or `.cpu()` on every iteration of a training or evaluation loop.

    ## Why it is slow
    The comparison is computed on the GPU in microseconds; copying its result to the host waits for every
    queued kernel, once per step.

    ## Example
    ```python
    correct = 0
    for x, y in loader:
        pred = model(x).argmax(1)
        correct += (pred == y).sum().item()
    print(f"accuracy {correct / len(dataset):.2%}")
    ```
    Use instead:
    ```python
        correct += (pred == y).sum()
    ```
    (`correct += (pred == y).sum().detach()` after the fix; the `.detach()` is harmless.)

    ## Fix
    As GPU302: `.item()`/`.cpu()` becomes `.detach()`, and reads where the count leaves as a Python value are
    converted once with `int()` (counts) or `float()` (means).

    ## Fix safety
    Unsafe: a count becomes an int64 tensor, so `correct / total` divides in float32 on the device; printed
    ratios can differ in the last digits. No fix in the cases listed for GPU302.

    ## When it is fine
    Periodic or per-epoch metrics, CPU-only modules.
    """

    code = "GPU303"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "metric-synced-each-step"
    message = "a metric is copied to the host every step only to be summed; count on the device and read once"
    family = Family.ACCUMULATION
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(
        Safety.UNSAFE, "a count becomes an int64 tensor, so ratios divide in float32 and can differ in the last digits")
    VALID = [ACCUMULATING_STEP + "    total += (out.argmax(1) == y).sum()\nprint(total)\n"]
    INVALID = [
        Example(ACCUMULATING_STEP + "    total += (out.argmax(1) == y).sum().item()\nprint(total)\n",
                message="a metric is copied to the host every step only to be summed",
                fixed=ACCUMULATING_STEP + "    total += (out.argmax(1) == y).sum().detach()\nprint(int(total))\n"),
    ]
    metric = True
