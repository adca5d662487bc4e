"""Why the fine-tuning encoder's TF32 gain comes in some processes and not in others (issue 12, encoder shape).

    python3 benchmarks/tf32_bimodal.py --processes 8          # on the GPU: 8 fresh processes, one JSON line each
    python3 benchmarks/tf32_bimodal.py --processes 8 --cpus auto   # each process pinned to the GPU's local CPUs

Each process builds the encoder of benchmarks/programs/shapes/finetune_encoder.py (6 layers, d_model 512, 8 heads,
batch 32 x 128 tokens, fused AdamW), then times 150 training steps with TF32 off and 150 with it on (order
alternating between processes), and profiles 5 steps of each with torch.profiler, printing the five CUDA kernels
that took the most time. If the slow processes run other GEMM kernels than the fast ones, cuBLAS's kernel choice is
the cause; if they run the same kernels slower, it is the machine (clocks, another tenant).

`--cpus LIST|auto` pins every child process to one CPU set, as benchmarks/shapes_speed.py --cpus does (same
parsing, same `auto`); the first line printed says which set, and each JSON line has the affinity the child saw.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes_speed import format_cpulist, pin_to, resolve_cpus  # noqa: E402  (beside this file, here and on the device)


def one(order: str) -> dict:
    import torch
    import torch.nn as nn
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    dev = "cuda"
    layer = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.1, activation="gelu", batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)).to(dev)
    head = nn.Linear(512, 2).to(dev)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=5e-5, fused=True)
    x = torch.randn(32, 128, 512, device=dev)
    mask = torch.zeros(32, 128, dtype=torch.bool, device=dev)
    y = torch.randint(0, 2, (32,), device=dev)

    def step():
        out = head(model[0](x, src_key_padding_mask=mask).mean(1))
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    result: dict = {"order": order, "cpus": format_cpulist(os.sched_getaffinity(0))}
    for mode in order.split(","):
        torch.set_float32_matmul_precision("high" if mode == "tf32" else "highest")
        for _ in range(30):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(150):
            step()
        torch.cuda.synchronize()
        ms = 1000 * (time.perf_counter() - t0) / 150
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                step()
            torch.cuda.synchronize()
        top = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:5]
        result[mode] = {"ms_per_step": round(ms, 3),
                        "top_kernels": [(e.key[:90], e.count, round(e.device_time_total / 5 / 1000, 3)) for e in top]}
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--child", default=None)
    ap.add_argument("--cpus", default=None, metavar="LIST|auto",
                    help="pin each child process to these CPUs; auto: the GPU's NUMA-local CPUs (default: not pinned)")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.child)))
        return
    try:
        cpus, how = resolve_cpus(args.cpus)
    except ValueError as exc:
        sys.exit(f"error: --cpus {args.cpus}: {exc}")
    print(f"# tf32_bimodal: {args.processes} processes, cpus={format_cpulist(cpus) if cpus else 'all'} ({how})",
          flush=True)
    for i in range(args.processes):
        order = "fp32,tf32" if i % 2 == 0 else "tf32,fp32"
        out = subprocess.run([sys.executable, __file__, "--child", order], capture_output=True, text=True,
                             preexec_fn=pin_to(cpus))
        print(out.stdout.strip() or out.stderr[-800:], flush=True)


if __name__ == "__main__":
    main()
