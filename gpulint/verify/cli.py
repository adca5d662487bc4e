"""`gpulint verify SCRIPT [options] [-- SCRIPT_ARGS...]`: the command."""

from __future__ import annotations

import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import click

from gpulint.config import ConfigError, parse_size
from gpulint.verify import report, stats
from gpulint.verify.compare import ATOL, RTOL, Tolerance, compare_rank
from gpulint.verify.launch import Options, Program, Run, launch
from gpulint.verify.progress import Progress

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root(script: Path) -> Path:
    """The folder whose modules are fixed along with the script: the nearest one above it that marks a project,
    else the script's own folder."""
    for folder in [script.parent, *script.parent.parents]:
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
        if folder == Path.home():
            break
    return script.parent


def _fail(message: str) -> click.exceptions.Exit:
    click.echo(f"gpulint: error: {message}", err=True)
    return click.exceptions.Exit(report.ERROR)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _script(path: Path, what: str) -> Path:
    if not path.exists():
        raise _fail(f"{path}: no such file ({what})")
    if not path.is_file():
        raise _fail(f"{path}: not a file ({what})")
    return path.resolve()


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("script", type=click.Path(path_type=Path))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--fixed", type=click.Path(path_type=Path),
              help="Compare with this hand-fixed script instead of gpulint's fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="Apply unsafe fixes too (default: safe fixes only).")
@click.option("--max-steps", type=click.IntRange(min=0), default=30, show_default=True,
              help="Stop each program after this many optimizer steps (0: run to the end).")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True,
              help="Steps left out of the measurements.")
@click.option("--profile-steps", type=click.IntRange(min=0), default=8, show_default=True,
              help="Steps the CUDA profiler counts syncs over (after warm-up).")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="cpu hides the GPUs from the programs; cuda fails when there is none.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
              help="Seconds each program may run before it is killed.")
@click.option("--nproc-per-node", "nproc", type=click.IntRange(min=1), default=None,
              help="Launch each program with torchrun on this many processes; report per rank.")
@click.option("--rtol", type=click.FloatRange(min=0), default=RTOL, show_default=True,
              help="Relative tolerance for outputs.")
@click.option("--atol", type=click.FloatRange(min=0), default=ATOL, show_default=True,
              help="Absolute tolerance for outputs.")
@click.option("--parallel", is_flag=True,
              help="Run both programs at once: faster (CI), but their step times are then not comparable.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for Python, NumPy and torch.")
@click.option("--max-memory", default="0",
              help="Kill a program whose processes use more resident memory than this (e.g. 8GB; 0: no limit).")
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True,
              help="Run the original and the fixed program this many times each, interleaved, for the step times.")
@click.option("--noise-runs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Run the original this many more times (seeds seed+1..seed+K, also added to the seeds the "
                   "program sets itself) and accept outputs inside the band they span (for fixes that change "
                   "numerics on purpose: autocast, TF32, fused optimizers, another data order).")
@click.option("--speed-verdict", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="When a measurably slower step fails the verification. auto: only when the programs ran on a "
                   "GPU (gpulint's fixes target the GPU; on the CPU they may cost a little and save nothing).")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Write the loss curves and step-time distributions to this .html (self-contained) or .png file.")
