"""Early stopping on the loss, checked every step with `.item()`; `early_stop_fixed_late.py` is a hand-made "fix"
that moves the check into the periodic logging block, so the loop stops later: the verifier must say so."""
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
    if loss.item() < 1.0:
        print(f"converged at step {step}")
        break
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
