"""early_stop.py with the early-stopping check moved into the periodic block: it stops later."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
x = torch.randn(256, 8, device=device)
y = x.sum(1, keepdim=True)
model = nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(200):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0 and loss.item() < 1.0:
        print(f"converged at step {step}")
        break
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
