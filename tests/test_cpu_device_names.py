"""GPU104 on copies to a CPU device held by a name (issue 11, sixth set: a speaker encoder computes its loss on the
CPU, `loss_device = torch.device("cpu")`, and moves the embeddings there every step with
`.to(loss_device)`). The copy is the same blocking device-to-host copy as `.cpu()`. The same spelling in a
CPU-only script moves nothing (the tensor never left the host) and stays quiet.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

TRAIN = """\
import torch


def train(loader):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loss_device = torch.device("cpu")
    model = torch.nn.Linear(8, 8).to(device)
    opt = torch.optim.Adam(model.parameters(), fused=True)
    for x in loader:
        embeds = model(x.to(device))
        on_host = embeds.view(4, 2, -1).to(loss_device)
        loss = on_host.sum()
        loss.backward()
        opt.step()
"""

CPU_ONLY = """\
import torch


def train(loader):
    device = torch.device("cpu")
    model = torch.nn.Linear(8, 8).to(device)
    opt = torch.optim.Adam(model.parameters())
    for x in loader:
        out = model(x.to(device)).to(device)
        loss = out.sum()
        loss.backward()
        opt.step()
"""


def test_a_copy_to_a_named_cpu_device_every_step_is_reported(tmp_path: Path):
    root = write_project(tmp_path, {"train.py": TRAIN})
    assert ("train.py", 11, "GPU104") in found(check(root, "--no-cache", "--select", "GPU104", "."))


def test_the_same_names_in_a_cpu_only_script_stay_quiet(tmp_path: Path):
    root = write_project(tmp_path, {"train.py": CPU_ONLY})
    assert not found(check(root, "--no-cache", "--select", "GPU104", "."))
