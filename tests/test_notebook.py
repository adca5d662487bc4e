"""Notebooks: code cells linted as one module, findings located by cell, fixes written back without touching
outputs, metadata, IPython magics or the file's formatting."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

nbformat = pytest.importorskip("nbformat")

from gpulint.cli import main  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks" / "naive_training.ipynb"


@pytest.fixture
def notebook(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return Path(shutil.copy(FIXTURE, tmp_path / "nb.ipynb"))


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_findings_are_located_by_cell(notebook):
    out = run("check", "--output-format", "concise", "-q", "nb.ipynb").output.splitlines()
    assert out[0].startswith("nb.ipynb:cell 3:3:10: GPU201")
    assert any(line.startswith("nb.ipynb:cell 4:6:8: GPU108") for line in out)
    data = json.loads(run("check", "--output-format", "json", "nb.ipynb").output)
    nan = next(d for d in data if d["code"] == "GPU108")
    assert (nan["cell"], nan["location"]["row"], nan["location"]["column"]) == (4, 6, 8)


def test_full_output_shows_the_cell_line(notebook):
    out = run("check", "--select", "GPU108", "nb.ipynb").output
    assert "6 |     if torch.isnan(loss).any():" in out


def test_fix_round_trip_keeps_outputs_metadata_and_magics(notebook):
    before = nbformat.read(notebook, as_version=4)
    result = run("check", "--fix", "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 1  # GPU204 has no fix
    after = nbformat.read(notebook, as_version=4)
    nbformat.validate(after)
    assert after.metadata == before.metadata
    assert [c.get("outputs") for c in after.cells] == [c.get("outputs") for c in before.cells]
    assert [c.cell_type for c in after.cells] == [c.cell_type for c in before.cells]
    loop = after.cells[3].source
    assert loop.startswith("%%time\nlosses = []\nfound_nan = False\nfor step")
    assert "found_nan |= torch.isnan(loss).any()" in loop and "losses.append(loss.detach())" in loop
    assert "pin_memory=torch.cuda.is_available()" in after.cells[2].source
    assert after.cells[1].source == before.cells[1].source  # %matplotlib and !nvidia-smi restored
    assert after.cells[5].source == before.cells[5].source  # `model?` untouched
    # Only the changed cells' lines differ in the file.
    changed = [i for i, (a, b) in enumerate(zip(before.cells, after.cells)) if a.source != b.source]
    assert changed == [2, 3]
    # Idempotent.
    text = notebook.read_text()
    run("check", "--fix", "--unsafe-fixes", "nb.ipynb")
    assert notebook.read_text() == text


def test_untouched_notebook_is_byte_identical(notebook):
    original = notebook.read_bytes()
    run("check", "nb.ipynb")
    run("check", "--fix", "--select", "GPU204", "nb.ipynb")
    assert notebook.read_bytes() == original


def test_non_canonical_formatting_is_kept(notebook):
    data = json.loads(notebook.read_text())
    notebook.write_text(json.dumps(data, indent=2) + "\n")  # two-space indent, ASCII escapes: not nbformat's
    run("check", "--fix", "nb.ipynb")
    text = notebook.read_text()
    assert text.startswith('{\n  "cells": [')
    fixed = json.loads(text)
    assert "pin_memory=torch.cuda.is_available()" in "".join(fixed["cells"][2]["source"])
    assert fixed["cells"][3]["outputs"] == data["cells"][3]["outputs"]


def test_syntax_error_in_a_cell(notebook):
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[2].source += "\nfor x in :\n"
    nbformat.write(nb, notebook)
    result = run("check", "--output-format", "concise", "nb.ipynb")
    assert result.exit_code == 1
    assert "nb.ipynb:cell 3:" in result.output and "GPU001" in result.output


def test_broken_notebook_is_one_finding_not_a_failed_run(notebook, tmp_path):
    # Issue 14: an unreadable notebook is one finding on that file (exit 1, like any finding), never exit 2.
    (tmp_path / "bad.ipynb").write_text("{ not json")
    result = CliRunner().invoke(main, ["check", "--output-format", "concise", "bad.ipynb", "nb.ipynb"])
    assert result.exit_code == 1
    found = [line for line in result.output.splitlines() if line.startswith("bad.ipynb")]
    assert found == ["bad.ipynb:1:3: GPU001 not a readable notebook: Expecting property name enclosed in "
                     "double quotes"]
    assert "nb.ipynb:cell" in result.output  # the other notebook is still linted
    assert "Traceback" not in result.output and "error" not in result.output


def test_ipython_assignments_and_continued_shell_lines_do_not_hide_the_notebook(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = nbformat.v4.new_notebook()
    setup = ("!pip install \\\n    torch\nimport torch\nfiles = !ls\nt = %timeit -o sum(range(3))\n"
             "model = torch.nn.Linear(2, 2).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)")
    loop = ("for step in range(10):\n    x = torch.randn(4, 2, device='cuda')\n    loss = model(x).sum()\n"
            "    loss.backward()\n    opt.step()\n    print(loss.item())\n    %time y = 1\n    !echo hi")
    nb.cells = [nbformat.v4.new_code_cell(setup), nbformat.v4.new_code_cell(loop)]
    nbformat.write(nb, "magic.ipynb")
    out = run("check", "--output-format", "concise", "-q", "magic.ipynb").output
    assert out == ("magic.ipynb:cell 2:6:11: GPU101 `.item()` every iteration blocks the CPU until the GPU "
                   "catches up; keep the value on the device\n")
    before = (tmp_path / "magic.ipynb").read_bytes()
    run("check", "--fix", "--unsafe-fixes", "magic.ipynb")  # GPU101 has no fix: nothing to write
    assert (tmp_path / "magic.ipynb").read_bytes() == before


def test_non_ascii_in_a_file_that_escapes_it(notebook):
    data = json.loads(notebook.read_text())
    data["cells"][0]["source"] = ["# Entraînement — 训练\n", "The way the tutorials do it."]
    notebook.write_text(json.dumps(data, indent=2) + "\n")  # ensure_ascii: \u escapes, as some tools write
    run("check", "--fix", "nb.ipynb")
    text = notebook.read_text()
    assert text.isascii() and "Entra\\u00eenement" in text
    fixed = json.loads(text)
    assert json.dumps(fixed, indent=2) + "\n" == text  # the file's own layout, everywhere
    assert "pin_memory=torch.cuda.is_available()" in "".join(fixed["cells"][2]["source"])


def apply_ruff_edits(text: str, edits: list[dict]) -> str:
    """Apply JSON-format edits (1-based rows and columns, end exclusive) to `text`."""
    lines = text.split("\n")

    def offset(pos: dict) -> int:
        return sum(len(line) + 1 for line in lines[: pos["row"] - 1]) + pos["column"] - 1

    for edit in sorted(edits, key=lambda e: (e["location"]["row"], e["location"]["column"]), reverse=True):
        text = text[: offset(edit["location"])] + edit["content"] + text[offset(edit["end_location"]):]
    return text


@pytest.mark.parametrize("code", ["GPU201", "GPU108", "GPU301"])
def test_json_edits_are_in_the_cell_and_give_what_fix_writes(notebook, code):
    [finding] = json.loads(run("check", "--output-format", "json", "--select", code, "nb.ipynb").output)
    cell = finding["cell"] - 1
    before = nbformat.read(notebook, as_version=4).cells[cell].source
    assert finding["fix"]["edits"]
    run("check", "--fix", "--unsafe-fixes", "--select", code, "nb.ipynb")
    after = nbformat.read(notebook, as_version=4).cells[cell].source
    assert after != before
    assert apply_ruff_edits(before, finding["fix"]["edits"]) == after


def test_json_edit_on_the_last_line_of_a_cell(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import torch\nfrom torch.utils.data import DataLoader\n"
                                          "model = torch.nn.Linear(2, 2).cuda()\nloader = DataLoader(ds)"),
                nbformat.v4.new_code_cell("for x in loader:\n    model(x.cuda()).sum().backward()")]
    nbformat.write(nb, "last.ipynb")
    [finding] = json.loads(run("check", "--output-format", "json", "--select", "GPU201", "last.ipynb").output)
    assert finding["cell"] == 1 and finding["fix"]["edits"][0]["end_location"] == {"row": 4, "column": 24}
    fixed = apply_ruff_edits(nb.cells[0].source, finding["fix"]["edits"])
    run("check", "--fix", "--select", "GPU201", "last.ipynb")
    assert fixed == nbformat.read("last.ipynb", as_version=4).cells[0].source
    assert fixed.endswith("loader = DataLoader(ds, pin_memory=True)")  # no line break added to the cell


def test_cell_magics_are_not_syntax_errors(tmp_path, monkeypatch):
    """`%%writefile` writes its body to a file (indented lines included: they are not a block of the notebook's
    code), and `%%capture` runs Python whose `!shell` lines IPython runs too: neither is a syntax error, and the
    `%%capture` cell is still linted (its `.item()` in the loop is found)."""
    monkeypatch.chdir(tmp_path)
    nb = nbformat.v4.new_notebook()
    written = "%%writefile -a worker.py\n\nimport sys\n\nif __name__ == '__main__':\n    main(\n        sys.argv)\n"
    captured = ("%%capture\n!wget -O data.bin https://example.invalid/data\nimport torch\n"
                "model = torch.nn.Linear(2, 2).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for step in range(10):\n    loss = model(torch.randn(4, 2, device='cuda')).sum()\n"
                "    loss.backward()\n    opt.step()\n    print(loss.item())")
    nb.cells = [nbformat.v4.new_code_cell(written), nbformat.v4.new_code_cell(captured)]
    nbformat.write(nb, "magics.ipynb")
    out = run("check", "--output-format", "concise", "-q", "magics.ipynb").output
    assert "GPU001" not in out, out
    assert "magics.ipynb:cell 2:10:11: GPU101" in out, out


def test_automagic_and_leading_indent_cells_are_not_syntax_errors(tmp_path, monkeypatch):
    """IPython runs a one-line cell that names a magic without `%` (`pip install -r requirements.txt`, `ls -l
    data.txt`: automagic) and a cell whose first line is indented (it strips that indentation): neither is a
    syntax error. Automagic applies to one-line cells only, so the same line inside a longer cell, and a real
    typo, are still GPU001; the other cells are still linted."""
    monkeypatch.chdir(tmp_path)
    nb = nbformat.v4.new_notebook()
    loop = ("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for step in range(10):\n    loss = model(torch.randn(4, 2, device='cuda')).sum()\n"
            "    loss.backward()\n    opt.step()\n    print(loss.item())")
    nb.cells = [nbformat.v4.new_code_cell("pip install -r requirements.txt"),
                nbformat.v4.new_code_cell("ls -l text.txt"),
                nbformat.v4.new_code_cell(" with open('a.txt') as f:\n     text = f.read()"),
                nbformat.v4.new_code_cell("ls = [1, 2]\nls -l text.txt"),
                nbformat.v4.new_code_cell("for x, y i range(3):\n    pass"),
                nbformat.v4.new_code_cell(loop)]
    nbformat.write(nb, "magic.ipynb")
    out = run("check", "--output-format", "concise", "-q", "magic.ipynb").output
    errors = sorted(line.split(":")[1] for line in out.splitlines() if "GPU001" in line)
    assert errors == ["cell 4", "cell 5"], out
    assert "magic.ipynb:cell 6:8:11: GPU101" in out, out
