"""GPU201 on webdataset's `wds.WebLoader(...)` (recall41; DALLE-pytorch `train_dalle.py`): the loader hands its
arguments to a torch `DataLoader`, so it takes `pin_memory=True` and its batches are pageable without it. A
`WebLoader` whose batches a CPU-only script reads, and one built with `pin_memory=True`, stay quiet."""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

TRAIN = textwrap.dedent("""\
    import torch
    import webdataset as wds


    def main(model, urls):
        ds = wds.WebDataset(urls).decode("torchrgb").to_tuple("jpg", "cls").batched(64)
        dl = wds.WebLoader(ds, batch_size=None, shuffle=False, num_workers=4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for images, labels in dl:
            images, labels = images.cuda(), labels.cuda()
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")


def _lint(root: Path, text: str) -> set:
    write_project(root, {"train.py": text})
    return found(check(root, "--no-cache", "."))


def test_an_unpinned_webloader_feeding_a_gpu_is_reported(tmp_path: Path):
    assert ("train.py", 7, "GPU201") in _lint(tmp_path, TRAIN)


def test_a_pinned_webloader_is_quiet(tmp_path: Path):
    text = TRAIN.replace("num_workers=4)", "num_workers=4, pin_memory=True)").replace(".cuda()", ".cuda(non_blocking=True)")
    assert not {f for f in _lint(tmp_path, text) if f[2] in ("GPU201", "GPU202")}


def test_a_webloader_read_on_the_host_is_quiet(tmp_path: Path):
    text = TRAIN.replace("images, labels = images.cuda(), labels.cuda()\n", "")
    assert ("train.py", 7, "GPU201") not in _lint(tmp_path, text)
