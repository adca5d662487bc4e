"""A host tensor shaped like another before its copy (branch recall35; heldout12 GAIL's `compute_grad_pen`):
`alpha = torch.rand(n, 1)`, then `alpha = alpha.expand_as(expert_data).to(expert_data.device)` every discriminator
batch. `expand_as`/`view_as`/`reshape_as` take only the other tensor's shape, so the values are the same on either
device, as with `expand`/`view`/`reshape`: the tensor is built on the host and copied every step (GPU203).
"""

from __future__ import annotations

from projects import check, found, write_project

TRAIN = """\
import torch


def grad_pen(x, lambda_=10):
    alpha = torch.rand(x.size(0), 1)
    alpha = alpha.expand_as(x).to(x.device)
    mixed = alpha * x
    return mixed.pow(2).mean() * lambda_


def train(model, loader, optimizer):
    device = torch.device("cuda")
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        loss = model(x).sum() + grad_pen(x)
        loss.backward()
        optimizer.step()
"""


def test_factory_shaped_like_a_device_tensor_then_copied(tmp_path):
    for method in ("expand_as", "view_as", "reshape_as"):
        root = write_project(tmp_path / method, {"train.py": TRAIN.replace("expand_as", method)})
        assert ("train.py", 6, "GPU203") in found(check(root, "--no-cache")), method


def test_shaped_like_and_copied_to_the_host_stays_quiet(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": TRAIN.replace(".to(x.device)", '.to("cpu")')})
    assert ("train.py", 6, "GPU203") not in found(check(root, "--no-cache"))
