"""Which host-to-device copy spellings synchronise, and what pinning a small per-step tensor costs.

Run on a machine with a CUDA GPU: `python benchmarks/host_copies.py`. For each spelling it reports whether
`torch.cuda.set_sync_debug_mode("error")` raises (the copy waits for the GPU), and the median time of the call
while the GPU is busy with queued work (a 4096x4096 matmul chain), so a synchronising copy shows the wait.
The figures quoted in the GPU203/GPU410 rule documentation come from this script.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch


def _syncs(fn) -> bool:
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn()
        return False
    except RuntimeError:
        return True
    finally:
        torch.cuda.set_sync_debug_mode("default")


def _time_busy(fn, busy: torch.Tensor, repeat: int = 20) -> float:
    times = []
    for _ in range(repeat):
        for _ in range(8):
            busy = busy @ busy  # queue about a few milliseconds of GPU work
            busy = busy / busy.norm()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        torch.cuda.synchronize()
    return statistics.median(times) * 1e3


def main() -> None:
    dev = torch.device("cuda")
    image = np.random.randint(0, 255, (640, 640, 3), dtype=np.uint8)
    small = (640.0, 480.0, 640.0, 480.0)
    crops = [torch.randn(3, 224, 224).pin_memory() for _ in range(4)]
    busy = torch.randn(4096, 4096, device=dev)
    cases = {
        "torch.tensor(python numbers, device=cuda)": lambda: torch.tensor(small, device=dev),
        "torch.from_numpy(image).to(cuda)": lambda: torch.from_numpy(image).to(dev),
        "torch.from_numpy(image).pin_memory().to(cuda, non_blocking=True)":
            lambda: torch.from_numpy(image).pin_memory().to(dev, non_blocking=True),
        "torch.tensor(python numbers).pin_memory().to(cuda, non_blocking=True)":
            lambda: torch.tensor(small).pin_memory().to(dev, non_blocking=True),
        "torch.cat(pinned crops).cuda(non_blocking=True)": lambda: torch.cat(crops).cuda(non_blocking=True),
        "pinned crop .cuda(non_blocking=True)": lambda: crops[0].cuda(non_blocking=True),
    }
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__}")
    print(f"{'spelling':72} {'syncs':>5} {'ms (GPU busy)':>14}")
    for name, fn in cases.items():
        fn()  # warm up allocators
        print(f"{name:72} {str(_syncs(fn)):>5} {_time_busy(fn, busy):14.3f}")


if __name__ == "__main__":
    main()
