"""A helper that hands a parameter to NumPy on every call (`np.histogram(output, ...)`) is given host arrays:
NumPy raises on a CUDA tensor, so its boolean-mask indexing of that parameter waits for no GPU and the call is no
GPU112 sync (issue 11, precision19's sample: Pointcept's testers call the NumPy `intersection_and_union` each
test cloud, next to the `intersection_and_union_gpu` the trainer uses). A helper that reads the parameter with
torch only is still reported, and so is a converter whose NumPy call is a fallback after a `return` for tensors
(tianshou's `to_numpy`: `if isinstance(x, torch.Tensor): return x.detach().cpu().numpy()` ... `np.asanyarray(x)`).
"""

from __future__ import annotations

from pathlib import Path

from tests.projects import lint_script

SCRIPT = """import numpy as np
import torch

model = torch.nn.Linear(4, 3).cuda()


def intersection_and_union(output, target, K, ignore_index=-1):
{body}


def test(loader):
    for batch in loader:
        feat = batch["feat"].cuda(non_blocking=True)
        segment = batch["segment"]
        with torch.no_grad():
            pred = model(feat).argmax(1)
        area = intersection_and_union(pred, segment, 3)
        print(area)


test(torch.utils.data.DataLoader(range(4), pin_memory=True))
"""

NUMPY = """    mask = target != ignore_index
    output, target = output[mask], target[mask]
    intersection = output[np.where(output == target)[0]]
    area, _ = np.histogram(intersection, bins=np.arange(K + 1))
    total, _ = np.histogram(output, bins=np.arange(K + 1))
    return area, total"""

TORCH = """    mask = target != ignore_index
    output, target = output[mask], target[mask]
    intersection = output[output == target]
    return torch.histc(intersection.float(), bins=K, min=0, max=K - 1)"""

def _gpu112(tmp_path: Path, body: str) -> set:
    return {row for row, code in lint_script(tmp_path, SCRIPT.format(body=body)) if code == "GPU112"}


def test_a_helper_handing_its_parameter_to_numpy_is_given_host_arrays(tmp_path: Path):
    assert _gpu112(tmp_path, NUMPY) == set()


def test_a_torch_helper_is_reported(tmp_path: Path):
    assert _gpu112(tmp_path, TORCH) == {20}



CONVERTER = """import numpy as np
import torch

model = torch.nn.Linear(4, 3).cuda()


def to_numpy(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asanyarray(x)


def act(loader):
    for batch in loader:
        obs = batch.cuda(non_blocking=True)
        with torch.no_grad():
            action = to_numpy(model(obs).argmax(dim=-1))
        print(action)


act(torch.utils.data.DataLoader(range(4), pin_memory=True))
"""


def test_a_numpy_fallback_after_a_return_for_tensors_is_reported(tmp_path: Path):
    assert (17, "GPU112") in lint_script(tmp_path, CONVERTER)
