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
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= self.atol + unit + self.rtol * max(abs(a), abs(b))


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
        a, b = self.original.step_ms, self.fixed.step_ms
        return a / b if a and b else None

    @property
    def first_divergence(self) -> Optional[Divergence]:
        return min(self.divergences, key=lambda d: d.order) if self.divergences else None


def compare_rank(original: dict, fixed: dict, tol: Tolerance) -> RankComparison:
    result = RankComparison(original.get("rank", 0), Measure.of(original), Measure.of(fixed))
    _compare_steps(result, original, fixed)
    _compare_checksums(result, original, fixed, tol)
    _compare_losses(result, original, fixed, tol)
    _compare_printed(result, original, fixed, tol)
    return result


def _unit_name(rank: dict) -> str:
    return {"optimizer": "optimizer steps", "loader": "DataLoader batches"}.get(rank.get("unit"), "steps")


def _compare_steps(result: RankComparison, original: dict, fixed: dict) -> None:
    a, b = original.get("steps", 0), fixed.get("steps", 0)
    if a != b or original.get("unit") != fixed.get("unit"):
        result.divergences.append(Divergence(
            "steps", f"the original ran {a} {_unit_name(original)}, the fixed program {b} {_unit_name(fixed)}",
            min(a, b) + 0.9))


def _relative(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale and math.isfinite(scale) else (0.0 if a == b else math.inf)


def _compare_checksums(result: RankComparison, original: dict, fixed: dict, tol: Tolerance) -> None:
    rows_a, rows_b = original.get("checksums") or [], fixed.get("checksums") or []
    names = original.get("parameter_names") or []
    worst = 0.0
    for step, ((opt_a, norms_a), (opt_b, norms_b)) in enumerate(zip(rows_a, rows_b), start=1):
        if opt_a != opt_b or len(norms_a[0]) != len(norms_b[0]):
            result.divergences.append(Divergence(f"step {step}", "a different optimizer stepped", step))
            break
        mismatch = None
        for kind, (xs, ys) in zip(("L1 norm", "L2 norm"), zip(norms_a, norms_b)):
            for i, (x, y) in enumerate(zip(xs, ys)):
                worst = max(worst, _relative(x, y))
                if mismatch is None and not tol.close(x, y):
                    name = names[opt_a][i] if opt_a < len(names) and i < len(names[opt_a]) else f"#{i}"
                    mismatch = f"parameter {name} ({kind}) is {x:.6g} in the original, {y:.6g} in the fixed run"
        if mismatch:
            result.divergences.append(Divergence(f"step {step}", mismatch, step))
            break
    if rows_a and rows_b:
        result.compared.append(f"parameters after {min(len(rows_a), len(rows_b))} optimizer steps")
        result.max_rel["parameters"] = worst


def _compare_losses(result: RankComparison, original: dict, fixed: dict, tol: Tolerance) -> None:
    a, b = original.get("losses") or [], fixed.get("losses") or []
    per_step = len(a) / max(original.get("steps") or 1, 1)
    if len(a) != len(b):
        result.divergences.append(Divergence(
            "backward()", f"called {len(a)} times in the original, {len(b)} in the fixed run",
            min(len(a), len(b)) / max(per_step, 1e-9) + 0.5))  # the first backward() one run lacks
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b), start=1):
        worst = max(worst, _relative(x, y))
        if not tol.close(x, y):
            result.divergences.append(Divergence(
                f"backward #{i}", f"loss {x:.6g} in the original, {y:.6g} in the fixed run",
                i / max(per_step, 1e-9) - 0.5))  # a step's loss comes before its update
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


def _compare_printed(result: RankComparison, original: dict, fixed: dict, tol: Tolerance) -> None:
    lines_a, ignored_a = printed_numbers(original.get("printed", ""))
    lines_b, ignored_b = printed_numbers(fixed.get("printed", ""))
    steps_a = original.get("printed_line_steps") or []
    result.ignored_lines = max(ignored_a, ignored_b)

    def after(line: int) -> tuple[str, float]:
        step = steps_a[line - 1] if 0 < line <= len(steps_a) else result.original.steps
        return (f" (after step {step})" if step else " (before the first step)"), step + 0.25

    count = 0
    for (n, line_a, xs), (_, line_b, ys) in zip(lines_a, lines_b):
        values_differ = len(xs) != len(ys) or any(
            not tol.close(x, y, unit=max(ux, uy)) for (x, ux), (y, uy) in zip(xs, ys))
        if values_differ:
            label, order = after(n)
            result.divergences.append(Divergence(
                f"printed line {n}{label}", f"{line_a!r} in the original, {line_b!r} in the fixed run", order))
            break
        count += len(xs)
    else:
        if len(lines_a) != len(lines_b):
            first_extra = (lines_a if len(lines_a) > len(lines_b) else lines_b)[min(len(lines_a), len(lines_b))]
            label, order = after(first_extra[0]) if len(lines_a) > len(lines_b) else ("", result.original.steps)
            result.divergences.append(Divergence(
                f"printed output{label}", f"the original printed {len(lines_a)} lines, the fixed program "
                f"{len(lines_b)} (first extra: {first_extra[1]!r})", order))
    if lines_a or lines_b:
        result.compared.append(f"{count} printed numbers")
