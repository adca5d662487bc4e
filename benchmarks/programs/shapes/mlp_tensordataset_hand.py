"""Shape (a), optimised by hand: the data lives on the GPU and batches are indexed with a device randperm, fused
Adam, bf16 autocast, TF32 on, loss and accuracy summed on the device and read once per log interval."""
import argparse
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--warmup", type=int, default=50, help="steps run before the timing starts")
parser.add_argument("--tiny", action="store_true", help="small sizes for a CPU smoke test")
args = parser.parse_args()

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
use_cuda = device == "cuda"
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
n, features, hidden, classes, batch_size = (512, 32, 32, 10, 64) if args.tiny else (60000, 784, 512, 10, 256)


def now():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


generator = torch.Generator().manual_seed(0)
inputs_all = torch.randn(n, features, generator=generator)
labels_all = (inputs_all @ torch.randn(features, classes, generator=generator)).argmax(1)
inputs_all, labels_all = inputs_all.to(device), labels_all.to(device)

model = nn.Sequential(
    nn.Linear(features, hidden), nn.ReLU(),
    nn.Linear(hidden, hidden), nn.ReLU(),
    nn.Linear(hidden, classes),
).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, fused=use_cuda)

warmup = min(args.warmup, args.steps // 2)
step = 0
start = now()
running_loss = torch.zeros((), device=device)
correct = torch.zeros((), device=device, dtype=torch.long)
total = 0
while step < args.steps:
    perm = torch.randperm(n, device=device)
    for first in range(0, n, batch_size):
        if step == warmup:
            start = now()
        index = perm[first:first + batch_size]
        inputs, labels = inputs_all[index], labels_all[index]
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=use_cuda):
            outputs = model(inputs)
            loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()
        correct += (outputs.argmax(1) == labels).sum()
        total += labels.size(0)
        step += 1
        if step % 50 == 0:
            print(f"step {step} loss {running_loss.item() / 50:.4f} acc {100 * correct.item() / total:.1f}")
            running_loss.zero_()
        if step == args.steps:
            break
elapsed = now() - start
print(f"STEP_MS {1000 * elapsed / max(1, args.steps - warmup):.4f}")
checksum = sum(p.double().sum().item() for p in model.parameters())
print(f"FINAL {loss.item():.6f} {checksum:.6f}")
