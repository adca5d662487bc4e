"""Fields of a pinned batch copied one by one in the method the loop hands the batch to (recall56; heldout16's
depth trainer: `outputs, losses = self.process_batch(inputs)` over a pinned `self.train_loader`, then `for key, ipt
in inputs.items(): inputs[key] = ipt.to(self.device)`): GPU202, as a copy of the batch itself there is.

- `for key, v in batch.items()` / `for v in batch.values()` over the parameter the loop passes its batch at.
- Quiet: a copy with `non_blocking=True`, a dict the method builds itself.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

TRAINER = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    class Trainer:
        def __init__(self, dataset):
            self.device = torch.device("cuda")
            self.model = torch.nn.Linear(8, 2).to(self.device)
            self.opt = torch.optim.Adam(self.model.parameters(), fused=True)
            self.train_loader = DataLoader(dataset, batch_size=4, shuffle=True, num_workers=4, pin_memory=True)

        def run_epoch(self):
            for batch_idx, inputs in enumerate(self.train_loader):
                outputs, losses = self.process_batch(inputs)
                self.opt.zero_grad()
                losses["loss"].backward()
                self.opt.step()

        def process_batch(self, inputs):
            for key, ipt in inputs.items():
                inputs[key] = ipt.to(self.device)
            outputs = self.model(inputs["x"])
            return outputs, {"loss": outputs.mean()}
""")


def _gpu202(tmp_path, trainer=TRAINER):
    root = write_project(tmp_path / "p", {"trainer.py": trainer})
    return {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU202"}


def test_fields_of_a_pinned_batch_copied_in_the_method_are_reported(tmp_path):
    assert ("trainer.py", 21) in _gpu202(tmp_path)


def test_values_loop_is_the_same(tmp_path):
    values = TRAINER.replace("for key, ipt in inputs.items():\n            inputs[key] = ipt.to(self.device)",
                             "for ipt in inputs.values():\n            ipt.to(self.device)")
    assert values != TRAINER
    assert ("trainer.py", 21) in _gpu202(tmp_path, values)


def test_non_blocking_copies_stay_quiet(tmp_path):
    quiet = TRAINER.replace("ipt.to(self.device)", "ipt.to(self.device, non_blocking=True)")
    assert quiet != TRAINER
    assert not _gpu202(tmp_path, quiet)


def test_dict_built_in_the_method_stays_quiet(tmp_path):
    own = TRAINER.replace("for key, ipt in inputs.items():", "for key, ipt in {'x': torch.zeros(8)}.items():")
    assert own != TRAINER
    assert not _gpu202(tmp_path, own)
