"""GPU422's lever, measured: training steps with autograd anomaly detection off and on, interleaved.

Two small CUDA training shapes (a convolutional network on 32x32 images and a 6-layer transformer encoder on
token embeddings), each timed for `--steps` steps after `--warmup` steps, in `--rounds` rounds that alternate the
two modes (off, on, on, off, ...), so drift of the machine falls on both. Prints one line per timed run and a
summary: median ms/step per mode and the ratio. Needs torch with CUDA (the device machine); nothing of gpulint.

    python benchmarks/anomaly_mode.py --rounds 4 --steps 50 --warmup 10 > anomaly_raw.txt
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn


def conv_net() -> nn.Module:
    layers: list = []
    channels = 3
    for width in (64, 128, 256):
        layers += [nn.Conv2d(channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                   nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                   nn.MaxPool2d(2)]
        channels = width
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(256 * 4 * 4, 10))


def encoder() -> nn.Module:
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    return nn.Sequential(nn.TransformerEncoder(layer, 6), nn.Flatten(1), nn.LazyLinear(10))


SHAPES = {
    "conv": (conv_net, lambda: torch.randn(128, 3, 32, 32, device="cuda")),
    "encoder": (encoder, lambda: torch.randn(32, 128, 512, device="cuda")),
}


def timed(shape: str, anomaly: bool, steps: int, warmup: int) -> float:
    build, batch = SHAPES[shape]
    torch.manual_seed(0)
    model = build().cuda()
    x = batch()
    y = torch.randint(0, 10, (x.shape[0],), device="cuda")
    model(x)  # materialise lazy layers before the optimizer sees the parameters
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    loss_fn = nn.CrossEntropyLoss()
    with torch.autograd.set_detect_anomaly(anomaly):
        for step in range(warmup + steps):
            if step == warmup:
                torch.cuda.synchronize()
                start = time.perf_counter()
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1000 / steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}")
    results: dict = {}
    for r in range(args.rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        for shape in SHAPES:
            for anomaly in order:
                ms = timed(shape, anomaly, args.steps, args.warmup)
                results.setdefault((shape, anomaly), []).append(ms)
                print(f"RAW round={r + 1} shape={shape} anomaly={'on' if anomaly else 'off'} ms_per_step={ms:.3f}",
                      flush=True)
    for shape in SHAPES:
        off = statistics.median(results[(shape, False)])
        on = statistics.median(results[(shape, True)])
        print(f"SUMMARY shape={shape} off_ms={off:.2f} on_ms={on:.2f} slowdown={on / off:.2f}x "
              f"(n={len(results[(shape, False)])} rounds)")


if __name__ == "__main__":
    main()
