"""Compare what the original and the fixed program reported, rank by rank: syncs per step, step time, and the
outputs (parameter checksums after every optimizer step, the losses given to backward(), printed numbers).

Two values agree when |a - b| <= atol + rtol * max(|a|, |b|); a printed number may also differ by one unit of
its last printed digit (both sides were rounded). docs/verify.md says why the defaults are what they are.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Optional

from gpulint.verify import stats

RTOL = 1e-4
ATOL = 1e-6

# A tensor printed as `tensor(0.5, device='cuda:0', grad_fn=...)` and the same value printed as a float agree.
_TENSOR_NOISE = re.compile(r",\s*(?:device='[^']*'|grad_fn=<\w+>|dtype=torch\.\w+|requires_grad=True)")
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|(?<![A-Za-z])(?:nan|inf)\b")
# Lines that print durations or rates differ from run to run by nature; they are left out of the comparison.
_TIMING = re.compile(r"\b(?:time|times|elapsed|took|sec|secs|seconds|ms|eta|throughput|it/s|s/it|samples/s|"
                     r"tokens/s|img/s|speed)\b|\d\s?(?:s|ms|us)\b", re.IGNORECASE)


@dataclass
class Tolerance:
    rtol: float = RTOL
    atol: float = ATOL

    def close(self, a: float, b: float, unit: float = 0.0) -> bool:
        return self.within([a], b, unit)

    def within(self, band: list[float], b: float, unit: float = 0.0) -> bool:
        """`b` lies in the band of the original's runs (`band[0]`, the run with the same seed as the fixed one,
        then the noise runs) widened by the tolerance; with one run this is
        |a - b| <= atol + unit + rtol * max(|a|, |b|)."""
        if not math.isfinite(b):
            return any(x == b or (math.isnan(x) and math.isnan(b)) for x in band)
        if not all(math.isfinite(x) for x in band):
            return False
        low, high = span(band)
        slack = self.atol + unit + self.rtol * max(abs(low), abs(high), abs(b))
        return low - slack <= b <= high + slack


def span(band: list[float]) -> tuple[float, float]:
    """The noise band: centred on the same-seed run of the original, as wide as the farthest other run is from
    it. The fixed program is accepted when it differs from the original by no more than another seed does."""
    centre = band[0]
    width = max(abs(x - centre) for x in band)
    return centre - width, centre + width


def outside(band: list[float], b: float) -> str:
    """How far `b` lies outside the original's band, in words."""
    low, high = span(band) if all(math.isfinite(x) for x in band) else (min(band), max(band))
    if not (math.isfinite(b) and math.isfinite(low) and math.isfinite(high)):
        return f"{b:.6g} against the band {low:.6g}..{high:.6g}"
    gap = b - high if b > high else low - b
    side = "above" if b > high else "below"
    width = (high - low) / 2
    widths = f", {gap / width:.1f}x the band's half-width" if width > 0 else ""
    return f"{gap:.3g} {side} the band {low:.6g}..{high:.6g}{widths}"


@dataclass
class Measure:
    """One program's numbers on one rank."""

    steps: int
    unit: Optional[str]
    host_reads: Optional[float]  # per step
    syncs: Optional[float]  # per step, counted on the device (CUDA)
    sync_source: Optional[str]
    syncs_by_call: dict
    step_ms: Optional[float]  # median
    time_source: Optional[str]
    sites: dict  # (file, line, method) -> reads per step

    @classmethod
    def of(cls, rank: dict) -> "Measure":
        reads = rank.get("host_reads_per_window") or []
        windows = len(reads)
        syncs = rank.get("syncs") or {}
        sync_windows = syncs.get("windows") or 0
        times = (rank.get("step_times_ms") or {}).get("ms") or []
        sites = {(f, line, name): n / windows for f, line, name, n in rank.get("host_read_sites", [])} \
            if windows else {}
        return cls(
            steps=rank.get("steps", 0), unit=rank.get("unit"),
            host_reads=sum(reads) / windows if windows else None,
            syncs=syncs["count"] / sync_windows if syncs.get("source") and sync_windows else None,
            sync_source=syncs.get("source") if sync_windows else None,
            syncs_by_call={k: v / sync_windows for k, v in (syncs.get("by_call") or {}).items()} if sync_windows
            else {},
            step_ms=statistics.median(times) if times else None,
            time_source=(rank.get("step_times_ms") or {}).get("source") if times else None,
            sites=sites)


