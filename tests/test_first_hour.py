"""What a new user hit in the first hour (issue 14), each step as the user took it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "fixtures" / "examples" / "naive_train.py").read_text()
HOT = textwrap.dedent("""\
    import torch
    model = torch.nn.Linear(2, 2).cuda()
    loader = torch.utils.data.DataLoader([1], pin_memory=True)
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        print(loss.item()){comment}
""")


def gpulint(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpulint", *args], cwd=cwd, input=input, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def run(*args: str) -> "click.testing.Result":  # noqa: F821
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "train.py").write_text(EXAMPLE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- 1. a broken pyproject.toml stops the run ------------------------------------------------------------------

def test_pyproject_with_a_toml_syntax_error_stops_with_file_line_and_reason(project):
    (project / "pyproject.toml").write_text('[tool.gpulint]\nselect = ["GPU"]\nignore = [GPU1\n')
    result = gpulint("check", "train.py", cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [
        "gpulint: error: pyproject.toml:3:11: invalid TOML: invalid value"]
    assert result.stdout == ""  # nothing was linted with the defaults


def test_broken_pyproject_above_the_linted_folder_is_found_too(project):
    (project / "pyproject.toml").write_text("[tool.gpulint\n")
    (project / "src").mkdir()
    (project / "src" / "train.py").write_text(EXAMPLE)
    result = gpulint("check", "src", cwd=project)
    assert result.returncode == 2 and "pyproject.toml:1:" in result.stderr and "Traceback" not in result.stderr


# -- 4. noqa: unknown codes, unused comments, --add-noqa ---------------------------------------------------------

def test_unknown_code_in_noqa_suppresses_nothing_and_warns_with_the_closest_code(project):
    (project / "hot.py").write_text(HOT.format(comment="  # noqa: foo-bar"))
    (project / "typo.py").write_text(HOT.format(comment="  # noqa: GPU1O1"))
    result = gpulint("check", "--output-format", "concise", "hot.py", "typo.py", cwd=project)
    assert result.returncode == 1
    assert "hot.py:7:11: GPU101" in result.stdout  # `foo-bar` is no blanket noqa
    assert "typo.py:7:11: GPU101" in result.stdout
    assert ("gpulint: warning: typo.py:7: unknown rule code 'GPU1O1' in a noqa comment (it suppresses nothing); "
            "did you mean GPU101 (item-in-loop)?") in result.stderr
    assert "hot.py:7: unknown rule code 'foo-bar'" in result.stderr


def test_valid_and_foreign_codes_in_noqa_keep_working(project):
    (project / "ok.py").write_text(HOT.format(comment="  # noqa: E501, GPU101"))
    result = gpulint("check", "ok.py", cwd=project)
    assert result.returncode == 0 and "warning" not in result.stderr, result.stdout + result.stderr


def test_unknown_codes_in_config_name_the_closest_code(project):
    (project / "pyproject.toml").write_text('[tool.gpulint]\nignore = ["GPU1O1"]\n')
    result = gpulint("check", "train.py", cwd=project)
    assert result.returncode == 2
    assert "unknown rule code or prefix 'GPU1O1'; did you mean GPU101 (item-in-loop)?" in result.stderr
    flag = gpulint("check", "--select", "item-in-lop", "train.py", cwd=project)
    assert flag.returncode == 2 and "did you mean GPU101" in flag.stderr


def test_unused_noqa_is_reported_only_when_asked(project):
    (project / "n.py").write_text(HOT.format(comment="  # noqa: GPU101")
                                  + "y = 1  # noqa: GPU102\nz = 2  # noqa\nw = 3  # noqa: E501\n")
    assert run("check", "n.py").exit_code == 0
    result = run("check", "--unused-noqa", "--output-format", "concise", "n.py")
    assert result.exit_code == 1
    assert "n.py:8:8: GPU000 Unused `noqa` directive (unused: GPU102)" in result.output
    assert "n.py:9:8: GPU000 Unused blanket `noqa` directive" in result.output
    assert "n.py:7:" not in result.output and "n.py:10:" not in result.output  # used; another tool's code
    (project / "pyproject.toml").write_text("[tool.gpulint]\nunused-noqa = true\n")
    assert "GPU000" in run("check", "n.py").output


def test_add_noqa_silences_every_finding_and_keeps_existing_comments(project):
    before = run("check", "--output-format", "json", "train.py")
    rows = {(d["code"], d["location"]["row"]) for d in json.loads(before.output)}
    text = EXAMPLE.splitlines()
    text[0] += "  # a comment of the user's"
    (project / "train.py").write_text("\n".join(text) + "\n")
    result = run("check", "--add-noqa", "train.py")
    assert result.exit_code == 0 and "Added" in result.output
    lines = (project / "train.py").read_text().splitlines()
    for code, row in rows:
        assert "# noqa: " in lines[row - 1] and code in lines[row - 1]
    assert lines[0].endswith("  # a comment of the user's")
    assert run("check", "train.py").exit_code == 0


# -- 5. --statistics and closed pipes ----------------------------------------------------------------------------

def test_statistics_marks_unsafe_fixes_apart_and_says_how_many(project):
    out = run("check", "--statistics", "train.py").output.splitlines()
    assert "1\tGPU201\t[*] dataloader-without-pin-memory" in out
    assert "1\tGPU108\t[ ] nan-check-in-loop" in out  # unsafe-only: --fix does not fix it
    assert out[-1].startswith("Found 9 findings")
    unsafe = run("check", "--statistics", "--unsafe-fixes", "train.py").output.splitlines()
    assert "1\tGPU108\t[*] nan-check-in-loop" in unsafe


@pytest.mark.parametrize("args", [["rule", "--all"], ["check", "--output-format", "json", "--no-cache", "."],
                                  ["check", "--statistics", "."]])
def test_a_closed_pipe_ends_quietly(project, args):
    # `gpulint rule --all | head -1`: the reader is gone before gpulint writes (head has read its line and left).
    proc = subprocess.Popen([sys.executable, "-m", "gpulint", *args], cwd=project, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) != 2
    assert stderr == "", stderr  # no "internal error", no traceback, no "Exception ignored ... BrokenPipeError"


# -- 6. Ruff's habits --------------------------------------------------------------------------------------------

def test_show_fixes_lists_what_was_fixed(project):
    result = run("check", "--fix", "--show-fixes", "train.py")
    assert "- train.py:" in result.output
    assert "    1 \u00d7 GPU201 (dataloader-without-pin-memory)" in result.output
    assert "    4 \u00d7 GPU202 (copy-without-non-blocking)" in result.output


def test_fix_only_reports_no_remaining_findings_and_exit_non_zero_on_fix(project):
    result = run("check", "--fix-only", "train.py")
    assert result.exit_code == 0, result.output
    assert result.output == "Fixed 5 findings.\n"
    assert "non_blocking=True" in (project / "train.py").read_text()
    (project / "train.py").write_text(EXAMPLE)
    assert run("check", "--fix-only", "--exit-non-zero-on-fix", "train.py").exit_code == 1
    assert run("check", "--fix-only", "--exit-non-zero-on-fix", "train.py").exit_code == 0  # nothing left


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(project):
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(EXAMPLE)
    (project / "third_party").mkdir()
    (project / "third_party" / "lib.py").write_text(EXAMPLE)
    out = run("check", "--output-format", "concise", ".").output
    assert "build/gen.py" not in out and "third_party/lib.py" in out
    out = run("check", "--output-format", "concise", "--extend-exclude", "third_party", ".").output
    assert "build/gen.py" not in out and "third_party" not in out and "train.py" in out
    (project / "pyproject.toml").write_text('[tool.gpulint]\nexclude = ["third_party"]\n')
    out = run("check", "--output-format", "concise", ".").output
    assert "build/gen.py" in out and "third_party" not in out  # as Ruff's: `exclude` replaces the defaults


def test_pylint_and_azure_formats(project):
    pylint = run("check", "--output-format", "pylint", "train.py").output.splitlines()
    assert pylint[0] == ("train.py:11: [GPU201] `DataLoader` without `pin_memory=True` feeds a GPU: "
                         "host-to-device copies block and cannot overlap")
    azure = run("check", "--output-format", "azure", "train.py").output.splitlines()
    assert azure[0].startswith("##vso[task.logissue type=error;sourcepath=train.py;linenumber=11;columnnumber=10;"
                               "code=GPU201;]`DataLoader` without")
    assert len(pylint) == len(azure) == 9


def test_gitlab_code_quality_report(project, monkeypatch):
    monkeypatch.setenv("CI_PROJECT_DIR", str(project))
    issues = json.loads(run("check", "--output-format", "gitlab", str(project / "train.py")).output)
    assert len(issues) == 9
    first = issues[0]
    assert first["check_name"] == "GPU201" and first["severity"] == "major"
    assert first["description"].startswith("GPU201: `DataLoader` without")
    assert first["location"] == {"path": "train.py", "positions": {"begin": {"line": 11, "column": 10},
                                                                   "end": {"line": 11, "column": 55}}}
    assert len({i["fingerprint"] for i in issues}) == 9  # unique, even for two findings with one message


def test_rdjson_for_reviewdog_carries_fixes_as_suggestions(project):
    log = json.loads(run("check", "--output-format", "rdjson", "train.py").output)
    assert log["source"]["name"] == "gpulint"
    first = log["diagnostics"][0]
    assert first["code"]["value"] == "GPU201"
    assert first["location"]["path"] == "train.py"
    assert first["location"]["range"]["start"] == {"line": 11, "column": 10}
    assert any("pin_memory=torch.cuda.is_available()" in s["text"] for s in first["suggestions"])


def test_new_flags_and_formats_are_in_help():
    text = run("check", "--help").output
    for flag in ("--show-fixes", "--fix-only", "--exit-non-zero-on-fix", "--extend-exclude", "--add-noqa",
                 "--unused-noqa", "gitlab", "pylint", "azure", "rdjson"):
        assert flag in text


# -- 7. GPU201's fix on scripts that also run without CUDA (the change belongs to rules/, see the fixture) ------

PENDING = ROOT / "fixtures" / "rules" / "GPU201"


def test_gpu201_findings_on_cpu_capable_scripts_stay_as_they_are():
    from gpulint.runner import lint_source

    text = (PENDING / "positive_maybe_cpu.py").read_text()
    rows = [d.location.row for d in lint_source(text, "f.py", frozenset({"GPU201"})).diagnostics]
    assert rows == [n for n, line in enumerate(text.splitlines(), 1) if "# expect: GPU201" in line]


def test_gpu201_fix_pins_only_when_cuda_is_used():
    from gpulint.diagnostics import FixMode
    from gpulint.runner import lint_source

    text = (PENDING / "positive_maybe_cpu.py").read_text()
    fixed = lint_source(text, "f.py", frozenset({"GPU201"}), fix=FixMode.SAFE).source
    # The safe fix is the whole fix; its text is pinned in tests/__snapshots__/test_rule_snapshots.ambr.
    assert fixed != text
    assert fixed == lint_source(text, "f.py", frozenset({"GPU201"}), fix=FixMode.UNSAFE).source


def test_unknown_noqa_code_on_stdin_warns_too(project):
    result = gpulint("check", "--stdin-filename", "hot.py", "-", cwd=project,
                     input=HOT.format(comment="  # noqa: GPU1O1"))
    assert result.returncode == 1 and "GPU101" in result.stdout
    assert "hot.py:7: unknown rule code 'GPU1O1'" in result.stderr
