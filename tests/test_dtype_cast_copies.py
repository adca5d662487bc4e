"""A host factory cast to a dtype and then copied to the GPU every step (branch recall85): `torch.tensor(0)
.to(dtype).cuda()` (a loss's placeholder for an image without positives, `dtype = anchors.dtype`) is still a host
build and a pageable copy; `.to(dtype)` with a dtype (`torch.float32`, `x.dtype`, a name bound only to one) keeps
the tensor on the host (GPU203). A `.to(device)` of a name that is no dtype is the copy itself, as before.
A host factory passed through a torch function that computes where its argument lives (`torch.triu(torch.ones(
shape), diagonal=1)`, a causal mask) and copied later in the same per-step helper under `if seq.is_cuda:` is the
same host build and copy."""

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


MASK = """\
import torch


def get_mask(seq):
    attn_shape = [seq.size(0), seq.size(1), seq.size(1)]
    subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1)
    if seq.is_cuda:
        subsequent_mask = subsequent_mask.cuda()
    return subsequent_mask


model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
for x in loader:
    x = x.cuda(non_blocking=True)
    m = get_mask(x)
    model(x * m).sum().backward()
    opt.step()
"""


def test_a_host_mask_through_triu_copied_under_is_cuda(tmp_path):
    assert (8, "GPU203") in lint_script(tmp_path, MASK)