@dataclass
class Divergence:
    where: str  # "step 7", "backward #3", "printed line 4", "steps"
    what: str
    order: float  # for picking the first one: the step (or line) where it happened

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class RankComparison:
    rank: int
    original: Measure
    fixed: Measure
    compared: list[str] = field(default_factory=list)  # "30 parameter checksums", ...
    divergences: list[Divergence] = field(default_factory=list)
    max_rel: dict = field(default_factory=dict)  # category -> largest relative difference seen
    ignored_lines: int = 0
    noise_runs: int = 0  # extra runs of the original (other seeds) whose span is the band
    tolerance: Tolerance = field(default_factory=Tolerance)
    identical: bool = True  # every compared value equal to the original's, bit for bit
    strict: bool = True  # every compared value within the tolerance of the original's (seed run)
    timing: Optional[object] = None  # stats.Timing over the rounds, when step times are comparable
    band_empty: bool = False  # the noise runs repeated run 0 exactly: the program is deterministic, no band
    another_seed: int = 0  # statistics compared as another seed would be (0: compared step by step)
    trajectory: Optional[Divergence] = None  # the first step-by-step divergence, when compared as another seed
    another_seed_reason: str = ""  # why the fixed run could not be compared step by step
    seeds_set: dict = field(default_factory=dict)  # seed functions the original called itself -> times (as a
    # noise run counts them: run 0 leaves torch.Generator as it is, so its Generator seeds are not counted)

    @property
    def metric(self) -> str:
        """Syncs counted on the device when both runs have them; otherwise the portable host-read count."""
        if self.original.syncs is not None and self.fixed.syncs is not None:
            return "syncs"
        return "host_reads"

    def per_step(self, which: str) -> Optional[float]:
        return getattr(getattr(self, which), self.metric)

    @property
    def syncs_dropped(self) -> bool:
        before, after = self.per_step("original"), self.per_step("fixed")
        return before is not None and after is not None and after < before - 1e-9

    @property
    def speedup(self) -> Optional[float]:
        if self.timing is not None:
            return self.timing.speedup.value
        a, b = self.original.step_ms, self.fixed.step_ms
        return a / b if a and b else None

    @property
    def first_divergence(self) -> Optional[Divergence]:
        return min(self.divergences, key=lambda d: d.order) if self.divergences else None

    @property
    def banded(self) -> bool:
        """Whether the noise runs gave a band: they ran, and did not all repeat run 0 exactly."""
        return bool(self.noise_runs) and not self.band_empty

    @property
    def numerics(self) -> str:
        """identical | within_tolerance | within_noise_band | outside_noise_band | differ | nothing_compared"""
        if self.divergences:
            return "outside_noise_band" if self.banded else "differ"
        if not self.compared:
            return "nothing_compared"
        if self.identical:
            return "identical"
        return "within_tolerance" if self.strict else "within_noise_band"

    def numerics_text(self) -> str:
        """The verdict on the outputs in words, exactly one of the forms docs/verify.md lists."""
        tol = self.tolerance
        text = {
            "identical": "identical",
            "within_tolerance": f"match within tolerance (rtol {tol.rtol:g}, atol {tol.atol:g})",
            "within_noise_band": f"within the original's noise band ({self.noise_runs + 1} runs)",
            "outside_noise_band": f"outside the noise band: {self.first_divergence}",
            "differ": f"differ, first at {self.first_divergence}",
            "nothing_compared": "nothing compared",
        }[self.numerics]
        if self.another_seed and self.numerics == "within_noise_band":
            text += (f", as another seed: {self.another_seed} statistics (loss-curve windows, final parameter "
                     f"norms, printed numbers) inside the original runs' prediction band; "
                     f"{self.another_seed_reason}")
        if self.noise_runs and self.band_empty:
            runs = f"{self.noise_runs} more run{'s' if self.noise_runs != 1 else ''}"
            text += (f"; the program is deterministic: {runs} with other seeds repeated the first exactly, so there "
                     f"is no noise band (compared with rtol {tol.rtol:g}, atol {tol.atol:g})")
        return text


