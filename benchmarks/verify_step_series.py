"""The per-step times `gpulint verify` records, step by step, for programs run under its probe: to see where a
program's step time settles, and what the verifier's warm-up and profiler window leave in the measured steps.

    python benchmarks/verify_step_series.py A.py B.py --max-steps 200 --warmup 20 --profile-steps 8 \
        --rounds 2 --json series.json -- --steps 400

Runs each script under the probe (as `gpulint verify` does in its timing rounds: the program's own settings,
not deterministic mode), interleaved A B, B A, ..., and prints for each run the median step time over the
steps the verifier would time with `--max-steps 60 --warmup 20` and over later stretches of the run, and
where `gpulint.verify.stats.settled` puts the end of the warm-up.
"""
import argparse
import json
import statistics
from pathlib import Path

from gpulint.verify import stats
from gpulint.verify.launch import Options, Program, launch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scripts", nargs="+", type=Path)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--profile-steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--json", type=Path)
    args, rest = parser.parse_known_args()
    script_args = rest[1:] if rest[:1] == ["--"] else rest
    options = Options(max_steps=args.max_steps, warmup=args.warmup, profile_steps=args.profile_steps,
                      timeout=args.timeout, deterministic=False)
    out = []
    for r in range(args.rounds):
        order = args.scripts if r % 2 == 0 else args.scripts[::-1]
        for script in order:
            program = Program(str(script), script.resolve(), script_args, None, script.resolve().parent)
            run = launch(program, options)
            rank = run.ranks[0] if run.ranks else {}
            times = (rank.get("step_times_ms") or {})
            ms, windows = times.get("ms") or [], times.get("windows") or []
            if not ms:
                print(f"round {r + 1} {script}: no step times ({run.failure(1) or run.stderr[-300:]})", flush=True)
                continue
            cut = stats.settled(ms)
            spans = {"verifier 60/20": [m for w, m in zip(windows, ms) if w < 60]}
            for lo in range(60, args.max_steps, 50):
                spans[f"steps {lo}-{min(lo + 50, args.max_steps)}"] = [m for w, m in zip(windows, ms)
                                                                     if lo <= w < lo + 50]
            text = ", ".join(f"{k}: {statistics.median(v):.2f}" for k, v in spans.items() if v)
            print(f"round {r + 1} {script}: first timed window {windows[0]}, median ms {text}; settled after "
                  f"{cut} of {len(ms)} timed steps (median after: {statistics.median(ms[cut:]):.2f})", flush=True)
            out.append({"round": r + 1, "script": str(script), "windows": windows, "ms": ms, "settled": cut})
    if args.json:
        args.json.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
