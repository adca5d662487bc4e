"""A map-style dataset of windows over a token sequence (x-transformers' `TextSamplerDataset`), shared by the tests
of what a `__getitem__` that moves its sample to the GPU means: a host-to-device copy per sample every step
(GPU203, `test_per_step_host_copies.py`), and CUDA batches that pinning and workers cannot help (GPU201/GPU409
stay quiet, `test_device_item_loaders.py`).

`windows(move, data, loop)` fills the program: what `__getitem__` returns (`seq` is the window, on the host), the
data the dataset is built over, and what follows the loader (`loop`). `RETURN` is the row of `__getitem__`'s
`return`, `LOADER` the row of `DataLoader(...)`.
"""

from __future__ import annotations

PROGRAM = '''
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda")


class Windows(Dataset):
    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data) - 9

    def __getitem__(self, i):
        seq = self.data[i:i + 9].long()
        return MOVE


model = torch.nn.Embedding(256, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Windows(DATA), batch_size=8)
LOOP
'''
RETURN = 17
LOADER = 22

HOST_DATA = "torch.randint(0, 256, (1000,))"
TRAIN = '''for seq in loader:
    model(seq).sum().backward()
    opt.step()
'''
TRAIN_MOVING = '''for seq in loader:
    model(seq.to(device)).sum().backward()
    opt.step()
'''


def windows(move: str = "seq.to(device)", data: str = HOST_DATA, loop: str = TRAIN) -> str:
    return PROGRAM.replace("MOVE", move).replace("DATA", data).replace("LOOP", loop)
