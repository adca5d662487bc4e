"""Elements of a tuple a module's own function returns (branch recall35; heldout11 VideoMAE's `Mixup._mix_elem`):
`lam_batch, use_cutmix = self._params_per_elem(batch_size)`, where every `return` of `_params_per_elem` is
`return lam, use_cutmix` with `lam` a numpy array, makes `lam_batch` a numpy array: `torch.tensor(lam_batch,
device=x.device)` every step builds the tensor from host values and copies it (GPU203). Unpacking anything else
still tells nothing.
"""

from __future__ import annotations

from projects import check, found, write_project

TRAIN = """\
import numpy as np
import torch


class Mixer:
    def _params(self, n):
        lam = np.ones(n, dtype=np.float32)
        flags = np.zeros(n, dtype=bool)
        if self.enabled:
            lam = np.random.beta(1.0, 1.0, size=n)
        return lam, flags

    def mix(self, x):
        lam_batch, flags = self._params(len(x))
        return x * torch.tensor(lam_batch, device=x.device, dtype=x.dtype).unsqueeze(1)


def train(model, loader, optimizer):
    device = torch.device("cuda")
    mixer = Mixer()
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        loss = model(mixer.mix(x)).sum()
        loss.backward()
        optimizer.step()
"""


def test_numpy_element_of_a_returned_tuple_is_a_host_value(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": TRAIN})
    assert ("train.py", 15, "GPU203") in found(check(root, "--no-cache"))


def test_element_of_a_tuple_of_unknown_values_stays_quiet(tmp_path):
    train = TRAIN.replace("        return lam, flags\n", "        return self.table[lam], flags\n")
    root = write_project(tmp_path / "p", {"train.py": train})
    assert ("train.py", 15, "GPU203") not in found(check(root, "--no-cache"))
