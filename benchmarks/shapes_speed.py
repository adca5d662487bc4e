"""Time the program shapes of benchmarks/programs/shapes/ three ways: as written, after
`gpulint check --fix --unsafe-fixes`, and optimised by hand (`<name>_hand.py`).

Two halves, so that the GPU machine needs neither gpulint nor libcst:

    python benchmarks/shapes_speed.py --prepare DIR     # here: copy the programs, let gpulint fix one copy
    python benchmarks/shapes_speed.py --run DIR         # on the GPU machine: time them, print a markdown table

`--prepare` writes DIR/as_written/<name>.py, DIR/gpulint/<name>.py (fixed in place by the gpulint on PATH or of
this checkout), DIR/hand/<name>.py, and DIR/gpulint_findings.txt (what gpulint reported and fixed).

`--run` runs the variants interleaved, one process each (round 1: A B C of every shape, round 2: A B C ...), reads
the `STEP_MS` line each program prints (milliseconds per step timed inside the program after its warm-up, with a
device synchronise at both ends) and the `FINAL <loss> <checksum>` line, and reports per shape and variant the
median ms/step over rounds with a 95% bootstrap interval, and the speedup against the as-written program (ratio of
medians, rounds resampled in pairs since they are interleaved) with its 95% interval. Raw lines go to --raw as they
come, so a run cut short still leaves its data.

Host noise: `--cpus LIST|auto` pins every program run to one CPU set (the child's affinity is set before it execs, so
its threads and DataLoader workers inherit it); `auto` is the GPU's NUMA-local CPUs (nvidia-smi's PCI bus id ->
/sys/bus/pci/devices/<id>/local_cpulist), or the first 8 allowed CPUs where that cannot be read. `--order shuffle`
runs the shapes of each round in a seeded random order, and the variants of each shape in a seeded random order
(they stay next to each other, so a round's triple of a shape is timed close together), so that no variant always
runs first, after another shape's program. Both, and the CPU set, are written in the header line of the raw file.
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES_DIR = Path(__file__).resolve().parent / "programs" / "shapes"
VARIANTS = ("as_written", "gpulint", "hand")
# Ablations of the hand-optimised programs: one lever of the guides that the hand twin leaves out (because it was
# measured slower on that shape) put back in, to show what it costs. Each is made by text substitution from
# `<name>_hand.py`, only for the shapes listed.
AUTOCAST = "with torch.autocast(device, dtype=torch.bfloat16, enabled=False):  # bf16 measured slower here"
ABLATIONS = {
    "hand_bf16": (("diffusion_unet", "finetune_encoder"),
                  [(AUTOCAST, "with torch.autocast(device, dtype=torch.bfloat16, enabled=use_cuda):")]),
    "hand_layout": (("resnet_mapstyle",),
                    [("torch.backends.cudnn.benchmark = False  # measured slower here (see the docstring)",
                      "torch.backends.cudnn.benchmark = True"),
                     ("model = ResNet(width).to(device)", "model = ResNet(width).to(device, memory_format=torch.channels_last)"),
                     ("augment(images_all[index], mean, std)",
                      "augment(images_all[index], mean, std).contiguous(memory_format=torch.channels_last)")]),
}


def parse_cpulist(text):
    """'0-3,8,10-11' (the kernel's cpulist format) -> sorted list of ints; ValueError if malformed or empty."""
    cpus = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        lo, hi = int(lo), int(hi) if sep else int(lo)
        if lo < 0 or hi < lo:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(lo, hi + 1))
    if not cpus:
        raise ValueError(f"no CPUs in {text!r}")
    return sorted(cpus)


