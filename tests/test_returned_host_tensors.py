"""Host tensors a project function hands back in a tuple, copied to the GPU every step (branch recall85).

A research project's data loader (`load_data(name)`) reads numpy arrays and returns `torch.FloatTensor(...)`,
`torch.LongTensor(...)` and lists of such tensors in a tuple; a model helper returns masks built with numpy
(`return torch.from_numpy(mask).unsqueeze(0), ...`). The caller unpacks them; GPU203 reports a copy of such an
element (`labels[idx_train].to(device)`, `adj_list[i].cuda()`, `mask.type_as(query)`) where it runs every step,
also through a parameter every call of its function in the module passes such a name for. A copy once before the
epoch loop, an element the caller moves once (`features = features.to(device)`), an element the function does not
build on the host, and a pinned tensor stay quiet (`analysis/host_tuple_returns.py`).
"""

from __future__ import annotations

from projects import lint_files

UTILS = """\
    import numpy as np
    import torch


    def to_sparse(m):
        indices = torch.from_numpy(np.vstack((m.row, m.col)).astype(np.int64))
        return torch.sparse.FloatTensor(indices, torch.from_numpy(m.data), torch.Size(m.shape))


    def load_data(name):
        labels = np.load(name + ".labels")
        labels[0] = 1
        feats = np.load(name + ".feats")
        adj_list = []
        for m in np.load(name + ".adj"):
            adj_list.append(to_sparse(m))
        feats = torch.FloatTensor(feats)
        labels = torch.LongTensor(labels)
        labels = torch.max(labels, dim=1)[1]
        idx_train = torch.LongTensor(range(100))
        pinned = torch.FloatTensor(feats).pin_memory()
        return feats, labels, idx_train, adj_list, pinned, name
"""

TRAIN = """\
    import torch
    import torch.nn.functional as F
    from utils import load_data

    feats, labels, idx_train, adj_list, pinned, name = load_data("cora")
    device = torch.device("cuda:0")
    feats = feats.to(device)
    labels_once = labels.to(device)
    model = torch.nn.Linear(10, 3).to(device)
    optimizer = torch.optim.Adam(model.parameters())


    def train():
        optimizer.zero_grad()
        output = model(feats)
        loss = F.nll_loss(output[idx_train], labels[idx_train].to(device))
        extra = pinned.to(device, non_blocking=True)
        loss.backward()
        optimizer.step()
        return loss


    def train_graphs():
        for i in range(len(adj_list)):
            adj = adj_list[i].cuda()
            out = model(adj)
            out.sum().backward()
            optimizer.step()


    for epoch in range(100):
        train()

    for epoch in range(10):
        train_graphs()
"""

STEP_FUNCTION = """\
    import torch
    import torch.nn.functional as F
    from utils import load_data

    device = torch.device("cuda")


    def train_step(model, optimizer, feats, labels, idx):
        optimizer.zero_grad()
        output = model(feats)
        loss = F.nll_loss(output[idx], labels[idx].to(device))
        loss.backward()
        optimizer.step()


    def main():
        feats, labels, idx_train, adj_list, pinned, name = load_data("cora")
        feats = feats.to(device)
        model = torch.nn.Linear(10, 3).to(device)
        optimizer = torch.optim.Adam(model.parameters())
        for epoch in range(100):
            train_step(model, optimizer, feats, labels, idx_train)
"""

MASKS = """\
    from functools import lru_cache

    import numpy as np
    import torch
    import torch.nn as nn


    @lru_cache(maxsize=64)
    def causal_mask(size):
        mask = np.triu(np.ones([size, size]), k=1).astype(np.uint8).T
        start_mask = np.ones(size).astype(np.float32)
        return torch.from_numpy(mask).unsqueeze(0), torch.from_numpy(start_mask).unsqueeze(1)


    class Attention(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.query = nn.Linear(c, c)

        def forward(self, x):
            query = self.query(x)
            mask, start_mask = causal_mask(x.shape[1])
            mask = mask.type_as(query)
            start_mask = start_mask.type_as(query)
            return query.masked_fill(mask == 0, -1e4) * start_mask
"""

MASKS_TRAIN = """\
    import torch
    from model import Attention

    model = Attention(8).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.randn(64, 4, 8), batch_size=8, pin_memory=True)
    for x in loader:
        x = x.cuda(non_blocking=True)
        model(x).sum().backward()
        opt.step()
"""


def _gpu203(findings: set) -> set:
    return {(f, row) for f, row, code in findings if code == "GPU203"}


def test_a_loaders_host_tensors_copied_every_step(tmp_path):
    found = _gpu203(lint_files(tmp_path, {"utils.py": UTILS, "train.py": TRAIN}, "GPU203"))
    # the labels' rows every step, and a host list's sparse graphs; not the moved features, not the copy before
    # the loop, not the pinned tensor copied with non_blocking
    assert found == {("train.py", 16), ("train.py", 25)}


def test_through_a_parameter_of_the_step_function(tmp_path):
    found = _gpu203(lint_files(tmp_path, {"utils.py": UTILS, "train.py": STEP_FUNCTION}, "GPU203"))
    assert found == {("train.py", 11)}


def test_a_models_numpy_mask_cast_to_the_query_every_forward(tmp_path):
    found = _gpu203(lint_files(tmp_path, {"model.py": MASKS, "train.py": MASKS_TRAIN}, "GPU203"))
    assert found == {("model.py", 23), ("model.py", 24)}


def test_the_message_names_the_function(tmp_path):
    from projects import check, write_project
    import textwrap

    root = write_project(tmp_path, {"utils.py": textwrap.dedent(UTILS), "train.py": textwrap.dedent(TRAIN)})
    items = [d for d in check(root, "--no-cache", "--exit-zero", "--select", "GPU203", "train.py")
             if d["location"]["row"] == 16]
    assert len(items) == 1
    assert items[0]["message"].startswith("`labels` is a host tensor that `load_data(...)` builds and returns")


def test_a_loader_returning_device_tensors_is_quiet(tmp_path):
    utils = UTILS.replace("        labels = torch.max(labels, dim=1)[1]\n",
                          "        labels = torch.max(labels, dim=1)[1]\n        labels = labels.cuda()\n")
    found = _gpu203(lint_files(tmp_path, {"utils.py": utils, "train.py": TRAIN}, "GPU203"))
    assert ("train.py", 16) not in found
