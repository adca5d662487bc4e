"""Methods of a class the training script builds itself, called on the instance every step (issue 11, recall):
`stats = Meter(...)` then `stats.read(...)` in the loop makes `Meter.read` per-step code, as a helper function
called there would be. Two shapes stay quiet that the wider reach met on DeepLearningExamples:

- a class that keeps host staging buffers (`self.host[name] = torch.zeros(1).pin_memory()`, filled from the
  device with `copy_(..., non_blocking=True)`): `.item()` of such a buffer reads pinned host memory, no sync
  (BERT's `SyncFreeStats`);
- a block under `if self.graph is None:` that builds the attribute it tests, itself or through a method of the
  class (`self._capture(...)` assigning `self.graph`): it runs once (DLRM's CUDA-graph capture), not per step.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_model_code import check, found  # the same CLI run and finding keys

SCRIPT = textwrap.dedent("""\
    import torch


    class Meter:
        def __init__(self):
            self.host = {}
            self.device = {}

        def add(self, name, device_tensor):
            self.host[name] = torch.zeros(1).pin_memory()
            self.device[name] = device_tensor

        def refresh(self):
            for name in self.host:
                self.host[name].copy_(self.device[name], non_blocking=True)

        def read(self, name):
            return self.host[name].item()

        def read_device(self, name):
            return self.device[name].item()


    class Stepper:
        def __init__(self, net):
            self.net = net
            self.graph = None

        def _capture(self, x):
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()

        def step(self, x):
            if self.graph is None:
                torch.cuda.synchronize()
                self._capture(x)
            return self.net(x).sum()


    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8)).cuda()
    stepper = Stepper(net)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    meter = Meter()
    meter.add("loss", torch.zeros(1, device="cuda"))
    loader = torch.utils.data.DataLoader(range(8), pin_memory=True, num_workers=2)
    for x in loader:
        x = x.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = stepper.step(x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        meter.refresh()
        seen = meter.read("loss")
        synced = meter.read_device("loss")
""")


def test_methods_of_a_local_instance_run_every_step(tmp_path: Path):
    """`meter.read_device(...)` reads a device tensor every step: reported in the method. `meter.read(...)`
    reads a pinned host buffer, and the synchronize under `if self.graph is None:` runs once: quiet."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(SCRIPT)
    assert {f for f in found(check(tmp_path, "--no-cache", ".")) if f[2].startswith("GPU1")} == {
        ("train.py", 21, "GPU101")}


def test_a_setter_of_the_buffers_that_the_script_calls_makes_them_unknown(tmp_path: Path):
    """Once something stores another tensor into the buffers (`meter.host["loss"] = loss` through a setter the
    script calls), `.item()` of them may read a device tensor: reported again."""
    script = SCRIPT.replace("    def read(self, name):", "    def put(self, name, value):\n"
                            "        self.host[name] = value\n\n    def read(self, name):").replace(
        "    seen = meter.read(\"loss\")\n", "    meter.put(\"loss\", loss.detach())\n"
        "    seen = meter.read(\"loss\")\n")
    assert "meter.put(" in script
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(script)
    assert ("train.py", 21, "GPU101") in found(check(tmp_path, "--no-cache", "."))
