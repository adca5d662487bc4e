"""Which host-to-device copies wait for the GPU (GPU203/GPU410 docs). Needs CUDA."""
import statistics, time
import numpy as np, torch

d = torch.device("cuda")
b = torch.randn(4096, 4096, device=d)


def syncs(f):  # PyTorch's detector
    torch.cuda.synchronize(); torch.cuda.set_sync_debug_mode("error")
    try:
        f(); return False
    except RuntimeError:
        return True
    finally:
        torch.cuda.set_sync_debug_mode("default")


def ms(f, busy, r=20):  # median, ~20 ms of GPU work queued or none
    global b
    ts = []
    for _ in range(r):
        for _ in range(8 if busy else 0):
            b = b @ b; b = b / b.norm()
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s); torch.cuda.synchronize()
    return statistics.median(ts) * 1e3


img = np.random.randint(0, 255, (640, 640, 3), dtype=np.uint8)
nums = (640.0, 480.0, 640.0, 480.0)
crops = [torch.randn(3, 224, 224).pin_memory() for _ in range(4)]
C = {"torch.tensor(numbers, device=cuda)": lambda: torch.tensor(nums, device=d),
     "torch.from_numpy(img).to(cuda)": lambda: torch.from_numpy(img).to(d),
     "from_numpy(img).pin_memory().to(cuda, non_blocking)":
         lambda: torch.from_numpy(img).pin_memory().to(d, non_blocking=True),
     "tensor(numbers).pin_memory().to(cuda, non_blocking)":
         lambda: torch.tensor(nums).pin_memory().to(d, non_blocking=True),
     "torch.cat(pinned crops).cuda(non_blocking)": lambda: torch.cat(crops).cuda(non_blocking=True),
     "pinned crop.cuda(non_blocking)": lambda: crops[0].cuda(non_blocking=True),
     "int(cuda scalar)": lambda: int(b[0, 0])}
print(torch.cuda.get_device_name(), torch.__version__)
print(f"{'call':58} {'debug-mode sync':>15} {'ms, GPU idle':>12} {'ms, GPU busy':>12}")
for n, f in C.items():
    f()
    print(f"{n:58} {str(syncs(f)):>15} {ms(f, False):12.3f} {ms(f, True):12.3f}")
