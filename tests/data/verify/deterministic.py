"""A loop with no randomness at all: data from linspace, weights set by hand, no shuffle. Every seed gives the
same run, so `--noise-runs` finds no band; the verifier says so."""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.linspace(-1, 1, 64, device=device).reshape(16, 4)
y = x.sum(1, keepdim=True) * 0.5
model = nn.Linear(4, 1).to(device)
with torch.no_grad():
    model.weight.fill_(0.1)
    model.bias.zero_()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for step in range(10):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total += loss.item()
print(f"mean loss {total / 10:.5f}")
