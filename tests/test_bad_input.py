"""Bad input: one clear line per problem, the right exit code, other files still linted, nothing damaged."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.cli import main

FINDING = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    model = torch.nn.Linear(4, 2).cuda()
    loader = DataLoader([1, 2], pin_memory=True)
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
        torch.cuda.empty_cache()
""")


def run(*args, input=None):
    # catch_exceptions=False: a traceback escaping the CLI fails the test instead of hiding in result.exception
    return CliRunner().invoke(main, ["check", "--no-cache", *args], input=input, catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(FINDING)
    return tmp_path


def errors(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line]


def test_syntax_error_is_gpu001_at_the_line_and_the_file_is_untouched(project):
    broken = "import torch\nx = torch.zeros(3)\nfor b in loader\n    print(b.item())\n"
    (project / "broken.py").write_text(broken)
    result = run("--fix", "--unsafe-fixes", "--output-format", "concise", ".")
    assert result.exit_code == 1
    assert "broken.py:3:16: GPU001 SyntaxError: expected ':'" in result.stdout
    assert (project / "broken.py").read_text() == broken
    # the other file was still linted and fixed
    assert "empty_cache" not in (project / "train.py").read_text()


def test_gpu001_is_documented_and_can_be_ignored(project):
    doc = CliRunner().invoke(main, ["rule", "GPU001"])
    assert doc.exit_code == 0 and "GPU001 `syntax-error`" in doc.output and "## When it is fine" in doc.output
    (project / "broken.py").write_text("def f(:\n")
    assert run("--ignore", "GPU001", "broken.py").exit_code == 0


def test_nesting_that_crashes_libcst_is_a_syntax_error_not_a_crash(project):
    # CPython refuses this; LibCST's native parser would overflow its stack on it.
    (project / "deep.py").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    result = run("--output-format", "concise", "deep.py")
    assert result.exit_code == 1
    assert "deep.py:1:" in result.stdout and "GPU001 SyntaxError: too many nested parentheses" in result.stdout


def test_deep_but_valid_expression_is_one_error_line(project):
    (project / "long.py").write_text("import torch\nx = torch.zeros(1, device=\"cpu\").cuda()\ny = " + " + ".join(["1"] * 1500) + "\n")
    result = run("long.py")
    assert result.exit_code in (0, 2)
    assert all("Traceback" not in line for line in result.output.splitlines())
    if result.exit_code == 2:  # the whole analysis, or single rules, gave up on the depth: one line each
        assert errors(result) and all(line.startswith("gpulint: error: long.py: too deeply nested for ")
                                      for line in errors(result))


def test_undecodable_file_is_one_line_and_others_are_linted(project):
    (project / "latin.py").write_bytes(b"import torch\nname = '\xe9'\n")
    result = run("--output-format", "concise", ".")
    assert result.exit_code == 1  # findings in train.py
    assert errors(result) == ["gpulint: error: latin.py: not valid utf-8 at byte 21; declare the file's "
                              "encoding (`# -*- coding: ... -*-`, PEP 263) or save it as UTF-8"]
    assert "train.py:9:11: GPU101" in result.stdout


def test_declared_encoding_bom_and_newlines_survive_a_fix(project):
    body = FINDING.replace("import torch\n", "import torch\n# café\n", 1)
    variants = {
        "latin.py": ("# -*- coding: latin-1 -*-\n" + body).encode("latin-1"),
        "bom.py": b"\xef\xbb\xbf" + body.encode(),
        "crlf.py": body.replace("\n", "\r\n").encode(),
        "mixed.py": "".join(line + ("\r\n" if i % 2 else "\n")
                            for i, line in enumerate(body.splitlines())).encode(),
    }
    for name, data in variants.items():
        (project / name).write_bytes(data)
    result = run("--fix", "--unsafe-fixes", "--select", "GPU1", *variants)
    assert result.exit_code == 1, result.output  # GPU101 has no fix: it remains
    for name, data in variants.items():
        after = (project / name).read_bytes()
        # the only change: the empty_cache line (with its newline) is gone
        removed = [line for line in data.splitlines(keepends=True) if b"empty_cache" in line]
        assert len(removed) == 1
        assert after == data.replace(removed[0], b""), name


def test_empty_file_and_whitespace_only_file(project):
    (project / "empty.py").write_text("")
    (project / "blank.py").write_text("\n\n   \n")
    result = run("empty.py", "blank.py")
    assert result.exit_code == 0 and result.stdout.strip() == "All checks passed!"


def test_huge_file_is_linted(project):
    # 10 MB: a training loop and a large embedded data blob (generated code and vendored data look like this).
    blob = "x" * 99 + "\n"
    data = FINDING + 'DATA = """\n' + blob * 100_000 + '"""\n'
    assert len(data) > 10_000_000
    (project / "huge.py").write_text(data)
    # above the default max-file-size (5 MB, tests/test_faults.py): linted when the limit allows it
    result = run("--max-file-size", "20MB", "--fix", "--unsafe-fixes", "--output-format", "concise", "huge.py")
    assert result.exit_code == 1
    assert "huge.py:9:11: GPU101" in result.stdout
    assert (project / "huge.py").read_text() == data.replace("    torch.cuda.empty_cache()\n", "")


def test_binary_file_named_py(project):
    (project / "blob.py").write_bytes(bytes(range(256)) * 10)
    result = run("blob.py", "train.py")
    assert result.exit_code == 1
    assert errors(result) == ["gpulint: error: blob.py: binary file, not Python source"]


def test_broken_symlink_inside_a_directory_and_given_directly(project):
    (project / "gone.py").symlink_to(project / "nowhere.py")
    result = run(".")
    assert "gpulint: error: gone.py: broken symbolic link" in errors(result)
    direct = CliRunner().invoke(main, ["check", "gone.py"])
    assert direct.exit_code == 2 and direct.output.strip() == "gpulint: error: gone.py: broken symbolic link"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(project):
    (project / "secret.py").write_text("import torch\n")
    (project / "secret.py").chmod(0)
    result = run("secret.py", "train.py")
    assert errors(result) == ["gpulint: error: secret.py: permission denied"]


def test_directory_named_like_a_python_file_is_walked(project):
    (project / "pkg.py").mkdir()
    (project / "pkg.py" / "inner.py").write_text(FINDING)
    result = run("--output-format", "concise", "pkg.py")
    assert result.exit_code == 1 and "inner.py:9:11: GPU101" in result.stdout
    assert not errors(result)


def test_missing_path_exits_2(project):
    result = CliRunner().invoke(main, ["check", "train.py", "missing.py"])
    assert result.exit_code == 2
    assert result.output.strip() == "gpulint: error: missing.py: no such file or directory"


def test_an_internal_error_costs_one_file_not_the_run(project, monkeypatch):
    import gpulint.pipeline

    real = gpulint.pipeline.lint_file

    def flaky(path, *args, **kwargs):
        if path.name == "boom.py":
            raise RuntimeError("kaboom")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(gpulint.pipeline, "lint_file", flaky)
    (project / "boom.py").write_text("x = 1\n")
    result = run("--jobs", "1", "--output-format", "concise", ".")
    assert result.exit_code == 1
    assert errors(result) == ["gpulint: error: boom.py: internal error (RuntimeError: kaboom); "
                              "please report it with this file"]
    assert "train.py:9:11: GPU101" in result.stdout


def test_last_resort_handler_prints_one_line(project, monkeypatch):
    import gpulint.discovery

    def broken(*args, **kwargs):
        raise RuntimeError("walk failed")

    monkeypatch.setattr("gpulint.cli.iter_files", broken)
    result = CliRunner().invoke(main, ["check", "."])
    assert result.exit_code == 2
    assert result.output.strip() == ("gpulint: error: internal error (RuntimeError: walk failed); "
                                     "please report it")
    assert gpulint.discovery  # the real walker is untouched


def test_no_traceback_from_a_real_process(project):
    """The installed entry point, end to end, on a folder of every kind of bad file."""
    (project / "bin.py").write_bytes(b"\x00\x01\x02")
    (project / "syntax.py").write_text("def f(:\n")
    (project / "latin.py").write_bytes(b"x = '\xe9'\n")
    (project / "link.py").symlink_to(project / "nowhere.py")
    proc = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "."], capture_output=True,
                          text=True, cwd=project, timeout=60)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(proc.stderr.splitlines()) == 3  # bin.py, latin.py, link.py: one line each
