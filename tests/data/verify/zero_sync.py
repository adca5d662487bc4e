"""A training loop that reads nothing back to the host: 0 host reads per step; `--item` adds exactly one."""
import sys

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(16, 16).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(8, 16, device=device)
history = []
for step in range(30):
    loss = model(x).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if "--item" in sys.argv:
        history.append(loss.item())
