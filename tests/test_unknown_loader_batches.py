"""Batch elements a loop leaves on the host, drawn from loaders of no kind the module knows (issue 11, precision):
BigGAN's `calculate_inception_moments.py` iterates `tqdm(loaders[0])` of `loaders = utils.get_data_loaders(...)`
(another module's function building a list of DataLoaders), moves the images (`x = x.to(device)`) and keeps the
labels where the loader put them: `np.asarray(y.cpu())` copies nothing from a GPU, so GPU104 stays quiet on it
(the network's output copied beside it is still reported). Without a move of a sibling in the loop, or for
elements of a `zip` of two sequences, nothing says the batches are in host memory and the copy is reported.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

UTILS = """\
from torch.utils.data import DataLoader


def get_data_loaders(datasets, batch_size=64, num_workers=4):
    loaders = []
    for dataset in datasets:
        loaders.append(DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, pin_memory=True))
    return loaders
"""

MOMENTS = """\
import numpy as np
import torch
from tqdm import tqdm

import utils


def run(config, net):
    loaders = utils.get_data_loaders(**config)
    pool, labels = [], []
    device = "cuda"
    for i, (x, y) in enumerate(tqdm(loaders[0])):
        x = x.to(device)
        with torch.no_grad():
            pool_val = net(x)
            pool += [np.asarray(pool_val.cpu())]
            labels += [np.asarray(y.cpu())]
    return np.concatenate(pool, 0), np.concatenate(labels, 0)


def run_unmoved(config, net):
    loaders = utils.get_data_loaders(**config)
    labels = []
    for x, y in loaders[0]:
        with torch.no_grad():
            pool_val = net(x)
            labels += [np.asarray(y.cpu())]
    return np.concatenate(labels, 0)


def run_pairs(pairs, net):
    labels = []
    for x, y in zip(pairs[0], pairs[1]):
        x = x.to("cuda")
        with torch.no_grad():
            pool_val = net(x)
            labels += [np.asarray(y.cpu())]
    return np.concatenate(labels, 0)
"""


def test_labels_of_an_unknown_loader_whose_images_the_loop_moves(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"utils.py": UTILS, "moments.py": MOMENTS})
    rows = {row for path, row, code in found(check(root, "--no-cache", "--exit-zero"))
            if path == "moments.py" and code == "GPU104"}
    # 16: the network's output; 27: nothing moved in that loop; 37: a zip of two sequences, no loader
    assert rows == {16, 27, 37}
