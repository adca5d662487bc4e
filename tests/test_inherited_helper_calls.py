"""A subclass's per-step method calling a helper it inherits from a project base class in another module (issue
11, recall): Dassl's trainers call `self.model_backward_and_update(loss)`, defined by `TrainerBase` in
`trainer.py`, whose `model_backward` runs `detect_anomaly`, a `bool()` of `torch.isfinite(loss).all()` every step.
The cost is paid at the subclass's call: reported there (GPU112), with the read as related location.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

BASE = textwrap.dedent("""\
    import torch

    DEVICE = torch.device("cuda")


    class TrainerBase:
        def detect_anomaly(self, loss):
            if not torch.isfinite(loss).all():
                raise FloatingPointError("Loss is infinite or NaN!")

        def model_backward(self, loss):
            self.detect_anomaly(loss)
            loss.backward()

        def model_backward_and_update(self, loss, names=None):
            self.model_backward(loss)
            self.optim.step()

        def run_epoch(self, loader):
            for batch in loader:
                summary = self.forward_backward(batch)

        def forward_backward(self, batch):
            raise NotImplementedError
""")

SUB = textwrap.dedent("""\
    import torch.nn.functional as F
    from engine.base import DEVICE, TrainerBase


    class SourceOnly(TrainerBase):
        def forward_backward(self, batch):
            x = batch["img"].to(DEVICE, non_blocking=True)
            loss = F.cross_entropy(self.model(x), batch["label"])
            self.model_backward_and_update(loss)
            return {"loss": loss}
""")


def _lint(root: Path, sub: str = SUB, *named: str) -> set:
    write_project(root, {"engine/__init__.py": "", "engine/base.py": BASE, "engine/source_only.py": sub})
    return found(check(root, "--no-cache", *(named or (".",))))


def test_an_inherited_helper_that_syncs_is_reported_at_the_subclass_call(tmp_path: Path):
    results = _lint(tmp_path)
    assert ("engine/source_only.py", 9, "GPU112") in results
    assert ("engine/base.py", 8, "GPU108") in results


def test_the_subclass_module_linted_alone(tmp_path: Path):
    assert ("engine/source_only.py", 9, "GPU112") in _lint(tmp_path, SUB, "engine/source_only.py")


def test_a_method_the_subclass_defines_itself_is_not_the_base_helper(tmp_path: Path):
    """The subclass overrides `model_backward_and_update` without the check: its own method runs."""
    sub = SUB + textwrap.indent(textwrap.dedent("""\

        def model_backward_and_update(self, loss, names=None):
            loss.backward()
            self.optim.step()
    """), "    ")
    assert ("engine/source_only.py", 9, "GPU112") not in _lint(tmp_path, sub)
