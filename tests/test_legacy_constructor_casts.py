"""GPU203: a helper's host result wrapped by a legacy constructor and cast to where the network's output lives,
every step (`gt_rpn_loc = torch.Tensor(gt_rpn_loc).type_as(rpn_locs)`, bubbliiiing's Faster R-CNN trainer, five
lines heldout31b labels TRUE): built on the host, copied from pageable memory by the cast. Sizes
(`torch.Tensor(4)`), and a program whose default tensor type is CUDA (built on the device), are not this.
"""

from __future__ import annotations

from projects import lint_files

TRAINER = """\
    import numpy as np
    import torch
    import torch.nn as nn


    def anchor_targets(boxes, anchor):
        return np.zeros((len(anchor), 4), dtype=np.float32), np.zeros(len(anchor))


    class Trainer(nn.Module):
        def __init__(self, model, optimizer):
            super().__init__()
            self.model = model
            self.optimizer = optimizer

        def forward(self, imgs, boxes):
            rpn_locs, anchor = self.model(imgs)
            gt_loc, gt_label = anchor_targets(boxes, anchor[0].detach().cpu().numpy())
            gt_loc = torch.Tensor(gt_loc).type_as(rpn_locs)
            gt_label = torch.Tensor(gt_label).type_as(rpn_locs).long()
            size = torch.Tensor(4).type_as(rpn_locs)
            return (rpn_locs - gt_loc).abs().sum() + gt_label.sum()

        def train_step(self, imgs, boxes):
            self.optimizer.zero_grad()
            loss = self.forward(imgs, boxes)
            loss.backward()
            self.optimizer.step()
            return loss


    def fit(trainer, loader):
        for imgs, boxes in loader:
            trainer.train_step(imgs.cuda(non_blocking=True), boxes)
"""


def test_a_helpers_array_wrapped_and_cast_every_step(tmp_path):
    found = lint_files(tmp_path, {"trainer.py": TRAINER}, "GPU203")
    assert {("trainer.py", 19, "GPU203"), ("trainer.py", 20, "GPU203")} <= found
    assert ("trainer.py", 21, "GPU203") not in found  # sizes: an allocation, not a copy of data


def test_a_cuda_default_tensor_type_builds_it_on_the_device(tmp_path):
    cuda_default = TRAINER.replace("import torch.nn as nn\n", "import torch.nn as nn\n\n"
                                   "torch.set_default_tensor_type('torch.cuda.FloatTensor')\n")
    found = lint_files(tmp_path, {"trainer.py": cuda_default}, "GPU203")
    assert ("trainer.py", 19, "GPU203") not in found and ("trainer.py", 20, "GPU203") not in found
