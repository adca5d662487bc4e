"""Receivers narrowed by `isinstance` to a project class (issue 11, heldout2/heldout7: the diffusion trainers'
`if isinstance(self.sampler, LossAwareSampler): self.sampler.update_with_local_losses(t, losses)`).

The sampler is a parameter of the trainer, so in general gpulint cannot tell its class; inside the `isinstance`
branch it is an instance of the tested project class (or a subclass inheriting the method), so that class's method
is per-step code when the branch runs every step, and its own host reads are reported where they are written, with
the trainer's call as the related location. Outside such a branch (or in its `else`) the receiver stays unknown.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

SAMPLERS = textwrap.dedent("""\
    import torch


    class Sampler:
        def draw(self, n, device):
            return torch.randint(0, 10, (n,), device=device)


    class Uniform(Sampler):
        pass


    class Adaptive(Sampler):
        def record(self, steps, losses):
            for value in losses:
                self.history.append(value.item())
""")

TRAIN = textwrap.dedent("""\
    import torch
    from samplers import Adaptive, Sampler


    class Trainer:
        def __init__(self, model, loader, sampler):
            self.model = model.cuda()
            self.loader = loader
            self.sampler = sampler
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

        def run(self):
            for x, y in self.loader:
                x = x.cuda(non_blocking=True)
                steps = self.sampler.draw(x.shape[0], x.device)
                loss = self.model(x, steps).mean(dim=0)
                {guard}
                    self.sampler.record(steps, loss.detach())
                loss.sum().backward()
                self.opt.step()
                self.opt.zero_grad()
""")


def _findings(tmp_path, guard):
    root = write_project(tmp_path / "p", {"samplers.py": SAMPLERS, "train.py": TRAIN.format(guard=guard)})
    return found(check(root))


def test_method_of_the_narrowed_class_runs_every_step(tmp_path):
    findings = _findings(tmp_path, "if isinstance(self.sampler, Adaptive):")
    assert ("samplers.py", 16, "GPU101") in findings
    assert ("train.py", 18, "GPU112") in findings  # the call site pays it every step too


def test_narrowing_as_one_conjunct_counts_too(tmp_path):
    findings = _findings(tmp_path, "if self.loader is not None and isinstance(self.sampler, Adaptive):")
    assert ("samplers.py", 16, "GPU101") in findings


def test_else_branch_and_other_receivers_stay_unknown(tmp_path):
    guard = "if isinstance(self.model, Adaptive):\n                    pass\n                else:"
    findings = _findings(tmp_path, guard)
    assert not any(path == "samplers.py" for path, _, _ in findings)


def test_without_a_test_the_receiver_stays_unknown(tmp_path):
    findings = _findings(tmp_path, "if True:")
    assert not any(path == "samplers.py" for path, _, _ in findings)
