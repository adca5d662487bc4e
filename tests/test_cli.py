"""The command line as a user drives it: exit codes, flags, config, suppression, output formats."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.cli import main

NAIVE = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    device = "cuda"
    model = torch.nn.Linear(4, 2).to(device)
    loader = DataLoader([1, 2], pin_memory=True)
    for step, (x, y) in enumerate(loader):
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
        if step % 100 == 0:
            print(loss.item())
        torch.cuda.empty_cache()
""")


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "train.py").write_text(NAIVE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def test_findings_exit_1_with_location_and_caret(project):
    result = run("check", "train.py")
    assert result.exit_code == 1
    assert "train.py:10:11: GPU101" in result.output
    assert "^^^^^^^^^^^ GPU101" in result.output
    assert "train.py:12" not in result.output  # the periodic print is deliberate
    assert "Found 2 findings (1 with --fix --unsafe-fixes)." in result.output


def test_clean_file_exits_0(project):
    (project / "ok.py").write_text("import torch\nx = torch.zeros(3)\nprint(x.sum().item())\n")
    result = run("check", "ok.py")
    assert result.exit_code == 0, result.output
    assert "All checks passed!" in result.output


def test_missing_path_is_a_one_line_error(project):
    result = CliRunner().invoke(main, ["check", "nope.py"])
    assert result.exit_code == 2
    assert result.output.strip() == "gpulint: error: nope.py: no such file or directory"


def test_select_ignore_and_prefixes(project):
    assert "GPU110" not in run("check", "--select", "GPU101", "train.py").output
    assert "GPU101" not in run("check", "--ignore", "GPU101", "train.py").output
    out = run("check", "--select", "GPU11", "train.py").output
    assert "GPU110" in out and "GPU101" not in out
    bad = CliRunner().invoke(main, ["check", "--select", "XYZ9", "train.py"])
    assert bad.exit_code == 2 and "unknown rule code" in bad.output


def test_fix_only_applies_safe_fixes_unless_unsafe(project):
    run("check", "--fix", "train.py")
    assert (project / "train.py").read_text() == NAIVE  # GPU110's fix is unsafe
    result = run("check", "--fix", "--unsafe-fixes", "train.py")
    fixed = (project / "train.py").read_text()
    assert "empty_cache" not in fixed
    assert "Fixed 1 finding." in result.output
    assert result.exit_code == 1  # the .item() has no fix and remains
    compile(fixed, "train.py", "exec")


def test_diff_changes_nothing(project):
    result = run("check", "--diff", "--unsafe-fixes", "train.py")
    assert result.exit_code == 1
    assert "-    torch.cuda.empty_cache()" in result.output
    assert (project / "train.py").read_text() == NAIVE
    assert run("check", "--diff", "train.py").exit_code == 0  # no safe fix to show


def test_exit_zero_and_statistics(project):
    assert run("check", "--exit-zero", "train.py").exit_code == 0
    # GPU110's fix is unsafe: `[*]` (fixable) only where --unsafe-fixes makes --fix apply it (issue 14, as Ruff)
    stats = run("check", "--statistics", "--unsafe-fixes", "train.py").output
    assert "GPU101\t[ ] item-in-loop" in stats and "GPU110\t[*] empty-cache-in-loop" in stats
    assert "[*]" not in run("check", "--statistics", "train.py").output


def test_json_follows_ruffs_shape(project):
    result = run("check", "--output-format", "json", "--unsafe-fixes", "train.py")
    data = json.loads(result.output)
    codes = [d["code"] for d in data]
    assert codes == ["GPU101", "GPU110"]
    first = data[0]
    assert first["location"] == {"row": 10, "column": 11}
    assert first["end_location"] == {"row": 10, "column": 22}
    assert first["filename"].endswith("train.py") and first["url"]
    assert first["fix"] is None
    fix = data[1]["fix"]
    assert fix["applicability"] == "unsafe"
    assert fix["edits"] == [{"content": "", "location": {"row": 13, "column": 1},
                             "end_location": {"row": 14, "column": 1}}]


def test_concise_output(project):
    out = run("check", "--output-format", "concise", "-q", "train.py").output
    assert out.splitlines()[0].startswith("train.py:10:11: GPU101 ")
    assert "Found" not in out


def test_stdin(project):
    result = run("check", "-", "--stdin-filename", "x.py", "--output-format", "concise", input=NAIVE)
    assert result.exit_code == 1 and "x.py:10:11: GPU101" in result.output
    fixed = run("check", "-", "--fix", "--unsafe-fixes", input=NAIVE)
    assert "empty_cache" not in fixed.stdout and "loss.item()" in fixed.stdout


def test_noqa_line_and_file(project):
    text = NAIVE.replace("print(loss.item())\n    if", "print(loss.item())  # noqa: GPU101\n    if", 1)
    (project / "train.py").write_text(text)
    out = run("check", "--select", "GPU101", "train.py")
    assert out.exit_code == 0, out.output
    (project / "train.py").write_text("# gpulint: noqa\n" + NAIVE)
    assert run("check", "train.py").exit_code == 0
    (project / "train.py").write_text(NAIVE.replace("print(loss.item())\n    if",
                                                    "print(loss.item())  # noqa\n    if", 1))
    assert "GPU101" not in run("check", "train.py").output


def test_pyproject_config(project):
    (project / "pyproject.toml").write_text('[tool.gpulint]\nignore = ["GPU110"]\n'
                                            '[tool.gpulint.per-file-ignores]\n"legacy/*.py" = ["GPU1"]\n')
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text(NAIVE)
    out = run("check", ".").output
    assert "GPU110" not in out and "legacy" not in out and "train.py:10:11: GPU101" in out


def test_report_periodic(project):
    (project / "gpulint.toml").write_text("report-periodic = true\n")
    out = run("check", "train.py").output
    assert "train.py:12:15: GPU101" in out and "runs periodically" in out


def test_unknown_config_key_is_exit_2(project):
    (project / "pyproject.toml").write_text("[tool.gpulint]\nselct = ['GPU1']\n")
    result = CliRunner().invoke(main, ["check", "train.py"])
    assert result.exit_code == 2
    assert "unknown option 'selct'" in result.output
    (project / "pyproject.toml").write_text("[tool.gpulint]\nselect = ['GPU999']\n")
    assert CliRunner().invoke(main, ["check", "train.py"]).exit_code == 2


def test_gitignore_and_exclude(project):
    (project / ".gitignore").write_text("generated/\n")
    (project / "generated").mkdir()
    (project / "generated" / "g.py").write_text(NAIVE)
    (project / "vendor").mkdir()
    (project / "vendor" / "v.py").write_text(NAIVE)
    (project / "gpulint.toml").write_text('exclude = ["vendor"]\n')
    out = run("check", "--output-format", "concise", ".").output
    assert "generated" not in out and "vendor" not in out and "train.py" in out
    # A file named explicitly is linted even if excluded.
    assert "v.py" in run("check", "vendor/v.py").output


def test_rule_docs(project):
    doc = run("rule", "GPU101").output
    assert doc.startswith("GPU101 `item-in-loop`") and "## Why it is slow" in doc
    assert run("rule", "item-in-loop").output == doc
    listing = run("rule", "--all").output
    assert "GPU108  nan-check-in-loop" in listing
    assert CliRunner().invoke(main, ["rule", "GPU999"]).exit_code == 2


def test_python_dash_m(project):
    proc = subprocess.run([sys.executable, "-m", "gpulint", "check", "train.py"], capture_output=True, text=True)
    assert proc.returncode == 1 and "GPU101" in proc.stdout


def test_explicit_config_path_and_extend_select(project):
    (project / "conf").mkdir()
    (project / "conf" / "strict.toml").write_text('select = ["GPU110"]\n')
    out = run("check", "--config", "conf/strict.toml", "train.py").output
    assert "GPU110" in out and "GPU101" not in out
    out = run("check", "--config", "conf/strict.toml", "--extend-select", "GPU101", "train.py").output
    assert "GPU110" in out and "GPU101" in out
    missing = CliRunner().invoke(main, ["check", "--config", "conf/none.toml", "train.py"])
    assert missing.exit_code == 2 and "config file not found" in missing.output
    (project / "conf" / "broken.toml").write_text("select = [\n")
    broken = CliRunner().invoke(main, ["check", "--config", "conf/broken.toml", "train.py"])
    assert broken.exit_code == 2 and "invalid TOML" in broken.output and "Traceback" not in broken.output


def test_fix_is_idempotent_and_keeps_other_bytes(project):
    text = NAIVE.replace("\n", "\r\n")  # Windows newlines must survive a fix
    (project / "train.py").write_bytes(text.encode())
    run("check", "--fix", "--unsafe-fixes", "train.py")
    once = (project / "train.py").read_bytes()
    assert b"empty_cache" not in once and b"\r\n" in once and b"\n" not in once.replace(b"\r\n", b"")
    run("check", "--fix", "--unsafe-fixes", "train.py")
    assert (project / "train.py").read_bytes() == once
