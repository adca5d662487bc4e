"""A training script that crashes at its fourth step."""
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.ones(2, 4, device=device)).sum()
    loss.backward()
    optimizer.step()
    if step == 3:
        ratio = 1 / (step - 3)
