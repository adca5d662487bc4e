"""The extras are optional: without pygls or nbformat, gpulint says so in one line and does everything else.

(`gpulint server` without pygls: tests/test_editing.py.)
"""

from __future__ import annotations

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


def test_notebook_without_nbformat_is_skipped_in_one_line_and_the_run_goes_on(tmp_path):
    shutil.copy(ROOT / "fixtures" / "notebooks" / "naive_training.ipynb", tmp_path / "nb.ipynb")
    (tmp_path / "t.py").write_text(LOOP)
    result = gpulint_without("nbformat", "check", "--no-cache", "-j", "1", ".", cwd=tmp_path)
    assert result.returncode == 1  # the finding in t.py
    assert "t.py:7:11: GPU101" in result.stdout
    errors = [line for line in result.stderr.splitlines() if line]
    assert errors == ["gpulint: error: nb.ipynb: notebooks need nbformat (pip install 'gpulint[notebook]'); skipped"]
