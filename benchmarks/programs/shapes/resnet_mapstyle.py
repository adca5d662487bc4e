"""Shape (b): a small ResNet on CIFAR-sized synthetic images. A map-style Dataset decodes uint8 images and applies
per-sample transforms (normalise, padded random crop, random flip) in `__getitem__`; a DataLoader with 2 workers
(pageable memory, workers restarted every epoch); SGD with momentum, fp32; conv layers keep their bias in front of
BatchNorm; the loss and the accuracy are read with `.item()` every step."""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

MEAN = torch.tensor([0.49, 0.48, 0.45]).view(3, 1, 1)
STD = torch.tensor([0.25, 0.24, 0.26]).view(3, 1, 1)


class SyntheticImages(Dataset):
    def __init__(self, n, size, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 256, size=(n, size, size, 3), dtype=np.uint8)
        self.labels = rng.integers(0, 10, size=n)
        # make the labels learnable: brighten one channel-dependent corner per class
        for c in range(10):
            idx = self.labels == c
            self.images[idx, : size // 2, : size // 2, c % 3] //= 2 + c // 3

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        image = torch.from_numpy(self.images[i]).permute(2, 0, 1).float() / 255.0
        image = (image - MEAN) / STD
        padded = F.pad(image, (4, 4, 4, 4))
        top, left = torch.randint(0, 9, (2,)).tolist()
        image = padded[:, top:top + image.shape[1], left:left + image.shape[2]]
        if torch.rand(1).item() < 0.5:
            image = image.flip(2)
        return image, int(self.labels[i])


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
    n, size, width, batch_size = (256, 16, 8, 32) if args.tiny else (10000, 32, 32, 128)
    dataset = SyntheticImages(n, size)
    trainloader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=2)

    model = ResNet(width).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)

    warmup = min(args.warmup, args.steps // 2)
    step = 0
    start = now()
    running_loss = 0.0
    correct = 0
    total = 0
    while step < args.steps:
        model.train()
        for images, labels in trainloader:
            if step == warmup:
                start = now()
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            outputs = model(images)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            _, predicted = outputs.max(1)
            total += labels.size(0)
            correct += predicted.eq(labels).sum().item()
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


if __name__ == "__main__":
    main()
