"""A loop whose data and weights come from the seed, with a per-step read no rule flags: `int()` of a tensor
inside a helper (`remember`), and a per-step `.item()`. The noise-band tests run it with several seeds."""

import torch

LR = 0.05
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
    history.append(loss.item())
print(f"final loss {history[-1]:.4f}")
