"""The extras are optional: without pygls or nbformat, gpulint says so in one line and does everything else.

(`gpulint server` without pygls: tests/test_editing.py.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOP = ("import torch\n\nmodel = torch.nn.Linear(4, 2).cuda()\nfor x in loader:\n    loss = model(x).sum()\n"
        "    loss.backward()\n    print(loss.item())\n")

# Run the CLI in a fresh interpreter where importing the named packages fails, as if they were not installed.
WITHOUT = """
import sys
blocked = set(sys.argv.pop(1).split(","))
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
from gpulint.cli import main
sys.argv[0] = "gpulint"
main()
"""


def gpulint_without(packages: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT, packages, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_check_without_pygls_works(tmp_path):
    (tmp_path / "t.py").write_text(LOOP)
    result = gpulint_without("pygls,lsprotocol", "check", "--no-cache", "t.py", cwd=tmp_path)
    assert result.returncode == 1 and "t.py:7:11: GPU101" in result.stdout


def test_notebooks_need_no_extra(tmp_path):
    # Issue 14: the README's CI line (base install) must not fail on a repository with a notebook: notebooks
    # are JSON, read with the standard library, linted and fixed without nbformat.
    shutil.copy(ROOT / "fixtures" / "notebooks" / "naive_training.ipynb", tmp_path / "nb.ipynb")
    (tmp_path / "t.py").write_text(LOOP)
    result = gpulint_without("nbformat", "check", "--no-cache", "-j", "1", "--output-format", "concise", ".",
                             cwd=tmp_path)
    assert result.returncode == 1  # the findings
    assert "t.py:7:11: GPU101" in result.stdout
    assert "nb.ipynb:cell 3:" in result.stdout
    assert [line for line in result.stderr.splitlines() if line] == []
    before = (tmp_path / "nb.ipynb").read_text()
    fixed = gpulint_without("nbformat", "--fix", "--no-cache", "nb.ipynb", cwd=tmp_path)
    assert fixed.returncode == 1 and "Fixed" in fixed.stdout, fixed.stderr
    after = (tmp_path / "nb.ipynb").read_text()
    assert after != before and json.loads(after)["cells"]  # still a notebook