def compare_rank(original: dict, fixed: dict, tol: Tolerance, noise: list[dict] = ()) -> RankComparison:
    """`noise`: the same rank of the original's extra runs (other seeds); their span, with the tolerance, is
    what the fixed program must stay inside."""
    result = RankComparison(original.get("rank", 0), Measure.of(original), Measure.of(fixed),
                            noise_runs=len(noise), tolerance=tol,
                            seeds_set=(noise[0] if noise else original).get("seeds_set") or {})
    runs = [original, *noise]
    _compare_steps(result, runs, fixed)
    _compare_checksums(result, runs, fixed, tol)
    _compare_losses(result, runs, fixed, tol)
    _compare_printed(result, runs, fixed, tol)
    if noise:
        result.band_empty = all(_outputs(run) == _outputs(original) for run in noise)
        why = _starts_elsewhere(result, original, fixed, tol) if result.divergences and not result.band_empty else ""
        if why:
            _compare_as_another_seed(result, runs, fixed, tol, why)
    return result


def _outputs(rank: dict) -> tuple:
    return (rank.get("losses"), rank.get("checksums"), printed_numbers(rank.get("printed", ""))[0])


def _starts_elsewhere(result: RankComparison, original: dict, fixed: dict, tol: Tolerance) -> str:
    """Whether the fixed run's first loss already differs from the original's: it did not start from the same
    weights on the same batch (a fix that changes the data order, GPU204's device randperm, or the
    initialisation), so its values cannot be held against the original's step by step. So too when the fix
    changed the parameter set (GPU406's `bias=False`): no parameter of one run has a counterpart in the other."""
    a, b = original.get("losses") or [], fixed.get("losses") or []
    if not (a and b):
        return ""
    if any(d.what.endswith(_PARAMETER_SET_END) for d in result.divergences):
        return "the fix changed the parameter set"
    return "" if tol.close(a[0], b[0]) else \
        "its first loss differs from the original's (another data order or initialisation)"


_PARAMETER_SET_END = "the fix changed the parameter set"
_PARAMETER_SET = "the fixed program's optimizer holds {b} parameter tensors, the original's {a}: " + _PARAMETER_SET_END


BAND_FAMILY_LEVEL = 0.95  # the chance that a run like the original's passes every statistic at once


def _seed_statistics(runs: list[dict], fixed: dict) -> list[tuple[str, float, list[float], float, float]]:
    """(what, where it falls in the run, the original runs' values, the fixed run's value, printed unit) for each
    statistic that does not depend on which seed ran: the mean loss over 5 windows of the curve, the whole
    model's L1 and L2 norm after the last step, every printed number (when all runs printed the same lines)."""
    everyone = [*runs, fixed]
    out = []
    losses = [r.get("losses") or [] for r in everyone]
    n = min(len(x) for x in losses)
    windows = min(5, n)
    for w in range(windows):
        first, last = w * n // windows, (w + 1) * n // windows
        means = [statistics.fmean(x[first:last]) for x in losses]
        out.append((f"mean loss over backward #{first + 1}-#{last} (window {w + 1} of {windows})",
                    last / max(n, 1) * max(runs[0].get("steps") or 1, 1), means[:-1], means[-1], 0.0))
    finals = [(r.get("checksums") or [[None, [[], []]]])[-1] for r in everyone]
    if all(f[0] is not None and f[0] == finals[0][0] for f in finals):  # the whole model's, whatever its set
        for kind, total in (("L1", lambda f: sum(f[1][0])), ("L2", lambda f: math.sqrt(sum(v * v for v in f[1][1])))):
            values = [total(f) for f in finals]
            out.append((f"the model's {kind} norm after the last step", math.inf, values[:-1], values[-1], 0.0))
    printed = [printed_numbers(r.get("printed", ""))[0] for r in everyone]
    shape = [(n, len(xs)) for n, _, xs in printed[0]]
    if all([(n, len(xs)) for n, _, xs in p] == shape for p in printed):
        steps = runs[0].get("printed_line_steps") or []
        for i, (line_no, line, xs) in enumerate(printed[-1]):
            for j, (y, unit) in enumerate(xs):
                values = [p[i][2][j][0] for p in printed[:-1]]
                out.append((f"printed line {line_no} ({line!r}), number {j + 1}",
                            (steps[line_no - 1] if line_no <= len(steps) else 0) + 0.25, values, y, unit))
    return out


