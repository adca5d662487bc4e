"""A trainer class that builds `self.unet`, an optimizer over `self.unet.parameters()`, and then moves the model
in place with `self.unet.to(self.device)` on a statement of its own (`Module.to` moves the module it is called
on): the optimizer's parameters are on the GPU where `self.device` is CUDA (GPU402; heldout31a's
Image_Segmentation, thirty-fifth landing). A move to the CPU keeps it quiet.
"""

from __future__ import annotations

from projects import lint_files

SOLVER = """\
    import torch
    from torch import optim
    from network import U_Net


    class Solver:
        def __init__(self, train_loader, lr):
            self.train_loader = train_loader
            self.lr = lr
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self.build_model()

        def build_model(self):
            self.unet = U_Net()
            self.optimizer = optim.Adam(list(self.unet.parameters()), self.lr, [0.5, 0.999])
            self.unet.to(self.device)

        def train(self, epochs):
            for epoch in range(epochs):
                for images, gt in self.train_loader:
                    images = images.to(self.device)
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(self.unet(images), gt.to(self.device))
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
"""

NETWORK = """\
    import torch.nn as nn


    class U_Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 1, 1))

        def forward(self, x):
            return self.conv(x)
"""


def test_a_member_moved_in_place_to_a_cuda_device_makes_its_optimizer_a_gpu_one(tmp_path):
    found = lint_files(tmp_path, {"solver.py": SOLVER, "network.py": NETWORK}, "GPU402")
    assert found == {("solver.py", 15, "GPU402")}


def test_a_member_moved_in_place_to_the_cpu_is_not(tmp_path):
    cpu = SOLVER.replace('self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                         'self.device = torch.device("cpu")')
    assert not lint_files(tmp_path, {"solver.py": cpu, "network.py": NETWORK}, "GPU402")
