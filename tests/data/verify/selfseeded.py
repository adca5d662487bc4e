"""A training loop that seeds itself (`torch.manual_seed(0)`, a seeded data generator), the way most scripts do:
an in-memory TensorDataset behind a shuffling DataLoader and a per-step `.item()`. Runs with other verifier
seeds repeat it exactly unless the verifier offsets the program's own seeds (`--noise-runs`)."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
generator = torch.Generator().manual_seed(0)
inputs = torch.randn(512, 16, generator=generator)
labels = (inputs @ torch.randn(16, 4, generator=generator)).argmax(1)
loader = DataLoader(TensorDataset(inputs, labels), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()

running, steps = 0.0, 0
for epoch in range(3):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item()
        steps += 1
print(f"mean loss {running / steps:.4f}")
