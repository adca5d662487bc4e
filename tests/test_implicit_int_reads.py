"""Device tensors that Python takes as numbers without a conversion in sight (analysis/host_reads.int_reads,
GPU105): a slice bound, `range()`, `max`/`min` of several values, `topk`'s `k`, `randint`'s bounds, `F.pad`'s
amounts, `in` over a tuple; and a device mask selecting from a value of unknown kind (GPU111)."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

# A decoder holding its reduction factor in a buffer (a 0-dim device tensor) and slicing with it every step; the
# model around it exposes the same name as a property that already returns a Python int (`.item()`).
MODEL = """import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("r", torch.tensor(2, dtype=torch.int))

    def forward(self, x):
        return x[:, :self.r]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = Decoder()

    @property
    def r(self):
        return self.decoder.r.item()

    def forward(self, x):
        outs = []
        for t in range(0, x.shape[1], self.r):
            outs.append(self.decoder(x[:, t:]))
        return torch.cat(outs, 1)


model = Model().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.utils.data.DataLoader(torch.randn(64, 8), batch_size=8):
    model(x.cuda()).sum().backward()
    opt.step()
"""

LOOP = """import torch
from torch.utils.data import DataLoader
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 8), batch_size=8)
for x, lengths in loader:
    out = model(x.cuda())
    ks = torch.clamp(out.detach().sum(1).int(), min=1)
{body}
    out.sum().backward()
    opt.step()
"""


def _codes(root: Path, name: str) -> set:
    return {(row, code) for path, row, code in found(check(root, "--no-cache", name)) if path.endswith(name)}


def test_buffer_slice_bound_reported_and_property_of_same_name_is_not_a_tensor(tmp_path: Path) -> None:
    root = write_project(tmp_path / "model", {"train.py": MODEL})
    codes = _codes(root, "train.py")
    assert (11, "GPU105") in codes  # `x[:, :self.r]` with the decoder's buffer
    # `range(0, n, self.r)` reads the property: an int the getter made with `.item()` (GPU112's finding there),
    # not a tensor taken as a number a second time
    assert (25, "GPU105") not in codes


def test_each_place_that_takes_an_int(tmp_path: Path) -> None:
    body = ("    _, top = torch.topk(out[0], k=ks[0])\n"
            "    for i in range(ks[1]):\n        pass\n"
            "    start = max(0, ks.max() - 2)\n"
            "    noise = torch.randint(0, ks[2] + 1, (3,))\n"
            "    padded = torch.nn.functional.pad(out, [0, ks[3]])\n"
            "    stop = ks[4] in (0, 2)\n"
            "    seen = ks[5] in {0, 2}\n")  # a set hashes the tensor: no read
    root = write_project(tmp_path / "loop", {"train.py": LOOP.format(body=body)})
    codes = _codes(root, "train.py")
    assert {(9, "GPU105"), (10, "GPU105"), (12, "GPU105"), (13, "GPU105"), (14, "GPU105"), (15, "GPU105")} <= codes
    assert (16, "GPU105") not in codes


def test_python_and_host_bounds_stay_quiet(tmp_path: Path) -> None:
    body = ("    n = out.shape[1]\n"
            "    head = out[:, :n // 2]\n"
            "    tail = out[:, :lengths[0]]\n"  # a batch part never moved: in host memory
            "    _, top = out.topk(2)\n"
            "    start = max(0, n - 2)\n"
            "    cap = min(len(lengths), 4)\n")
    root = write_project(tmp_path / "quiet", {"train.py": LOOP.format(body=body)})
    assert not {row for row, code in _codes(root, "train.py") if code == "GPU105"}


def test_bounds_of_a_host_tensor_slice_stay_quiet(tmp_path: Path) -> None:
    # an octave-band matrix built on the host beside the step: `torch.pow(2.0, k)` of a host `k` is not known to
    # be on the host, but the sliced matrix is, so its bounds are host arithmetic
    body = ("    bands = torch.zeros(4, 8)\n"
            "    low = 2.0 * torch.pow(2.0, torch.arange(4) / 3)\n"
            "    for i in range(4):\n"
            "        lo = torch.argmin(torch.abs(torch.linspace(0, 8, 8) - low[i]))\n"
            "        bands[i, lo:] = 1\n")
    root = write_project(tmp_path / "host", {"train.py": LOOP.format(body=body)})
    assert (13, "GPU105") not in _codes(root, "train.py")


def test_device_mask_selects_from_unknown_value(tmp_path: Path) -> None:
    body = ("    extras = lookup(x)\n"
            "    visible = torch.arange(8, device=out.device) == ks[:, None]\n"
            "    kept = extras[visible]\n"
            "    guessed = extras[lengths > 0]\n")  # a mask of a batch part kept on the host: no wait
    root = write_project(tmp_path / "mask", {"train.py": LOOP.format(body=body)})
    codes = _codes(root, "train.py")
    assert (11, "GPU111") in codes
    assert (12, "GPU111") not in codes


# A demo reading class names from a file into a list kept on `self`, indexed with a 0-dim CUDA argmax every frame
# (`list.__getitem__` calls `__index__`); a dict keyed by it hashes (no read), a tensor indexed by it stays on the GPU.
LABELS = """import torch


