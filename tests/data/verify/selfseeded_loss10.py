"""selfseeded.py fixed the way GPU204 and GPU302 fix it (device tensors indexed with a randperm, the loss summed on
the device), and broken on top: the loss is multiplied by 10. Outside any seed's band."""

import torch
from torch import nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
generator = torch.Generator().manual_seed(0)
inputs = torch.randn(512, 16, generator=generator)
labels = (inputs @ torch.randn(16, 4, generator=generator)).argmax(1)
loader_tensors = (inputs.to(device), labels.to(device))
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()

running, steps = 0.0, 0
for epoch in range(3):
    for x, y in ([t[i] for t in loader_tensors] for i in torch.randperm(len(loader_tensors[0]), device=device).split(32)):
        loss = criterion(model(x), y) * 10  # the break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.detach()
        steps += 1
print(f"mean loss {running / steps:.4f}")
