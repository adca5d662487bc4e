"""A batch built on the host by a project helper (`get_batch()`, `loader.next_batch()` of a class in another
module) and copied to the GPU in the training loop from pageable memory: GPU410 at the copy, naming the helper,
with the line that builds it as related location. Helpers that hand back device or pinned tensors stay silent."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

DATA = textwrap.dedent("""\
    import numpy as np
    import torch


    class TokenLoader:
        def __init__(self, tokens, B, T):
            self.tokens, self.B, self.T, self.pos = tokens, B, T, 0

        def next_batch(self):
            B, T = self.B, self.T
            buf = self.tokens[self.pos:self.pos + B * T + 1]
            buf = torch.tensor(buf.astype(np.int32), dtype=torch.long)
            x = buf[:-1].view(B, T)
            y = buf[1:].view(B, T)
            self.pos += B * T
            return x, y


    def get_batch(data, B, T):
        ix = np.random.randint(0, len(data) - T, B)
        x = torch.stack([torch.from_numpy(data[i:i + T].astype(np.int64)) for i in ix])
        return x


    def get_batch_pinned(data, B, T, device):
        x = torch.stack([torch.from_numpy(data[i:i + T]) for i in range(B)])
        return x.pin_memory().to(device, non_blocking=True)


    def get_batch_either(data, B, T, device, on_gpu):
        x = torch.stack([torch.from_numpy(data[i:i + T]) for i in range(B)])
        if on_gpu:
            return x.to(device)
        return x
""")

TRAIN = textwrap.dedent("""\
    import torch
    from data import TokenLoader, get_batch, get_batch_pinned, get_batch_either

    device = "cuda"


    def train(model, opt, tokens, val_tokens, steps):
        loader = TokenLoader(tokens, 4, 64)
        val_loader = None
        if val_tokens is not None:
            val_loader = TokenLoader(val_tokens, 4, 64)
        for step in range(steps):
            x, y = loader.next_batch()
            x, y = x.to(device), y.to(device)
            model(x, y).backward()
            opt.step()
            xb = get_batch(tokens, 4, 64)
            model(xb.to(device), y).backward()
            xp = get_batch_pinned(tokens, 4, 64, device)
            model(xp.to(device), y).backward()
            xe = get_batch_either(tokens, 4, 64, device, True)
            model(xe.to(device), y).backward()
            if step % 2 == 0:
                xs = get_batch(tokens, 4, 64)
            else:
                xs = torch.zeros(4, 64, dtype=torch.long)
            model(xs.to(device), y).backward()
            if val_loader is not None and step % 100 == 0:
                with torch.no_grad():
                    for _ in range(20):
                        vx, vy = val_loader.next_batch()
                        vx, vy = vx.to(device), vy.to(device)
                        model(vx, vy)
""")


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "data.py").write_text(DATA)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def _check(root: Path, *args: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--select", "GPU410",
                          "--output-format", "json", *args], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_batches_a_helper_builds_on_the_host_are_reported_at_the_copy_in_the_loop(tmp_path):
    found = _check(_project(tmp_path), "train.py")  # one file named: the helpers' module is read anyway
    rows = sorted((d["location"]["row"], d["location"]["column"]) for d in found)
    # next_batch's x and y (line 14), get_batch (18), the optional validation loader's batches (32);
    # not: the pinned helper (20), the helper that moves one path to the device (22), a conditional binding (27)
    assert rows == [(14, 16), (14, 30), (18, 15), (32, 30), (32, 45)]
    by_row = {d["location"]["row"]: d for d in found}
    assert "`TokenLoader.next_batch` returns a batch it built on the host" in by_row[14]["message"]
    assert (by_row[14]["related"][0]["filename"], by_row[14]["related"][0]["location"]["row"]) == ("data.py", 12)
    assert (by_row[18]["related"][0]["filename"], by_row[18]["related"][0]["location"]["row"]) == ("data.py", 21)


def test_the_fix_pins_the_returned_batch_and_copies_it_without_blocking(tmp_path):
    root = _project(tmp_path)
    subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--select", "GPU410", "--fix",
                    "train.py"], cwd=root, capture_output=True, text=True, timeout=120)
    fixed = (root / "train.py").read_text()
    assert "x, y = (x.pin_memory() if torch.cuda.is_available() else x).to(device, non_blocking=True), " \
           "(y.pin_memory() if torch.cuda.is_available() else y).to(device, non_blocking=True)" in fixed
    assert "model(xp.to(device), y)" in fixed  # the pinned helper's batch is left as it is
    compile(fixed, "train.py", "exec")
