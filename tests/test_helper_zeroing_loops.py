"""Gradients zeroed parameter by parameter in a helper module's function that a training loop elsewhere runs every
step (issue 11, heldout2/heldout7: the diffusion repositories' `fp16_util.zero_grad(model_params)`, a loop of
`param.grad.zero_()`, called as `zero_grad(self.model_params)` or through `MixedPrecisionTrainer.zero_grad`).

- GPU405 knows a loop over a sequence named for parameters (`model_params`), not only `m.parameters()`.
- A helper module naming no device is GPU code when a GPU loop calls one of its plain functions every step with
  nothing but parameter lists (`zero_grad(params)`), as it already was for a helper class's methods.
- A bare call `zero_grad(...)` inside a method also named `zero_grad` reaches the module's function.
- A helper called with host values, or a loop over a list that is not named for parameters, stays quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

HELPERS = textwrap.dedent("""\
    def zero_grad(model_params):
        for param in model_params:
            if param.grad is not None:
                param.grad.detach_()
                param.grad.zero_()


    def clear(tensors):
        for t in tensors:
            t.grad.zero_()


    class Trainer:
        def __init__(self, model):
            self.model_params = list(model.parameters())

        def zero_grad(self):
            zero_grad(self.model_params)
""")

PLAIN = textwrap.dedent("""\
    import torch
    from helpers import zero_grad, clear


    def main(opt, host_tensors):
        model = torch.nn.Linear(2, 2).cuda()
        params = list(model.parameters())
        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
        for x in loader:
            x = x.cuda(non_blocking=True)
            zero_grad(params)
            clear(host_tensors)
            model(x).mean().backward()
            opt.step()
""")

METHOD = textwrap.dedent("""\
    import torch
    from helpers import Trainer


    def main(opt):
        model = torch.nn.Linear(2, 2).cuda()
        trainer = Trainer(model)
        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
        for x in loader:
            x = x.cuda(non_blocking=True)
            trainer.zero_grad()
            model(x).mean().backward()
            opt.step()
""")


def test_zeroing_loop_in_a_plain_helper_handed_parameter_lists(tmp_path):
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": PLAIN})
    findings = found(check(root))
    assert ("helpers.py", 2, "GPU405") in findings
    assert ("helpers.py", 9, "GPU405") not in findings  # `clear(host_tensors)`: not named for parameters


def test_zeroing_loop_reached_through_a_method_of_the_same_name(tmp_path):
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": METHOD})
    assert ("helpers.py", 2, "GPU405") in found(check(root))


def test_helper_handed_host_values_stays_quiet(tmp_path):
    train = PLAIN.replace("zero_grad(params)", "zero_grad([torch.zeros(2)])")
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": train})
    assert not any(path == "helpers.py" for path, _, _ in found(check(root)))


COPIES = textwrap.dedent("""\
    def unflatten(flat, like):
        return [flat[i] for i in range(len(like))]


    def to_model(model_params, master_params):
        model_params = list(model_params)
        for param, master in zip(model_params, unflatten(master_params, model_params)):
            param.detach().copy_(master)


    def scale(values, factors):
        for v, f in zip(values, unflatten(factors, values)):
            v.mul_(f)
""")

COPIES_TRAIN = textwrap.dedent("""\
    import torch
    from copies import to_model, scale


    def main(opt, master_params, stats):
        model = torch.nn.Linear(2, 2).cuda()
        params = list(model.parameters())
        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
        for x in loader:
            x = x.cuda(non_blocking=True)
            model(x).mean().backward()
            opt.step()
            to_model(params, master_params)
            scale(stats, [1.0])
""")


def test_copy_into_each_parameter_zipped_with_another_sequence(tmp_path):
    # `zip(model_params, unflatten(...))`: one of the zipped sequences holds the parameters the body updates
    root = write_project(tmp_path / "p", {"copies.py": COPIES, "train.py": COPIES_TRAIN})
    findings = found(check(root))
    assert ("copies.py", 7, "GPU411") in findings
    assert ("copies.py", 12, "GPU411") not in findings  # neither zipped sequence is named for parameters
