"""Benchmark of `gpulint verify` on four naive training/evaluation programs (benchmarks/programs/).

For each program it runs `gpulint verify PROGRAM --unsafe-fixes --output-format json ...` and tabulates syncs per
step before and after the fixes, step time before and after, the speedup and whether the outputs match. First it
checks the probe itself: a loop with no sync must count 0 syncs per step, and the same loop with one `.item()`
per step exactly 1.

    python benchmarks/verify_gpu.py --markdown docs/benchmarks.md

writes (or replaces) the "## Verifier" section of that file, with the GPU, the torch version and the commands.
On a machine without a GPU it runs the same programs on the CPU and says so in the section.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = [
    # (program, what it is, extra verify options)
    ("mlp_dataloader.py", "tiny MLP, map-style Dataset + DataLoader, Adam", ["--max-steps", "120"]),
    ("cnn_cifar.py", "CIFAR-sized CNN (3x32x32), SGD, train accuracy", ["--max-steps", "120"]),
    ("transformer_lm.py", "4-layer causal transformer LM, AdamW, grad clipping", ["--max-steps", "120"]),
    ("eval_accuracy.py", "evaluation loop, accuracy + loss (64 batches, to the end)", ["--max-steps", "0"]),
]
# Each program is verified twice: with gpulint's safe fixes only (pinned loaders, non_blocking copies), then with
# the unsafe ones too (device-side accumulators, deferred NaN checks): two samples, and the effect of each kind.
FIXES = [("safe", []), ("safe+unsafe", ["--unsafe-fixes"])]
COMMON = ["--warmup", "5", "--profile-steps", "10", "--output-format", "json"]


def verify(program: Path, extra: list[str], device: str) -> tuple[list[str], dict, float]:
    cmd = [sys.executable, "-m", "gpulint", "verify", str(program), *COMMON, "--device", device, *extra]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        doc = {"verdict": "error", "summary": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return cmd, doc, elapsed


def self_check(device: str) -> list[dict]:
    """The probe must add no sync: 0 per step for a sync-free loop, exactly 1 with one `.item()` per step."""
    from gpulint.verify.compare import Measure
    from gpulint.verify.launch import Options, Program, launch

    rows = []
    program = HERE / "programs" / "zero_sync.py"
    for args in ([], ["--item"]):
        run = launch(Program("check", program, args, None, program.parent),
                     Options(max_steps=60, warmup=5, profile_steps=10, device=device, timeout=300))
        failure = run.failure(1)
        if failure:
            rows.append({"args": args, "error": failure, "details": run.error_details()})
            continue
        m = Measure.of(run.ranks[0])
        rows.append({"args": args, "syncs_per_step": m.syncs, "sync_source": m.sync_source,
                     "syncs_by_call": m.syncs_by_call, "host_reads_per_step": m.host_reads, "step_ms": m.step_ms})
    return rows


def _fmt(value, digits=2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(results: list[dict], checks: list[dict], env: dict) -> str:
    on_gpu = env.get("gpu") is not None and env.get("device") != "cpu"
    lines = ["## Verifier", ""]
    if on_gpu:
        lines.append(f"`gpulint verify` on {env['gpu']}, torch {env['torch']}, Python {env['python']}, "
                     f"{env['date']}.")
    else:
        lines.append(f"**CPU numbers, not GPU** ({env['machine']}, torch {env['torch']}, {env['date']}): "
                     "syncs are the portable host-read count, step times are host-clock times on a CPU.")
    lines += ["", "Produced by `" + env["command"] + "`; each row ran:", "",
              "```", shlex.join(["gpulint", "verify", "benchmarks/programs/PROGRAM.py", "[--unsafe-fixes]", *COMMON,
                                 "--device", env["device"], "--max-steps", "N"]), "```",
              "",
              "| program | fixes | --max-steps | steps | syncs/step before | after | host reads/step before | after "
              "| step ms before | after | speedup | outputs match | verdict |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        doc = r["doc"]
        rank = (doc.get("ranks") or [None])[0]
        if rank is None:
            lines.append(f"| {r['program']} | {r['fixes']} | {r['max_steps']} |" + " - |" * 9 +
                         f" {doc.get('verdict')}: {_cell(doc.get('summary', ''))} |")
            continue
        a, b = rank["original"], rank["fixed"]
        unit = "batches" if a["unit"] == "loader" else "steps"
        speed = f"{rank['speedup']:.2f}x" if rank.get("speedup") else "-"
        lines.append(
            f"| {r['program']} ({r['about']}) | {r['fixes']} | {r['max_steps']} | {a['steps']} {unit} | "
            f"{_fmt(a['syncs_per_step'])} | {_fmt(b['syncs_per_step'])} | "
            f"{_fmt(a['host_reads_per_step'])} | {_fmt(b['host_reads_per_step'])} | "
            f"{_fmt(a['step_ms'], 3)} | {_fmt(b['step_ms'], 3)} | {speed} | "
            f"{'yes' if rank['outputs_match'] else 'NO'} | {doc['verdict']} |")
    lines += ["", "Step times are medians over the steps after warm-up and after the profiled window "
              "(CUDA events on the GPU). Verdicts in full:", ""]
    for r in results:
        lines.append(f"- `{r['program']}`, {r['fixes']} fixes: {_cell(r['doc'].get('summary', ''))}")
    lines += ["", "Probe self-check (`benchmarks/programs/zero_sync.py`: a loop that reads nothing back, then the "
              "same loop with one `.item()` per step):", ""]
    for c in checks:
        label = "with one .item() per step" if c["args"] else "no read-back"
        if "error" in c:
            lines.append(f"- {label}: ERROR {c['error']}")
        else:
            calls = ", ".join(f"{k} {v:.2f}" for k, v in sorted(c["syncs_by_call"].items())) or "none"
            lines.append(f"- {label}: {_fmt(c['syncs_per_step'])} syncs/step ({c['sync_source'] or 'no device'}; "
                         f"{calls}), {_fmt(c['host_reads_per_step'])} host reads/step")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_section(path: Path, section: str) -> None:
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(r"^## Verifier\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", type=Path, help="write the '## Verifier' section into this file")
    parser.add_argument("--json", type=Path, help="write every verify report here")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--only", action="append", help="run only this program (repeatable)")
    args = parser.parse_args()
    import torch

    env = {"torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
           "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
           "device": args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"),
           "date": time.strftime("%Y-%m-%d"), "command": shlex.join(["python", "benchmarks/verify_gpu.py",
                                                                      *sys.argv[1:]])}
    checks = self_check(env["device"])
    for c in checks:
        print("self-check", c, flush=True)
    results = []
    for name, about, extra in PROGRAMS:
        if args.only and name not in args.only:
            continue
        for fixes, flags in FIXES:
            cmd, doc, elapsed = verify(HERE / "programs" / name, [*flags, *extra], env["device"])
            print(f"{name} ({fixes}): {doc.get('summary')} ({elapsed:.1f} s)", flush=True)
            results.append({"program": name, "about": about, "fixes": fixes, "command": cmd, "doc": doc,
                            "seconds": elapsed, "max_steps": extra[extra.index("--max-steps") + 1]})
    section = markdown(results, checks, env)
    print(section)
    if args.markdown:
        write_section(args.markdown, section)
    if args.json:
        args.json.write_text(json.dumps({"env": env, "self_check": checks, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
