"""A trainer whose step loop is a `while` loop drawing one batch per iteration (`while True: batch =
next(it)`, minGPT's `Trainer.run`) trains as a `for` loop over a loader does: the throughput levers that need a
training module on CUDA (GPU402 non-fused optimizer, GPU403 fp32 step) see it. A `while` loop that trains on the
CPU, or under autocast, stays silent.
"""

from __future__ import annotations

import textwrap

from projects import lint_script

TRAINER = textwrap.dedent("""\
    import torch


    class Trainer:
        def __init__(self, model, loader, device="cuda"):
            self.model = model.to(device)
            self.loader = loader
            self.device = device

        def run(self, max_iters):
            model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).to("cuda")
            opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
            it = iter(self.loader)
            step = 0
            while True:
                try:
                    x = next(it)
                except StopIteration:
                    it = iter(self.loader)
                    x = next(it)
                x = x.to(self.device, non_blocking=True)
                loss = model(x).sum()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
                if step >= max_iters:
                    break
""")


def _codes(found):
    return {(row, code) for row, code in found if code in ("GPU402", "GPU403")}


def test_while_step_loop_on_cuda_gets_the_throughput_levers(tmp_path):
    assert _codes(lint_script(tmp_path, TRAINER)) == {(12, "GPU402"), (22, "GPU403")}


def test_while_step_loop_on_the_cpu_or_under_autocast_stays_silent(tmp_path):
    cpu = TRAINER.replace('device="cuda"', 'device="cpu"').replace('.to("cuda")', "")
    assert _codes(lint_script(tmp_path / "cpu", cpu)) == set()
    amp = TRAINER.replace("            loss = model(x).sum()\n",
                          "            with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n"
                          "                loss = model(x).sum()\n")
    assert amp != TRAINER
    assert all(code != "GPU403" for _, code in _codes(lint_script(tmp_path / "amp", amp)))