def format_cpulist(cpus):
    """[0, 1, 2, 5] -> '0-2,5'."""
    parts, cpus = [], sorted(cpus)
    start = prev = cpus[0]
    for c in cpus[1:] + [None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(f"{start}-{prev}" if prev > start else f"{start}")
        if c is not None:
            start = prev = c
    return ",".join(parts)


def gpu_local_cpus():
    """(cpus, how): the NUMA-local CPUs of the first GPU nvidia-smi lists, or (None, why not)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi: {exc.__class__.__name__}"
    ids = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not ids:
        return None, "nvidia-smi gave no bus id"
    domain, _, rest = ids[0].lower().partition(":")  # 00000000:18:00.0 -> 0000:18:00.0 as sysfs spells it
    bus_id = f"{domain[-4:]}:{rest}"
    path = Path("/sys/bus/pci/devices") / bus_id / "local_cpulist"
    try:
        return parse_cpulist(path.read_text()), f"local_cpulist of GPU {bus_id}"
    except (OSError, ValueError) as exc:
        return None, f"{path}: {exc.__class__.__name__}"


def resolve_cpus(spec):
    """(sorted CPU list or None, description) for --cpus. None/'' = not pinned. Raises ValueError for a set that
    names no CPU this process may use."""
    if not spec:
        return None, "not pinned"
    allowed = sorted(os.sched_getaffinity(0))
    if spec == "auto":
        local, how = gpu_local_cpus()
        cpus = [c for c in local or [] if c in allowed]
        if not cpus:
            cpus, how = allowed[:8], f"first {min(8, len(allowed))} allowed CPUs ({how})"
        return cpus, how
    cpus = parse_cpulist(spec)
    outside = [c for c in cpus if c not in allowed]
    if outside:
        raise ValueError(f"CPUs {format_cpulist(outside)} are not in this process's affinity "
                         f"({format_cpulist(allowed)})")
    return cpus, "given"


def pin_to(cpus):
    """preexec_fn for subprocess: the child's affinity before it execs (None: inherit)."""
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def round_order(names, variants, order, rng):
    """The (shape, variant) pairs of one round. fixed: shapes sorted, variants in the given order. shuffle: shapes in
    a random order, and the variants of each shape in a random order, from rng (seeded once per run)."""
    names, pairs = list(names), []
    if order == "shuffle":
        rng.shuffle(names)
    for name in names:
        vs = list(variants)
        if order == "shuffle":
            rng.shuffle(vs)
        pairs.extend((name, v) for v in vs)
    return pairs


def shape_names(folder):
    return sorted(p.stem for p in Path(folder).glob("*.py") if not p.stem.endswith("_hand"))


def prepare(out_dir, gpulint_cmd, extra=()):
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    names = shape_names(SHAPES_DIR)
    for variant in VARIANTS:
        (out / variant).mkdir(parents=True)
    for name in names:
        shutil.copy(SHAPES_DIR / f"{name}.py", out / "as_written" / f"{name}.py")
        shutil.copy(SHAPES_DIR / f"{name}_hand.py", out / "hand" / f"{name}.py")
        for ablation, (shapes, substitutions) in ABLATIONS.items():
            if name in shapes:
                source = (SHAPES_DIR / f"{name}_hand.py").read_text()
                for old, new in substitutions:
                    if old not in source:
                        sys.exit(f"error: ablation {ablation}: {old!r} not in {name}_hand.py")
                    source = source.replace(old, new)
                (out / ablation).mkdir(exist_ok=True)
                (out / ablation / f"{name}.py").write_text(source)
    # Fix in a scratch folder outside any repository, so that no project's pyproject.toml (whose `exclude` may
    # name benchmarks/programs) or .gitignore changes what gpulint sees.
    with tempfile.TemporaryDirectory() as scratch:
        files = []
        for name in names:
            shutil.copy(SHAPES_DIR / f"{name}.py", Path(scratch) / f"{name}.py")
            files.append(f"{name}.py")
        report = subprocess.run(gpulint_cmd + ["check", "--no-cache", *extra, "--output-format", "concise", *files],
                                cwd=scratch, capture_output=True, text=True)
        fixed = subprocess.run(gpulint_cmd + ["check", "--fix", "--unsafe-fixes", "--no-cache", *extra, "--output-format",
                                              "concise", *files], cwd=scratch, capture_output=True, text=True)
        if fixed.returncode not in (0, 1):
            sys.exit(f"error: gpulint --fix failed: {fixed.stderr.strip().splitlines()[-1:]}")
        for name in names:
            shutil.copy(Path(scratch) / f"{name}.py", out / "gpulint" / f"{name}.py")
    version = subprocess.run(gpulint_cmd + ["--version"], capture_output=True, text=True).stdout.strip()
    (out / "gpulint_findings.txt").write_text(
        f"# {version}\n# findings before fixing\n{report.stdout}\n# left after --fix --unsafe-fixes\n{fixed.stdout}")
    print(f"prepared {len(names)} shapes in {out} ({version})")


def run_one(path, steps, timeout, tiny=False, warmup=None, cpus=None):
    command = [sys.executable, str(path), "--steps", str(steps)] + (["--tiny"] if tiny else [])
    command += ["--warmup", str(warmup)] if warmup is not None else []
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, preexec_fn=pin_to(cpus))
    step_ms = final = None
    for line in proc.stdout.splitlines():
        if line.startswith("STEP_MS "):
            step_ms = float(line.split()[1])
        elif line.startswith("FINAL "):
            final = " ".join(line.split()[1:])
    if proc.returncode != 0 or step_ms is None or final is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return None, f"FAILED rc={proc.returncode}: {' | '.join(tail)}"
    return step_ms, final


