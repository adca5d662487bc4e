"""GPU203: `torch.tensor(values, device=...)` of values the kinds did not know were on the host (branch recall39,
heldout11's sam2):

- sizes read from a shape (`torch.tensor(targets.shape[1], device=targets.device)`): Python integers, whatever
  `targets` is;
- a value an `isinstance` test says is no tensor (`if not isinstance(bound, torch.Tensor): bound =
  torch.tensor(bound, device=device)`, or the `else` of the positive test).

Both build the tensor on the host and copy it every step. The positive branch (`if isinstance(x, torch.Tensor):`,
where `x` may already be on the device), unknown values and code run once stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

PROGRAM = '''
import torch
from torch.utils.data import DataLoader


def helper(x, bound=1.0):
    BODY
    return x * bound


model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 8), batch_size=8, pin_memory=True)
for x in loader:
    x = x.cuda(non_blocking=True)
    model(helper(x)).sum().backward()
    opt.step()
'''


def lint(root: Path, body: str, program: str = PROGRAM) -> set:
    text = program.replace("BODY", body)
    items = check(write_project(root, {"train.py": text}), "--no-cache", "--exit-zero", "--select", "GPU203")
    return {row for _, row, _ in found(items)}


def test_sizes_read_from_a_shape_are_host_values(tmp_path: Path):
    for body in ("bound = torch.tensor(x.shape[1], device=x.device)",
                 "bound = torch.tensor((x.shape[1]), device=x.device, dtype=torch.float)",
                 "bound = torch.tensor([x.shape[0], 2], device=x.device)",
                 "bound = torch.tensor(x.shape, device=x.device)"):
        assert 7 in lint(tmp_path, body), body


def test_a_value_narrowed_away_from_tensors_is_a_host_value(tmp_path: Path):
    for body in ("if not isinstance(bound, torch.Tensor):\n        bound = torch.tensor(bound, device=x.device)",
                 "if not torch.is_tensor(bound):\n        bound = torch.tensor(bound, device=x.device)",
                 "if isinstance(bound, torch.Tensor):\n        bound = bound.to(x.device)\n    else:\n"
                 "        bound = torch.tensor(bound, device=x.device)"):
        rows = lint(tmp_path, body)
        assert rows & {8, 10}, (body, rows)


def test_possible_device_values_and_code_run_once_stay_quiet(tmp_path: Path):
    # the positive branch: `bound` is a tensor there, maybe on the device already
    assert not lint(tmp_path, "if isinstance(bound, torch.Tensor):\n        bound = torch.as_tensor(bound, device=x.device)")
    # nothing says what `bound` is
    assert not lint(tmp_path, "bound = torch.as_tensor(bound, device=x.device)")
    # the helper runs once, before the loop
    once = PROGRAM.replace("model(helper(x))", "model(x)").replace("for x in loader:",
                                                                   "helper(torch.randn(2, 8).cuda())\nfor x in loader:")
    assert not lint(tmp_path, "bound = torch.tensor(x.shape[1], device=x.device)", once)
