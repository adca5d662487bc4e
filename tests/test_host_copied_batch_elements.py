"""Batch elements the loop never moves, rebound to their own host copy each batch (issue 11, precision): an
evaluation loop moves its inputs to the GPU and leaves the targets where the loader put them, then writes
`target = target.detach().cpu().numpy()` to compare them with the scores. That rebinding keeps the element on the
host (it is not a move), so the `.cpu()` of a host tensor waits for no GPU and is not reported, whether the targets
come from the loop's own unpacking or from a `x, target = batch` of the loop's batch. The same line on a target
the loop does move (`target = target.to(device)` first) is still a blocking copy and is reported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_model_code import check, found

EVALUATE = textwrap.dedent("""\
    import numpy as np
    import torch
    from torch.utils.data import DataLoader


    def unpacked_by_the_loop(model, loader, device):
        correct = 0
        for x, target in loader:
            z = model(x.to(device))
            scores = z.detach().cpu().numpy()
            target = target.detach().cpu().numpy()
            correct += np.sum(np.round(scores) == target)
        return correct


    def unpacked_from_the_batch(model, loader, device):
        correct = 0
        for i, batch in enumerate(loader):
            x, target = batch
            z = model(x.to(device))
            scores = z.detach().cpu().numpy()
            target = target.data.cpu().numpy()
            correct += np.sum(np.round(scores) == target)
        return correct


    def target_moved_too(model, loader, device):
        correct = 0
        for x, target in loader:
            target = target.to(device)
            z = model(x.to(device))
            scores = z.detach().cpu().numpy()
            target = target.detach().cpu().numpy()
            correct += np.sum(np.round(scores) == target)
        return correct


    def main(dataset):
        loader = DataLoader(dataset, batch_size=8, pin_memory=True, num_workers=2)
        model = torch.nn.Linear(4, 1).cuda()
        for evaluate in (unpacked_by_the_loop, unpacked_from_the_batch, target_moved_too):
            print(evaluate(model, loader, torch.device("cuda")))
""")


def test_a_target_rebound_to_its_host_copy_is_not_a_device_copy(tmp_path: Path):
    (tmp_path / "evaluate.py").write_text(EVALUATE)
    keys = found(check(tmp_path, "--no-cache", "--select", "GPU104", "evaluate.py"))
    # the model's scores come from the GPU: reported in all three functions
    assert {("evaluate.py", n, "GPU104") for n in (10, 21, 32)} <= keys, keys
    # the targets the loop never moves: their `.cpu()` copies nothing from the GPU
    assert ("evaluate.py", 11, "GPU104") not in keys
    assert ("evaluate.py", 22, "GPU104") not in keys
    # moved to the device first: the copy back waits for the GPU
    assert ("evaluate.py", 33, "GPU104") in keys
