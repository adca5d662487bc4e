"""Project-wide analysis end to end: a training script whose syncs live in helper modules of its project.

fixtures/projects/helpers: scripts/train.py imports a metric logger, a reduce helper and a timer from
src/trainkit/, and builds its loaders with factories of src/trainkit/data.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "helpers"
EXPECTED = {
    ("scripts/train.py", 13, "GPU201"),  # create_dataloader(...) builds an unpinned DataLoader in data.py
    ("scripts/train.py", 20, "GPU112"),  # with dt[0]: Profile.__enter__ synchronizes
    ("scripts/train.py", 25, "GPU112"),  # logger.update(loss=loss): MetricLogger.update calls .item()
    ("scripts/train.py", 27, "GPU112"),  # all_reduce_mean(loss) returns x.item()
    ("scripts/train.py", 32, "GPU202"),  # a batch of the pinned factory's loader copied without non_blocking
    # all_reduce_mean runs every step with the loop's CUDA loss (the module names no device itself: recall20's
    # helpers_feed_a_gpu): its own `.item()` reads are reported too, as in helper modules that name one
    ("src/trainkit/dist.py", 15, "GPU101"),
    ("src/trainkit/dist.py", 16, "GPU101"),
}

IN_TRAIN = {k for k in EXPECTED if k[0] == "scripts/train.py"}  # the findings of a lint of train.py alone


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "helpers"
    shutil.copytree(FIXTURE, root)
    return root


def check(root: Path, *args: str, stdin: str | None = None):
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", *args],
                         cwd=root, capture_output=True, text=True, input=stdin, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def found(items) -> set:
    return {(Path(d["filename"]).as_posix(), d["location"]["row"], d["code"]) for d in items}


def test_whole_project_reports_costs_at_the_calls_in_the_loop(project: Path):
    items = check(project, "--no-cache", ".")
    # the calls in the loop, the per-step helper's own reads, and the factory's own unpinned `DataLoader(...)`,
    # which GPU201 reports where the fix goes too (recall22, tests/test_factory_loaders.py)
    assert found(items) == EXPECTED | {("src/trainkit/data.py", 5, "GPU201")}


def test_one_file_named_is_enough(project: Path):
    """pre-commit passes only the changed file: the helpers are still read, findings only in that file."""
    assert found(check(project, "--no-cache", "scripts/train.py")) == IN_TRAIN


def test_findings_name_the_helper_and_carry_its_line(project: Path):
    items = {d["location"]["row"]: d for d in check(project, "--no-cache", "scripts/train.py")}
    logger = items[25]
    assert "`logger.update(...)` syncs every step: `MetricLogger.update` calls `.item()`" in logger["message"]
    assert logger["related"] == [{"filename": "src/trainkit/meters.py", "location": {"row": 25, "column": 1},
                                  "message": "`.item()` here"}]
    assert items[20]["related"][0]["filename"] == "src/trainkit/meters.py"
    assert items[13]["related"][0] == {"filename": "src/trainkit/data.py", "location": {"row": 5, "column": 1},
                                       "message": "the `DataLoader` is built here"}
    concise = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--output-format",
                              "concise", "scripts/train.py"], cwd=project, capture_output=True, text=True)
    assert "(via src/trainkit/meters.py:25)" in concise.stdout


def test_stdin_with_a_file_name_reads_the_project_too(project: Path):
    text = (project / "scripts" / "train.py").read_text()
    items = check(project, "--stdin-filename", "scripts/train.py", stdin=text)
    assert {(d["location"]["row"], d["code"]) for d in items} == {(row, code) for _, row, code in IN_TRAIN}


def test_cached_result_follows_an_edit_of_the_helper(project: Path):
    first = found(check(project, "scripts/train.py"))
    assert ("scripts/train.py", 25, "GPU112") in first
    meters = project / "src" / "trainkit" / "meters.py"
    meters.write_text(meters.read_text().replace("                v = v.item()\n", "                v = v.detach()\n"))
    second = found(check(project, "scripts/train.py"))
    assert second == first - {("scripts/train.py", 25, "GPU112")}
    assert second == found(check(project, "--no-cache", "scripts/train.py"))


def test_periodic_call_of_a_syncing_helper_is_not_reported(project: Path):
    items = check(project, "--no-cache", "scripts/train.py")
    assert not any(d["location"]["row"] == 29 for d in items)  # print(all_reduce_mean(loss)) every 100 steps


def test_cached_result_survives_an_edit_that_keeps_every_summary(project: Path, monkeypatch):
    """A comment and a new function nobody calls leave `MetricLogger.update`'s summary as it was: train.py's
    cached result is used as is (no LibCST parse); only an edit of what `update` costs re-lints it."""
    from click.testing import CliRunner

    from gpulint.cli import main

    monkeypatch.chdir(project)
    args = ["check", "--output-format", "concise", "scripts/train.py"]
    cold = CliRunner().invoke(main, args, catch_exceptions=False)
    assert "scripts/train.py:25" in cold.output
    meters = project / "src" / "trainkit" / "meters.py"
    meters.write_text(meters.read_text() + "\n# smoothing is done on the host\n\n\ndef unrelated(a):\n    return a + 1\n")

    import libcst

    def refuse(*_args, **_kwargs):
        raise AssertionError("re-linted although no summary changed")

    with monkeypatch.context() as patched:
        patched.setattr(libcst, "parse_module", refuse)
        patched.setattr("gpulint.runner.cst.parse_module", refuse)
        patched.setattr("gpulint.bigfile.cst.parse_module", refuse)
        warm = CliRunner().invoke(main, args, catch_exceptions=False)
    assert warm.output == cold.output
    meters.write_text(meters.read_text().replace("                v = v.item()\n", "                v = v.detach()\n"))
    edited = CliRunner().invoke(main, args, catch_exceptions=False)
    assert "scripts/train.py:25" not in edited.output and "scripts/train.py:27" in edited.output


def test_cached_results_follow_a_helper_of_a_helper(tmp_path: Path, monkeypatch):
    """Two scripts call `utils.f`, which syncs through `deep.g`: the second script gets `f`'s summary from the
    run's memory, and its cached result must still depend on `g`'s summary (an edit of deep.py re-lints it)."""
    from click.testing import CliRunner

    from gpulint.cli import main

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "deep.py").write_text("def g(x):\n    return x.item()\n")
    (tmp_path / "utils.py").write_text("from deep import g\n\n\ndef f(x):\n    return g(x)\n")
    script = ("import torch\nfrom torch.utils.data import DataLoader\nfrom utils import f\n\n"
              "model = torch.nn.Linear(2, 2).cuda()\nfor x in DataLoader([1], pin_memory=True):\n"
              "    loss = model(x.cuda(non_blocking=True)).sum()\n    loss.backward()\n    f(loss)\n")
    (tmp_path / "a.py").write_text(script)
    (tmp_path / "b.py").write_text(script)
    monkeypatch.chdir(tmp_path)
    args = ["check", "--jobs", "1", "--output-format", "concise", "a.py", "b.py"]
    first = CliRunner().invoke(main, args, catch_exceptions=False).output
    assert "a.py:9" in first and "b.py:9" in first
    (tmp_path / "deep.py").write_text("def g(x):\n    return x.detach()\n")
    second = CliRunner().invoke(main, args, catch_exceptions=False).output
    assert "a.py:9" not in second and "b.py:9" not in second
