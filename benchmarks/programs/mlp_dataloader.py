"""A tiny MLP on a synthetic tabular dataset, trained the way the tutorials write it: a map-style Dataset, a
DataLoader, `.to(device)` copies, a NaN check every step and a running loss read with `.item()`."""
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SyntheticTabular(Dataset):
    def __init__(self, n=8192, features=64, classes=10):
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, features, generator=generator)
        self.y = (self.x @ torch.randn(features, classes, generator=generator)).argmax(1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


device = "cuda" if torch.cuda.is_available() else "cpu"
loader = DataLoader(SyntheticTabular(), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    running_loss = 0.0
    for i, (inputs, labels) in enumerate(loader):
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), labels)
        if torch.isnan(loss).any():
            raise RuntimeError(f"NaN loss at epoch {epoch} batch {i}")
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        if i % 20 == 19:
            print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 20:.4f}")
            running_loss = 0.0
print("Finished Training")
