"""Shape (b), optimised by hand: the uint8 images are uploaded once and stay on the GPU; batches are indexed with
a device randperm and the same transforms (normalise, padded random crop, random flip) run batched on the GPU;
TF32, bf16 autocast, fused SGD, device-side loss and accuracy read once per log interval. Same model (conv biases
kept), same data, same number of steps. channels_last and cudnn.benchmark are left off on purpose: measured on an
H100 they made this small net 2.3x slower (docs/benchmarks.md, ablations; `hand_layout` puts them back)."""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

MEAN = torch.tensor([0.49, 0.48, 0.45]).view(1, 3, 1, 1)
STD = torch.tensor([0.25, 0.24, 0.26]).view(1, 3, 1, 1)


def synthetic_images(n, size, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, size, size, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n)
    for c in range(10):
        idx = labels == c
        images[idx, : size // 2, : size // 2, c % 3] //= 2 + c // 3
    return torch.from_numpy(images), torch.from_numpy(labels)


def augment(batch_uint8, mean, std):
    """Normalise, padded random crop and random horizontal flip for a whole batch, on the batch's device."""
    images = batch_uint8.permute(0, 3, 1, 2).float().div_(255.0)
    images = (images - mean) / std
    b, c, h, w = images.shape
    padded = F.pad(images, (4, 4, 4, 4))
    offsets = torch.randint(0, 9, (2, b, 1), device=images.device)
    rows = (offsets[0] + torch.arange(h, device=images.device))[:, None, :, None]
    cols = (offsets[1] + torch.arange(w, device=images.device))[:, None, None, :]
    batch_index = torch.arange(b, device=images.device)[:, None, None, None]
    channel_index = torch.arange(c, device=images.device)[None, :, None, None]
    images = padded[batch_index, channel_index, rows, cols]
    flip = torch.rand(b, 1, 1, 1, device=images.device) < 0.5
    return torch.where(flip, images.flip(3), images)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, width, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1), nn.BatchNorm2d(width), nn.ReLU())
        self.layers = nn.Sequential(
            BasicBlock(width, width, 1), BasicBlock(width, 2 * width, 2),
            BasicBlock(2 * width, 4 * width, 2), BasicBlock(4 * width, 8 * width, 2),
        )
        self.fc = nn.Linear(8 * width, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def now():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50, help="steps run before the timing starts")
    parser.add_argument("--tiny", action="store_true", help="small sizes for a CPU smoke test")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    use_cuda = device == "cuda"
    torch.backends.cudnn.benchmark = False  # measured slower here (see the docstring)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    n, size, width, batch_size = (256, 16, 8, 32) if args.tiny else (10000, 32, 32, 128)
    images_all, labels_all = synthetic_images(n, size)
    images_all, labels_all = images_all.to(device), labels_all.to(device)
    mean, std = MEAN.to(device), STD.to(device)

    model = ResNet(width).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, fused=use_cuda)

    warmup = min(args.warmup, args.steps // 2)
    step = 0
    start = now()
    running_loss = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    total = 0
    while step < args.steps:
        model.train()
        perm = torch.randperm(n, device=device)
        for first in range(0, n, batch_size):
            if step == warmup:
                start = now()
            index = perm[first:first + batch_size]
            images = augment(images_all[index], mean, std)
            labels = labels_all[index]
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device, dtype=torch.bfloat16, enabled=use_cuda):
                outputs = model(images)
                loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.detach()
            correct += outputs.argmax(1).eq(labels).sum()
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


if __name__ == "__main__":
    main()
