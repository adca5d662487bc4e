"""What a warm run (every file answered by the cache) still does, counted (issue 11's warm target).

A warm run reads each cache entry and checks the project modules the entry's findings were computed from; it walks
the folders for the files to lint and fingerprints gpulint's own sources. Each of those is asked once per run,
not once per file (branch speed19): the dependency verdicts (gpulint/cache.py), the real path of each walked file
(gpulint/discovery.py: one `resolve` per folder) and the source fingerprint (no `Path` object per source file).
"""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from projects import write_project

from gpulint import cache as cache_module
from gpulint.cli import main
from gpulint.config import Settings
from gpulint.discovery import iter_files

from test_lint_cost import TRAIN_LOOP as TRAIN, UTILS


def run(*args):
    return CliRunner().invoke(main, ["check", "--jobs", "1", "--output-format", "concise", *args],
                              catch_exceptions=False)


def test_a_warm_run_checks_each_shared_dependency_once(tmp_path: Path, monkeypatch) -> None:
    """Five scripts whose findings depend on one helper module: the warm run asks whether the helper changed
    once, not once per script's entry; the findings are the same, and an edit of the helper still re-lints."""
    root = write_project(tmp_path / "p", {"utils.py": UTILS, **{f"train_{n}.py": TRAIN for n in range(5)}})
    monkeypatch.chdir(root)
    cold = run(".")
    assert "GPU" in cold.output
    asked: list = []
    original = cache_module._unchanged
    monkeypatch.setattr(cache_module, "_unchanged", lambda path, digest: asked.append(path) or original(path, digest))
    warm = run(".")
    assert warm.output == cold.output
    assert any(p.endswith("utils.py") for p in asked), asked  # the entries do record the helper
    assert len(asked) == len(set(asked)), sorted(asked)  # 5 questions about utils.py before
    (root / "utils.py").write_text(UTILS.replace("tp.data.mul_", "tp.data.add_"))
    asked.clear()
    edited = run(".")
    assert asked.count(str(root / "utils.py")) <= 1 and edited.exit_code == cold.exit_code


def test_walking_resolves_each_folder_not_each_file(tmp_path: Path, monkeypatch) -> None:
    """The walk's real paths (to lint a file reached twice once) come from the folder's real path: `resolve`
    runs once per folder walked, not once per file (each `resolve` stats every component of the path)."""
    root = write_project(tmp_path / "p", {f"pkg{d}/m{n}.py": "x = 1\n" for d in range(3) for n in range(10)})
    (root / "pkg0" / "link.py").symlink_to(root / "pkg1" / "m0.py")  # the same file twice: linted once
    resolved: list = []
    original = Path.resolve
    monkeypatch.setattr(Path, "resolve", lambda self, *a, **k: resolved.append(self) or original(self, *a, **k))
    files = list(iter_files([root], Settings(root=root)))
    assert len(files) == 30 and root / "pkg0" / "link.py" in files and root / "pkg1" / "m0.py" not in files
    assert len(resolved) <= 8, len(resolved)  # 31 file resolves before, besides the folders'


def test_the_source_fingerprint_makes_no_path_per_source_file(monkeypatch) -> None:
    """gpulint's own ~200 source files are listed and stat-ed through `os.scandir`, with the same fingerprint as
    sorting `Path.rglob('*.py')` gave (cache entries written before stay valid)."""
    import hashlib
    import importlib.util

    import gpulint

    package = Path(gpulint.__file__).resolve().parent
    rules = Path(importlib.util.find_spec("gpulint.rules").origin).resolve().parent
    parts = [gpulint.__version__, str(cache_module.FORMAT)]
    for folder in sorted({package, rules}):
        for entry in sorted(folder.rglob("*.py")):
            st = entry.stat()
            parts.append(f"{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    expected = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    stats: list = []
    monkeypatch.setattr(Path, "stat", lambda self, *a, **k: stats.append(self) or os.stat(self))
    assert cache_module.code_fingerprint() == expected
    assert len(stats) <= 2, len(stats)  # the two folders resolved; one Path.stat per source file (~200) before


def test_the_walked_folders_gitignore_is_compiled_once(tmp_path: Path, monkeypatch) -> None:
    """The .gitignore of the folder a walk starts from, and of the folders above it within the project, are each
    compiled once (the starting folder's was compiled twice, the first time for nothing); they still apply."""
    import pathspec

    root = write_project(tmp_path / "p", {"a.py": "x = 1\n", "gen/b.py": "x = 1\n", "sub/c.py": "x = 1\n",
                                          "sub/skip_me.py": "x = 1\n"})
    (root / ".gitignore").write_text("gen/\n")
    (root / "sub" / ".gitignore").write_text("skip_*.py\n")
    compiled: list = []
    original = pathspec.GitIgnoreSpec.from_lines.__func__
    monkeypatch.setattr(pathspec.GitIgnoreSpec, "from_lines",
                        classmethod(lambda cls, lines, *a, **k: compiled.append(list(lines)) or
                                    original(cls, lines, *a, **k)))
    assert [p.name for p in iter_files([root], Settings(root=root))] == ["a.py", "c.py"]
    assert compiled.count(["gen/"]) == 1 and compiled.count(["skip_*.py"]) == 1, compiled
    compiled.clear()
    assert [p.name for p in iter_files([root / "sub"], Settings(root=root))] == ["c.py"]
    assert compiled.count(["gen/"]) == 1 and compiled.count(["skip_*.py"]) == 1, compiled
