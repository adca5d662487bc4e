"""The pre-commit hooks, end to end: the real `pre-commit try-repo` against this repository.

pre-commit builds a virtual environment and pip-installs gpulint from this checkout, as users' machines do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "fixtures" / "examples" / "naive_train.py").read_text()

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(scope="module")
def precommit() -> list[str]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        pytest.skip("pre-commit is not installed (pip install pre-commit)")
    return [sys.executable, "-m", "pre_commit"]


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("pre-commit-home")  # shared by the tests: one hook install
    return {**os.environ, "PRE_COMMIT_HOME": str(home), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PRE_COMMIT_COLOR": "never"}


@pytest.fixture
def repo(tmp_path: Path, env) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    (tmp_path / "train.py").write_text(EXAMPLE)
    (tmp_path / "clean.py").write_text("import torch\n\nx = torch.zeros(3)\nprint(x.sum().item())\n")
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True, env=env)
    return tmp_path


def try_repo(precommit, env, repo: Path, hook: str, *files: str) -> subprocess.CompletedProcess:
    return subprocess.run([*precommit, "try-repo", str(ROOT), hook, "--files", *files], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)


def test_hook_fails_on_a_bad_file_and_passes_on_a_clean_one(precommit, env, repo):
    bad = try_repo(precommit, env, repo, "gpulint", "train.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "train.py:23:12: GPU108" in bad.stdout
    good = try_repo(precommit, env, repo, "gpulint", "clean.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


def test_fix_hook_fixes_the_file(precommit, env, repo):
    fixed = try_repo(precommit, env, repo, "gpulint-fix", "train.py")
    assert fixed.returncode == 1  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fixed.stdout
    text = (repo / "train.py").read_text()
    assert "pin_memory=True" in text and "non_blocking=True" in text
    assert "running_loss += loss.item()" in text  # unsafe fixes are not applied by default
    again = try_repo(precommit, env, repo, "gpulint-fix", "train.py")
    assert (repo / "train.py").read_text() == text  # nothing left that --fix can do
    assert "files were modified" not in again.stdout
