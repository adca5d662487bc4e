"""Trainer helpers that keep a list of the model's parameters and read it every step (issue 11, heldout2 and
heldout7: the diffusion trainers' `_log_grad_norm`, `MixedPrecisionTrainer.optimize` -> `_compute_norms`).

- `self.params = list(self.model.parameters())` (or another attribute holding one) is a list of device tensors:
  a method looping over it with `.item()` syncs on every call, so its per-step call sites are GPU112 findings.
- `if self.fp16: return self._step_fp16() else: return self._step_plain()`: when both branches sync, the method
  syncs whichever the option picks.
- `for step in range(n): forward_backward(data); trainer.optimize(opt)` where the script's own helper draws one
  batch (`next(loader)`) and loops over micro-batches of it: the step loop is the caller's loop, not the helper's
  micro-batch loop.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

TRAINER = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def load_data(dataset):
        loader = DataLoader(dataset, batch_size=8, pin_memory=True)
        while True:
            yield from loader


    class Trainer:
        def __init__(self, model, fp16=False):
            self.model = model
            self.fp16 = fp16
            self.model_params = list(self.model.parameters())
            self.master_params = self.model_params

        def grad_norm(self):
            total = 0.0
            for p in self.master_params:
                total += (p.grad ** 2).sum().item()
            return total

        def _step_fp16(self, opt):
            norm = self.grad_norm()
            opt.step()
            return norm

        def _step_plain(self, opt):
            norm = {plain}
            opt.step()
            return norm

        def optimize(self, opt):
            if self.fp16:
                return self._step_fp16(opt)
            else:
                return self._step_plain(opt)
""")

SCRIPT = textwrap.dedent("""\
    import torch
    from trainer import Trainer, load_data


    def main(model, dataset, steps, micro):
        model = model.cuda()
        trainer = Trainer(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
        data = load_data(dataset)

        def forward_backward(batches):
            batch = next(batches).cuda(non_blocking=True)
            for i in range(0, batch.shape[0], micro):
                loss = model(batch[i:i + micro]).mean()
                loss.backward()

        for step in range(steps):
            {call}
            trainer.optimize(opt)
""")


def _findings(tmp_path, plain="self.grad_norm()", call="forward_backward(data)"):
    root = write_project(tmp_path / "p", {"trainer.py": TRAINER.format(plain=plain),
                                          "train.py": SCRIPT.format(call=call)})
    return found(check(root))


def test_reads_of_a_held_parameter_list_sync_at_every_call(tmp_path):
    findings = _findings(tmp_path)
    assert ("trainer.py", 25, "GPU112") in findings  # `self.grad_norm()` in a per-step method
    assert ("train.py", 19, "GPU112") in findings  # `trainer.optimize(opt)`: both branches sync


def test_one_branch_without_the_read_keeps_the_call_quiet(tmp_path):
    findings = _findings(tmp_path, plain="0.0")
    assert ("train.py", 19, "GPU112") not in findings
    assert ("trainer.py", 25, "GPU112") in findings


def test_helper_drawing_a_batch_makes_the_callers_loop_the_step_loop(tmp_path):
    periodic = "if step % 100 == 0:\n                forward_backward(data)"
    assert ("train.py", 19, "GPU112") not in _findings(tmp_path / "a", call=periodic)
