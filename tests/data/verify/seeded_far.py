"""seeded.py with its per-step .item() gone and a 40x learning rate (it diverges): outside any seed's band."""

import torch

LR = 0.05 * 40  # diverges: far from what any seed of the original does
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=LR)
x, y = torch.randn(32, 8), torch.randn(32, 1)
seen = set()


def remember(t):
    seen.add(int(t.argmax()))


history = []
for step in range(10):
    loss = (model(x) - y).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    remember(loss.detach())
    history.append(loss.detach())
print(f"final loss {history[-1]:.4f}")
