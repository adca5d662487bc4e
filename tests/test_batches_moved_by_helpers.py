"""A loader whose batches a project helper moves to the GPU (issue 11, recall): `x, y = model.parse_batch(batch)`
where `Tacotron2.parse_batch` hands the batch's tensors to `to_gpu(x)`, which calls `x.cuda(non_blocking=True)`.
The loop copies its batches to the device as surely as a `.cuda()` written in its body, so a `DataLoader` built
with `pin_memory=False` for that loop is reported (GPU201), even where the loader is built in the same function
(a validation loader). A helper that moves its argument only under an option, or moves something else, does not
count.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

UTILS = textwrap.dedent("""\
    import torch


    def to_gpu(x):
        x = x.contiguous()
        if torch.cuda.is_available():
            x = x.cuda(non_blocking=True)
        return x
""")

MODEL = textwrap.dedent("""\
    import torch
    from torch import nn
    from utils import to_gpu


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def parse_batch(self, batch):
            text, mel = batch
            return to_gpu(text).long(), to_gpu(mel).float()

        def forward(self, x):
            return self.proj(x)
""")

TRAIN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from model import Net


    def validate(model, valset):
        model.eval()
        with torch.no_grad():
            val_loader = DataLoader(valset, num_workers=1, shuffle=False, batch_size=8, pin_memory=False)
            val_loss = 0.0
            for i, batch in enumerate(val_loader):
                x, y = model.parse_batch(batch)
                loss = torch.nn.functional.mse_loss(model(x), y)
                val_loss += loss
        model.train()
        return val_loss


    def train(trainset, valset):
        model = Net().cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(10):
            validate(model, valset)
""")

LOADER = ("train.py", 9, "GPU201")


def _project(root: Path, utils: str = UTILS, model: str = MODEL, train: str = TRAIN) -> Path:
    return write_project(root, {"utils.py": utils, "model.py": model, "train.py": train})


def test_a_loader_whose_batches_a_project_method_moves_to_the_gpu(tmp_path: Path):
    assert LOADER in found(check(_project(tmp_path), "--no-cache", "."))


def test_a_helper_moving_its_argument_only_under_an_option_does_not_count(tmp_path: Path):
    utils = UTILS.replace("if torch.cuda.is_available():", "if self_verbose_flag:")
    assert utils != UTILS
    assert LOADER not in found(check(_project(tmp_path, utils=utils), "--no-cache", "."))


def test_a_helper_moving_something_else_does_not_count(tmp_path: Path):
    model = MODEL.replace("return to_gpu(text).long(), to_gpu(mel).float()",
                          "return text.long(), to_gpu(torch.zeros(4)).float()")
    assert model != MODEL
    assert LOADER not in found(check(_project(tmp_path, model=model), "--no-cache", "."))
