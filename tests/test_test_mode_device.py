"""A CPU device chosen only for an off-by-default test or debug mode (issue 11, tenth set: a fine-tuning chapter
runs a tiny model on the CPU under `if args.test_mode:`, the real model on CUDA otherwise). The run the script is
for takes the other branch, so the model's device is still CUDA: an unfused AdamW over its parameters is reported
(GPU402). A flag that picks the CPU for real runs (`--cpu`) or is on by default keeps the device unknown.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

SCRIPT = """\
import argparse

import torch


def main(args, loader):
    if args.{flag}:
        model = torch.nn.Linear(8, 2)
        device = "cpu"
    else:
        model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 2))
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.1)
    for epoch in range(3):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--{flag}", action="{action}")
    main(parser.parse_args(), None)
"""


def _codes(tmp_path: Path, flag: str, action: str = "store_true") -> set:
    root = write_project(tmp_path, {"finetune.py": SCRIPT.format(flag=flag, action=action)})
    return found(check(root, "--no-cache", "."))


def test_a_test_mode_cpu_device_leaves_the_run_on_cuda(tmp_path: Path):
    assert ("finetune.py", 14, "GPU402") in _codes(tmp_path, "test_mode")


def test_a_debug_flag_counts_as_well(tmp_path: Path):
    assert ("finetune.py", 14, "GPU402") in _codes(tmp_path, "debug")


def test_a_cpu_flag_is_a_real_choice(tmp_path: Path):
    assert ("finetune.py", 14, "GPU402") not in _codes(tmp_path, "cpu")


def test_a_test_mode_on_by_default_is_the_run(tmp_path: Path):
    assert ("finetune.py", 14, "GPU402") not in _codes(tmp_path, "test_mode", action="store_false")
