"""A project helper that builds the tensor it returns on the host with torch factories, copied (or used as an
index) at the caller every step (recall56; heldout16's optical-flow `coords_grid(b, h, w).to(flow.device)`,
heldout14's `context_rep[cycle_index(n, i + 1)]`): GPU203 at the caller's copy, the factory as related location.

- Every `return` hands back a tensor built there by `torch.arange`/`meshgrid`/`stack`/... without `device=`
  (through names, views, `.repeat`, `.float()` and arithmetic with numbers or parameters).
- A copy inside the helper under `if device is not None:` counts as host only when the call does not pass
  `device`; a call that passes it, or a helper that returns something else on any path, stays quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

GEOMETRY = textwrap.dedent("""\
    import torch


    def coords_grid(b, h, w, homogeneous=False, device=None):
        y, x = torch.meshgrid(torch.arange(h), torch.arange(w))
        stacks = [x, y]
        if homogeneous:
            ones = torch.ones_like(x)
            stacks.append(ones)
        grid = torch.stack(stacks, dim=0).float()
        grid = grid[None].repeat(b, 1, 1, 1)
        if device is not None:
            grid = grid.to(device)
        return grid


    def cycle_index(num, shift):
        arr = torch.arange(num) + shift
        arr[-shift:] = torch.arange(shift)
        return arr
""")

MODEL = textwrap.dedent("""\
    import torch
    from geometry import coords_grid


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 2, 3, padding=1)

        def forward(self, x):
            b, c, h, w = x.shape
            init = coords_grid(b, h, w).to(x.device)
            return self.conv(x) + init
""")

TRAIN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from geometry import cycle_index
    from model import Net

    device = torch.device("cuda")
    model = Net().to(device)
    opt = torch.optim.Adam(model.parameters(), fused=True)
    loader = DataLoader(torch.randn(64, 3, 8, 8), batch_size=4, pin_memory=True)
    for x in loader:
        xd = x.to(device, non_blocking=True)
        neg = xd[cycle_index(len(xd), 1)]
        loss = (model(xd) - model(neg)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")


def _items(tmp_path, geometry=GEOMETRY, model=MODEL, train=TRAIN):
    root = write_project(tmp_path / "p", {"geometry.py": geometry, "model.py": model, "train.py": train})
    return check(root, "--no-cache", "--exit-zero")


def _gpu203(tmp_path, **modules):
    return {(path, row) for path, row, code in found(_items(tmp_path, **modules)) if code == "GPU203"}


def test_copy_of_a_helpers_host_grid_in_per_step_model_code_is_reported(tmp_path):
    assert ("model.py", 12) in _gpu203(tmp_path)


def test_the_message_names_the_helper_and_the_factory(tmp_path):
    found_ = [d for d in _items(tmp_path) if d["code"] == "GPU203" and d["location"]["row"] == 12]
    assert found_ and "`coords_grid(...)`" in found_[0]["message"] and "`torch.arange`" in found_[0]["message"]


def test_host_index_returned_by_a_helper_indexing_a_device_tensor_is_reported(tmp_path):
    assert ("train.py", 12) in _gpu203(tmp_path)


def test_passing_the_device_stays_quiet(tmp_path):
    passed = MODEL.replace("coords_grid(b, h, w).to(x.device)", "coords_grid(b, h, w, device=x.device).to(x.device)")
    assert passed != MODEL
    assert ("model.py", 12) not in _gpu203(tmp_path, model=passed)


def test_helper_building_on_the_device_stays_quiet(tmp_path):
    on_device = GEOMETRY.replace("torch.arange(h), torch.arange(w)",
                                 "torch.arange(h, device=\"cuda\"), torch.arange(w, device=\"cuda\")") \
        .replace("arr = torch.arange(num) + shift", "arr = torch.arange(num, device=\"cuda\") + shift")
    assert on_device.count("device=\"cuda\"") == 3
    assert not {("model.py", 12), ("train.py", 12)} & _gpu203(tmp_path, geometry=on_device)


def test_helper_returning_its_argument_on_some_path_stays_quiet(tmp_path):
    mixed = GEOMETRY.replace("def cycle_index(num, shift):\n",
                             "def cycle_index(num, shift, given=None):\n    if given is not None:\n"
                             "        return given\n")
    assert mixed != GEOMETRY
    assert ("train.py", 12) not in _gpu203(tmp_path, geometry=mixed)


def test_copy_made_once_before_the_loop_stays_quiet(tmp_path):
    once = TRAIN.replace("for x in loader:\n", "base = cycle_index(8, 1).to(device)\nfor x in loader:\n") \
        .replace("    neg = xd[cycle_index(len(xd), 1)]\n", "    neg = xd\n")
    assert once != TRAIN
    assert ("train.py", 10) not in _gpu203(tmp_path, train=once)


def test_helper_of_host_values_gets_no_device_advice(tmp_path):
    tokens = GEOMETRY + textwrap.dedent("""\


        def text_to_token_ids(text):
            encoded = [ord(c) for c in text]
            return torch.tensor(encoded).unsqueeze(0)
    """)
    train = TRAIN.replace("from geometry import cycle_index", "from geometry import cycle_index, text_to_token_ids") \
        .replace("    neg = xd[cycle_index(len(xd), 1)]\n",
                 "    neg = xd[cycle_index(len(xd), 1)]\n    ids = text_to_token_ids(\"abc\").to(device)\n")
    assert "ids = text_to_token_ids" in train
    found_ = [d for d in _items(tmp_path, geometry=tokens, train=train)
              if d["code"] == "GPU203" and d["location"]["row"] == 13]
    assert found_ and "from host values (`torch.tensor`)" in found_[0]["message"]
