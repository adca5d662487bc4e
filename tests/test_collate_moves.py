"""Collate functions that copy each batch to the GPU (issue 11, tenth set: an instruction fine-tuning chapter binds
`device=device` into its collate function with `functools.partial`). The copy inside the collate function is the
per-batch cost (GPU202 there, no fix); the loader hands out CUDA tensors, so GPU201 must not ask it to pin them
(its fix would make the loader raise: only CPU tensors can be pinned).
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

SCRIPT = """\
from functools import partial

import torch
from torch.utils.data import DataLoader


def pad_collate(batch, pad_id=0, device="cpu"):
    longest = max(len(item) for item in batch)
    rows = [item + [pad_id] * (longest - len(item)) for item in batch]
    inputs = torch.tensor([row[:-1] for row in rows])
    targets = torch.tensor([row[1:] for row in rows])
    inputs_on = inputs.to(device)
    targets_on = targets.to(device)
    return inputs_on, targets_on


def main(model, train_data, epochs):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    collate = partial(pad_collate, device={bound})
    loader = DataLoader(train_data, batch_size=8, shuffle=True, collate_fn=collate{workers})
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    for epoch in range(epochs):
        for inputs, targets in loader:
            logits = model(inputs)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def _check(tmp_path: Path, bound: str = "device", workers: str = "") -> list:
    root = write_project(tmp_path, {"finetune.py": SCRIPT.format(bound=bound, workers=workers)})
    return check(root, "--no-cache", ".")


def test_the_copies_in_the_collate_function_are_reported(tmp_path: Path):
    items = _check(tmp_path)
    keys = found(items)
    assert ("finetune.py", 12, "GPU202") in keys
    assert ("finetune.py", 13, "GPU202") in keys
    message = next(d for d in items if d["code"] == "GPU202")
    assert "collate function" in message["message"] and message["fix"] is None


def test_a_loader_whose_collate_moves_batches_is_not_asked_to_pin(tmp_path: Path):
    assert not any(code == "GPU201" for _, _, code in found(_check(tmp_path)))


def test_a_collate_left_on_its_cpu_default_is_an_ordinary_loader(tmp_path: Path):
    """`partial(pad_collate, pad_id=0)`: the copies go to the default "cpu"; the loader's batches are host
    tensors and nothing in the loop copies them (no GPU202 in the collate function)."""
    keys = found(_check(tmp_path, bound='"cpu"'))
    assert ("finetune.py", 12, "GPU202") not in keys


def test_a_collate_run_in_worker_processes_is_left_alone(tmp_path: Path):
    keys = found(_check(tmp_path, workers=", num_workers=4"))
    assert ("finetune.py", 12, "GPU202") not in keys
