"""Data-parallel MLP training written the tutorial way, for torchrun (NCCL on GPUs, gloo on the CPU).

Per step: a pageable `.to(device)` copy of each batch, a NaN check, and `running += loss.item()`.
"""
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= int(os.environ.get("WORLD_SIZE", "1"))
dist.init_process_group("nccl" if use_cuda else "gloo")
rank = dist.get_rank()
device = torch.device(f"cuda:{rank}") if use_cuda else torch.device("cpu")
if use_cuda:
    torch.cuda.set_device(device)

torch.manual_seed(0)
data = TensorDataset(torch.randn(8192, 256), torch.randint(0, 10, (8192,)))
sampler = DistributedSampler(data, shuffle=True, seed=0)
loader = DataLoader(data, batch_size=128, sampler=sampler)
model = DistributedDataParallel(
    nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device),
    device_ids=[rank] if use_cuda else None)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

for epoch in range(2):
    sampler.set_epoch(epoch)
    running = 0.0
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        if torch.isnan(loss).any():
            raise FloatingPointError(f"NaN loss on rank {rank}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item()
        if step % 8 == 0:
            print(f"rank {rank} epoch {epoch} step {step} loss {running / (step + 1):.4f}")
dist.destroy_process_group()
