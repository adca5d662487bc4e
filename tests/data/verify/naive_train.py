"""A tutorial-style training loop with a per-step NaN check (GPU108) and periodic logging.

Runs on the CPU in CI; `device` picks the GPU where there is one. Arguments: --steps N --lr LR.
"""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--lr", type=float, default=0.05)
args = parser.parse_args()
print(f"training for {args.steps} steps at lr {args.lr}")

device = "cuda" if torch.cuda.is_available() else "cpu"
features = torch.randn(512, 16)
labels = (features[:, 0] > 0).long()
loader = DataLoader(TensorDataset(features, labels), batch_size=32, shuffle=True)  # noqa: GPU204 (this test is about GPU108; a device permutation would change the order)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

step = 0
while step < args.steps:
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        if torch.isnan(loss).any():
            raise RuntimeError("loss is NaN")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")
        step += 1
        if step == args.steps:
            break
print("done")
