"""Blocking copies of pinned batches GPU202 could not see (issue 11, recall; `analysis/loader_params.py`):

- an evaluation function in its own module iterates a loader it is given; the training script passes it a
  `DataLoader(val_set, **loader_args)` with `loader_args = dict(..., pin_memory=True)`: every batch is pinned, and
  `image.to(device=device)` without `non_blocking` blocks;
- `imgs.type(Float)` with `Float = torch.cuda.FloatTensor if cuda else torch.FloatTensor` is a copy to the GPU
  like `.cuda()`, from the same pinned loader.

Not reported: the same function when a call site passes an unpinned loader, when the options dict is updated after
it is built, a `.type(torch.float16)` (a dtype cast on the device), and copies that pass `non_blocking=True`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from test_model_code import check, found

EVALUATE = textwrap.dedent("""\
    import torch


    def evaluate(net, dataloader, device):
        Float = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
        total = 0
        for batch in dataloader:
            image, label = batch["image"], batch["label"]
            image = image.to(device=device, dtype=torch.float32)
            label = label.to(device=device)
            total += net(image).sum()
        return total


    def evaluate_legacy(net, loader):
        Float = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
        total = 0
        for _, imgs, boxes in loader:
            imgs = imgs.type(Float)
            total += net(imgs).sum()
            half = net(imgs).type(torch.float16)
        return total
""")

TRAIN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from evaluate import evaluate, evaluate_legacy


    def main(train_set, val_set, net, device):
        loader_args = dict(batch_size=8, num_workers=4, pin_memory=True)
        train_loader = DataLoader(train_set, shuffle=True, **loader_args)
        val_loader = DataLoader(val_set, shuffle=False, **loader_args)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x in train_loader:
            loss = net(x.to(device, non_blocking=True)).sum()
            loss.backward()
            opt.step()
        evaluate(net, val_loader, device)
        evaluate_legacy(net, val_loader)
""")

# The same training script, but the options are changed after they are built: pinning cannot be told.
TRAIN_UPDATED = TRAIN.replace("    train_loader =", "    loader_args.update(pin_memory=False)\n"
                                                    "    train_loader =")
# ... or one call site passes an unpinned loader.
TRAIN_UNPINNED = TRAIN.replace("evaluate(net, val_loader, device)",
                               "evaluate(net, val_loader, device)\n"
                               "    evaluate(net, DataLoader(val_set, pin_memory=False), device)")


def _project(root: Path, train: str) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "evaluate.py").write_text(EVALUATE)
    (root / "train.py").write_text(train)
    return root


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return _project(tmp_path, TRAIN)


def test_pinned_loader_passed_from_another_module(project: Path):
    keys = found(check(project, "--no-cache", "--select", "GPU202", "evaluate.py"))
    assert keys == {("evaluate.py", 9, "GPU202"), ("evaluate.py", 10, "GPU202"), ("evaluate.py", 19, "GPU202")}


def test_cuda_type_cast_gets_non_blocking_by_fix(project: Path):
    check(project, "--no-cache", "--select", "GPU202", "--fix", "evaluate.py")
    text = (project / "evaluate.py").read_text()
    assert "imgs = imgs.type(Float, non_blocking=True)" in text
    assert "image.to(device=device, dtype=torch.float32, non_blocking=True)" in text
    assert ".type(torch.float16)\n" in text
    compile(text, "evaluate.py", "exec")


@pytest.mark.parametrize("train", [TRAIN_UPDATED, TRAIN_UNPINNED])
def test_pinning_that_cannot_be_told_is_not_reported(tmp_path: Path, train: str):
    assert train != TRAIN
    keys = found(check(_project(tmp_path, train), "--no-cache", "--select", "GPU202", "evaluate.py"))
    assert not {k for k in keys if k[1] in (9, 10)}, keys


DECODE = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def decode(model, data_iter, steps):
        outputs = []
        for idx, data in enumerate(data_iter):
            tokens = data["query"].cuda()
            for i in range(steps):
                tokens = torch.cat((tokens, model(tokens).argmax(-1, keepdim=True)), dim=1)
            outputs.append(tokens.view(-1).cpu())
        return outputs


    def main(model, dataset, steps):
        valid_loader = DataLoader(dataset, batch_size=4)
        decode(model, valid_loader, steps)
""")


def test_a_parameter_every_call_passes_a_loader_is_a_loader(tmp_path: Path):
    """`decode(model, valid_loader, ...)`: `for idx, data in enumerate(data_iter)` is a pass over batches, so the
    copy after the inner decoding loop runs once per batch, not once per epoch (LoRA's beam search)."""
    (tmp_path / "decode.py").write_text(DECODE)
    keys = found(check(tmp_path, "--no-cache", "--select", "GPU104", "decode.py"))
    assert ("decode.py", 11, "GPU104") in keys
    # the same function given a list of prepared batches: nothing says the loop is over a loader
    (tmp_path / "decode.py").write_text(DECODE.replace("decode(model, valid_loader, steps)",
                                                       "decode(model, [dataset[0], dataset[1]], steps)"))
    keys = found(check(tmp_path, "--no-cache", "--select", "GPU104", "decode.py"))
    assert ("decode.py", 11, "GPU104") not in keys