def _compare_as_another_seed(result: RankComparison, runs: list[dict], fixed: dict, tol: Tolerance,
                             why: str) -> None:
    """The fixed run started elsewhere (`_starts_elsewhere`): ask whether it trains like another seed of the
    original. Each statistic must lie in the prediction band of the original's runs (one more run of the original
    would land there; Bonferroni over the statistics, so that a run like the original's passes them all with
    probability BAND_FAMILY_LEVEL), widened by the tolerance. The steps, backward() and printed-line counts
    were checked already and still count."""
    if any(d.where in ("steps", "backward()") or d.where.startswith("printed output")
           or d.what == "a different optimizer stepped" for d in result.divergences):
        return
    found = _seed_statistics(runs, fixed)
    if not found:
        return
    level = 1 - (1 - BAND_FAMILY_LEVEL) / len(found)
    failed = []
    for what, order, values, y, unit in found:
        low, high = stats.prediction_band(values, level)
        slack = tol.atol + unit + tol.rtol * max(abs(low), abs(high), abs(y))
        if not (math.isfinite(y) and low - slack <= y <= high + slack):
            failed.append(Divergence(what, f"{y:.6g} in the fixed run, outside the original runs' prediction band "
                                           f"{low:.6g}..{high:.6g} ({len(values)} runs, compared as another seed: "
                                           f"{why})", order))
    result.trajectory = result.first_divergence
    result.another_seed = len(found)
    result.another_seed_reason = why
    result.divergences = failed[:1]


def _check(result: RankComparison, tol: Tolerance, band: list[float], y: float, unit: float = 0.0) -> bool:
    """Whether `y` is accepted against `band` (the seed run first); notes whether it is identical or within the
    strict tolerance of the seed run."""
    x = band[0]
    if not (x == y or (math.isnan(x) and math.isnan(y))):
        result.identical = False
    if not tol.close(x, y, unit):
        result.strict = False
    return tol.within(band, y, unit)


def _band_text(result: RankComparison, band: list[float], y: float, what: str) -> str:
    if result.noise_runs:
        return f"{what} is {y:.6g} in the fixed run, {outside(band, y)} ({len(band)} runs of the original)"
    return f"{what} is {band[0]:.6g} in the original, {y:.6g} in the fixed run"


def _unit_name(rank: dict) -> str:
    return {"optimizer": "optimizer steps", "loader": "DataLoader batches"}.get(rank.get("unit"), "steps")


def _compare_steps(result: RankComparison, runs: list[dict], fixed: dict) -> None:
    original = runs[0]
    counts = [r.get("steps", 0) for r in runs if r.get("unit") == original.get("unit")]
    b = fixed.get("steps", 0)
    if b != counts[0]:
        result.identical = result.strict = False
    if original.get("unit") != fixed.get("unit") or not min(counts) <= b <= max(counts):
        a = counts[0]
        seen = f" ({min(counts)} to {max(counts)} over {len(runs)} runs)" if len(runs) > 1 else ""
        result.divergences.append(Divergence(
            "steps", f"the original ran {a} {_unit_name(original)}{seen}, the fixed program {b} {_unit_name(fixed)}",
            min(a, b) + 0.9))


def _relative(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale and math.isfinite(scale) else (0.0 if a == b else math.inf)


def _compare_checksums(result: RankComparison, runs: list[dict], fixed: dict, tol: Tolerance) -> None:
    original = runs[0]
    rows_a, rows_b = original.get("checksums") or [], fixed.get("checksums") or []
    others = [r.get("checksums") or [] for r in runs[1:]]
    names = original.get("parameter_names") or []
    worst = 0.0
    for step, ((opt_a, norms_a), (opt_b, norms_b)) in enumerate(zip(rows_a, rows_b), start=1):
        if opt_a != opt_b:
            result.divergences.append(Divergence(f"step {step}", "a different optimizer stepped", step))
            break
        if len(norms_a[0]) != len(norms_b[0]):  # GPU406's bias=False, say: no parameter compares with another
            result.divergences.append(Divergence(f"step {step}", _PARAMETER_SET.format(
                b=len(norms_b[0]), a=len(norms_a[0])), step))
            break
        same = [o[step - 1][1] for o in others if len(o) >= step and o[step - 1][0] == opt_a
                and len(o[step - 1][1][0]) == len(norms_a[0])]
        mismatch = None
        for k, (kind, ys) in enumerate(zip(("L1 norm", "L2 norm"), norms_b)):
            for i, y in enumerate(ys):
                band = [norms_a[k][i], *(n[k][i] for n in same)]
                worst = max(worst, _relative(band[0], y))
                if not _check(result, tol, band, y) and mismatch is None:
                    name = names[opt_a][i] if opt_a < len(names) and i < len(names[opt_a]) else f"#{i}"
                    mismatch = _band_text(result, band, y, f"parameter {name} ({kind})")
        if mismatch:
            result.divergences.append(Divergence(f"step {step}", mismatch, step))
            break
    if len(rows_a) != len(rows_b):
        result.identical = result.strict = False
    if rows_a and rows_b:
        result.compared.append(f"parameters after {min(len(rows_a), len(rows_b))} optimizer steps")
        result.max_rel["parameters"] = worst


def _compare_losses(result: RankComparison, runs: list[dict], fixed: dict, tol: Tolerance) -> None:
    original = runs[0]
    a, b = original.get("losses") or [], fixed.get("losses") or []
    others = [r.get("losses") or [] for r in runs[1:]]
    per_step = len(a) / max(original.get("steps") or 1, 1)
    lengths = [len(a), *(len(o) for o in others)]
    if len(a) != len(b):
        result.identical = result.strict = False
    if not min(lengths) <= len(b) <= max(lengths):
        result.divergences.append(Divergence(
            "backward()", f"called {len(a)} times in the original, {len(b)} in the fixed run",
            min(len(a), len(b)) / max(per_step, 1e-9) + 0.5))  # the first backward() one run lacks
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b), start=1):
        band = [x, *(o[i - 1] for o in others if len(o) >= i)]
        worst = max(worst, _relative(x, y))
        if not _check(result, tol, band, y):
            step = i / max(per_step, 1e-9)
            result.divergences.append(Divergence(
                f"backward #{i}" + (f" (step {math.ceil(step)})" if result.noise_runs else ""),
                _band_text(result, band, y, "loss"), step - 0.5))  # a step's loss comes before its update
            break
    if a and b:
        result.compared.append(f"{min(len(a), len(b))} losses")
        result.max_rel["losses"] = worst


