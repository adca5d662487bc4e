"""A loop over a loss's output scales is not an epoch loop (issue 11, recall): YOLOv4's `Yolo_loss.forward` loops
over the model's three outputs and calls `self.build_target(...)` once per scale; `build_target` itself loops over
the images of the batch (`for b in range(batchsize): n = int(nlabel[b])`), a loop hot only for the tensor math it
iterates. That inner loop made the scale loop look like `for epoch ...: train(epoch)` (a loop around a function
with a hot loop of its own is an epoch loop), and everything `build_target` does outside its own loop (targets
built on the host and copied, `.cpu().numpy()` of the labels) read as once per epoch. A helper whose loop passes
over batches still makes the loop around it an epoch loop.
"""

from __future__ import annotations

from pathlib import Path

from projects import lint_files

TRAIN = """\
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader


    class YoloLoss(nn.Module):
        def __init__(self, device):
            super().__init__()
            self.device = device

        def build_target(self, pred, labels, batchsize):
            tgt_mask = torch.zeros(batchsize, 3, 4).to(device=self.device)
            truth_i_all = labels[:, :, 0].to(torch.int16).cpu().numpy()
            for b in range(batchsize):
                box = torch.zeros(4, 4).to(self.device)
                tgt_mask[b] += box.sum()
            return tgt_mask, truth_i_all

        def forward(self, xin, labels):
            loss = 0
            for output_id, output in enumerate(xin):
                tgt_mask, truth = self.build_target(output, labels, output.shape[0])
                loss = loss + (output * tgt_mask).sum()
            return loss


    def train(model, dataset, device):
        loader = DataLoader(dataset, batch_size=8, pin_memory=True)
        criterion = YoloLoss(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
        for epoch in range(10):
            for images, boxes in loader:
                images = images.to(device, non_blocking=True)
                boxes = boxes.to(device, non_blocking=True)
                loss = criterion(model(images), boxes)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)


    if __name__ == "__main__":
        device = torch.device("cuda")
        net = nn.Conv2d(3, 12, 3).to(device)
        train(net, None, device)
"""


def test_what_the_target_builder_does_outside_its_own_loop_is_per_step(tmp_path: Path):
    found = lint_files(tmp_path, {"train.py": TRAIN}, "GPU203", "GPU104")
    assert {("train.py", 12, "GPU203"), ("train.py", 13, "GPU104")} <= found
    assert ("train.py", 15, "GPU203") in found  # inside the per-image loop: found before too


def test_a_helper_looping_over_batches_still_makes_an_epoch_loop(tmp_path: Path):
    """The scale loop's helper passes over a loader of its own: the loop around it runs once per pass, and a
    copy made there once per pass is not per step."""
    train = TRAIN.replace(
        "            for b in range(batchsize):\n",
        "            for b, extra in enumerate(DataLoader(labels, batch_size=2)):\n"
        "                extra.cuda().sum().backward()\n")
    found = lint_files(tmp_path, {"train.py": train}, "GPU203", "GPU104")
    assert ("train.py", 12, "GPU203") not in found and ("train.py", 13, "GPU104") not in found
