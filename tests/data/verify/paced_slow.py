"""paced.py with its per-step read gone and a 50 ms stall added to every step: fewer syncs, same outputs, slower."""
import time

import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(16, 8), torch.randn(16, 1)
history = []
for step in range(12):
    loss = (model(x) - y).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.detach())
    time.sleep(0.05)
print(f"final loss {history[-1]:.5f}")
