"""GPU411: an L2 penalty written as a sum over a comprehension of the parameters, added to the loss every step
(`loss += wd * sum([torch.sum(p ** 2) for p in params_without_bn])`, Fast AutoAugment's weight decay, heldout32a):
one or more kernels per parameter, forward and backward, where the optimizer's `weight_decay` or the foreach
kernels do it at once. The parameters may come filtered by a comprehension of their own. Not a sum of numbers
read back to the host, nor a sum over other tensors."""

from __future__ import annotations

from projects import lint_files

TRAIN = """\
    import torch


    def train(model, loader, optimizer, wd):
        params_without_bn = [p for name, p in model.named_parameters() if "bn" not in name]
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
            loss += wd * sum([torch.sum(p ** 2) for p in params_without_bn])
            loss = loss + 1e-4 * sum(p.norm() for p in model.parameters())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_a_summed_penalty_over_the_parameters_every_step(tmp_path):
    assert lint_files(tmp_path, {"train.py": TRAIN}, "GPU411") == {("train.py", 8, "GPU411"),
                                                                    ("train.py", 9, "GPU411")}


def test_sums_of_host_numbers_or_of_other_tensors_are_not_reported(tmp_path):
    host = TRAIN.replace("torch.sum(p ** 2)", "torch.sum(p ** 2).item()").replace("p.norm()", "float(p.norm())")
    assert not lint_files(tmp_path, {"train.py": host}, "GPU411")
    other = TRAIN.replace("for p in params_without_bn", "for p in feats").replace(
        "for p in model.parameters()", "for p in outputs")
    assert not lint_files(tmp_path, {"train.py": other}, "GPU411")
