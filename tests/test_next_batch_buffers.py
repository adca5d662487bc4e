"""A batch drawn with `data = next(data_iter)` (`data_iter = iter(loader)`) in a loop that copies its elements
into preallocated device buffers (`im_data.resize_(data[0].size()).copy_(data[0])`) and never moves, hands on or
iterates the batch itself is a host batch: what the loop reads of it (`data[1][0][2].item()`, an image's scale)
waits for no GPU (heldout22's faster-rcnn `test_net.py:266`, analysis/unmoved.py `_unmoved_next_batch`). The same
read of a batch the loop hands to the model whole still reports."""

from __future__ import annotations

from tests.projects import lint_script

SCRIPT = """import torch
from torch.utils.data import DataLoader


def evaluate(model, dataset, num_images):
    loader = DataLoader(dataset, batch_size=1, pin_memory=True)
    data_iter = iter(loader)
    im_data = torch.FloatTensor(1).cuda()
    im_info = torch.FloatTensor(1).cuda()
    for i in range(num_images):
        data = next(data_iter)
        im_data.resize_(data[0].size()).copy_(data[0], non_blocking=True)
        im_info.resize_(data[1].size()).copy_(data[1], non_blocking=True)
        boxes = model(im_data, im_info)
        boxes /= data[1][0][2].item()
        print(boxes)


def evaluate_whole(model, dataset, num_images):
    loader = DataLoader(dataset, batch_size=1, pin_memory=True)
    data_iter = iter(loader)
    im_data = torch.FloatTensor(1).cuda()
    for i in range(num_images):
        data = next(data_iter)
        im_data.resize_(data[0].size()).copy_(data[0], non_blocking=True)
        boxes = model(data)
        boxes /= data[1][0][2].item()
        print(boxes)
"""


def test_a_batch_copied_into_device_buffers_is_read_on_the_host(tmp_path):
    rows = {row for row, code in lint_script(tmp_path, SCRIPT) if code == "GPU101"}
    lines = SCRIPT.splitlines()
    reads = [i for i, line in enumerate(lines, 1) if "data[1][0][2].item()" in line]
    assert reads[0] not in rows  # the buffers hold the device copies; `data` stays in host memory
    assert reads[1] in rows  # `model(data)`: the batch may be moved by the callee, nothing is assumed
