"""Data-parallel training launched by torchrun (gloo on the CPU, NCCL on GPUs), NaN-checked every step."""
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= int(os.environ["WORLD_SIZE"])
dist.init_process_group("nccl" if use_cuda else "gloo")
rank = dist.get_rank()
device = torch.device(f"cuda:{rank}") if use_cuda else torch.device("cpu")
torch.manual_seed(0)
model = DistributedDataParallel(nn.Linear(8, 1).to(device), device_ids=[rank] if use_cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
generator = torch.Generator().manual_seed(rank)
for step in range(12):
    x = torch.randn(32, 8, generator=generator).to(device)
    loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
    if torch.isnan(loss).any():
        raise FloatingPointError(f"NaN loss on rank {rank}")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 4 == 0 and rank == 0:
        print(f"step {step} loss {loss.item():.5f}")
dist.destroy_process_group()
