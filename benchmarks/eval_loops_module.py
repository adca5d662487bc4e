"""Write a module of N small evaluation loops (a model put in eval mode, run over a loader without `no_grad`):
the shape that made GPU421's questions reach the per-parameter kind inference thousands of times.

    python benchmarks/eval_loops_module.py OUT_DIR/evals.py --functions 1500
    /usr/bin/time -f "%e s %U user %M KB" gpulint check --no-cache OUT_DIR/evals.py --select GPU421

Put the file alone in its folder: the folder is its project, and other big files there are searched too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HEADER = "import torch\n\ndevice = torch.device('cuda')\n"
TEMPLATE = '''

def evaluate_{i}(model, loader):
    model.eval()
    out = []
    for x, y in loader:
        out.append(model(x.to(device, non_blocking=True)).argmax(1))
    return out
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--functions", type=int, default=1500)
    args = parser.parse_args()
    args.out.write_text(HEADER + "".join(TEMPLATE.format(i=i) for i in range(args.functions)))
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.2f} MB, {args.functions} functions")


if __name__ == "__main__":
    main()
