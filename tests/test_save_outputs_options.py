"""An option that dumps per-sample outputs for inspection, off by default (`--save_val_results`, store_true),
keeps its branch out of every step, as a debug or visualisation option does (`analysis/test_mode.py`; issue 11,
the ACCEPTABLE line of heldout17, DeepLabV3Plus `main.py:184`). On by default, or an option of another name, the
branch is a real run's and still reported.
"""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, lint_script, write_project

SCRIPT = """import argparse

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--{name}", action="store_true", default={default})
opts = parser.parse_args()
model = torch.nn.Conv2d(3, 2, 1).cuda()


def validate(opts, model, loader, device):
    with torch.no_grad():
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            preds = model(images).argmax(1)
            if opts.{name}:
                for i in range(len(images)):
                    image = images[i].detach().cpu().numpy()
                    np.save("img%d.npy" % i, image)


validate(opts, model, torch.utils.data.DataLoader(range(4), pin_memory=True), "cuda")
"""


def _gpu104(tmp_path: Path, name: str, default: str) -> set:
    return {row for row, code in lint_script(tmp_path, SCRIPT.format(name=name, default=default))
            if code == "GPU104"}


def test_saving_outputs_off_by_default_is_not_every_step(tmp_path: Path):
    assert _gpu104(tmp_path, "save_val_results", "False") == set()
    assert _gpu104(tmp_path / "b", "save_images", "False") == set()


def test_saving_outputs_on_by_default_is_reported(tmp_path: Path):
    assert _gpu104(tmp_path, "save_val_results", "True") == {19}


def test_another_option_off_by_default_is_reported_where_the_project_documents_it(tmp_path: Path):
    # an option of another name, off by default, that the README tells users to pass: a real run's branch
    root = write_project(tmp_path, {"train.py": SCRIPT.format(name="save_checkpoints_often", default="False"),
                                    "README.md": "Run `python train.py --save_checkpoints_often`.\n"})
    assert {row for _, row, code in found(check(root, "--no-cache", "--exit-zero", "train.py"))
            if code == "GPU104"} == {19}


def test_another_option_off_by_default_that_nothing_documents_is_quiet(tmp_path: Path):
    # no README, config or script names it and no Python file sets it: a branch no documented run takes
    assert _gpu104(tmp_path, "save_checkpoints_often", "False") == set()