def bootstrap(samples, statistic, resamples=4000, seed=0):
    """95% percentile interval of statistic(resampled index list)."""
    rng = random.Random(seed)
    n = len(samples)
    values = sorted(statistic([rng.randrange(n) for _ in range(n)]) for _ in range(resamples))
    return values[int(0.025 * resamples)], values[int(0.975 * resamples) - 1]


def median_ci(xs):
    """'median [lo, hi]' of ms/step over rounds."""
    lo, hi = bootstrap(xs, lambda idx: statistics.median(xs[i] for i in idx))
    return f"{statistics.median(xs):.2f} [{lo:.2f}, {hi:.2f}]"


def speedup_ci(base, xs):
    """(speedup, 'speedup [lo, hi]'): ratio of medians, rounds resampled in pairs (they ran interleaved)."""
    def ratio(idx):
        return statistics.median(base[i] for i in idx) / statistics.median(xs[i] for i in idx)

    lo, hi = bootstrap(xs, ratio)
    value = ratio(range(len(xs)))
    return value, f"{value:.2f}x [{lo:.2f}, {hi:.2f}]"


def share_ci(base, fixed, hand):
    """'[lo, hi]': 95% interval of gpulint's share of the hand twin's gain, (s_gpulint - 1) / (s_hand - 1), rounds
    resampled in triples (they ran interleaved); resamples where the hand twin gains nothing are left out."""
    rng = random.Random(0)
    n, values = len(base), []
    for _ in range(4000):
        idx = [rng.randrange(n) for _ in range(n)]
        b = statistics.median(base[i] for i in idx)
        g, h = b / statistics.median(fixed[i] for i in idx), b / statistics.median(hand[i] for i in idx)
        if h - 1 > 0.02:
            values.append(100 * (g - 1) / (h - 1))
    if not values:
        return "[n/a]"
    values.sort()
    return f"[{values[int(0.025 * len(values))]:.0f}%, {values[int(0.975 * len(values)) - 1]:.0f}%]"


