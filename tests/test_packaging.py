"""The built wheel ships the rules as `gpulint.rules` and installs no top-level `rules` package."""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = tmp_path_factory.mktemp("src") / "gpulint"
    # Build from a copy so the checkout gets no build/ or egg-info droppings.
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv*", "build", "*.egg-info",
                                                              "__pycache__", ".pytest_cache", ".hypothesis",
                                                              ".gpulint_cache", ".whl", ".devcarry"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"wheel build failed:\n{proc.stderr[-3000:]}")
    return next(out.glob("gpulint-*.whl"))


def test_wheel_layout(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    assert "gpulint/rules/__init__.py" in names
    assert "gpulint/rules/host_sync/item_in_loop.py" in names
    from gpulint.rule import all_rules

    rules_root = ROOT / "rules"
    for code, cls in all_rules().items():  # every rule's own file ships, whatever family folder it is in
        shipped = "gpulint/rules/" + Path(inspect.getfile(cls)).resolve().relative_to(rules_root).as_posix()
        assert shipped in names, f"{code}'s file is missing from the wheel: add its package to pyproject.toml"
    assert "gpulint/verify/probe.py" in names  # `gpulint verify` runs it as `python -m gpulint.verify.probe`
    assert not [n for n in names if n.startswith("rules/")], "a top-level `rules` package would be installed"
    top_level = {n.split("/")[0] for n in names if not n.startswith("gpulint-")}
    assert top_level == {"gpulint"}
    metadata = next(n for n in names if n.endswith("METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert not [r for r in requires if "torch" in r], "the linter must not depend on torch"


def test_installed_wheel_runs(wheel: Path, tmp_path: Path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                    str(wheel)], check=True)
    example = ROOT / "fixtures" / "examples" / "naive_train.py"
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.argv=['gpulint','check',sys.argv[1]];"
                           "from gpulint.cli import main; main()", str(example)],
                          capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(target),
                                                                             "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1, proc.stderr
    assert "GPU108" in proc.stdout
    assert not (target / "rules").exists()
