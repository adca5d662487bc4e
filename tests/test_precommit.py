"""The pre-commit hooks, end to end, with the real `pre-commit` tool on a temporary git repository.

pre-commit clones this repository, builds a virtual environment and pip-installs gpulint into it, as it does on
users' machines. `pre-commit try-repo` builds that environment afresh on every call (about 12 s each), so the
tests take try-repo's approach once: a snapshot commit of this working tree (uncommitted edits included), named
in a `.pre-commit-config.yaml` as users write it, with one hook environment shared by every run.
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
CLEAN = "import torch\n\nx = torch.zeros(3)\nprint(x.sum().item())\n"

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


def git(*args: str, cwd: Path, env: dict) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory, env) -> tuple[Path, str]:
    """A clone of this repository whose HEAD holds the working tree's tracked files as they are now."""
    if not (ROOT / ".git").exists():
        pytest.skip("gpulint's sources are not a git checkout")
    shadow = tmp_path_factory.mktemp("hook-repo") / "gpulint"
    git("clone", "-q", "--no-local", str(ROOT), str(shadow), cwd=ROOT, env=env)
    for name in git("ls-files", "-z", cwd=ROOT, env=env).split("\0"):
        source = ROOT / name
        if name and source.is_file() and not source.is_symlink():
            (shadow / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, shadow / name)
    git("add", "-A", cwd=shadow, env=env)
    if git("status", "--porcelain", cwd=shadow, env=env).strip():
        git("commit", "-q", "--no-verify", "-m", "working tree snapshot", cwd=shadow, env=env)
    return shadow, git("rev-parse", "HEAD", cwd=shadow, env=env).strip()


@pytest.fixture
def repo(tmp_path: Path, env, hook_repo) -> Path:
    shadow, rev = hook_repo
    git("init", "-q", str(tmp_path), cwd=tmp_path, env=env)
    (tmp_path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {shadow.as_uri()}\n    rev: {rev}\n    hooks:\n"
        f"      - id: gpulint\n      - id: gpulint-fix\n")
    (tmp_path / "train.py").write_text(EXAMPLE)
    (tmp_path / "clean.py").write_text(CLEAN)
    shutil.copy(ROOT / "fixtures" / "notebooks" / "naive_training.ipynb", tmp_path / "train.ipynb")
    (tmp_path / "notes.txt").write_text("x.item() in a text file is not Python\n")
    git("add", ".", cwd=tmp_path, env=env)
    return tmp_path


def pre_commit_run(precommit, env, repo: Path, hook: str, *files: str) -> subprocess.CompletedProcess:
    return subprocess.run([*precommit, "run", hook, "--files", *files], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)


def test_hook_fails_on_a_bad_file_and_passes_on_a_clean_one(precommit, env, repo):
    bad = pre_commit_run(precommit, env, repo, "gpulint", "train.py", "train.ipynb", "notes.txt")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "train.py:23:12: GPU108" in bad.stdout
    assert "train.ipynb:cell 4:6:8: GPU108" in bad.stdout  # notebooks too: the hook brings nbformat
    assert "notes.txt" not in bad.stdout  # types_or keeps other files away from the hook
    good = pre_commit_run(precommit, env, repo, "gpulint", "clean.py", "notes.txt")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


def test_fix_hook_fixes_the_file(precommit, env, repo):
    fixed = pre_commit_run(precommit, env, repo, "gpulint-fix", "train.py")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fixed.stdout
    text = (repo / "train.py").read_text()
    assert "pin_memory=torch.cuda.is_available()" in text and "non_blocking=True" in text
    assert "running_loss += loss.item()" in text  # unsafe fixes are not applied by default
    again = pre_commit_run(precommit, env, repo, "gpulint-fix", "train.py")
    assert (repo / "train.py").read_text() == text  # nothing left that --fix can do
    assert "files were modified" not in again.stdout



def _readme_config(repo_url: str) -> str:
    """The README's .pre-commit-config.yaml, pointed at `repo_url`, with both hooks enabled."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = next(b for b in readme.split("```yaml\n")[1:] if ".pre-commit-config.yaml" in b).split("```")[0]
    return block.replace("<this repository's URL>", repo_url).replace("# - id: gpulint-fix", "- id: gpulint-fix")


def test_readme_rev_names_a_real_ref_and_autoupdate_pins_it(precommit, env, hook_repo, tmp_path):
    # The user's step: paste the README's snippet, run the hooks, then `pre-commit autoupdate`.
    shadow, snapshot = hook_repo
    if git("branch", "--show-current", cwd=shadow, env=env).strip() != "main":
        git("branch", "-f", "main", snapshot, cwd=shadow, env=env)  # the published repository's main branch
    user = tmp_path / "user"
    git("init", "-q", str(user), cwd=tmp_path, env=env)
    (user / ".pre-commit-config.yaml").write_text(_readme_config(shadow.as_uri()))
    (user / "train.py").write_text(EXAMPLE)
    git("add", ".", cwd=user, env=env)
    run = pre_commit_run(precommit, env, user, "gpulint", "train.py")
    assert run.returncode == 1 and "train.py:23:12: GPU108" in run.stdout, run.stdout + run.stderr
    update = subprocess.run([*precommit, "autoupdate"], cwd=user, env=env, capture_output=True, text=True,
                            timeout=600)
    assert update.returncode == 0, update.stdout + update.stderr
    config = (user / ".pre-commit-config.yaml").read_text()
    assert f"rev: {snapshot}" in config  # no tags yet: pinned to main's commit, an immutable rev


def test_try_repo_from_a_clean_clone_runs_both_hooks_on_code_and_a_notebook(precommit, env, hook_repo, tmp_path):
    # `pre-commit try-repo` from a fresh clone, as a contributor (or a user before pinning) runs it.
    shadow, _ = hook_repo
    clone = tmp_path / "clean-clone"
    git("clone", "-q", "--no-local", str(shadow), str(clone), cwd=tmp_path, env=env)
    user = tmp_path / "user"
    git("init", "-q", str(user), cwd=tmp_path, env=env)
    (user / "train.py").write_text(EXAMPLE)
    shutil.copy(ROOT / "fixtures" / "notebooks" / "naive_training.ipynb", user / "train.ipynb")
    git("add", ".", cwd=user, env=env)

    def try_repo(hook: str) -> subprocess.CompletedProcess:
        return subprocess.run([*precommit, "try-repo", str(clone), hook, "--files", "train.py", "train.ipynb"],
                              cwd=user, env=env, capture_output=True, text=True, timeout=600)

    check = try_repo("gpulint")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "train.py:23:12: GPU108" in check.stdout and "train.ipynb:cell 4:6:8: GPU108" in check.stdout
    fix = try_repo("gpulint-fix")
    assert "files were modified by this hook" in fix.stdout, fix.stdout + fix.stderr
    assert "non_blocking=True" in (user / "train.py").read_text()
    assert "non_blocking=True" in (user / "train.ipynb").read_text()
