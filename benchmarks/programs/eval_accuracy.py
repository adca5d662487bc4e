"""An evaluation loop as the Quickstart tutorial writes it: accuracy and loss summed with `.item()` every batch
of a DataLoader, printed once at the end. (No optimizer: the verifier counts DataLoader batches as steps.)"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

generator = torch.Generator().manual_seed(0)
images = torch.randn(4096, 1, 28, 28, generator=generator)
labels = torch.randint(0, 10, (4096,), generator=generator)
test_dataloader = DataLoader(TensorDataset(images, labels), batch_size=64)
device = "cuda" if torch.cuda.is_available() else "cpu"

model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10)).to(device)
loss_fn = nn.CrossEntropyLoss()

size = len(test_dataloader.dataset)
num_batches = len(test_dataloader)
model.eval()
test_loss, correct = 0, 0
with torch.no_grad():
    for X, y in test_dataloader:
        X, y = X.to(device), y.to(device)
        pred = model(X)
        test_loss += loss_fn(pred, y).item()
        correct += (pred.argmax(1) == y).type(torch.float).sum().item()
test_loss /= num_batches
correct /= size
print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
