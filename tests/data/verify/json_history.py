"""The loss history is kept as Python floats and JSON-serialised at the end; `json_history_fixed.py` keeps it on
the device (no sync per step), and json.dumps then fails on the tensors."""
import json

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(128, 4, device=device)
y = x @ torch.ones(4, 1, device=device)
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for step in range(20):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.item())
print(json.dumps({"loss": history[-5:]}))
