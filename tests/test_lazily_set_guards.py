"""`if (threshold_mem is None) or (global_step % every == 0):` whose block computes `threshold_mem` runs on the
first pass and then periodically (issue 11, precision; movement pruning's global top-k threshold, recomputed every
25 steps). Its `.item()` is not reported as every-step code; when the loop also resets the value to `None` on
every pass, or the other side of the `or` is not periodic, the block runs every step and is reported."""

from __future__ import annotations

from pathlib import Path

from tests.projects import lint_script

SCRIPT = """import torch

model = torch.nn.Linear(8, 2).cuda()
optimizer = torch.optim.Adam(model.parameters())
data = torch.utils.data.TensorDataset(torch.randn(64, 8))
loader = torch.utils.data.DataLoader(data, batch_size=8, pin_memory=True)
threshold_mem = None
global_step = 0
for (x,) in loader:
    x = x.cuda(non_blocking=True)
{reset}    if (threshold_mem is None) or ({period}):
        concat = torch.cat([p.view(-1) for p in model.parameters()])
        threshold_mem = concat.kthvalue(3).values.item()
    loss = model(x).clamp(min=threshold_mem).sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    global_step += 1
"""


def _gpu101(tmp_path: Path, reset: str = "", period: str = "global_step % 25 == 0") -> set:
    text = SCRIPT.format(reset=reset, period=period)
    return {row for row, code in lint_script(tmp_path, text) if code == "GPU101"}


def test_computed_once_then_periodically_is_not_reported(tmp_path: Path):
    assert _gpu101(tmp_path) == set()


def test_reset_every_pass_is_reported(tmp_path: Path):
    assert _gpu101(tmp_path, reset="    threshold_mem = None\n") == {14}


def test_not_periodic_other_side_is_reported(tmp_path: Path):
    assert _gpu101(tmp_path, period="global_step > 3") == {13}