class Demo:
    def __init__(self, path):
        with open(path) as f:
            names = f.readlines()
            names = [line.rstrip() for line in names]
            self.label_name = names
        self.table = {0: "a"}

    def run(self, loader):
        for x in loader:
            output = x.cuda()
            label = output.sum(dim=1).argmax(dim=0)
            print(self.label_name[label])
            print(self.table[label])
            print(output[label])
            print(("a", "b")[label])
"""


def test_indexing_a_python_list_with_a_device_tensor(tmp_path: Path):
    root = write_project(tmp_path, {"demo.py": LABELS})
    hits = {(row, code) for _, row, code in found(check(root, "--no-cache", "--exit-zero", "--select", "GPU105"))}
    assert (16, "GPU105") in hits and (19, "GPU105") in hits
    assert (17, "GPU105") not in hits and (18, "GPU105") not in hits


def test_indexing_a_python_list_with_a_host_tensor_stays_quiet(tmp_path: Path):
    root = write_project(tmp_path, {"demo.py": LABELS.replace("output = x.cuda()", "output = x.cpu()")})
    assert not found(check(root, "--no-cache", "--exit-zero", "--select", "GPU105"))


KEYS = """import torch


def train(net, loader, optimizer):
    for batch in loader:
        for key in batch:
            batch[key] = batch[key].cuda()
        end_points = net({"points": batch["points"]})
        for key in batch:
            assert key not in end_points
            end_points[key] = batch[key]
        ids = batch["ids"]
        for i in ids:
            assert i not in (0, 1)
        loss = end_points["loss"]
        loss.backward()
        optimizer.step()
"""


def test_keys_of_a_mapping_tested_with_in_are_not_tensor_reads(tmp_path: Path):
    """`for key in batch:` over a batch the loop reads as `batch['points']` yields its keys (strings): testing
    one against the model's output dict reads no device value. The elements of a device tensor of ids tested
    against a tuple are still compared one by one, each with `bool()`."""
    root = write_project(tmp_path, {"train.py": KEYS})
    hits = {(row, code) for _, row, code in found(check(root, "--no-cache", "--exit-zero", "--select", "GPU105"))}
    assert (10, "GPU105") not in hits
    assert (14, "GPU105") in hits


COMPREHENSIONS = """import torch


def get_batch(data, block_size: int, batch_size: int):
    ix = torch.randint(len(data) - block_size, (batch_size,), device="cuda")
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x, y


def get_host_batch(data, block_size: int, batch_size: int):
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x.cuda(non_blocking=True), y.cuda(non_blocking=True)


def train(model, data, optimizer):
    for step in range(1000):
        x, y = get_batch(data, 64, 8)
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        x, y = get_host_batch(data, 64, 8)
        loss = model(x, y)
        loss.backward()
        optimizer.step()
"""


def test_elements_of_a_host_tensor_in_a_comprehension_are_host_values(tmp_path: Path):
    """`[data[i:i + n] for i in ix]` over a CPU `torch.randint(...)` (no `device=`): the comprehension's own
    `for` binds `i` before its element runs, though written after it, so `i` is a host value (the first of two
    such comprehensions was read as a device value); over a CUDA `randint` each bound is a read."""
    root = write_project(tmp_path, {"train.py": COMPREHENSIONS})
    hits = {(row, code) for _, row, code in found(check(root, "--no-cache", "--exit-zero", "--select", "GPU105"))}
    assert {(6, "GPU105"), (7, "GPU105")} <= hits
    assert not {(13, "GPU105"), (14, "GPU105")} & hits
