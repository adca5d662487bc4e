"""Two shapes of conditional-flow-matching's CIFAR-10 scripts (heldout31b; thirty-fifth landing):

- a generator of another module that loops `for x, y in iter(dataloader): yield x` hands on the loader's batches,
  so `next(datalooper).to(device)` is a blocking copy of a batch (GPU202) and the loader's missing
  `pin_memory` names it (GPU201);
- `model.to(rank)` where `rank` is a parameter of the training function that every call in the module passes a
  CUDA device (`train(rank=int(os.getenv("RANK", 0)))`, `train(rank=device)` with `device = torch.device("cuda"
  if ... else "cpu")`) puts the parameters on the GPU: the non-fused optimizer over them is GPU402's.
"""

from __future__ import annotations

from projects import lint_files

UTILS = """\
    def infiniteloop(dataloader):
        while True:
            for x, y in iter(dataloader):
                yield x
"""

TRAIN = """\
    import os

    import torch
    from utils_cifar import infiniteloop
    from unet import UNet


    def train(rank, total_steps):
        dataset = make_dataset()
        dataloader = torch.utils.data.DataLoader(dataset, batch_size=128, shuffle=True, num_workers=4)
        datalooper = infiniteloop(dataloader)
        net_model = UNet().to(rank)
        optim = torch.optim.Adam(net_model.parameters(), lr=2e-4)
        for step in range(total_steps):
            optim.zero_grad()
            x1 = next(datalooper).to(rank)
            loss = net_model(x1).square().mean()
            loss.backward()
            optim.step()


    def main():
        if int(os.getenv("WORLD_SIZE", 1)) > 1:
            train(rank=int(os.getenv("RANK", 0)), total_steps=400000)
        else:
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            train(rank=device, total_steps=400000)


    if __name__ == "__main__":
        main()
"""

UNET = """\
    import torch.nn as nn


    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Conv2d(3, 128, 3, padding=1), nn.SiLU(), nn.Conv2d(128, 3, 3, padding=1))

        def forward(self, x):
            return self.net(x)
"""


def _files(train: str = TRAIN) -> dict:
    return {"utils_cifar.py": UTILS, "unet.py": UNET, "train.py": train}


def test_next_of_an_iter_generator_over_a_loader_is_a_blocking_batch_copy(tmp_path):
    found = lint_files(tmp_path, _files(), "GPU201", "GPU202")
    assert ("train.py", 16, "GPU202") in found
    assert ("train.py", 10, "GPU201") in found


def test_a_rank_parameter_every_call_passes_a_cuda_device_puts_the_optimizer_on_the_gpu(tmp_path):
    assert ("train.py", 13, "GPU402") in lint_files(tmp_path, _files(), "GPU402")


def test_a_rank_parameter_one_call_passes_the_cpu_is_not_known_to_be_cuda(tmp_path):
    cpu = TRAIN.replace("train(rank=device, total_steps=400000)", "train(rank='cpu', total_steps=400000)")
    assert not lint_files(tmp_path, _files(cpu), "GPU402")
