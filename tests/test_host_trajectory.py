"""GPU203: a sampler's trajectory kept on the host whose last step is copied back every step (branch recall39,
heldout13's ddim): `xt = xs[-1].to('cuda')` ... `xs.append(xt_next.to('cpu'))` in the same loop moves every step's
result to the host and back, a blocking copy each way.

Quiet: a list that keeps device tensors (or anything not known to be on the host), a list rebound in the loop, an
element other than the last, a loop run once per epoch or a CPU-only program.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

PROGRAM = '''
import torch

model = torch.nn.Linear(8, 8).cuda()


@torch.no_grad()
def sample(x, steps):
    xs = [x]
    for i in range(steps):
        xt = xs[-1].to("cuda")
        out = model(xt)
        xs.append(APPENDED)
    return xs


for epoch in range(10):
    xs = sample(torch.randn(4, 8, device="cuda"), 50)
'''


def lint(root: Path, text: str) -> set:
    items = check(write_project(root, {"sample.py": text}), "--no-cache", "--exit-zero", "--select", "GPU203")
    return {row for _, row, _ in found(items)}


def test_the_last_host_copy_copied_back_every_step(tmp_path: Path):
    for appended in ('out.to("cpu")', "out.cpu()", "out.detach().cpu()"):
        assert 11 in lint(tmp_path, PROGRAM.replace("APPENDED", appended)), appended


def test_device_lists_and_other_reads_stay_quiet(tmp_path: Path):
    # the list keeps device tensors: nothing crosses
    assert 11 not in lint(tmp_path, PROGRAM.replace("APPENDED", "out"))
    # one host copy and one device tensor appended: the last element may be either
    both = PROGRAM.replace("        xs.append(APPENDED)\n", "        xs.append(out.cpu())\n        xs.append(out)\n")
    assert 11 not in lint(tmp_path, both)
    # the first element, not the step before's result
    assert 11 not in lint(tmp_path, PROGRAM.replace("APPENDED", "out.cpu()").replace("xs[-1]", "xs[0]"))
    # rebound in the loop: not the list the loop keeps
    rebound = PROGRAM.replace("APPENDED", "out.cpu()").replace("        out = model(xt)\n",
                                                               "        out = model(xt)\n        xs = [out]\n")
    assert 11 not in lint(tmp_path, rebound)
