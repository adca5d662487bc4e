"""`gpulint verify SCRIPT [options] [-- SCRIPT_ARGS...]`: the command."""

from __future__ import annotations

import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click

from gpulint.config import ConfigError, parse_size
from gpulint.verify import report
from gpulint.verify.compare import ATOL, RTOL, Tolerance, compare_rank
from gpulint.verify.launch import Options, Program, launch

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
@click.option("--output-format", type=click.Choice(["full", "json"]), default="full", show_default=True)
def verify(script, script_args, fixed, unsafe_fixes, max_steps, warmup, profile_steps, device, timeout, nproc,
           rtol, atol, parallel, seed, max_memory, output_format) -> None:
    """Run SCRIPT and its fixed version and show that the fix cuts syncs and keeps the outputs.

    Arguments after `--` go to both programs. Exit 0: fewer syncs per step and the same outputs; 1: the fix did
    not help or changed the results; 2: a program failed to run, or bad input.
    """
    script = _script(script, "the script to verify")
    if fixed is not None:
        fixed = _script(fixed, "--fixed")
        if unsafe_fixes:
            raise _fail("--fixed and --unsafe-fixes exclude each other: --fixed runs your own fixed version")
    if importlib.util.find_spec("torch") is None:
        raise _fail(f"gpulint verify needs PyTorch in this Python environment ({sys.executable})")
    if nproc and importlib.util.find_spec("torch.distributed.run") is None:
        raise _fail("--nproc-per-node needs torch.distributed (torchrun), which this PyTorch lacks")
    try:
        memory = parse_size(max_memory, "--max-memory")
    except ConfigError as exc:
        raise _fail(str(exc))
    options = Options(max_steps=max_steps, warmup=warmup, profile_steps=profile_steps, device=device,
                      timeout=timeout, seed=seed, nproc=nproc or 0, parallel=parallel, max_memory=memory)
    tolerance = Tolerance(rtol=rtol, atol=atol)
    root = project_root(script)
    args = list(script_args)
    programs = [Program("original", script, args, None, root),
                Program("fixed", fixed or script, args, None if fixed else ("unsafe" if unsafe_fixes else "safe"),
                        project_root(fixed) if fixed else root)]
    verdict = _verify(programs, options, tolerance, progress=output_format == "full")
    render = report.render_json if output_format == "json" else report.render_full
    click.echo(render(verdict), nl=False)
    raise click.exceptions.Exit(verdict.exit_code)


def _verify(programs: list[Program], options: Options, tolerance: Tolerance, progress: bool) -> report.Verdict:
    expected = max(options.nproc, 1)
    if options.parallel:
        if progress:
            click.echo("gpulint verify: running the original and the fixed program at once...", err=True)
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(lambda p: launch(p, options), programs))
    else:
        runs = []
        for program in programs:
            if progress:
                click.echo(f"gpulint verify: running the {program.label} program...", err=True)
            runs.append(launch(program, options))
            if runs[-1].failure(expected):
                break
    for run in runs:
        for warning in run.warnings():
            click.echo(f"gpulint verify: warning: {warning}", err=True)
    for run in runs:
        if run.failure(expected):
            return report.failed_run(run, options, tolerance, runs[0])
    original, fixed = runs
    if fixed.program.fix and not any(rank.get("fixed_modules") for rank in fixed.ranks):
        return report.nothing_fixed(original, fixed, options, tolerance)
    ranks = [compare_rank(a, b, tolerance) for a, b in zip(original.ranks, fixed.ranks)]
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
    verdict = report.judge(original, fixed, ranks, options, tolerance)
    if hint and verdict.exit_code == report.FAIL:
        verdict.summary += hint
    return verdict
