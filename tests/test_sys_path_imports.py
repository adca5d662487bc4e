"""Imports found through the folders a script puts on `sys.path` (RAFT's `sys.path.append('core')` then
`import datasets`), and bare-name calls resolved by scope (a loop variable is not a helper of the same name)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

LOOP = """\
import torch
{imports}

model = torch.nn.Linear(8, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
loader = make_loader()
for x, y in loader:
    x = x.cuda(non_blocking=True)
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    log_loss(loss)
"""

HELPERS = """\
import torch


def make_loader():
    return torch.utils.data.DataLoader(torch.randn(64, 8), batch_size=8)


def log_loss(loss):
    print(loss.item())
"""


def lint(root: Path, *files: str) -> set:
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--output-format", "json",
                          *files], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return {(Path(d["filename"]).as_posix(), d["location"]["row"], d["code"]) for d in json.loads(out.stdout)}


def expected(root: Path, script: str) -> set:
    """GPU201 at the factory call and GPU112 at the per-step helper call, on whatever lines they landed."""
    lines = (root / script).read_text().splitlines()
    return {(script, lines.index("loader = make_loader()") + 1, "GPU201"),
            (script, lines.index("    log_loss(loss)") + 1, "GPU112")}


def project(tmp_path: Path, script: str, imports: str, helpers_at: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for rel, text in ((script, LOOP.format(imports=textwrap.dedent(imports))), (helpers_at, HELPERS)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize("added", [
    "sys.path.append('core')",
    "sys.path.insert(0, 'core')",
    "sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'core'))",
    "sys.path.insert(0, str(Path(__file__).resolve().parent / 'core'))",
    "CORE = os.path.join(sys.path[0], 'core')\nsys.path.append(CORE)",
])
def test_a_helper_module_found_through_sys_path(tmp_path: Path, added: str):
    imports = f"import os\nimport sys\nfrom pathlib import Path\n{added}\nfrom helpers import log_loss, make_loader\n"
    root = project(tmp_path, "train.py", imports, "core/helpers.py")
    assert lint(root, "train.py") == expected(root, "train.py")


def test_a_parent_folder_added_from_a_script_in_a_subfolder(tmp_path: Path):
    imports = ("import os, sys\nsys.path.append(os.path.dirname(__file__) + '/../lib')\n"
               "from helpers import log_loss, make_loader\n")
    root = project(tmp_path, "scripts/train.py", imports, "lib/helpers.py")
    assert lint(root, "scripts/train.py") == expected(root, "scripts/train.py")


def test_without_the_sys_path_line_the_helpers_are_unknown(tmp_path: Path):
    root = project(tmp_path, "train.py", "from helpers import log_loss, make_loader\n", "core/helpers.py")
    assert lint(root, "train.py") == set()


def test_a_folder_outside_the_project_or_an_absolute_path_is_never_read(tmp_path: Path):
    inner = tmp_path / "proj"
    inner.mkdir()
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "helpers.py").write_text(HELPERS)
    imports = "import sys\nsys.path.append('../core')\nsys.path.append('/workspace/core')\n" \
              "from helpers import log_loss, make_loader\n"
    root = project(inner, "train.py", imports, "unrelated.py")
    assert lint(root, "train.py") == set()


def test_a_loop_variable_named_like_a_nested_helper_is_not_that_helper(tmp_path: Path):
    """ESRGAN's DenseResidualBlock: `def block(...)` builds layers inside `__init__`; `forward` runs
    `for block in self.blocks: block(x)`, which calls the stored layers, not the builder."""
    (tmp_path / "m.py").write_text(textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Dense(nn.Module):
            def __init__(self, filters):
                super().__init__()

                def block(in_features):
                    return nn.Sequential(nn.Conv2d(in_features, filters, 3, 1, 1))

                self.blocks = nn.ModuleList([block(filters)])

            def forward(self, x):
                for block in self.blocks:
                    x = block(x)
                return x

            def helper(self, x):
                return nn.Linear(8, 8)(x)

            def other(self, x):
                return helper(x)


        model = Dense(8).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
        for step in range(10):
            loss = model(torch.randn(2, 8, 4, 4, device="cuda")).sum()
            loss.backward()
            opt.step()
            model.other(loss)
        """))
    assert not {f for f in lint(tmp_path, "m.py") if f[2] == "GPU408"}
