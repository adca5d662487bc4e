"""A host tensor counted up with `+=` stays on the host (issue 11, precision): a data pipeline builds a block mask
with `torch.zeros` (no device: host memory), takes each row's count (`n = counts[i]`) and adds to it while it
masks more (`n += chosen.numel()`, a Python int). Comparing `n` with a Python number (`while n < target:`,
`if n > target:`) and `int(n - target)` read a host tensor and wait for no GPU, even when a training step calls the
helper on every batch. A count that adds a device value (`n += model_out.sum()`) is not known to stay on the host and is still
reported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_model_code import check, found

MASKS = textwrap.dedent("""\
    import torch


    def block_mask(rows, width, ratio):
        target = int(width * ratio)
        mask = torch.zeros((rows, width))
        counts = mask.sum(dim=-1)
        for i in range(rows):
            n = counts[i]
            m = mask[i]
            while n < target:
                free = (m == 0).nonzero().flatten()
                chosen = free[:2]
                m[chosen] = 1
                n += chosen.numel()
            if n > target:
                print(int(n - target))
        return mask


    def scored_mask(rows, width, scores):
        mask = torch.zeros((rows, width))
        counts = mask.sum(dim=-1)
        for i in range(rows):
            n = counts[i]
            n += scores[i].sum()
            if n > width:
                mask[i] = 0
        return mask


    def train(model, loader, optimizer):
        model = model.cuda()
        for x in loader:
            x = x.cuda()
            mask = block_mask(x.shape[0], x.shape[1], 0.5)
            scores = model(x)
            loss = (scores * mask.cuda()).sum() + scored_mask(x.shape[0], x.shape[1], scores).sum()
            loss.backward()
            optimizer.step()
""")


BLOCKS = textwrap.dedent("""\
    import torch


    def block_mask(shape, width, ratio, grow=True, tiled=False):
        rows, length = shape
        side = int(length ** 0.5)
        if tiled:
            seeds = torch.zeros((rows, 1, side, side))
            kernel = torch.ones((1, 1, width, width))
            mask = torch.nn.functional.conv_transpose2d(seeds, kernel, stride=width).squeeze(1)
            if mask.size(-1) > side:
                mask = mask[..., :side, :side]
        else:
            mask = torch.zeros((rows, side, side))
        mask = mask.reshape(rows, -1)
        if grow:
            counts = mask.sum(dim=-1)
            target = int(length * ratio)
            for i in range(len(mask)):
                n = counts[i]
                row = mask[i]
                while grow and n < target:
                    free = (row == 0).nonzero().flatten()
                    chosen = free[:2]
                    row[chosen] = 1
                    n += chosen.numel()
                if n > target:
                    print("over by", int(n - target))
        return mask


    def train(model, loader, optimizer):
        model = model.cuda()
        for x in loader:
            x = x.cuda()
            mask = block_mask((x.shape[0], 64), 2, 0.5)
            loss = (model(x) * mask.cuda()).sum()
            loss.backward()
            optimizer.step()
""")


def test_a_block_mask_built_on_the_host_through_branches_and_reshapes_stays_there(tmp_path: Path):
    """The mask comes from either branch of an `if` (a transposed convolution of host tensors, then a slice of
    itself; or `torch.zeros`), is reshaped in place (`mask = mask.reshape(...)`), and its row counts grow by
    `+=`; the loop condition is `grow and n < target` (a flag and a host comparison): no read waits for a GPU."""
    (tmp_path / "blocks.py").write_text(BLOCKS)
    keys = found(check(tmp_path, "--no-cache", "--select", "GPU105,GPU106", "blocks.py"))
    assert not {k for k in keys if k[0] == "blocks.py" and k[1] <= 30}, keys


def test_a_host_count_added_to_with_python_numbers_stays_on_the_host(tmp_path: Path):
    (tmp_path / "masks.py").write_text(MASKS)
    keys = found(check(tmp_path, "--no-cache", "--select", "GPU105,GPU106", "masks.py"))
    assert not {k for k in keys if k[1] <= 17}, keys
    # the count that adds the model's scores lives on the GPU: its comparison waits every step
    assert ("masks.py", 27, "GPU106") in keys
