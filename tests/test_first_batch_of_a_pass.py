"""A block that runs while a batch index holds one value runs once per pass over the data, not every step
(loops.py `periodic_test` on a counter, `_is_counter`): a Lightning 0.x `validation_step(self, batch, batch_nb)`
copies an image to the host only `if batch_nb == 0:`. The hook's parameter names the batch's index as `batch_nb`
(or `batch_index`, `batch_num`, ...), not with a `_idx` suffix; `batch_nb != 0` (every batch but one) and an `or`
are still every step."""

from __future__ import annotations

from tests.projects import lint_script

LIGHTNING = '''import torch
import pytorch_lightning as pl


class System(pl.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def training_step(self, batch, batch_nb):
        x, y = batch
        return ((self.model(x) - y) ** 2).mean()

    def validation_step(self, batch, {index}):
        x, y = batch
        out = self.model(x)
        if {test}:
            img = out.cpu()
            self.logger.experiment.add_images("val", img, self.global_step)
        return ((out - y) ** 2).mean()


def main(model, loader):
    pl.Trainer(accelerator="gpu").fit(System(model), loader, loader)
'''

COPY = (18, "GPU104")


def _lint(tmp_path, index: str, test: str) -> set:
    return lint_script(tmp_path, LIGHTNING.format(index=index, test=test))


def test_first_batch_of_a_validation_pass(tmp_path):
    assert COPY not in _lint(tmp_path, "batch_nb", "batch_nb == 0")


def test_another_single_batch_under_an_and(tmp_path):
    assert COPY not in _lint(tmp_path, "batch_index", "batch_index == 2 and x.ndim == 4")


def test_every_batch_but_one_is_per_step(tmp_path):
    assert COPY in _lint(tmp_path, "batch_nb", "batch_nb != 0")


def test_an_or_is_per_step(tmp_path):
    assert COPY in _lint(tmp_path, "batch_nb", "batch_nb == 0 or x.ndim == 4")


def test_a_parameter_not_named_as_a_batch_index(tmp_path):
    assert COPY in _lint(tmp_path, "batch_size", "batch_size == 8")
