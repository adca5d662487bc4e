"""GPU104 on copies to a CPU device held by a name, and on detached copies of a name the kinds call numpy
(issue 11, sixth set: a speaker encoder computes its loss on the CPU, `loss_device = torch.device("cpu")`, and
moves the embeddings there every step with `.to(loss_device)`; fourth set: SAC's `actions.detach().cpu()`). The
copy is the same blocking device-to-host copy as `.cpu()`. The same spelling in a CPU-only script moves nothing
(the tensor never left the host) and stays quiet.
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


SAC = """\
import numpy as np
import torch

device = torch.device("cuda")
actor = torch.nn.Linear(4, 2).to(device)
opt = torch.optim.Adam(actor.parameters(), fused=True)
obs = np.zeros(4)
for global_step in range(1000000):
    if global_step < 100:
        actions = np.array([0.0, 1.0])
    else:
        actions = actor(torch.as_tensor(obs, device=device))
        actions = actions.detach().cpu().numpy()
    obs = env.step(actions)
    loss = actor(torch.as_tensor(obs, device=device)).sum()
    loss.backward()
    opt.step()
"""


def test_a_detached_copy_of_a_name_also_bound_to_numpy_is_a_tensor_copy(tmp_path: Path):
    """SAC's `actions` is a numpy array in the warm-up branch and the policy's output in the other: numpy arrays
    have no `.detach()`, so `actions.detach().cpu()` copies a tensor to the host, every environment step."""
    root = write_project(tmp_path, {"train.py": SAC})
    assert ("train.py", 13, "GPU104") in found(check(root, "--no-cache", "--select", "GPU104", "."))

