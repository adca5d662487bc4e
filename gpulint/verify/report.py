"""The verdict and its two renderings: a table for people (`full`) and a JSON document for tools (`json`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Optional

from gpulint.verify.compare import RankComparison, Tolerance
from gpulint.verify.launch import Options, Run
from gpulint.verify.stats import SLOWER

PASS, FAIL, ERROR = 0, 1, 2


@dataclass
class Verdict:
    exit_code: int
    summary: str  # the last line: PASS/FAIL/ERROR and why
    original: Run
    fixed: Optional[Run]
    options: Options
    tolerance: Tolerance
    ranks: list[RankComparison] = field(default_factory=list)
    details: str = ""  # the failing program's traceback or stderr
    rounds: list = field(default_factory=list)  # (original run, fixed run) per round
    noise: list = field(default_factory=list)  # the original's runs with seeds seed+1..seed+K
    unflagged: list = field(default_factory=list)  # per rank: per-step host reads no rule reports (unflagged.py)
    report_path: str = ""


def failed_run(run: Run, options: Options, tolerance: Tolerance, original: Run) -> Verdict:
    """The original failing says nothing about the fix (exit 2); the fixed program failing where the original
    ran is a verdict on the fix (exit 1), unless it was killed at the timeout (exit 2: rerun with more time)."""
    why = run.failure(max(options.nproc, 1))
    details = run.error_details()
    if details.strip() == why:
        details = ""  # the summary says it all
    if run.program.label == "fixed" and not run.timed_out:
        return Verdict(FAIL, f"FAIL: the fix broke the program: the fixed program failed where the original ran: "
                       f"{why}", original, run, options, tolerance, details=details)
    return Verdict(ERROR, f"ERROR: the {run.program.label} program failed: {why}",
                   original, run if run is not original else None, options, tolerance, details=details)


def nothing_fixed(original: Run, fixed: Run, options: Options, tolerance: Tolerance) -> Verdict:
    hint = "" if fixed.program.fix == "unsafe" else " (try --unsafe-fixes)"
    return Verdict(FAIL, f"FAIL: gpulint's fixes change nothing in this program{hint}; nothing to verify",
                   original, fixed, options, tolerance)


def judge(original: Run, fixed: Run, ranks: list[RankComparison], options: Options,
          tolerance: Tolerance) -> Verdict:
    problems = []
    for r in ranks:
        where = f"rank {r.rank}: " if len(ranks) > 1 else ""
        first = r.first_divergence
        if first is not None:
            how = "outside the noise band" if r.banded else "differ"
            problems.append(f"{where}outputs {how}, first at {first}")
        elif not r.compared:
            problems.append(f"{where}no outputs to compare (no optimizer step, no backward(), nothing printed)")
        if not r.syncs_dropped:
            problems.append(f"{where}{_metric_name(r)} per step did not drop "
                            f"({_fmt(r.per_step('original'))} -> {_fmt(r.per_step('fixed'))})")
        if r.timing is not None and r.timing.verdict == SLOWER and _speed_judged(r, options):
            t = r.timing
            problems.append(f"{where}the fixed program is slower: step time {t.original.value:.3f} -> "
                            f"{t.fixed.value:.3f} ms, {t.sentence()}")
    verdict = Verdict(FAIL if problems else PASS, "", original, fixed, options, tolerance, ranks)
    if problems:
        verdict.summary = "FAIL: " + "; ".join(problems)
    else:
        r = ranks[0]
        change = f"{_metric_name(r)} per step {_fmt(r.per_step('original'))} -> {_fmt(r.per_step('fixed'))}"
        if len(ranks) > 1:
            change += f" on rank 0 (all {len(ranks)} ranks dropped)"
        verdict.summary = f"PASS: {change}; {_outputs_match(r)}; {_speed(r, options)}"
    return verdict


def _outputs_match(r: RankComparison) -> str:
    """The outputs part of a PASS line: `outputs match: identical`, `outputs match within tolerance (...)`,
    `outputs match: within the original's noise band (n runs)`."""
    text = r.numerics_text()
    return f"outputs {text}" if text.startswith("match") else f"outputs match: {text}"


def _speed_judged(r: RankComparison, options: Options) -> bool:
    """Whether a slower step fails: `--speed-verdict`; auto judges GPU runs only (the metric is then the
    profiler's syncs), since a fix that removes a sync buys nothing on the CPU and may cost a little there."""
    if options.speed_verdict == "auto":
        return r.metric == "syncs"
    return options.speed_verdict == "always"


def _speed(r: RankComparison, options: Options) -> str:
    if options.parallel:
        return "step times not compared (--parallel ran both programs at once)"
    if r.timing is None:
        return "no step times to compare"
    if r.timing.verdict == SLOWER and not _speed_judged(r, options):
        return (f"step time: {r.timing.sentence()}, not judged (a CPU run; gpulint's fixes target the GPU; "
                f"--speed-verdict always judges it)")
    return f"step time: {r.timing.sentence()}"


def _metric_name(r: RankComparison) -> str:
    return "syncs" if r.metric == "syncs" else "host reads"


def _fmt(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def relative(where: str) -> str:
    """`path:rest` with the path made relative to the current folder (when under it)."""
    path, sep, rest = where.partition(":")
    return _rel(path) + sep + rest


def _rel(path: str) -> str:
    """Relative to the current folder when under it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


# -- full ---------------------------------------------------------------------------------------------------------
def render_full(v: Verdict) -> str:
    out = [f"gpulint verify: {_rel(str(v.original.program.script))}"]
    if v.fixed is not None:
        out.append(f"fixed program: {_describe_fixed(v.fixed)}")
    first = v.original.ranks[0] if v.original.ranks else {}
    if first:
        out.append(f"device: {_device(first)}; torch {first.get('torch', '?')}" +
                   (f"; {first['world_size']} ranks (torchrun)" if v.options.nproc else ""))
    for r in v.ranks:
        out.append("")
        if len(v.ranks) > 1:
            out.append(f"rank {r.rank}:")
        out.extend(_rank_table(r, v))
    if v.details:
        out.append("")
        out.extend(v.details.splitlines())
    if v.report_path:
        out.append("")
        out.append(f"report: {_rel(v.report_path)}")
    out.append("")
    out.append(v.summary)
    return "\n".join(out) + "\n"


def _describe_fixed(run: Run) -> str:
    program = run.program
    if program.fix is None:
        return _rel(str(program.script))
    changed = run.ranks[0].get("fixed_modules", {}) if run.ranks else {}
    kind = "safe and unsafe" if program.fix == "unsafe" else "safe"
    if not changed:
        return f"gpulint's {kind} fixes, applied in memory (no change)"
    files = ", ".join(f"{_rel(p)} ({n} lines)" for p, n in sorted(changed.items()))
    return f"gpulint's {kind} fixes, applied in memory to {files}"


def _device(rank: dict) -> str:
    if rank.get("gpu") and rank.get("syncs", {}).get("source"):
        return f"cuda ({rank['gpu']})"
    return "cpu" + (f" (CUDA available: {rank['gpu']}, unused)" if rank.get("gpu") else "")


def _rank_table(r: RankComparison, v: Verdict) -> list[str]:
    a, b = r.original, r.fixed
    unit = {"optimizer": "optimizer steps", "loader": "DataLoader batches"}.get(a.unit, "steps")
    limit = " (stopped at --max-steps)" if v.options.max_steps and a.steps >= v.options.max_steps else ""
    steps = f"{a.steps} {unit}" + (f" (fixed: {b.steps})" if b.steps != a.steps else "")
    rounds = f"; syncs, reads and outputs from round 1 of {len(v.rounds)} (deterministic kernels), step times from " \
        f"rounds 2-{len(v.rounds)} (the programs' own settings)" if len(v.rounds) > 1 else ""
    rows = [f"{steps}{limit}, {v.options.warmup} of them warm-up{rounds}", "",
            f"{'':34}{'original':>10}{'fixed':>10}"]
    if a.syncs is not None or b.syncs is not None:
        rows.append(f"{'syncs / step (' + (a.sync_source or b.sync_source or '') + ')':34}"
                    f"{_fmt(a.syncs):>10}{_fmt(b.syncs):>10}")
        for call in sorted(set(a.syncs_by_call) | set(b.syncs_by_call)):
            rows.append(f"{'  ' + call:34}{_fmt(a.syncs_by_call.get(call)):>10}"
                        f"{_fmt(b.syncs_by_call.get(call)):>10}")
    rows.append(f"{'host reads / step':34}{_fmt(a.host_reads):>10}{_fmt(b.host_reads):>10}")
    if a.step_ms is not None or b.step_ms is not None:
        speed = "   (ran in parallel: not comparable)" if v.options.parallel else \
            f"   {r.speedup:.2f}x" if r.speedup else ""
        label = "median step time, ms" if r.timing else "step time, ms"
        rows.append(f"{label + ' (' + (a.time_source or b.time_source or '') + ')':34}"
                    f"{_fmt(a.step_ms, 3):>10}{_fmt(b.step_ms, 3):>10}{speed}")
        if r.timing is not None:
            t = r.timing
            rows.append(f"{'  95% interval, low':34}{_fmt(t.original.low, 3):>10}{_fmt(t.fixed.low, 3):>10}"
                        f"   {t.speedup.low:.2f}x")
            rows.append(f"{'  95% interval, high':34}{_fmt(t.original.high, 3):>10}{_fmt(t.fixed.high, 3):>10}"
                        f"   {t.speedup.high:.2f}x")
            rows.append(f"{'  steps timed (' + str(t.rounds) + ' interleaved rounds)':34}"
                        f"{t.steps[0]:>10}{t.steps[1]:>10}")
    rows.append("")
    for what in r.compared:
        key = "parameters" if what.startswith("parameters") else "losses" if what.endswith("losses") else None
        worst = f" (largest relative difference {r.max_rel[key]:.1e})" if key in r.max_rel else ""
        word = "compared" if r.divergences or r.another_seed else \
            "within the band" if r.numerics == "within_noise_band" else "match"
        rows.append(f"{what}: {word}{worst}")
    if r.compared:
        rows.append(f"outputs: {r.numerics_text()}")
    if r.timing is not None and not v.options.parallel:
        rows.append(f"step time: {r.timing.sentence()}")
    if r.ignored_lines:
        rows.append(f"{r.ignored_lines} printed lines with timings left out of the comparison")
    for d in sorted(r.divergences, key=lambda d: d.order):
        rows.append(f"DIFFERS {d}")
    sites = _site_rows(r)
    if sites:
        rows.append("")
        rows.append("host reads per step, by line (original -> fixed):")
        rows.extend(sites)
    rank = v.ranks.index(r)
    rows.extend(_unflagged_rows(v.unflagged[rank] if rank < len(v.unflagged) else []))
    return rows


def _unflagged_rows(sites: list[dict], limit: int = 8) -> list[str]:
    if not sites:
        return []
    rows = ["", "seen at run time, not flagged by any rule (host reads per step, original):"]
    for site in sites[:limit]:
        rows.append(f"  {_rel(site['file'])}:{site['line']} {site['method']:<10} {site['per_step']:>6.2f}")
        if site["callers"]:
            rows.append("    called from " + " <- ".join(f"{_rel(c['file'])}:{c['line']} ({c['function']})"
                                                      for c in site["callers"]))
    if len(sites) > limit:
        rows.append(f"  ... and {len(sites) - limit} more (--output-format json lists them all)")
    return rows


def _site_rows(r: RankComparison, limit: int = 8) -> list[str]:
    keys = set(r.original.sites) | set(r.fixed.sites)
    ranked = sorted(keys, key=lambda k: -(r.original.sites.get(k, 0) + r.fixed.sites.get(k, 0)))[:limit]
    return [f"  {_rel(f)}:{line} {name:<10} {_fmt(r.original.sites.get(k)):>6} -> {_fmt(r.fixed.sites.get(k))}"
            for k in ranked for f, line, name in [k]]


# -- json ---------------------------------------------------------------------------------------------------------
def render_json(v: Verdict) -> str:
    doc = {
        "verdict": {PASS: "pass", FAIL: "fail", ERROR: "error"}[v.exit_code],
        "exit_code": v.exit_code,
        "summary": v.summary,
        "script": str(v.original.program.script),
        "options": {"max_steps": v.options.max_steps, "warmup": v.options.warmup, "device": v.options.device,
                    "parallel": v.options.parallel, "rounds": len(v.rounds) or v.options.rounds,
                    "noise_runs": v.options.noise_runs, "seed": v.options.seed,
                    "nproc_per_node": v.options.nproc, "rtol": v.tolerance.rtol, "atol": v.tolerance.atol},
        "programs": {run.program.label: _run_json(run) for run in (v.original, v.fixed) if run is not None},
        "ranks": [_rank_json(r, comparable_times=not v.options.parallel) for r in v.ranks],
    }
    for rank, sites in zip(doc["ranks"], v.unflagged):
        rank["seen_at_run_time_not_flagged"] = sites
    if v.report_path:
        doc["report"] = v.report_path
    if v.details:
        doc["details"] = v.details
    return json.dumps(doc, indent=2) + "\n"


def _run_json(run: Run) -> dict:
    first = run.ranks[0] if run.ranks else {}
    return {"script": str(run.program.script), "fix": run.program.fix, "returncode": run.returncode,
            "timed_out": run.timed_out, "seconds": round(run.seconds, 3),
            "fixed_modules": first.get("fixed_modules", {}), "torch": first.get("torch"), "gpu": first.get("gpu"),
            "status": [r.get("status") for r in run.ranks]}


def _rank_json(r: RankComparison, comparable_times: bool) -> dict:
    def measure(m):
        return {"steps": m.steps, "unit": m.unit, "syncs_per_step": m.syncs, "sync_source": m.sync_source,
                "syncs_by_call": m.syncs_by_call, "host_reads_per_step": m.host_reads, "step_ms": m.step_ms,
                "time_source": m.time_source,
                "host_reads_by_line": [{"file": f, "line": line, "method": name, "per_step": n}
                                       for (f, line, name), n in sorted(m.sites.items())]}

    first = r.first_divergence
    return {"rank": r.rank, "metric": r.metric, "syncs_dropped": r.syncs_dropped,
            "speedup": r.speedup if comparable_times else None,
            "outputs_match": not r.divergences and bool(r.compared), "compared": r.compared,
            "numerics": {"verdict": r.numerics, "text": r.numerics_text(), "noise_runs": r.noise_runs,
                         "band_runs": r.noise_runs + 1},
            "noise_band": _band_json(r),
            "timing": r.timing.as_dict() if r.timing is not None and comparable_times else None,
            "max_relative_difference": r.max_rel,
            "first_divergence": {"where": first.where, "what": first.what} if first else None,
            "divergences": [{"where": d.where, "what": d.what} for d in r.divergences],
            "original": measure(r.original), "fixed": measure(r.fixed)}


def _band_json(r: RankComparison) -> Optional[dict]:
    """How the noise band was used: null without --noise-runs."""
    if not r.noise_runs:
        return None
    first = r.trajectory
    return {"runs": r.noise_runs + 1, "empty": r.band_empty,
            "compared_as": "another seed" if r.another_seed else "step by step",
            "statistics": r.another_seed or None, "seeds_the_program_set": r.seeds_set,
            "step_by_step_divergence": {"where": first.where, "what": first.what} if first else None}