@click.option("--output-format", type=click.Choice(["full", "json"]), default="full", show_default=True)
def verify(script, script_args, fixed, unsafe_fixes, max_steps, warmup, profile_steps, device, timeout, nproc,
           rtol, atol, parallel, seed, max_memory, rounds, noise_runs, speed_verdict, report_path, output_format) -> None:
    """Run SCRIPT and its fixed version and show that the fix cuts syncs, is not slower and keeps the outputs.

    Arguments after `--` go to both programs. Exit 0: fewer syncs per step, the same outputs (or inside the
    original's noise band with --noise-runs) and a step not measurably slower; 1: the fix did not help, made the
    step slower or changed the results; 2: a program failed to run, or bad input.
    """
    script = _script(script, "the script to verify")
    if fixed is not None:
        fixed = _script(fixed, "--fixed")
        if unsafe_fixes:
            raise _fail("--fixed and --unsafe-fixes exclude each other: --fixed runs your own fixed version")
    if report_path is not None:
        if report_path.suffix.lower() not in (".html", ".htm", ".png"):
            raise _fail(f"--report {report_path}: give a .html or a .png file")
        if not _installed("matplotlib"):
            raise _fail("--report needs the report extra: pip install 'gpulint[report]'")
        if not report_path.resolve().parent.is_dir():
            raise _fail(f"--report {report_path}: no such folder {report_path.parent}")
    if importlib.util.find_spec("torch") is None:
        raise _fail(f"gpulint verify needs PyTorch in this Python environment ({sys.executable})")
    if nproc and importlib.util.find_spec("torch.distributed.run") is None:
        raise _fail("--nproc-per-node needs torch.distributed (torchrun), which this PyTorch lacks")
    try:
        memory = parse_size(max_memory, "--max-memory")
    except ConfigError as exc:
        raise _fail(str(exc))
    options = Options(max_steps=max_steps, warmup=warmup, profile_steps=profile_steps, device=device,
                      timeout=timeout, seed=seed, nproc=nproc or 0, parallel=parallel, max_memory=memory,
                      rounds=1 if parallel else rounds, noise_runs=noise_runs, speed_verdict=speed_verdict)
    tolerance = Tolerance(rtol=rtol, atol=atol)
    root = project_root(script)
    args = list(script_args)
    programs = [Program("original", script, args, None, root),
                Program("fixed", fixed or script, args, None if fixed else ("unsafe" if unsafe_fixes else "safe"),
                        project_root(fixed) if fixed else root)]
    progress = Progress(max_steps=max_steps)
    options.progress = progress.enabled
    try:
        verdict = _verify(programs, options, tolerance, progress)
        if report_path is not None and verdict.ranks:
            progress.phase("writing the report")
            from gpulint.verify.picture import write_report

            verdict.report_path = str(report_path)
            try:
                write_report(verdict, report_path)
            except OSError as exc:
                raise _fail(f"--report {report_path}: {exc.strerror or exc}")
    finally:
        progress.done()
    render = report.render_json if output_format == "json" else report.render_full
    click.echo(render(verdict), nl=False)
    raise click.exceptions.Exit(verdict.exit_code)


def _launch(program: Program, options: Options, progress: Progress, round_: int = 0) -> Run:
    progress.phase("measuring" if program.label in ("original", "fixed") else "noise band", program.label,
                   round_, options.rounds if round_ else 0)
    return launch(program, options, watch=progress.step if progress.enabled else None)


def _run_rounds(programs: list[Program], options: Options, progress: Progress):
    """Rounds of (original run, fixed run), interleaved A B, B A, A B, ...: the order alternates so that a drift
    of the machine (warming up, throttling, a neighbour's job) weighs on both programs alike. Round 1 runs the
    original first and stops at the first failure, so that a broken original is reported as such.
    Returns (rounds, the failed run or None, the original's first run)."""
    expected = max(options.nproc, 1)
    if options.parallel:
        progress.phase("measuring", "both programs at once")
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(lambda p: launch(p, options), programs))
        return [runs], next((run for run in runs if run.failure(expected)), None), runs[0]
    rounds = []
    for r in range(1, options.rounds + 1):
        order = programs if r % 2 else programs[::-1]
        done = {}
        # round 1 (outputs compared, syncs counted) in deterministic mode under the profiler; the timing rounds as
        # the program runs for its user, and without the profiler: the steps after a profiler window run slower
        # and noisier (1-4 ms on the encoder shape on an H100: docs/benchmarks.md, "Fifth landing"), which hides
        # a fix's gain in a launch-bound program
        opts = options if r == 1 else replace(options, deterministic=False, profile_steps=0)
        for program in order:
            run = _launch(program, opts, progress, r)
            done[program.label] = run
            if run.failure(expected):
                return rounds, run, rounds[0][0] if rounds else done.get("original", run)
        rounds.append((done["original"], done["fixed"]))
        if r == 1 and _nothing_fixed(done["fixed"]):
            break  # nothing to measure
    return rounds, None, rounds[0][0]


