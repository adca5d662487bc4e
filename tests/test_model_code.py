"""Model code run every step: the `forward` of a project module that a loop elsewhere calls on every batch.

fixtures/projects/models: train.py builds `QueueModel` (wrapped in DDP; its `Gate` submodules run in its forward) and calls it in its training loop,
calls `ScoredHead` in an evaluation loop under `torch.no_grad()`, and calls `Probe` every 100 steps only.
`Unused` is never built in the project.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from projects import check, found

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "models"
EXPECTED = {
    ("models/queue.py", 20, "GPU105"),  # int(self.ptr): a registered buffer, in a method forward calls
    ("models/queue.py", 25, "GPU203"),  # torch.randperm(n).cuda() in another method forward calls
    ("models/queue.py", 34, "GPU112"),  # self._enqueue(...) in forward: its int(self.ptr) reads the CUDA buffer
    # a submodule QueueModel builds in an nn.ModuleList and calls in forward's loop over it (a file that names
    # no device: the loop's file does); `Exporter`, called only from `describe`, is not reported
    ("models/submodules.py", 13, "GPU101"),
    ("models/heads.py", 14, "GPU101"),  # .item() in a forward run once per evaluation batch (under no_grad)
    # ... and the call paying it, `head(...)`, where `head` is `ScoredHead().cuda()` passed to `evaluate`
    # (`.cuda()` hands back the module it is called on: tests/test_passed_through.py)
    ("train.py", 24, "GPU112"),
    ("train.py", 12, "GPU403"),  # the step's forward in fp32 (QueueModel on CUDA, no autocast anywhere)
    # ... and the step's `model(x)` pays QueueModel.forward's read of its CUDA buffer (`model` is the DDP-wrapped
    # QueueModel main passes: wrappers hand back the module's class, tests/test_passed_through.py)
    ("train.py", 12, "GPU112"),
    ("train.py", 31, "GPU402"),  # SGD over the CUDA QueueModel without fused=True
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    shutil.copytree(FIXTURE, root)
    return root


def test_forward_of_a_model_called_every_step_is_per_step_code(project: Path):
    """Not reported: the method forward never reaches (`describe`), the model called every 100 steps only
    (`Probe`), the class nobody builds (`Unused`), and the loop over blocks inside forward by itself."""
    assert found(check(project, "--no-cache", ".")) == EXPECTED


def test_model_file_named_alone_reads_its_callers(project: Path):
    """pre-commit passes only the model file: its callers are read, and the prefilter does not skip it although
    it has no loop of its own (heads.py does not even mention cuda)."""
    assert found(check(project, "--no-cache", "models/heads.py")) == {("models/heads.py", 14, "GPU101")}
    assert found(check(project, "--no-cache", "models/queue.py")) == {
        e for e in EXPECTED if e[0] == "models/queue.py"}


def test_findings_carry_the_call_site_in_the_loop(project: Path):
    items = {(d["filename"], d["location"]["row"]): d for d in check(project, "--no-cache", ".")}
    ptr = items[("models/queue.py", 20)]
    assert "`QueueModel.forward`, which `model(...)` runs every step" in ptr["message"]
    assert ptr["related"] == [{"filename": "train.py", "location": {"row": 12, "column": 1},
                               "message": "`model(...)` runs `QueueModel.forward` every step"}]
    assert items[("models/heads.py", 14)]["related"][0]["location"]["row"] == 24
    gate = items[("models/submodules.py", 13)]  # a submodule: related to its call in the owner's forward
    assert "`Gate.forward`, which `gate(...)` runs every step" in gate["message"]
    assert gate["related"][0]["filename"] == "models/queue.py" and gate["related"][0]["location"]["row"] == 33


def test_a_model_no_longer_called_in_the_loop_is_quiet_on_the_next_cached_run(project: Path):
    assert ("models/queue.py", 20, "GPU105") in found(check(project, "models/queue.py"))
    train = project / "train.py"
    train.write_text(train.read_text().replace("        out = model(x)\n", "        out = x\n"))
    assert found(check(project, "models/queue.py")) == set()


def package_project(root: Path) -> None:
    """A project whose package `pkg` holds the fixture's QueueModel."""
    (root / "pyproject.toml").write_text("")
    (root / "pkg").mkdir()
    shutil.copy(FIXTURE / "models" / "queue.py", root / "pkg" / "queue.py")
    (root / "pkg" / "__init__.py").write_text("")


def test_a_model_only_built_in_a_loop_free_script_is_not_per_step(tmp_path: Path):
    package_project(tmp_path)
    (tmp_path / "export.py").write_text(
        "import torch\nfrom pkg.queue import QueueModel\n\nmodel = QueueModel().cuda()\n"
        "torch.onnx.export(model, torch.randn(1, 16).cuda(), 'm.onnx')\nprint(model(torch.randn(2, 16).cuda()))\n")
    assert found(check(tmp_path, "--no-cache", ".")) == set()


def test_monorepo_import_path_that_ends_with_the_module_path(tmp_path: Path):
    """Code exported from a monorepo keeps imports such as `import corp.research.pkg.queue`: the constructor
    still names `pkg/queue.py` of the project by the end of its path."""
    package_project(tmp_path)
    (tmp_path / "train.py").write_text(
        "import torch\nimport corp.research.pkg.queue\nfrom torch.utils.data import DataLoader\n\n"
        "def main(ds):\n    loader = DataLoader(ds, pin_memory=True)\n"
        "    model = corp.research.pkg.queue.QueueModel().cuda()\n"
        "    for x in loader:\n        model(x.cuda(non_blocking=True))\n")
    assert found(check(tmp_path, "--no-cache", "pkg/queue.py")) == {("pkg/queue.py", 20, "GPU105"),
                                                                  ("pkg/queue.py", 25, "GPU203"),
                                                                  ("pkg/queue.py", 34, "GPU112")}


SCALER_LOOP = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(2, 2).cuda()
optimizer = torch.optim.AdamW(model.parameters(){fused})
scaler = torch.cuda.amp.GradScaler()
loader = DataLoader(dataset, pin_memory=True)
for x, y in loader:
    with torch.autocast("cuda"):
        loss = model(x.cuda(non_blocking=True)).sum()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
"""


def test_grad_scaler_step_reads_found_inf_every_step_unless_the_optimizer_is_fused(tmp_path: Path):
    from gpulint.analysis.libraries import Effect, fact_for_method

    assert fact_for_method("torch.cuda.amp.GradScaler", "step").effect is Effect.SYNCS
    assert fact_for_method("torch.amp.GradScaler", "update").effect is Effect.NO_HOST_SYNC
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "amp.py").write_text(SCALER_LOOP.format(fused=""))
    items = check(tmp_path, "--no-cache", "amp.py")
    assert found(items) == {("amp.py", 12, "GPU112")}  # scale(...) and update() stay silent
    assert "GradScaler.step" in items[0]["message"] and "found_inf" in items[0]["message"]
    (tmp_path / "amp.py").write_text(SCALER_LOOP.format(fused=", fused=True"))
    assert found(check(tmp_path, "--no-cache", "amp.py")) == set()
