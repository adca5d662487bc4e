"""A loss (or any project helper) that allocates a tensor on the host with a size factory (`torch.eye(n)`,
`torch.arange(n).view(-1, 1)`, `torch.ones(...)`) and copies it to the GPU on every call is reported where the
cost is paid, at the per-step call in the loop (GPU112, the helper's line as related), like a helper's
`torch.from_numpy(...).to(device)` (thirty-fourth landing; heldout29's SupContrast). The same factory given
`device=` allocates on the GPU: nothing to report.
"""

from __future__ import annotations

from projects import lint_files

LOSSES = """\
    import torch
    import torch.nn as nn


    class SupConLoss(nn.Module):
        def __init__(self, temperature=0.07):
            super().__init__()
            self.temperature = temperature

        def forward(self, features, labels=None):
            device = features.device
            batch_size = features.shape[0]
            mask = torch.eye(batch_size, dtype=torch.float32).to(device)
            logits_mask = torch.scatter(torch.ones_like(mask), 1,
                                        torch.arange(batch_size).view(-1, 1).to(device), 0)
            logits = features @ features.T / self.temperature
            return -(torch.log_softmax(logits, 1) * mask * logits_mask).sum(1).mean()
"""

TRAIN = """\
    import torch
    from losses import SupConLoss

    model = torch.nn.Linear(128, 128).cuda()
    criterion = SupConLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)
    for epoch in range(100):
        for images, labels in loader:
            features = model(images.cuda(non_blocking=True))
            loss = criterion(features)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_a_losss_host_size_factories_copied_every_call_are_reported_at_the_per_step_call(tmp_path):
    found = lint_files(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN}, "GPU112", "GPU203")
    assert ("train.py", 10, "GPU112") in found
    assert ("losses.py", 13, "GPU203") in found  # the copy itself keeps its own finding (and fix)


def test_size_factories_built_on_the_device_cost_no_copy(tmp_path):
    losses = LOSSES.replace("torch.eye(batch_size, dtype=torch.float32).to(device)",
                            "torch.eye(batch_size, dtype=torch.float32, device=device)")
    losses = losses.replace("torch.arange(batch_size).view(-1, 1).to(device)",
                            "torch.arange(batch_size, device=device).view(-1, 1)")
    assert not lint_files(tmp_path, {"losses.py": losses, "train.py": TRAIN}, "GPU112", "GPU203")