def _nothing_fixed(fixed: Run) -> bool:
    return bool(fixed.program.fix) and not any(rank.get("fixed_modules") for rank in fixed.ranks)


def _noise_runs(original: Program, options: Options, progress: Progress):
    """The original again with seeds seed+1..seed+K, two at a time with --parallel: (runs, the failed run or
    None). Run k also adds k to every seed the program sets itself (`torch.manual_seed(0)` in the script): a
    program that seeds itself would otherwise repeat run 0 exactly, and its band would have no width."""
    jobs = [(replace(original, label=f"original (seed {options.seed + k})"),
             replace(options, seed=options.seed + k, seed_offset=k)) for k in range(1, options.noise_runs + 1)]
    if options.parallel:
        progress.phase("noise band", f"{len(jobs)} more runs of the original")
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(lambda job: launch(*job), jobs))
    else:
        runs = [_launch(program, opts, progress) for program, opts in jobs]
    failed = next((run for run in runs if run.failure(max(options.nproc, 1))), None)
    return runs, failed


def _verify(programs: list[Program], options: Options, tolerance: Tolerance, progress: Progress) -> report.Verdict:
    rounds, failed, first = _run_rounds(programs, options, progress)
    warned = set()
    for run in [run for pair in rounds for run in pair] + ([failed] if failed else []):
        for warning in run.warnings():
            if warning not in warned:
                warned.add(warning)
                click.echo(f"gpulint verify: warning: {warning}", err=True)
    if failed:
        return report.failed_run(failed, options, tolerance, first)
    original, fixed = rounds[0]
    if _nothing_fixed(fixed):
        return report.nothing_fixed(original, fixed, options, tolerance)
    noise, failed = _noise_runs(original.program, options, progress)
    if failed:
        return report.failed_run(failed, options, tolerance, original)
    ranks = [compare_rank(a, b, tolerance, [n.ranks[i] for n in noise if i < len(n.ranks)])
             for i, (a, b) in enumerate(zip(original.ranks, fixed.ranks))]
    if not options.parallel:
        for i, r in enumerate(ranks):
            timed = rounds[1:] or rounds  # round 1 ran deterministic kernels: timed only when it is the only one
            r.timing = stats.timing(*[[_step_times(pair[side], i) for pair in timed] for side in (0, 1)])
            if r.timing is not None:
                r.original.step_ms, r.fixed.step_ms = r.timing.original.value, r.timing.fixed.value
    hint = ""
    if fixed.program.fix is not None:
        from gpulint.verify.lines import original_sites, unsafe_only_findings

        unsafe = fixed.program.fix == "unsafe"
        for r, rank in zip(ranks, fixed.ranks):  # lines of the user's files, not of the fixed program
            r.fixed.sites = original_sites(r.fixed.sites, rank.get("fixed_modules") or {}, unsafe)
        if not unsafe and not all(r.syncs_dropped for r in ranks):
            left = list(dict.fromkeys(unsafe_only_findings(
                [original.program.script, *(fixed.ranks[0].get("fixed_modules") or {})])))
            if left:
                hint = (f"; the syncs left need unsafe fixes ({', '.join(report.relative(w) for w in left)}): "
                        f"rerun with --unsafe-fixes")
    progress.phase("linting what the run saw")
    from gpulint.verify.unflagged import unflagged

    verdict = report.judge(original, fixed, ranks, options, tolerance)
    verdict.rounds, verdict.noise = rounds, noise
    verdict.unflagged = [unflagged(rank) for rank in original.ranks]
    if hint and verdict.exit_code == report.FAIL:
        verdict.summary += hint
    return verdict


def _step_times(run: Run, rank: int) -> list[float]:
    """The rank's step times after its warm-up: `--warmup` steps are never recorded, and the steps before the
    series settles (stats.settled: a slow start that lasts longer than the fixed warm-up, such as the first
    steps of a fused optimizer, cuDNN autotuning or the caching allocator growing) are left out too."""
    ranks = run.ranks
    times = ((ranks[rank].get("step_times_ms") or {}).get("ms") or []) if rank < len(ranks) else []
    return times[stats.settled(times):]
