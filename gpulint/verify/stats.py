"""Step-time statistics over interleaved rounds: medians with 95% intervals, the speedup with its interval, and
the verdict read from the interval ("faster", "slower", "no measurable change").

The interval comes from a percentile bootstrap that resamples at both levels the data has: rounds (run-to-run
variation: clocks, caches, what else the machine does) and steps within a round (step-to-step variation). The
rounds of the two programs are paired (round r ran A and B back to back), so one draw of round indices serves
both: a slow phase of the machine slows both sides of the ratio together. docs/verify.md says why this and not a
bootstrap over pooled steps (too narrow: it ignores that runs differ) or over round medians (too coarse with 5).
Standard library only; a fixed seed makes the interval the same for the same numbers.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from typing import Optional

CONFIDENCE = 0.95
ITERATIONS = 1000
MAX_STEPS_PER_ROUND = 256  # steps of a round the bootstrap resamples (evenly spaced); the medians use them all
SEED = 20240613

FASTER, SLOWER, SAME = "faster", "slower", "no measurable change"


@dataclass
class Interval:
    value: float
    low: float
    high: float

    def text(self, digits: int = 3, suffix: str = "") -> str:
        return f"{self.value:.{digits}f}{suffix} (95% CI {self.low:.{digits}f}-{self.high:.{digits}f})"

    def as_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass
class Timing:
    """Step times of both programs over the rounds, summarised."""

    rounds: int
    steps: tuple[int, int]  # step times measured, original and fixed, over all rounds
    original: Interval  # median step time, ms
    fixed: Interval
    speedup: Interval  # median original / median fixed

    @property
    def verdict(self) -> str:
        if self.speedup.low > 1.0:
            return FASTER
        if self.speedup.high < 1.0:
            return SLOWER
        return SAME

    def sentence(self) -> str:
        """`1.31x, faster (95% CI 1.22-1.40x, 5 rounds)`; `no measurable change (1.02x, 95% CI ...)`."""
        ci = f"95% CI {self.speedup.low:.2f}-{self.speedup.high:.2f}x, {self.rounds} round{'s' * (self.rounds != 1)}"
        if self.verdict == SAME:
            return f"no measurable change ({self.speedup.value:.2f}x, {ci})"
        return f"{self.speedup.value:.2f}x, {self.verdict} ({ci})"

    def as_dict(self) -> dict:
        return {"rounds": self.rounds, "steps": list(self.steps), "verdict": self.verdict,
                "confidence": CONFIDENCE, "original_ms": self.original.as_dict(), "fixed_ms": self.fixed.as_dict(),
                "speedup": self.speedup.as_dict()}


def _thin(values: list[float]) -> list[float]:
    if len(values) <= MAX_STEPS_PER_ROUND:
        return values
    stride = len(values) / MAX_STEPS_PER_ROUND
    return [values[int(i * stride)] for i in range(MAX_STEPS_PER_ROUND)]


def _percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    tail = (1.0 - CONFIDENCE) / 2
    last = len(values) - 1
    return values[round(tail * last)], values[round((1.0 - tail) * last)]


def timing(original: list[list[float]], fixed: list[list[float]], *, iterations: int = ITERATIONS,
           seed: int = SEED) -> Optional[Timing]:
    """`original[r]`, `fixed[r]`: the step times (ms) of round r. None when a side has no step time at all."""
    pairs = [(a, b) for a, b in zip(original, fixed) if a and b]
    if not pairs:
        return None
    med_a = statistics.median([x for a, _ in pairs for x in a])
    med_b = statistics.median([x for _, b in pairs for x in b])
    thinned = [(_thin(a), _thin(b)) for a, b in pairs]
    rng = random.Random(seed)
    boot_a, boot_b, ratios = [], [], []
    n = len(thinned)
    for _ in range(iterations):
        rounds = [thinned[rng.randrange(n)] for _ in range(n)] if n > 1 else thinned
        sample_a = [x for a, _ in rounds for x in rng.choices(a, k=len(a))]
        sample_b = [x for _, b in rounds for x in rng.choices(b, k=len(b))]
        ma, mb = statistics.median(sample_a), statistics.median(sample_b)
        boot_a.append(ma)
        boot_b.append(mb)
        ratios.append(ma / mb if mb > 0 else float("inf"))
    steps = (sum(len(a) for a, _ in pairs), sum(len(b) for _, b in pairs))
    return Timing(len(pairs), steps, Interval(med_a, *_percentiles(boot_a)), Interval(med_b, *_percentiles(boot_b)),
                  Interval(med_a / med_b if med_b > 0 else float("inf"), *_percentiles(ratios)))


def t_within(t: float, dof: int) -> float:
    """P(|T| <= t) for Student's t with `dof` degrees of freedom (closed form for integer dof: Abramowitz and
    Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(dof))
    cos2, term = math.cos(theta) ** 2, 1.0
    if dof % 2 == 0:
        total = 1.0
        for j in range(1, (dof - 2) // 2 + 1):
            term *= cos2 * (2 * j - 1) / (2 * j)
            total += term
        return math.sin(theta) * total
    total = term = math.cos(theta) if dof > 1 else 0.0
    for j in range(1, (dof - 3) // 2 + 1):
        term *= cos2 * (2 * j) / (2 * j + 1)
        total += term
    return 2 / math.pi * (theta + math.sin(theta) * total)


def t_quantile(level: float, dof: int) -> float:
    """The t with P(|T| <= t) = level (two-sided), by bisection."""
    low, high = 0.0, 1.0
    while t_within(high, dof) < level:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if t_within(middle, dof) < level else (low, middle)
    return high


def prediction_band(values: list[float], level: float) -> tuple[float, float]:
    """Where one more run would land with probability `level` if the runs are draws of one normal distribution:
    mean +- t(level, n-1) * sd * sqrt(1 + 1/n) (the prediction interval for a new observation). Needs 2 values."""
    n = len(values)
    mean = statistics.fmean(values)
    half = t_quantile(level, n - 1) * statistics.stdev(values) * math.sqrt(1 + 1 / n)
    return mean - half, mean + half


def settled(values: list[float], batch: int = 5) -> int:
    """How many leading step times are still warm-up: the truncation point of MSER-5 (White, 1997), the usual rule
    for cutting the warm-up of a simulation's output series. Over batch means of `batch` steps, it picks the cut d
    (at most half the series) that minimises the standard error of the mean of what is left,
    sum((m_i - mean_d)^2) / (k - d)^2: a cut that removes a slow start lowers the spread more than it costs in
    steps, one that removes settled steps does not. Returns a step count (a multiple of `batch`)."""
    k = len(values) // batch
    if k < 4:
        return 0
    means = [statistics.fmean(values[i * batch:(i + 1) * batch]) for i in range(k)]
    best, best_d = math.inf, 0
    total = sum(means)
    square = sum(m * m for m in means)
    for d in range(k // 2 + 1):
        n = k - d
        mean = total / n
        score = (square - n * mean * mean) / (n * n)
        if score < best:
            best, best_d = score, d
        total -= means[d]
        square -= means[d] * means[d]
    return best_d * batch
