"""An EMA written over state dicts (issue 11, recall; DeepLearningExamples' `EMA.__call__`): `for name, value in
model.state_dict().items(): shadow_sd[name].mul_(d); shadow_sd[name].add_(...)`, with `shadow_sd =
shadow.state_dict()`, updates every tensor of the model one at a time (state-dict tensors share storage with the
module's parameters and buffers). GPU411 reports the loop where the callable's `__call__` runs every step, also
when the class lives in a module that names no device (the training script does). A state dict copied once
before training, and a loop that only reads the state dict, stay quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_model_code import check, found  # the same CLI run and finding keys

EMA = textwrap.dedent("""\
    import torch


    class Shadow:
        def __init__(self, decay, module):
            self.decay = decay
            self.module = module

        def __call__(self, model):
            d = self.decay
            shadow_sd = self.module.state_dict()
            with torch.no_grad():
                for key, value in model.state_dict().items():
                    if key.endswith("num_batches_tracked"):
                        continue
                    shadow_sd[key].mul_(d)
                    shadow_sd[key].add_((1.0 - d) * value)

        def norms(self, model):
            return {key: value.float().norm() for key, value in model.state_dict().items()}
""")

TRAIN = textwrap.dedent("""\
    import copy
    import torch
    from ema import Shadow

    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8)).cuda()
    shadow = Shadow(0.999, copy.deepcopy(net))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    loader = torch.utils.data.DataLoader(range(8), pin_memory=True, num_workers=2)
    for x in loader:
        x = x.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = net(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        shadow(net)
        sizes = shadow.norms(net)
""")


def _write(root: Path, files: dict) -> Path:
    (root / ".git").mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_state_dict_ema_called_every_step_from_a_gpu_script(tmp_path: Path):
    root = _write(tmp_path, {"ema.py": EMA, "train.py": TRAIN})
    # the loop where it is written, and the per-step call that runs it (analysis/param_loops.py)
    assert {f for f in found(check(root, "--no-cache", ".")) if f[2] == "GPU411"} == {
        ("ema.py", 13, "GPU411"), ("train.py", 16, "GPU411")}


def test_state_dict_ema_run_once_stays_quiet(tmp_path: Path):
    """Averaged once, after training: not per step."""
    once = TRAIN.replace("    shadow(net)\n", "").replace("    sizes = shadow.norms(net)\n", "") + "shadow(net)\n"
    root = _write(tmp_path, {"ema.py": EMA, "train.py": once})
    assert {f for f in found(check(root, "--no-cache", ".")) if f[2] == "GPU411"} == set()
