"""Cold-lint work the per-step questions repeated (issue 11, branch speed16): counted, not timed. Each test fails
on the code before the change (ade1baa); the answers asserted are the ones it gave.

- `forward._remembered` replayed a kept answer's dependencies one `_record` call per path, for every asker (1.36
  million calls in a cold lint of fairseq); they are now added to the recording in one set update.
- `Project.files_naming` resolved every file it found (and `_files_mentioning` every project file) to leave out
  editor buffers, also in a batch run, which has none (760,000 + 659,000 `_resolved` calls on fairseq).
- `forward.may_run_every_step` was answered afresh by each of the up to three asks of one file's lint (the
  prefilter, the device-free rules, the rule gate); the last answer is kept for its tree, path and recording.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from gpulint.analysis import forward, project as project_module
from gpulint.analysis.project import Project, recording, text_dependency


def _files(root: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = root / f"m{i}.py"
        path.write_text(f"def helper_{i}(x):\n    return shared(x)\n")
        paths.append(path)
    return paths


def _counting(monkeypatch, owner, name: str) -> list:
    calls: list = []
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_kept_answer_replays_its_dependencies_without_a_call_per_path(tmp_path: Path, monkeypatch) -> None:
    paths = _files(tmp_path, 40)
    project = Project(tmp_path)

    def find():
        for path in paths:
            project.module(path)
        return "found"

    with recording() as first:
        assert forward._remembered(project, ("test key",), find) == "found"
    assert {p.resolve() for p in paths} <= set(first) and {p.resolve() for p in paths} <= first.text
    records = _counting(monkeypatch, project_module, "_record")
    for _ in range(50):
        with recording() as again:
            assert forward._remembered(project, ("test key",), find) == "found"
        # what the kept answer read is recorded for each asker, with its whole text
        assert set(again) == set(first) and again.text == first.text
    assert records == []  # was 40 per ask (2,000)


def test_the_name_index_resolves_no_file_in_a_batch_run(tmp_path: Path, monkeypatch) -> None:
    paths = _files(tmp_path, 30)
    project = Project(tmp_path)
    assert project.files_naming("shared") == sorted(paths)  # builds the index
    resolved = _counting(monkeypatch, Project, "_resolved")
    for _ in range(20):
        assert project.files_naming("shared") == sorted(paths)
        assert project.files_naming("helper_7") == [tmp_path / "m7.py"]
        assert project._files_mentioning("shared") == project._project_files()
        assert project._files_mentioning("helper_3") == [tmp_path / "m3.py"]
    assert resolved == []  # was 30 + 1 per `files_naming` and 30 per `_files_mentioning` (2,440)


def test_an_editor_buffer_is_still_found_by_the_name_index(tmp_path: Path) -> None:
    paths = _files(tmp_path, 3)
    project = Project(tmp_path)
    buffer = (tmp_path / "m1.py").resolve()
    project.set_text(buffer, "def other(x):\n    return shared_too(x)\n")
    assert buffer in project.files_naming("shared_too")
    assert project._files_mentioning("shared_too") == [paths[1]]


def test_the_name_index_answers_each_name_once_while_a_buffer_is_open(tmp_path: Path, monkeypatch) -> None:
    """speed17: a linted text that differs from its file (a batch run's file whose text is not what the disk
    holds, or an editor's buffer) is a buffer for the rest of the run, and every later `files_naming` resolved
    each file it found, every `_files_mentioning` each project file (on fairseq 1.2M resolves, 2% of a cold
    lint). Each name's answer is now kept until a buffer is set or dropped or the index is built again."""
    paths = _files(tmp_path, 30)
    project = Project(tmp_path)
    buffer = (tmp_path / "m1.py").resolve()
    project.set_text(buffer, "def other(x):\n    return shared_too(x)\n")
    first = (project.files_naming("shared"), project.files_naming("shared_too"),
             project._files_mentioning("shared"), project._files_mentioning("helper_3"))
    assert buffer in first[1] and first[3] == [paths[1], paths[3]]  # the buffer is found, in the project's order
    resolved = _counting(monkeypatch, Project, "_resolved")
    for _ in range(20):
        again = (project.files_naming("shared"), project.files_naming("shared_too"),
                 project._files_mentioning("shared"), project._files_mentioning("helper_3"))
        assert again == first
        again[0].append(tmp_path / "x.py")  # an answer is the caller's own list
    assert resolved == []  # was 30 + 1 per `files_naming("shared")` and 30 per `_files_mentioning` (2,460)
    project.set_text(buffer, None)  # the buffer closed: the disk again, and the names answered afresh
    assert buffer not in project.files_naming("shared_too") and project.files_naming("shared") == sorted(paths)
    assert project._files_mentioning("helper_3") == [paths[3]]
    project.set_text(buffer, "def other(x):\n    return shared_too(x)\n")
    assert project._files_mentioning("helper_3") == [paths[1], paths[3]]
    project.forget(None)  # every summary forgotten: the index and its answers too
    assert project._files_mentioning("helper_3") == [paths[1], paths[3]]
    assert buffer in project.files_naming("shared_too")


MODEL = textwrap.dedent('''
    import torch.nn as nn

    class Net(nn.Module):
        def forward(self, x):
            return x
''')


def test_one_lints_asks_of_may_run_every_step_are_answered_once(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    tree = ast.parse(MODEL)
    asked = _counting(monkeypatch, forward, "per_step_site")
    with recording():
        answers = [forward.may_run_every_step(path, tree) for _ in range(3)]
    assert answers == [False] * 3 and len(asked) == 1  # was 3
    with recording():  # another lint (its own dependency recording) asks afresh
        assert forward.may_run_every_step(path, tree) is False
    assert len(asked) == 2
    with recording(), text_dependency():  # and so does an ask that records whole texts
        assert forward.may_run_every_step(path, tree) is False
    assert len(asked) == 3
    with recording():  # as does an ask with another tree of the file (an editor's next buffer)
        other = ast.parse(MODEL)
        forward.may_run_every_step(path, other)
        forward.may_run_every_step(path, other)
    assert len(asked) == 4
