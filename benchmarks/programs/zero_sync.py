"""Probe self-check, not a naive program: a training loop whose data lives on the device and which reads nothing
back, so it makes no sync per step; `--item` adds exactly one `.item()` per step (one sync)."""
import sys

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(256, 256).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device=device)
history = []
for step in range(100):
    loss = model(x).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if "--item" in sys.argv:
        history.append(loss.item())
print("done")
