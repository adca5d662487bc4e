"""Batch elements a loop leaves on the host (issue 11, precision): an evaluation loop that moves its images to the
GPU (`imgs.type(torch.cuda.FloatTensor)`, `.to(device)`, `.cuda()`) and never moves the boxes of the same batch
reads those boxes in host memory: `boxes[:, 0].tolist()` and a metrics helper that masks them wait for no GPU.
The same reads of an element the loop does move, or of a loader whose batches nobody moves (it may yield device
tensors), are still reported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from test_model_code import check, found

METRICS = textwrap.dedent("""\
    import torch


    def match_boxes(detections, boxes):
        hits = []
        for k in range(len(detections)):
            rows = boxes[boxes[:, 0] == k]
            hits.append(rows.shape[0])
        return hits
""")

EVALUATE = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from metrics import match_boxes


    def score(net, val_loader):
        Float = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
        classes = []
        hits = []
        for _, pictures, boxes in val_loader:
            classes += boxes[:, 1].tolist()
            pictures = pictures.type(Float)
            with torch.no_grad():
                detections = net(pictures)
            hits += match_boxes(detections, boxes)
        return classes, hits


    def score_moved(net, val_loader, device):
        classes = []
        hits = []
        for pictures, boxes in val_loader:
            pictures = pictures.to(device)
            boxes = boxes.to(device)
            classes += boxes[:, 1].tolist()
            hits += match_boxes(net(pictures), boxes)
        return classes, hits


    def score_unmoved_loader(net, val_loader):
        classes = []
        hits = []
        for pictures, boxes in val_loader:
            classes += boxes[:, 1].tolist()
            hits += match_boxes(net(pictures), boxes)
        return classes, hits


    def main(dataset):
        net = torch.nn.Linear(4, 4).cuda()
        loader = DataLoader(dataset, batch_size=8, pin_memory=True, num_workers=2)
        score(net, loader)
        score_moved(net, loader, torch.device("cuda"))
        score_unmoved_loader(net, loader)
""")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "metrics.py").write_text(METRICS)
    (tmp_path / "evaluate.py").write_text(EVALUATE)
    return tmp_path


def test_boxes_the_loop_never_moves_are_host_tensors(project: Path):
    keys = found(check(project, "--no-cache", "--select", "GPU102,GPU112", "evaluate.py"))
    # `score`: the images are moved, the boxes never are: neither `.tolist()` (line 11) nor the helper (15)
    assert not {k for k in keys if 10 <= k[1] <= 16}, keys
    # `score_moved`: the boxes are moved too; both reads wait for the GPU
    assert ("evaluate.py", 25, "GPU102") in keys
    assert ("evaluate.py", 26, "GPU112") in keys
    # `score_unmoved_loader`: nothing is moved, so nothing says the batches are on the host
    assert ("evaluate.py", 34, "GPU102") in keys
    assert ("evaluate.py", 35, "GPU112") in keys


ENTRY_BY_ENTRY = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def validate(net, dataset):
        loader = DataLoader(dataset, batch_size=8, pin_memory=True)
        for inputs, labels, meta in loader:
            inputs = inputs.cuda(non_blocking=True)
            labels = labels.cuda()
            for key, val in meta.items():
                meta[key] = val.cuda(non_blocking=True)
            preds = net(inputs, meta["boxes"])
            boxes = meta["boxes"].cpu()
            print(preds.shape, boxes.shape)
""")


def test_an_element_moved_entry_by_entry_is_still_on_the_device(tmp_path: Path):
    """`meta[key] = val.cuda()` over `meta.items()`: the dict's tensors are moved one by one (SlowFast's `meta`),
    so `meta["boxes"].cpu()` is a copy that waits for the GPU."""
    (tmp_path / "validate.py").write_text(ENTRY_BY_ENTRY)
    keys = found(check(tmp_path, "--no-cache", "--select", "GPU104", "validate.py"))
    assert ("validate.py", 13, "GPU104") in keys
