"""Costs inside what a loop calls, linked to the call (GPU112), and values a loop moved to a CPU device.

- A helper that branches on the value of a tensor computed from its argument (`if torch.min(y) < -1.:` in
  hifi-gan's `mel_spectrogram`) reads it back on every call: the call site is reported, as for `.item()`.
- A profiling helper whose `torch.cuda.synchronize()` runs only `if device.type == "cuda":` (Real-Time-Voice-
  Cloning's `sync(device)`) costs nothing when the loop passes a CPU device (`loss_device = torch.device("cpu")`).
- A value the loop moved to a CPU device itself, handed to a method whose results it unpacks
  (`loss, eer = model.loss(embeds.to(loss_device))`), lives on the host: `loss.item()` waits for no GPU.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project


def _project(root: Path, files: dict[str, str]) -> Path:
    return write_project(root, files, pyproject="", dedent=True)


AUDIO = """\
import torch


def spectrogram(y, n_fft):
    if torch.min(y) < -1.0:
        print("clipped")
    return torch.stft(y, n_fft, return_complex=True).abs()


def any_nan(y):
    while torch.isnan(y).any():
        y = torch.nan_to_num(y)
    return y


def checked(y, n_fft):
    if y.shape[0] > 1 and y.dim() == 2 and n_fft > 8:
        y = y.mean(0)
    return y


def optional(y, strict):
    if strict and (y > 1).all():
        print("all big")
    return y


def logged(y, step):
    if step % 100 == 0:
        if (y > 1).any():
            print("big")
    return y
"""

TRAIN = """\
import torch
from audio import spectrogram, any_nan, checked, logged, optional

model = torch.nn.Linear(4, 4).cuda()
for step, (x, y) in enumerate(loader):
    out = model(x.cuda(non_blocking=True))
    spec = spectrogram(out, 16)
    clean = any_nan(out)
    z = checked(out, 16)
    w = logged(out, step)
    v = optional(out, args.strict)
    if step % 100 == 0:
        spectrogram(out, 16)
    host = spectrogram(x.numpy(), 16)
    loss = spec.mean()
    loss.backward()
"""


def test_a_branch_on_an_argument_s_value_is_a_read_of_the_call(tmp_path: Path):
    """Reported: the helper branching on `torch.min(y)` and the one looping while `torch.isnan(y).any()`. Quiet:
    tests of shapes and options, a test read only when an option is on (`if strict and (y > 1).all():`), a
    branch under the helper's own periodic guard, the call under the loop's periodic guard, and a call given a
    host array."""
    root = _project(tmp_path / "p", {"audio.py": AUDIO, "train.py": TRAIN})
    items = check(root, "--no-cache", "train.py")
    assert {(f, line) for f, line, code in found(items) if code == "GPU112"} == {("train.py", 7), ("train.py", 8)}
    message = next(d["message"] for d in items if d["location"]["row"] == 7)
    assert "`spectrogram` calls `bool()` on what it is given" in message


PROFILED = """\
import torch


def sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train(loader):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loss_device = torch.device("cpu")
    model = Encoder(device, loss_device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step, batch in enumerate(loader):
        inputs = batch.to(device)
        sync(device)
        embeds = model(inputs)
        sync(loss_device)
        loss, eer = model.loss(embeds.to(loss_device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.item(), eer)
        other, _ = model.loss(embeds)
        print(other.item())
"""

ENCODER = """\
import torch


class Encoder(torch.nn.Module):
    def __init__(self, device, loss_device):
        super().__init__()
        self.lstm = torch.nn.LSTM(40, 256).to(device)
        self.weight = torch.nn.Parameter(torch.tensor([10.0])).to(loss_device)

    def forward(self, x):
        return self.lstm(x)[0]

    def loss(self, embeds):
        sim = embeds.sum() * self.weight
        return sim, 0.5
"""


def test_a_cpu_device_passed_or_moved_to_is_the_host(tmp_path: Path):
    """`sync(device)` (CUDA when there is one) is reported; `sync(loss_device)` with a CPU device is not.
    `loss.item()` of a loss computed from embeddings the loop moved to the CPU is quiet; the same method given
    the CUDA embeddings is a read."""
    root = _project(tmp_path / "p", {"train.py": PROFILED, "encoder.py": ENCODER})
    (root / "train.py").write_text("from encoder import Encoder\n" + (root / "train.py").read_text())
    got = found(check(root, "--no-cache", "train.py"))
    assert {(line, code) for f, line, code in got if code in ("GPU112", "GPU101")} == {
        (17, "GPU112"), (26, "GPU101")}


WINDOWED = """\
import torch

device = torch.device("cuda")
model = torch.nn.Linear(4, 4).to(device)
for x in loader:
    x = x.to(device, non_blocking=True)
    window = torch.hann_window(400).to(x.device)
    spec = torch.stft(x, 400, window=window, return_complex=True)
    ok = torch.hamming_window(400, device=x.device)
    loss = model(spec.abs()).mean()
    loss.backward()
"""


def test_a_window_built_on_the_host_and_moved_each_step(tmp_path: Path):
    """`torch.hann_window(n).to(device)` every step is a host build and a copy (GPU203), fixed only as an unsafe
    fix (the device computes the cosines); the window built with `device=` is quiet."""
    root = _project(tmp_path / "p", {"train.py": WINDOWED})
    items = [d for d in check(root, "--no-cache", "--select", "GPU203", "train.py")]
    assert [(d["location"]["row"], d["code"]) for d in items] == [(7, "GPU203")]
    assert items[0]["fix"]["applicability"] == "unsafe"


LOGGER = """\
from torch.utils.tensorboard import SummaryWriter


class TrainLogger(SummaryWriter):
    def __init__(self, logdir):
        super().__init__(logdir)

    def log_training(self, loss, grad_norm, lr, iteration):
        self.add_scalar("training.loss", loss, iteration)
        self.add_scalar("grad.norm", grad_norm, iteration)
        self.add_scalar("learning.rate", lr, iteration)
"""

LOGGED = """\
import torch
from logger import TrainLogger

logger = TrainLogger("runs")
model = torch.nn.Linear(4, 4).cuda()
for iteration, x in enumerate(loader):
    loss = model(x.cuda(non_blocking=True)).mean()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    logger.log_training(loss.item(), grad_norm, 0.1, iteration)
    logger.log_training(loss.item(), grad_norm.item(), 0.1, iteration)
"""


def test_a_library_method_inherited_by_a_project_class(tmp_path: Path):
    """`self.add_scalar(..., grad_norm, ...)` in a project subclass of `SummaryWriter` reads the tensor it is given:
    the loop's `logger.log_training(..., grad_norm, ...)` is reported; given host numbers only, it is not."""
    root = _project(tmp_path / "p", {"logger.py": LOGGER, "train.py": LOGGED})
    items = check(root, "--no-cache", "--select", "GPU112", "train.py")
    assert [d["location"]["row"] for d in items] == [10]
    assert "SummaryWriter.add_scalar()" in items[0]["message"]


TRAINER = """\
import torch


class SRModel:
    def __init__(self, net):
        self.net = net.cuda()
        self.device = torch.device("cuda")

    def feed_data(self, data):
        self.lq = data["lq"].to(self.device, non_blocking=True)
        self.names = data["names"]

    def visuals(self):
        return {"lq": self.lq.detach().cpu()}

    def labels(self):
        return list(self.names)

    def validation(self, loader):
        for val_data in loader:
            self.feed_data(val_data)
            with torch.no_grad():
                self.output = self.net(self.lq)
            out = self.visuals()
            names = self.labels()
"""


def test_an_attribute_another_method_moved_to_the_device(tmp_path: Path):
    """`self.lq` is assigned only copies to the device (in `feed_data`): `visuals()` reading it back with `.cpu()`
    syncs on every call, so the call in the validation loop is reported; `labels()` reads a host attribute."""
    root = _project(tmp_path / "p", {"model.py": TRAINER})
    items = check(root, "--no-cache", "--select", "GPU112", "model.py")
    assert [d["location"]["row"] for d in items] == [24]


SAMPLER = """\
import torch
import torch.nn.functional as F


def train(model, loader, validate):
    model = model.cuda()
    for x in loader:
        logits = model(x.cuda(non_blocking=True))
        probs = F.softmax(logits, dim=1)
        dist = torch.distributions.Categorical(probs)
        quiet = torch.distributions.Categorical(probs, validate_args=False)
        loss = -(dist.log_prob(dist.sample()) + quiet.entropy()).mean()
        loss.backward()
"""


def test_a_distribution_validating_its_arguments(tmp_path: Path):
    """`Categorical(probs)` of a CUDA tensor checks its constraint on the host every step (validation is on by
    default); `validate_args=False` reads nothing."""
    root = _project(tmp_path / "p", {"train.py": SAMPLER})
    items = check(root, "--no-cache", "--select", "GPU112", "train.py")
    assert [d["location"]["row"] for d in items] == [10]
