"""`torch.save(model.state_dict(), path)` of a CUDA model every step (branch recall77, GPU104).

A full-batch trainer's loop is its step loop; saving the weights each iteration copies every weight to the host and
waits for the GPU. Periodic, conditional (best-so-far), after-the-loop, per-epoch and CPU-model saves stay quiet.
"""

from __future__ import annotations

from projects import lint_script

STEP = """\
import torch
import torch.nn as nn

model = nn.Linear(8, 1)
model.cuda()
x = torch.randn(64, 8, device="cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
for epoch in range(100):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.save(model.state_dict(), f"{epoch}.pkl")
"""


def test_save_of_cuda_weights_every_step_is_reported(tmp_path):
    assert lint_script(tmp_path, STEP) == {(14, "GPU104")}


def test_periodic_save_is_quiet(tmp_path):
    text = STEP.replace('    torch.save(', '    if epoch % 10 == 0:\n        torch.save(')
    assert lint_script(tmp_path, text) == set()


def test_best_so_far_save_is_quiet(tmp_path):
    text = STEP.replace('    torch.save(', '    if loss_value < best:\n        torch.save(')
    assert lint_script(tmp_path, text) == set()


def test_save_after_the_loop_is_quiet(tmp_path):
    text = STEP.replace('    torch.save(model.state_dict(), f"{epoch}.pkl")', 'torch.save(model.state_dict(), "last.pkl")')
    assert lint_script(tmp_path, text) == set()


def test_save_of_a_cpu_model_is_quiet(tmp_path):
    text = STEP.replace("model.cuda()\n", "").replace('device="cuda"', 'device="cpu"')
    assert (14, "GPU104") not in lint_script(tmp_path, text)


def test_save_once_per_epoch_of_an_epoch_loop_is_quiet(tmp_path):
    text = STEP.replace("""    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
""", """    for xb in torch.utils.data.DataLoader(x.cpu(), batch_size=8, pin_memory=True):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(xb.cuda(non_blocking=True)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")
    assert not any(code == "GPU104" and row > 12 for row, code in lint_script(tmp_path, text))
