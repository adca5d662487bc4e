"""GPU203 on a host tensor drawn each step and rebound to its own copy (issue 11, recall: "a host tensor built in
one statement and moved to the device in a later one"): `t = torch.rand((B,))` then `t = t.to(device)` in the same
iteration. The rebinding was read as a second binding the earlier read could see (from the last iteration), so
the name had no single origin and nothing was reported. SiT's transport does it in the sampler its
`training_losses` calls every step, with host arithmetic over the draw (`th.rand((B,)) * (t1 - t0) + t0`) and a
copy to the device of the batch it is given (`t = t.to(x1)`): reported there, without a fix (the arithmetic and a
tensor as the copy's target are not rewritten). The unsafe fix of the plain case builds the draw on the device and
drops the statement that copied it, rather than leaving `t = t`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from projects import check, write_project

LOOP = """\
import torch
from torch.utils.data import DataLoader


def main(model, dataset):
    device = torch.device("cuda")
    model = model.to(device)
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    for x, y in loader:
        x1 = x.to(device, non_blocking=True)
        t = torch.rand((x1.shape[0],))
        t = t.to(device)
        loss = model(x1, t).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

TRANSPORT_INIT = """\
from .transport import Transport


def create_transport(path_type="Linear", train_eps=None):
    state = Transport(path_type=path_type, train_eps=train_eps)
    return state
"""

TRANSPORT = """\
import torch as th


class Transport:
    def __init__(self, *, path_type, train_eps):
        self.path_type = path_type
        self.train_eps = train_eps

    def check_interval(self):
        return 0.0, 1.0

    def sample(self, x1):
        x0 = th.randn_like(x1)
        t0, t1 = self.check_interval()
        t = th.rand((x1.shape[0],)) * (t1 - t0) + t0
        t = t.to(x1)
        return t, x0, x1

    def training_losses(self, model, x1, model_kwargs=None):
        t, x0, x1 = self.sample(x1)
        xt = t[:, None] * x1 + (1 - t[:, None]) * x0
        model_output = model(xt, t, **model_kwargs)
        return {"loss": ((model_output - (x1 - x0)) ** 2).mean()}
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from transport import create_transport


def main(model, dataset):
    device = torch.device("cuda")
    model = model.to(device)
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    transport = create_transport("Linear")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        loss_dict = transport.training_losses(model, x, dict(y=y))
        loss = loss_dict["loss"].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def _gpu203(root: Path, *args: str) -> dict:
    return {(Path(d["filename"]).name, d["location"]["row"]): d for d in check(root, "--no-cache", "--select",
                                                                              "GPU203", *args, ".")}


def test_a_draw_rebound_to_its_copy_in_the_loop_is_reported_and_fixed(tmp_path: Path):
    root = write_project(tmp_path, {"train.py": LOOP})
    found = _gpu203(root)
    assert ("train.py", 13) in found and found[("train.py", 13)]["fix"]["applicability"] == "unsafe"
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--select", "GPU203", "--fix",
                          "--unsafe-fixes", "train.py"], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    fixed = (root / "train.py").read_text()
    assert "        t = torch.rand((x1.shape[0],), device=device)\n        loss = model(x1, t).mean()\n" in fixed
    assert "t = t\n" not in fixed


def test_a_draw_copied_to_a_dtype_is_no_device_copy(tmp_path: Path):
    quiet = LOOP.replace("def main(model, dataset):", "def main(model, dataset, dtype):") \
        .replace("t = t.to(device)", "t = t.to(dtype)")
    assert ("train.py", 13) not in _gpu203(write_project(tmp_path, {"train.py": quiet}))


def test_a_draw_also_read_on_the_host_stays_there(tmp_path: Path):
    quiet = LOOP.replace("        t = t.to(device)\n", "        print(t.tolist())\n        t = t.to(device)\n")
    assert ("train.py", 14) not in _gpu203(write_project(tmp_path, {"train.py": quiet}))


def test_the_transport_sampler_run_every_step_is_reported_without_a_fix(tmp_path: Path):
    root = write_project(tmp_path, {"train.py": TRAIN, "transport/__init__.py": TRANSPORT_INIT,
                                    "transport/transport.py": TRANSPORT})
    found = _gpu203(root)
    assert ("transport.py", 16) in found and found[("transport.py", 16)]["fix"] is None


PROBE = """\
import torch

if __name__ == "__main__":
    if torch.cuda.is_available():
        num_gpu = torch.cuda.device_count()
        for k in range(num_gpu):
            device = f"cuda:{k}"
            try:
                x = torch.tensor([1, 2.0], dtype=torch.float32)
                x = x.to(device)
            except Exception as e:
                print(f"Unable to copy tensor to device={device}: {e}")
"""


def test_a_loop_over_the_visible_gpus_runs_once_per_gpu(tmp_path: Path):
    """detectron2's `collect_env` copies a probe tensor to each GPU: a loop over `range(torch.cuda.device_count())`
    runs a handful of times, not once per step."""
    root = write_project(tmp_path, {"collect_env.py": PROBE})
    found = check(root, "--no-cache", "--select", "GPU203,GPU410", ".")
    assert found == []
