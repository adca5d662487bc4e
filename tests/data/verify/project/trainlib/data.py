import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(160, 8, generator=generator)
    return DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)
