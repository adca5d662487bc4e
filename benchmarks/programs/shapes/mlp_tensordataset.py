"""Shape (a): the tutorial MLP. An in-memory TensorDataset behind a DataLoader (num_workers=0, pageable memory),
Adam, fp32, the running loss and the accuracy read back with `.item()` every step."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--warmup", type=int, default=50, help="steps run before the timing starts")
parser.add_argument("--tiny", action="store_true", help="small sizes for a CPU smoke test")
args = parser.parse_args()

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
n, features, hidden, classes, batch_size = (512, 32, 32, 10, 64) if args.tiny else (60000, 784, 512, 10, 256)


def now():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


generator = torch.Generator().manual_seed(0)
inputs_all = torch.randn(n, features, generator=generator)
labels_all = (inputs_all @ torch.randn(features, classes, generator=generator)).argmax(1)
train_loader = DataLoader(TensorDataset(inputs_all, labels_all), batch_size=batch_size, shuffle=True)

model = nn.Sequential(
    nn.Linear(features, hidden), nn.ReLU(),
    nn.Linear(hidden, hidden), nn.ReLU(),
    nn.Linear(hidden, classes),
).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

warmup = min(args.warmup, args.steps // 2)
step = 0
start = now()
running_loss = 0.0
correct = 0
total = 0
while step < args.steps:
    for inputs, labels in train_loader:
        if step == warmup:
            start = now()
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        correct += (outputs.argmax(1) == labels).sum().item()
        total += labels.size(0)
        step += 1
        if step % 50 == 0:
            print(f"step {step} loss {running_loss / 50:.4f} acc {100 * correct / total:.1f}")
            running_loss = 0.0
        if step == args.steps:
            break
elapsed = now() - start
print(f"STEP_MS {1000 * elapsed / max(1, args.steps - warmup):.4f}")
checksum = sum(p.double().sum().item() for p in model.parameters())
print(f"FINAL {loss.item():.6f} {checksum:.6f}")
