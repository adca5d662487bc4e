"""Entry point of a small project: the loop lives in trainlib/loop.py, which the fixes must reach too."""
import torch

from trainlib.data import make_loader
from trainlib.loop import train_epoch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    train_epoch(model, make_loader(), optimizer, device)
print("done")
