"""Helpers that read a parameter's elements on the host one by one (issue 11, sixth set): a greedy decoder that
tests every predicted index with `if` (`if t[i] != 0` for `t = indices[k, :]`), or looks every index up in a
list (`[chars[i] for i in indices[k, :]]`). Given the device tensor of a model's predictions, each element is a
host read; the loop's call of the helper is reported (GPU112), a call given a list or a host copy is not.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

CODEC = """\
class GreedyCodec:
    def __init__(self, alphabet):
        self.chars = ["-"] + list(alphabet)

    def collapse(self, indices, lengths):
        out = []
        for k, n in enumerate(lengths):
            row = indices[k, :]
            keep = []
            for i in range(n):
                if row[i] != 0 and not (i > 0 and row[i - 1] == row[i]):
                    keep.append(i)
            out.append(keep)
        return out

    def spell(self, indices):
        return ["".join([self.chars[i] for i in indices[k, :]]) for k in range(len(indices))]

    def flat(self, indices, lengths):
        start, out = 0, []
        for n in lengths:
            part = indices[start:start + n]
            out.append([i for i in range(n) if part[i] != 0])
            start += n
        return out

    def gated(self, indices, v2):
        if v2:
            for j in range(len(indices)):
                if indices[j, 1] == 0:
                    return j
        return -1

    def widths(self, indices):
        total = 0
        for k in range(len(indices)):
            for v in indices[k, :]:
                total += 1
        return total
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from codec import GreedyCodec

device = torch.device("cuda")
model = torch.nn.Linear(32, 12).to(device)
codec = GreedyCodec("abcdefghijk")
loader = DataLoader(make_dataset(), batch_size=16, pin_memory=True)
with torch.no_grad():
    for x, lengths in loader:
        scores = model(x.to(device, non_blocking=True))
        _, best = scores.max(2)
        words = codec.collapse(best, lengths)
        text = codec.spell(best)
        host = codec.spell(best.cpu())
        listed = codec.collapse([[1, 2, 2]], [3])
        count = codec.widths(best)
        flat = codec.flat(best.view(-1), lengths)
        gated = codec.gated(best, False)
"""


def _keys(tmp_path: Path) -> set:
    root = write_project(tmp_path, {"codec.py": CODEC, "train.py": TRAIN})
    return found(check(root, "--no-cache", "--select", "GPU112", "."))


def test_helpers_testing_or_looking_up_each_element_of_a_device_tensor_are_reported(tmp_path: Path):
    keys = _keys(tmp_path)
    assert ("train.py", 13, "GPU112") in keys  # `if row[i] != 0` for every element of each row
    assert ("train.py", 14, "GPU112") in keys  # `self.chars[i]` for every element: `__index__` of each
    assert ("train.py", 18, "GPU112") in keys  # a slice of a flat tensor, tested element by element


def test_host_values_and_element_loops_without_a_read_stay_quiet(tmp_path: Path):
    keys = _keys(tmp_path)
    assert ("train.py", 15, "GPU112") not in keys  # a host copy is given: no device read
    assert ("train.py", 16, "GPU112") not in keys  # a list is given
    assert ("train.py", 17, "GPU112") not in keys  # the elements are only counted, never read
    assert ("train.py", 19, "GPU112") not in keys  # read only under an option's branch inside the helper


def test_the_message_points_at_the_helpers_read(tmp_path: Path):
    root = write_project(tmp_path, {"codec.py": CODEC, "train.py": TRAIN})
    items = {d["location"]["row"]: d for d in check(root, "--no-cache", "--select", "GPU112", ".")
             if d["filename"].endswith("train.py")}
    assert "tested by `if`" in items[13]["message"] and "GreedyCodec.collapse" in items[13]["message"]
    assert "used as an index" in items[14]["message"]
