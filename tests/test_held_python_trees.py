"""A file's own lint takes the `ast` tree the project model already holds for it (issue 11's cold speed,
branch speed18).

In a batch run the project model parses other files while answering one file's questions (is this class run
every step, who calls this function); each file's own lint then parsed the same bytes again once the few recent
trees (`incremental._recent_trees`) had let it go: a cold lint of fairseq parsed 717 of the 868 files it parsed
with CPython's parser twice (6.3 of its 6.5 million characters). The lint now takes the model's tree when the
digests match; the findings are the same.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from gpulint import incremental, runtime

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "models"


def _lint_counting_parses(root: Path, monkeypatch) -> tuple[set, dict]:
    """(findings, CPython parses of a whole file by file name) of a one-process batch lint of the project, with
    one recent tree kept (as a big project's lint finds, its model having parsed many files since)."""
    from gpulint import parallel
    from gpulint.config import Settings
    from gpulint.diagnostics import FixMode
    from gpulint.discovery import iter_files

    parses: dict[str, int] = {}
    parse = ast.parse

    def counted(source, filename="<unknown>", *args, **kwargs):
        if str(filename).endswith(".py") and Path(str(filename)).resolve().is_relative_to(root.resolve()):
            name = Path(str(filename)).name
            parses[name] = parses.get(name, 0) + 1
        return parse(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    monkeypatch.setattr(incremental, "_recent_trees", incremental._RecentByText(size=1))
    files = sorted(iter_files([root], Settings(root=root)))
    outcomes = parallel.lint_files(files, Settings(root=root), FixMode.NONE, write=False, want_edits=False, jobs=1)
    findings = {(Path(d.filename).name, d.location.row, d.code) for o in outcomes for d in o.diagnostics}
    return findings, parses


def test_each_file_is_parsed_once_by_its_lint_and_the_project_model(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "models"
    shutil.copytree(FIXTURE, root)
    findings, parses = _lint_counting_parses(root, monkeypatch)
    assert ("queue.py", 20, "GPU105") in findings  # model code a loop of train.py runs every step
    assert parses.get("train.py") and parses.get("queue.py")
    # the model parsed train.py for queue.py's questions; train.py's own lint took that tree (2 parses before)
    assert max(parses.values()) == 1, parses


def test_a_held_tree_is_taken_only_for_the_same_plain_text(tmp_path: Path) -> None:
    from gpulint.analysis.project import held_python_tree, project_for

    path = tmp_path / "m.py"
    path.write_text("import torch\nx = 1\n")
    (tmp_path / "pyproject.toml").write_text("")
    with runtime.batch():
        project = project_for(path)
        info = project.module(path)
        assert info is not None
        assert held_python_tree(path, "import torch\nx = 1\n") is info.tree
        assert held_python_tree(path, "import torch\nx = 2\n") is None  # another text: parsed afresh
        assert held_python_tree(tmp_path / "other.py", "import torch\nx = 1\n") is None  # never read by the model
    # an editor's lint (no batch run) parses its buffer itself
    assert held_python_tree(path, "import torch\nx = 1\n") is None


def test_a_coding_cookie_is_never_taken_from_the_model(tmp_path: Path) -> None:
    """Bytes with a coding cookie are decoded by CPython as the cookie says, a text as it is: not the same tree."""
    from gpulint.analysis.project import held_python_tree, project_for

    text = "# -*- coding: latin-1 -*-\ns = 'caf\u00e9'\n"
    path = tmp_path / "m.py"
    path.write_bytes(text.encode("utf-8"))
    (tmp_path / "pyproject.toml").write_text("")
    with runtime.batch():
        assert project_for(path).module(path) is not None
        assert held_python_tree(path, text) is None
