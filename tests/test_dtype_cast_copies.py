"""A host factory cast to a dtype and then copied to the GPU every step (branch recall85): `torch.tensor(0)
.to(dtype).cuda()` (a loss's placeholder for an image without positives, `dtype = anchors.dtype`) is still a host
build and a pageable copy; `.to(dtype)` with a dtype (`torch.float32`, `x.dtype`, a name bound only to one) keeps
the tensor on the host (GPU203). A `.to(device)` of a name that is no dtype is the copy itself, as before."""

from __future__ import annotations

from projects import lint_script

SCRIPT = """\
import torch

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
for x in loader:
    x = x.cuda(non_blocking=True)
    dtype = x.dtype
    losses = []
    if torch.cuda.is_available():
        losses.append(torch.tensor(0).to(dtype).cuda())
    b = torch.zeros(3).to(torch.float16).cuda()
    c = torch.zeros(3).to(x).cuda()
    model(x).sum().backward()
    opt.step()
"""


def test_a_dtype_cast_between_build_and_copy(tmp_path):
    found = {row for row, code in lint_script(tmp_path, SCRIPT) if code == "GPU203"}
    assert {11, 12} <= found
