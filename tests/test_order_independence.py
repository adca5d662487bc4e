"""A file's findings never depend on which other files the same process linted before it (issue 13: never give
two answers to one question; issue 11: per-question caller bounds, never per process).

A notebook's joined cells are handed to the project model while the notebook is linted (its text differs from
the file on disk). It used to stay there for the rest of the process: a module linted after the notebook saw it
as a caller, one linted before (or by another worker) did not. Here the notebook calls the module's
`calc_loss_loader(loader, ...)` with an unpinned `DataLoader`, which decided whether the module's blocking copy
was reported (GPU202); with parallel workers the same command gave different outputs from run to run.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from projects import check, found, write_project

HELPERS = textwrap.dedent("""\
    import torch


    def calc_loss_loader(data_loader, model, device):
        total = 0.0
        for input_batch, target_batch in data_loader:
            input_batch, target_batch = input_batch.to(device), target_batch.to(device)
            logits = model(input_batch)
            loss = torch.nn.functional.cross_entropy(logits, target_batch)
            total += loss
        return total
""")

CELLS = [
    "import torch\nfrom torch.utils.data import DataLoader\nfrom helpers import calc_loss_loader\n",
    "device = torch.device('cuda')\nmodel = torch.nn.Linear(4, 2).to(device)\n"
    "loader = DataLoader(dataset, batch_size=8, shuffle=True)\n",
    "print(calc_loss_loader(loader, model, device))\n",
]


def _notebook() -> str:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": text.splitlines(keepends=True)} for text in CELLS]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def _helpers_findings(root: Path, *files: str) -> set:
    return {f for f in found(check(root, "--no-cache", "--exit-zero", "-j", "1", *files)) if f[0] == "helpers.py"}


def test_a_module_s_findings_do_not_depend_on_a_notebook_linted_before_it(tmp_path: Path):
    root = write_project(tmp_path, {"helpers.py": HELPERS, "nb.ipynb": _notebook()})
    alone = _helpers_findings(root, "helpers.py")
    assert _helpers_findings(root, "nb.ipynb", "helpers.py") == alone
    assert _helpers_findings(root, "helpers.py", "nb.ipynb") == alone
