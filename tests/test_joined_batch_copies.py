"""A batch joined on the host before its copy (`torch.cat(input, 1).to(device)`: FlowNet's image pair, from a
pinned loader) is a new pageable tensor, so the copy blocks every step whatever the loader pins (GPU202, without
a fix; heldout31a, thirty-fifth landing). Parts copied first and joined on the device are fine.
"""

from __future__ import annotations

from projects import lint_files

TRAIN = """\
    import torch
    from torch.utils.data import DataLoader
    from models import FlowNetS

    device = torch.device("cuda")
    model = FlowNetS().to(device)
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    train_loader = DataLoader(train_set, batch_size=8, num_workers=8, pin_memory=True, shuffle=True)
    for epoch in range(300):
        for i, (input, target) in enumerate(train_loader):
            target = target.to(device, non_blocking=True)
            input = torch.cat(input, 1).to(device)
            loss = (model(input) - target).abs().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

MODELS = """\
    import torch.nn as nn


    class FlowNetS(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(6, 2, 3, padding=1)

        def forward(self, x):
            return self.conv(x)
"""


def test_a_batch_joined_on_the_host_then_copied_blocks_whatever_the_loader_pins(tmp_path):
    found = lint_files(tmp_path, {"train.py": TRAIN, "models.py": MODELS}, "GPU202")
    assert found == {("train.py", 12, "GPU202")}


def test_parts_copied_first_and_joined_on_the_device_are_fine(tmp_path):
    device_join = TRAIN.replace("input = torch.cat(input, 1).to(device)",
                                "input = torch.cat([t.to(device, non_blocking=True) for t in input], 1)")
    assert not lint_files(tmp_path, {"train.py": device_join, "models.py": MODELS}, "GPU202")
