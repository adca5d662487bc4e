"""Generate one big Python module of many small training loops, and time/measure gpulint on it.

    python benchmarks/big_module.py write OUT.py --mb 4        # write a ~4 MB module
    python benchmarks/big_module.py measure --mb 1 2 4 --dir /tmp/bigm   # seconds and peak MB per size (fresh process each)
    python benchmarks/big_module.py measure --mb 5 --dir /tmp/bigm --helpers 0   # the chunks in one process

`cpu_seconds` (user + system time of the process and of the helper process that lints every other chunk,
imports included; `peak_mb` / `helper_peak_mb`: each one's peak RSS) is what to compare on a shared machine:
wall-clock `seconds` (the lint alone) grows with whatever else runs.

Each function is a small training loop with the patterns gpulint reports (a `.item()` sync, a graph-leaking
accumulation, a blocking host-to-device copy), so every rule family does real work on every function: the
shape of generated code, vendored datasets-as-Python and "6,000 small training loops" in one file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Optional

HEADER = '''import torch
import torch.nn as nn
from torch.utils.data import DataLoader

device = torch.device("cuda")
criterion = nn.CrossEntropyLoss()
'''

TEMPLATE = '''

def train_{i}(model, loader, optimizer, epochs={e}):
    model.train()
    losses = []
    total = 0.0
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            x = x.to(device)
            y = y.cuda()
            optimizer.zero_grad()
            out = model(x)
            loss = criterion(out, y) * {w}
            loss.backward()
            optimizer.step()
            total += loss
            losses.append(loss)
            if loss.item() > {t}:
                print("step", step, "loss", loss.item())
    return total / max(len(losses), 1)
'''


def module_text(megabytes: float) -> str:
    target = int(megabytes * 1_000_000)
    parts = [HEADER]
    size = len(HEADER)
    i = 0
    while size < target:
        chunk = TEMPLATE.format(i=i, e=1 + i % 7, w=1 + i % 3, t=i % 11)
        parts.append(chunk)
        size += len(chunk)
        i += 1
    return "".join(parts)


def write(path: Path, megabytes: float) -> int:
    text = module_text(megabytes)
    path.write_text(text, encoding="utf-8")
    return text.count("\ndef ")


_CHILD = r'''
import json, resource, sys, time
from pathlib import Path
from gpulint.config import Settings
from gpulint.pipeline import lint_file
path = Path(sys.argv[1])
if len(sys.argv) > 2:
    from gpulint import chunked
    chunked.HELPERS = int(sys.argv[2])
t = time.perf_counter()
outcome = lint_file(path, Settings(root=path.parent), write=False)
spent = time.perf_counter() - t
usage = resource.getrusage(resource.RUSAGE_SELF)
helper = resource.getrusage(resource.RUSAGE_CHILDREN)  # the helper process linting every other chunk
print(json.dumps({"seconds": round(spent, 2),
                  "cpu_seconds": round(usage.ru_utime + usage.ru_stime + helper.ru_utime + helper.ru_stime, 2),
                  "peak_mb": round(usage.ru_maxrss / 1024), "helper_peak_mb": round(helper.ru_maxrss / 1024),
                  "findings": len(outcome.diagnostics), "errors": outcome.errors}))
'''


def measure(sizes: list[float], workdir: Path, helpers: Optional[int] = None) -> list[dict]:
    rows = []
    for mb in sizes:
        # each size alone in its own folder: the project model walks the folder (never give /tmp itself)
        path = workdir / f"{mb:g}mb" / "big.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        functions = write(path, mb)
        extra = [] if helpers is None else [str(helpers)]
        out = subprocess.run([sys.executable, "-c", _CHILD, str(path), *extra], capture_output=True, text=True,
                             check=True)
        row = {"mb": mb, "functions": functions, **json.loads(out.stdout)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("out", type=Path)
    w.add_argument("--mb", type=float, default=1.0)
    m = sub.add_parser("measure")
    m.add_argument("--mb", type=float, nargs="+", default=[1, 2, 4, 8])
    m.add_argument("--dir", type=Path, required=True, help="a folder of its own (one subfolder per size)")
    m.add_argument("--helpers", type=int, default=None,
                   help="gpulint.chunked.HELPERS: 0 lints a big module's chunks in one process (default: 1 where "
                        "there are 2 cores)")
    args = parser.parse_args()
    if args.command == "write":
        print(f"{args.out}: {write(args.out, args.mb)} functions")
    else:
        measure(args.mb, args.dir, args.helpers)


if __name__ == "__main__":
    main()
