"""Device values used as sizes and slice bounds (recall47): a helper that sizes a factory with its argument's value
(`torch.arange(lengths.max())` in a `length_to_mask(lengths)`) or slices with its elements (`x[i, :, s:e]` with
`s = starts[i]`) reads that argument on the host at every call that passes a device tensor (GPU112 at the call,
`project._Summarizer._bound_read`); a loop sizing a factory with a device value is GPU105 (`host_reads.int_reads`);
and the parts of a batch moved by a list comprehension and unpacked (`batch = [b.to(device) for b in batch]`,
`x, lengths = batch`) are tensors (`kinds._list_of_tensors`)."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

UTILS = """import torch


def length_to_mask(lengths):
    mask = torch.arange(lengths.max()).unsqueeze(0).expand(lengths.shape[0], -1).type_as(lengths)
    return torch.gt(mask + 1, lengths.unsqueeze(1))


def slice_segments(x, ids_str, segment_size=4):
    ret = torch.zeros_like(x[:, :, :segment_size])
    for i in range(x.size(0)):
        idx_str = ids_str[i]
        idx_end = idx_str + segment_size
        ret[i] = x[i, :, idx_str:idx_end]
    return ret


def crop(x, n):
    return x[:, :n]


def mask_of(lengths, max_len=None):
    if max_len is None:
        max_len = lengths.max()
    return torch.arange(max_len, device=lengths.device) < lengths[:, None]
"""

TRAIN = """import torch
from utils import length_to_mask, slice_segments, crop, mask_of

model = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(range(10), pin_memory=True)
for step, (x, lengths, host_lengths) in enumerate(loader):
    x = x.cuda(non_blocking=True)
    lengths = lengths.cuda(non_blocking=True)
    out = model(x)
    m = length_to_mask(lengths)
    m_host = length_to_mask(host_lengths)
    seg = slice_segments(out, lengths, 8)
    seg_host = slice_segments(out, [0, 2, 4], 8)
    c = crop(out, x.size(1) // 2)
    mm = mask_of(lengths, max_len=x.size(1))
    if step % 100 == 0:
        logged = length_to_mask(lengths)
    out.sum().backward()
    opt.step()
"""

LOOP = """import torch

model = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(range(10), pin_memory=True)
device = "cuda"
for i, batch in enumerate(loader):
    batch = [b.to(device, non_blocking=True) for b in batch]
    x, lengths = batch
    host = torch.tensor([3, 4])
    out = model(x)
    ids = torch.arange(lengths.max(), device=x.device)
    z = torch.zeros(x.size(0), 4, device=x.device)
    h = torch.arange(host.max())
    for b in range(len(lengths)):
        seg = out[b, :lengths[b]]
    out.sum().backward()
    opt.step()
"""

# the same loop where the list comprehension only converts the parts, in host memory
HOST_LOOP = """import torch

model = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(range(10), pin_memory=True)
for i, batch in enumerate(loader):
    batch = [b.float() for b in batch]
    x, lengths = batch
    out = model(x.cuda(non_blocking=True))
    for b in range(len(lengths)):
        seg = out[b, :lengths[b]]
    ids = torch.arange(lengths.max())
    out.sum().backward()
    opt.step()
"""


def _found(root: Path, name: str) -> set:
    return {(row, code) for path, row, code in found(check(root, "--no-cache", "--exit-zero", name))
            if path.endswith(name)}


def test_helpers_reading_their_argument_as_a_size_or_a_slice_bound(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"utils.py": UTILS, "train.py": TRAIN})
    codes = _found(root, "train.py")
    assert (11, "GPU112") in codes  # length_to_mask(device lengths): torch.arange(lengths.max())
    assert (13, "GPU112") in codes  # slice_segments(out, device ids): x[i, :, idx_str:idx_end]
    assert (12, "GPU112") not in codes  # host lengths: no wait
    assert (14, "GPU112") not in codes  # a list of Python ints as start indices
    assert (15, "GPU112") not in codes  # a bound computed from a shape
    assert (16, "GPU112") not in codes  # `if max_len is None:` rebinding; the caller passes it
    assert (18, "GPU112") not in codes  # periodic logging


def test_the_message_names_the_read(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"utils.py": UTILS, "train.py": TRAIN})
    messages = {d["location"]["row"]: d["message"] for d in check(root, "--no-cache", "--exit-zero", "train.py")
                if d["code"] == "GPU112" and d["filename"].endswith("train.py")}
    assert "`torch.arange()` sized by a tensor" in messages[11]
    assert "slicing with a tensor bound" in messages[13]


def test_a_loop_sizing_with_a_device_value_and_unpacked_moved_parts(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"train.py": LOOP})
    codes = _found(root, "train.py")
    assert (12, "GPU105") in codes  # torch.arange(lengths.max()) of a moved part
    assert (16, "GPU105") in codes  # out[b, :lengths[b]]: an element of a moved part as a bound
    assert (13, "GPU105") not in codes  # sizes from shapes
    assert (14, "GPU105") not in codes  # a host tensor's max


def test_parts_converted_in_host_memory_stay_quiet(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"train.py": HOST_LOOP})
    codes = _found(root, "train.py")
    assert not {c for c in codes if c[1] == "GPU105"}


# A contrastive loss that drops the diagonal with a boolean mask made on the device (`torch.eye(n, dtype=torch.bool)`
# moved there), and one whose mask stays in host memory.
CONTRASTIVE = """import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    def info_nce(self, features):
        sim = torch.matmul(features, features.T)
        mask = torch.eye(sim.shape[0], dtype=torch.bool).to(self.device)
        return sim[~mask].view(sim.shape[0], -1)

    def host_mask(self, features):
        sim = torch.matmul(features, features.T)
        keep = torch.eye(sim.shape[0], dtype=torch.long)
        return sim[keep]

    def train(self, loader, opt):
        for x in loader:
            features = self.model(x.to(self.device))
            logits = self.info_nce(features)
            other = self.host_mask(features)
            logits.sum().backward()
            opt.step()
"""


def test_a_mask_made_on_the_device_inside_a_helper(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"train.py": CONTRASTIVE})
    codes = _found(root, "train.py")
    assert (13, "GPU111") in codes  # sim[~mask] with mask = torch.eye(..., dtype=torch.bool).to(device)
    assert (23, "GPU112") in codes  # self.info_nce(...) pays that count at every call
    assert (24, "GPU112") not in codes  # a long index tensor gathers: no count to read
    assert (18, "GPU111") not in codes


# Bounds that look like a parameter's value but are not: a reference tensor gives only its size, a list of
# tensors only its shapes; both helpers are called with device tensors every step.
SHAPES = """import torch


def center_trim(tensor, reference):
    if isinstance(reference, torch.Tensor):
        ref_size = reference.size(-1)
    else:
        ref_size = reference
    delta = tensor.size(-1) - ref_size
    if delta:
        tensor = tensor[..., delta // 2:-(delta - delta // 2)]
    return tensor


def _max_by_axis(the_list):
    maxes = the_list[0]
    for sublist in the_list[1:]:
        for index, item in enumerate(sublist):
            maxes[index] = max(maxes[index], item)
    return maxes


def gated(input_a, n_channels):
    n = n_channels[0]
    return torch.tanh(input_a[:, :n]) * torch.sigmoid(input_a[:, n:])


def pad_images(tensor_list):
    max_size = _max_by_axis([list(img.shape) for img in tensor_list])
    batch_shape = [len(tensor_list)] + max_size
    return torch.zeros(batch_shape, device=tensor_list[0].device)
"""

SHAPES_TRAIN = """import torch
from shapes import center_trim, pad_images, gated

model = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(range(10), pin_memory=True)
for x, y in loader:
    x = x.cuda(non_blocking=True)
    y = y.cuda(non_blocking=True)
    out = model(x)
    trimmed = center_trim(out, x)
    padded = pad_images([x, out])
    ex = 0
    for idx, val in enumerate(y):
        if ex == val:
            continue
        ex = val
    ex = 0
    for end in [2, 4]:
        perm = torch.randperm(end - ex) + ex
        ex = end
    top = y.max()
    shuffled = torch.randperm(top - 1)
    acts = gated(out, torch.IntTensor([1]))
    out.sum().backward()
    opt.step()
"""


def test_sizes_and_shapes_of_arguments_are_no_reads(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"shapes.py": SHAPES, "train.py": SHAPES_TRAIN})
    codes = _found(root, "train.py")
    assert (11, "GPU112") not in codes  # center_trim(out, x): `reference.size(-1)` for a tensor
    assert (12, "GPU112") not in codes  # pad_images([...]): sizes from the images' shapes
    # `ex = 0` before the loop and `ex = end` in it: `end - ex` holds ints there, whatever `ex = val` held before
    assert (20, "GPU105") not in codes
    assert (23, "GPU105") in codes  # `top - 1` of a device max: a size read on the host
    assert (24, "GPU112") not in codes  # `torch.IntTensor([n])` is built in host memory: its element costs no wait