def summarise(times, names):
    """times[name][variant] is a list of ms/step, one per round (None where a run failed)."""
    rows = ["| shape | as written ms/step | gpulint-fixed ms/step | hand-optimised ms/step | gpulint speedup | "
            "hand speedup | gpulint share of hand's gain |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in names:
        cells, speedups = [], {}
        if any(all(x is None for x in times[name].get(v) or [None]) for v in VARIANTS):
            continue  # a run of ablations only
        rounds = [i for i in range(len(times[name]["as_written"]))
                  if all(times[name][v][i] is not None for v in VARIANTS)]
        if not rounds:
            rows.append(f"| {name} | failed | | | | | |")
            continue
        for variant in VARIANTS:
            cells.append(median_ci([times[name][variant][i] for i in rounds]))
        base = [times[name]["as_written"][i] for i in rounds]
        for variant in ("gpulint", "hand"):
            speedups[variant], cell = speedup_ci(base, [times[name][variant][i] for i in rounds])
            cells.append(cell)
        gain = speedups["hand"] - 1
        share = f"{100 * (speedups['gpulint'] - 1) / gain:.0f}%" if gain > 0.02 else "n/a"
        if gain > 0.02:
            share += " " + share_ci(base, *([times[name][v][i] for i in rounds] for v in ("gpulint", "hand")))
        rows.append(f"| {name} (n={len(rounds)}) | " + " | ".join(cells) + f" | {share} |")
    return "\n".join(rows)


def summarise_ablations(times, names):
    rows = ["| shape | variant | ms/step | speedup vs as written |", "| --- | --- | --- | --- |"]
    for name in names:
        for variant, xs_all in times[name].items():
            if variant in ("as_written", "gpulint") or not xs_all:
                continue
            rounds = [i for i, x in enumerate(xs_all) if x is not None and times[name]["as_written"][i] is not None]
            if not rounds:
                continue
            xs = [xs_all[i] for i in rounds]
            _, speedup = speedup_ci([times[name]["as_written"][i] for i in rounds], xs)
            rows.append(f"| {name} | {variant} | {median_ci(xs)} | {speedup} |")
    return "\n".join(rows)


def load_raw(paths):
    """Read RAW lines of one or more --raw files back (to pool runs): {shape: {variant: [ms, ...]}} by round."""
    by_round = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if not line.startswith("RAW "):
                continue
            fields = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
            key = (path, int(fields["round"]))
            ms = None if fields["step_ms"] == "None" else float(fields["step_ms"])
            by_round.setdefault(key, {}).setdefault(fields["shape"], {})[fields["variant"]] = ms
    names = sorted({n for r in by_round.values() for n in r})
    variants = list(VARIANTS) + sorted({v for r in by_round.values() for s in r.values() for v in s} - set(VARIANTS))
    times = {n: {v: [] for v in variants} for n in names}
    for key in sorted(by_round):
        for n in names:
            row = by_round[key].get(n, {})
            if "as_written" not in row:
                continue
            for v in variants:
                times[n][v].append(row.get(v))
    return times, names


def run(dir_, rounds, steps, raw_path, only, timeout, tiny=False, budget=None, first_round=1, variants=None,
        warmup=None, cpus=None, cpus_how="not pinned", order="fixed", seed=0):
    folder = Path(dir_)
    names = [n for n in shape_names(folder / "as_written") if not only or n in only]
    extras = sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name not in VARIANTS and
                    (p.name.startswith("hand_") or p.name in (variants or ())))  # ablations: hand_*, or named
    times = {n: {v: [] for v in VARIANTS + tuple(extras)} for n in names}
    raw = open(raw_path, "a") if raw_path else None

    def log(line):
        print(line, flush=True)
        if raw:
            raw.write(line + "\n")
            raw.flush()

    log(f"# shapes_speed: {len(names)} shapes x {len(VARIANTS)} variants x {rounds} rounds, --steps {steps}, "
        f"--warmup {warmup if warmup is not None else 'default'}, python {sys.version.split()[0]}, "
        f"order={order}" + (f" seed={seed}" if order == "shuffle" else "") +
        f", cpus={format_cpulist(cpus) if cpus else 'all'} ({cpus_how})")
    rng = random.Random(seed)
    started = time.perf_counter()
    for r in range(rounds):
        round_started = time.perf_counter()
        for name, variant in round_order(names, VARIANTS + tuple(extras), order, rng):
            if variants and variant not in variants or not (folder / variant / f"{name}.py").exists():
                continue
            try:
                step_ms, final = run_one(folder / variant / f"{name}.py", steps, timeout, tiny, warmup, cpus)
            except subprocess.TimeoutExpired:
                step_ms, final = None, f"FAILED timeout {timeout}s"
            times[name][variant].append(step_ms)
            log(f"RAW round={first_round + r} shape={name} variant={variant} step_ms={step_ms} final={final} "
                f"t={time.perf_counter() - started:.1f}s")
        elapsed = time.perf_counter() - started
        if budget and r + 1 < rounds and elapsed + (time.perf_counter() - round_started) > budget:
            log(f"# stopping after {r + 1} rounds: another round would pass the {budget:.0f}s budget")
            break
    table = summarise(times, names) + "\n\n" + summarise_ablations(times, names)
    log("")
    log(table)
    if raw:
        raw.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--prepare", metavar="DIR", help="copy the programs into DIR and let gpulint fix one copy")
    mode.add_argument("--run", metavar="DIR", help="time the variants in DIR (made by --prepare)")
    mode.add_argument("--summarise", metavar="RAW", nargs="+", help="print the tables for one or more --raw files")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--steps", type=int, default=200, help="training steps per program run (default 200)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="steps each program runs before its timing starts (default: the program's, 50); make it "
                             "cover the first epoch so one-time costs such as cuDNN autotuning per batch shape are "
                             "left out")
    parser.add_argument("--raw", help="append the raw lines and the table to this file")
    parser.add_argument("--only", nargs="*", help="time only these shapes")
    parser.add_argument("--variants", nargs="*", help="time only these variants (folders of DIR)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds before one program run is abandoned")
    parser.add_argument("--first-round", type=int, default=1, help="number of the first round (to continue a run)")
    parser.add_argument("--tiny", action="store_true", help="pass --tiny to the programs (a CPU smoke test)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="start no new round that would end past this many seconds")
    parser.add_argument("--cpus", default=None, metavar="LIST|auto",
                        help="pin every program run to these CPUs (e.g. 0-7,16); auto: the GPU's NUMA-local CPUs, "
                             "else the first 8 allowed (default: not pinned)")
    parser.add_argument("--order", choices=("fixed", "shuffle"), default="fixed",
                        help="fixed: shapes and variants in the same order every round; shuffle: a seeded random "
                             "order of shapes, and of variants within each shape, every round")
    parser.add_argument("--seed", type=int, default=0, help="seed of --order shuffle (default 0)")
    parser.add_argument("--gpulint", default=None, help="gpulint command (default: `python -m gpulint`)")
    parser.add_argument("--extend-select", default=None,
                        help="with --prepare: rules to add to the default selection (e.g. GPU4 for the preview rules)")
    args = parser.parse_args()
    if args.summarise:
        times, names = load_raw(args.summarise)
        print(summarise(times, names) + "\n\n" + summarise_ablations(times, names))
    elif args.prepare:
        cmd = args.gpulint.split() if args.gpulint else [sys.executable, "-m", "gpulint"]
        prepare(args.prepare, cmd, ["--extend-select", args.extend_select] if args.extend_select else [])
    else:
        if not (Path(args.run) / "as_written").is_dir():
            sys.exit(f"error: {args.run} holds no prepared programs (run --prepare first)")
        if args.rounds < 1 or args.steps < 2:
            sys.exit("error: --rounds must be >= 1 and --steps >= 2")
        try:
            cpus, how = resolve_cpus(args.cpus)
        except ValueError as exc:
            sys.exit(f"error: --cpus {args.cpus}: {exc}")
        run(args.run, args.rounds, args.steps, args.raw, args.only, args.timeout, args.tiny, args.budget_s,
            args.first_round, args.variants, args.warmup, cpus, how, args.order, args.seed)


if __name__ == "__main__":
    main()
