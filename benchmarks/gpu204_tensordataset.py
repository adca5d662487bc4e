"""GPU204: a DataLoader over an in-memory TensorDataset versus batches indexed on the GPU.

Trains the same 3-layer MLP for the same number of steps four ways and prints the wall time of each (median of
3 runs, after a warm-up run):

  naive          DataLoader(TensorDataset), blocking `.to(device)`, `loss.item()` summed every step
  desync-pinned  the same loader with pin_memory=True, non_blocking copies, loss summed on the device
  batch-sampler  the TensorDataset indexed with whole batches (BatchSampler as sampler, batch_size=None)
  gpu-resident   the tensors moved to the GPU once, batches indexed with a device `torch.randperm`

Needs a CUDA GPU. Usage: python benchmarks/gpu204_tensordataset.py [--steps 400] [--batch 256]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset


def make_model(features: int, classes: int, device) -> nn.Module:
    return nn.Sequential(nn.Linear(features, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, classes)).to(device)


def train_loader(loader, steps, device, pinned: bool, sync_each_step: bool, model, opt, crit):
    total, done = (0.0 if sync_each_step else torch.zeros((), device=device)), 0
    while done < steps:
        for x, y in loader:
            x, y = x.to(device, non_blocking=pinned), y.to(device, non_blocking=pinned)
            loss = crit(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item() if sync_each_step else loss.detach()
            done += 1
            if done == steps:
                break
    return float(total)


def train_resident(X, Y, steps, batch, model, opt, crit):
    n, device = X.shape[0], X.device
    total, done = torch.zeros((), device=device), 0
    while done < steps:
        perm = torch.randperm(n, device=device)
        for i in range(0, n - batch + 1, batch):
            idx = perm[i:i + batch]
            loss = crit(model(X[idx]), Y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
            done += 1
            if done == steps:
                break
    return float(total)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--samples", type=int, default=60000)
    p.add_argument("--features", type=int, default=784)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    device = torch.device("cuda")
    torch.manual_seed(0)
    X = torch.randn(args.samples, args.features)
    Y = torch.randint(0, 10, (args.samples,))
    ds = TensorDataset(X, Y)
    crit = nn.CrossEntropyLoss()

    def variant(name):
        model = make_model(args.features, 10, device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        if name == "naive":
            loader = DataLoader(ds, batch_size=args.batch, shuffle=True)
            return lambda: train_loader(loader, args.steps, device, False, True, model, opt, crit)
        if name == "desync-pinned":
            loader = DataLoader(ds, batch_size=args.batch, shuffle=True, pin_memory=True)
            return lambda: train_loader(loader, args.steps, device, True, False, model, opt, crit)
        if name == "batch-sampler":
            sampler = BatchSampler(RandomSampler(ds), batch_size=args.batch, drop_last=True)
            loader = DataLoader(ds, sampler=sampler, batch_size=None, pin_memory=True)
            return lambda: train_loader(loader, args.steps, device, True, False, model, opt, crit)
        Xd, Yd = X.to(device), Y.to(device)
        return lambda: train_resident(Xd, Yd, args.steps, args.batch, model, opt, crit)

    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "steps": args.steps,
               "batch": args.batch, "samples": args.samples, "features": args.features, "seconds": {}}
    for name in ("naive", "desync-pinned", "batch-sampler", "gpu-resident"):
        run = variant(name)
        run()  # warm-up: CUDA context, kernels, allocator
        torch.cuda.synchronize()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            run()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        results["seconds"][name] = round(statistics.median(times), 3)
        print(f"{name:14s} {statistics.median(times):.3f} s  (runs: {', '.join(f'{t:.3f}' for t in times)})",
              flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
