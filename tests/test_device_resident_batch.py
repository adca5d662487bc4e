"""GPU410's unsafe fix for a `get_batch` that slices random windows of one module-level numpy array: the array is
uploaded once and the windows are gathered on the device. On CPU torch the device draw uses the same generator as
the host draw, so for a fixed seed the fixed helper must return the very batches the original returned (values,
dtype, shape). Shapes that are not exactly this one keep the pinned copy (the safe fix) only."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from gpulint.runner import fix_source

torch = pytest.importorskip("torch")

PROGRAM = textwrap.dedent("""\
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    train_data = (np.cumsum(rng.integers(1, 8, size=5000)) % 300).astype(np.uint16)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    block_size, batch_size = 16, 4


    def get_batch():
        ix = torch.randint(len(train_data) - block_size, (batch_size,))
        x = torch.stack([torch.from_numpy((train_data[i:i + block_size]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((train_data[i + 1:i + 1 + block_size]).astype(np.int64)) for i in ix])
        x, y = x.to(device), y.to(device)
        return x, y


    for step in range(1000):
        x, y = get_batch()
        loss = model(x, y)
        loss.backward()
    """)


def _helper(source: str):
    """The module's `get_batch`, with the training loop left out (no model here)."""
    namespace: dict = {}
    exec(compile(source.split("\nfor step in range")[0], "<program>", "exec"), namespace)
    return namespace["get_batch"]


def _batches(source: str, seed: int, n: int = 5):
    get_batch = _helper(source)
    torch.manual_seed(seed)
    return [get_batch() for _ in range(n)]


def test_unsafe_fix_gathers_on_the_device():
    fixed = fix_source(PROGRAM, unsafe=True)
    assert "train_data_device = torch.from_numpy(train_data.astype(np.int64)).to(device)" in fixed
    assert "torch.stack" not in fixed and ".to(device)\n    return" not in fixed
    assert "ix = torch.randint(len(train_data) - block_size, (batch_size,), device=device)" in fixed
    assert fix_source(fixed, unsafe=True) == fixed  # idempotent


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_fixed_helper_returns_the_same_batches(seed):
    fixed = fix_source(PROGRAM, unsafe=True)
    assert fixed != PROGRAM
    for (x0, y0), (x1, y1) in zip(_batches(PROGRAM, seed), _batches(fixed, seed)):
        assert x0.dtype == x1.dtype == torch.int64 and y0.dtype == y1.dtype
        assert x0.shape == x1.shape == (4, 16) and y0.shape == y1.shape
        assert torch.equal(x0, x1) and torch.equal(y0, y1)


def test_windows_reach_the_last_token():
    """An array one token longer than a window: the only offset the draw allows is 0, and `y` ends with the
    array's last token, on both sides."""
    source = PROGRAM.replace("size=5000", "size=17")
    fixed = fix_source(source, unsafe=True)
    assert "train_data_device" in fixed
    (x0, y0), (x1, y1) = _batches(source, 0, 1)[0], _batches(fixed, 0, 1)[0]
    assert torch.equal(x0, x1) and torch.equal(y0, y1)
    last = int(_helper(fixed).__globals__["train_data"][-1])
    assert int(y0[0, -1]) == int(y1[0, -1]) == last


def test_safe_fix_still_pins():
    fixed = fix_source(PROGRAM)
    assert "train_data_device" not in fixed
    assert "x.pin_memory()" in fixed and "non_blocking=True" in fixed


@pytest.mark.parametrize("change", [
    # the array is changed after it would have been uploaded: the snapshot would go stale
    ("block_size, batch_size = 16, 4\n", "block_size, batch_size = 16, 4\nnp.random.shuffle(train_data)\n"),
    # a window one token past what the draw allows: the host slice is shorter (torch.stack fails), a device
    # gather would read out of bounds
    ("train_data[i + 1:i + 1 + block_size]", "train_data[i + 2:i + 2 + block_size]"),
    # the array is loaded inside the helper (nanoGPT's memmap per call): nothing to upload once
    ("def get_batch():\n", "def get_batch():\n    train_data = np.arange(100, dtype=np.uint16)\n"),
    # the device is chosen after the helper is defined
    ('device = "cuda" if torch.cuda.is_available() else "cpu"\n', ""),
    # no conversion: the array's own dtype (uint16) is not one every device indexes
    (".astype(np.int64)) for i in ix])\n    y", ") for i in ix])\n    y"),
    # the offsets are used for something else too
    ("    return x, y\n", "    return x, y, ix\n"),
])
def test_other_shapes_keep_the_pinned_copy(change):
    old, new = change
    assert old in PROGRAM
    source = PROGRAM.replace(old, new)
    if not new.strip():
        source = source.replace("\n\nfor step in range(1000):", f"\n\n{old}for step in range(1000):")
    compile(source, "<changed>", "exec")
    fixed = fix_source(source, unsafe=True)
    assert "_device = torch.from_numpy" not in fixed
    assert "pin_memory()" in fixed


def _check(path, *args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "gpulint", "check", "--select", "GPU410", *args, str(path)],
                          capture_output=True, text=True, cwd=path.parent)


def test_cli_shows_both_fixes_and_applies_the_one_allowed(tmp_path):
    """What a user sees: the unsafe fix with its safe fallback named, `[*]` (fixable with --fix), the same from
    the cache; --fix writes the pinned copy, --fix --unsafe-fixes the device gather."""
    path = tmp_path / "train.py"
    path.write_text(PROGRAM)
    for run in (_check(path), _check(path)):  # the second read from the cache
        assert "fix available (unsafe, --unsafe-fixes): Keep `train_data` on the device" in run.stdout
        assert "with --fix alone (safe): Pin the batch" in run.stdout
        assert "2 fixable with --fix" in run.stdout
    concise = _check(path, "--output-format", "concise")
    assert concise.stdout.count("GPU410 [*]") == 2
    _check(path, "--fix")
    assert "pin_memory()" in path.read_text() and "train_data_device" not in path.read_text()
    path.write_text(PROGRAM)
    _check(path, "--fix", "--unsafe-fixes")
    assert "train_data_device[" in path.read_text() and "pin_memory" not in path.read_text()
