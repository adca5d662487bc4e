"""Batches of pinned loaders built away from the loop that copies them (branch recall65, heldout19's misses).

- A device bound in `main()` under `global cuda; cuda = torch.device('cuda')` and read by the loop's function
  (`input_seq.to(cuda)` in `train(data_loader, ...)`): the copy goes to the GPU, so GPU202 judges it by the loader
  `main()` hands over (a factory of the module that pins it).
"""

from __future__ import annotations

from pathlib import Path

from projects import lint_script

GLOBAL_DEVICE = """\
import torch
from torch.utils import data


def main():
    global cuda; cuda = torch.device('cuda')
    model = torch.nn.Linear(4, 4).to(cuda)
    optimizer = torch.optim.Adam(model.parameters())
    train_loader = get_data('train')
    for epoch in range(10):
        train(train_loader, model, optimizer)


def train(data_loader, model, optimizer):
    for idx, (input_seq, target) in enumerate(data_loader):
        input_seq = input_seq.to(cuda)
        loss = model(input_seq).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def get_data(mode='train'):
    dataset = list(range(10))
    if mode == 'train':
        data_loader = data.DataLoader(dataset, batch_size=4, pin_memory=True, num_workers=4)
    elif mode == 'val':
        data_loader = data.DataLoader(dataset, batch_size=4, pin_memory=True, num_workers=4)
    return data_loader


if __name__ == '__main__':
    main()
"""


def test_a_global_device_bound_in_main_is_the_gpu(tmp_path: Path) -> None:
    assert (16, "GPU202") in lint_script(tmp_path, GLOBAL_DEVICE)


def test_a_global_bound_to_the_cpu_is_not(tmp_path: Path) -> None:
    cpu = GLOBAL_DEVICE.replace("torch.device('cuda')", "torch.device('cpu')")
    assert not {f for f in lint_script(tmp_path, cpu) if f[1] == "GPU202"}
