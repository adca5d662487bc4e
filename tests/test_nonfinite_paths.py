"""A block under a non-finite test runs only on a bad step (gpulint/analysis/nonfinite.py).

`if torch.isnan(loss) or torch.isinf(loss): loss = torch.tensor(0.0, device=...)` replaces the loss on the rare
step whose value is NaN or infinite: the replacement is not a per-step host-to-device copy (it was reported as
GPU203, a false alarm on sentence-transformers' trainer and SpeechBrain's separation recipes). The test itself
reads the loss every step and stays reported; a block under an ordinary tensor test stays per-step.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

TRAIN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def train(model, dataset, opt):
        loader = DataLoader(dataset, batch_size=8, pin_memory=True)
        for x, y in loader:
            x = x.to("cuda", non_blocking=True)
            loss = model(x).mean()
            if {test}:
                loss = torch.tensor(0.0, device="cuda")
                print(loss.item())
            loss.backward()
            opt.step()
""")


def _lint(tmp_path, test: str) -> set:
    return found(check(write_project(tmp_path / "p", {"train.py": TRAIN.format(test=test)})))


def test_nan_or_inf_block_is_not_per_step(tmp_path):
    findings = _lint(tmp_path, "torch.isnan(loss) or torch.isinf(loss)")
    assert ("train.py", 10, "GPU106") in findings  # the test reads the loss every step
    assert not {f for f in findings if f[1] in (11, 12)}


def test_not_finite_with_a_flag(tmp_path):
    findings = _lint(tmp_path, "check and not torch.isfinite(loss).all()")
    assert not {f for f in findings if f[1] in (11, 12)}


def test_ordinary_tensor_test_stays_per_step(tmp_path):
    findings = _lint(tmp_path, "loss > 10")
    assert ("train.py", 12, "GPU101") in findings


def test_exception_message_is_built_only_when_raised(tmp_path):
    """A function's fallback `raise TypeError(f"cannot convert {x}")` formats its argument only on the error
    path (tianshou's `to_torch`, per-step code through its callers)."""
    train = textwrap.dedent("""\
        import torch
        from torch.utils.data import DataLoader


        def scalar(out):
            loss = torch.mean(out)
            if loss.dim() == 0:
                return loss
            raise ValueError(f"loss {loss} is not a scalar")


        def train(model, dataset, opt):
            loader = DataLoader(dataset, batch_size=8, pin_memory=True)
            for x, y in loader:
                x = x.to("cuda", non_blocking=True)
                loss = scalar(model(x))
                print(f"{loss}")
                loss.backward()
                opt.step()
    """)
    findings = found(check(write_project(tmp_path / "p", {"train.py": train})))
    assert ("train.py", 9, "GPU107") not in findings
    assert ("train.py", 16, "GPU112") not in findings
    assert ("train.py", 17, "GPU107") in findings