def printed_numbers(text: str) -> tuple[list[tuple[int, str, list[tuple[float, float]]]], int]:
    """(line number, line, [(value, unit of its last digit)]) per compared line, and the count of timing lines
    left out."""
    lines, ignored = [], 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if _TIMING.search(line):
            ignored += 1
            continue
        clean = _TENSOR_NOISE.sub("", line)
        lines.append((number, line.strip(), [(float(m.group()), _last_digit(m.group()))
                                             for m in _NUMBER.finditer(clean)]))
    return lines, ignored


def _last_digit(literal: str) -> float:
    literal = literal.lower().lstrip("+-")
    if literal in ("nan", "inf"):
        return 0.0
    mantissa, _, exponent = literal.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _compare_printed(result: RankComparison, runs: list[dict], fixed: dict, tol: Tolerance) -> None:
    original = runs[0]
    lines_a, ignored_a = printed_numbers(original.get("printed", ""))
    lines_b, ignored_b = printed_numbers(fixed.get("printed", ""))
    others = [printed_numbers(r.get("printed", ""))[0] for r in runs[1:]]
    steps_a = original.get("printed_line_steps") or []
    result.ignored_lines = max(ignored_a, ignored_b)

    def after(line: int) -> tuple[str, float]:
        step = steps_a[line - 1] if 0 < line <= len(steps_a) else result.original.steps
        return (f" (after step {step})" if step else " (before the first step)"), step + 0.25

    count = 0
    for index, ((n, line_a, xs), (_, line_b, ys)) in enumerate(zip(lines_a, lines_b)):
        same = [o[index][2] for o in others if len(o) > index and len(o[index][2]) == len(xs)]
        values_differ = len(xs) != len(ys)
        for j, ((x, ux), (y, uy)) in enumerate(zip(xs, ys)):
            if not _check(result, tol, [x, *(s[j][0] for s in same)], y, unit=max(ux, uy)):
                values_differ = True
        if values_differ:
            label, order = after(n)
            what = f"{line_a!r} in the original, {line_b!r} in the fixed run"
            if result.noise_runs:
                what += f", outside what {len(runs)} runs of the original printed"
            result.divergences.append(Divergence(f"printed line {n}{label}", what, order))
            break
        count += len(xs)
    else:
        counts = [len(lines_a), *(len(o) for o in others)]
        if len(lines_a) != len(lines_b):
            result.identical = result.strict = False
        if not min(counts) <= len(lines_b) <= max(counts):
            first_extra = (lines_a if len(lines_a) > len(lines_b) else lines_b)[min(len(lines_a), len(lines_b))]
            label, order = after(first_extra[0]) if len(lines_a) > len(lines_b) else ("", result.original.steps)
            result.divergences.append(Divergence(
                f"printed output{label}", f"the original printed {len(lines_a)} lines, the fixed program "
                f"{len(lines_b)} (first extra: {first_extra[1]!r})", order))
    if lines_a or lines_b:
        result.compared.append(f"{count} printed numbers")
