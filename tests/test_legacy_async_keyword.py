"""Training scripts written for PyTorch 0.3 (`x.cuda(async=True)`, a syntax error since Python 3.7) are checked
as PyTorch read them (gpulint/legacy_syntax.py): GPU001 is still reported, with a safe fix renaming the argument
`non_blocking=`, and the rest of the file is linted as if it were renamed. Three of the ten repositories of the
thirty-second held-out set are of that era; before, GPU001 was all a user got for such a file.
"""

from __future__ import annotations

import subprocess
import sys

from gpulint.diagnostics import FixMode
from gpulint.runner import lint_source
from tests.projects import check, found, write_project

TRAIN = """\
import torch
from torch.utils.data import DataLoader

from meters import log_loss

loader = DataLoader(torch.randn(64, 8), batch_size=4, num_workers=4, pin_memory=True)


def train(model, opt, criterion):
    model.train()
    for i, (x, y) in enumerate(loader):
        x, y = x.cuda(async=True), y.cuda(async=True)
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(loss.data[0])
        log_loss(loss)
"""

# a helper module of the same era: summarised for the step loop that calls it
METERS = """\
def log_loss(loss):
    total = loss.cpu().numpy()
    extra = loss.cuda(async=True)
    return total
"""


def codes_by_row(items, name: str = "train.py") -> set:
    return {(row, code) for path, row, code in found(items) if path.endswith(name)}


def test_a_legacy_script_is_checked_beyond_its_syntax_error(tmp_path):
    root = write_project(tmp_path, {"train.py": TRAIN, "meters.py": METERS})
    items = check(root, "--no-cache", "--exit-zero", "train.py")
    by_row = codes_by_row(items)
    assert (12, "GPU001") in by_row  # still a syntax error on Python 3.7+, at the parser's position
    assert (17, "GPU101") in by_row  # `loss.data[0]` every step
    assert (18, "GPU112") in by_row  # the legacy helper module's `.cpu().numpy()`, one call away
    # `async=True` is non_blocking: the pinned batch's copies are fine
    assert not any(code == "GPU202" for _, code in by_row)
    gpu001 = next(d for d in items if d["code"] == "GPU001")
    assert "non_blocking" in gpu001["message"] and gpu001["fix"]["applicability"] == "safe"
    assert not any("asyn_" in d["message"] for d in items)


def test_the_safe_fix_renames_the_argument_and_the_file_parses_again(tmp_path):
    root = write_project(tmp_path, {"train.py": TRAIN, "meters.py": METERS})
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--fix", "train.py"], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    fixed = (root / "train.py").read_text()
    assert fixed == TRAIN.replace("async=True", "non_blocking=True")
    compile(fixed, "train.py", "exec")
    assert "GPU001" not in out.stdout


def test_other_fixes_keep_the_legacy_spelling_when_gpu001_is_not_fixed():
    text = TRAIN.replace("        x, y = x.cuda(async=True), y.cuda(async=True)\n",
                         "        x, y = x.cuda(async=True), y.cuda()\n")
    result = lint_source(text, "train.py", frozenset({"GPU202"}), fix=FixMode.SAFE)
    assert "x.cuda(async=True), y.cuda(non_blocking=True)" in result.source
    assert "asyn_" not in result.source and result.fixed_count == 1


def test_the_editor_gets_the_rename_as_edits():
    result = lint_source(TRAIN, "train.py", frozenset({"GPU001", "GPU101"}), want_edits=True)
    gpu001 = next(d for d in result.diagnostics if d.code == "GPU001")
    lines = TRAIN.splitlines(keepends=True)
    for edit in sorted(gpu001.edits, key=lambda e: (e.location.row, e.location.column), reverse=True):
        line = lines[edit.location.row - 1]
        lines[edit.location.row - 1] = line[:edit.location.column - 1] + edit.content + \
            line[edit.end_location.column - 1:]
    assert "".join(lines) == TRAIN.replace("async=True", "non_blocking=True")


def test_a_file_with_another_syntax_error_gets_gpu001_alone():
    broken = TRAIN.replace("    for i, (x, y) in enumerate(loader):", "    for i, (x, y) in enumerate(loader)")
    result = lint_source(broken, "train.py", frozenset({"GPU001", "GPU101"}), fix=FixMode.SAFE)
    assert [d.code for d in result.diagnostics] == ["GPU001"] and result.diagnostics[0].fix is None
    assert result.source == broken
    # `async` as a name of its own (not a keyword argument) is no legacy spelling either
    coroutine = "async = True\nprint(async)\n"
    assert [d.code for d in lint_source(coroutine, "a.py", frozenset({"GPU001"})).diagnostics] == ["GPU001"]


def test_a_legacy_module_read_first_for_another_files_questions_is_still_linted_as_legacy(tmp_path):
    """In a whole-project run, `main.py` (linted first) makes the project model parse `train.py`; the tree it
    made of the renamed text must not be taken for the file's own text (which does not parse)."""
    main = "from train import train\n\ntrain(None, None, None)\n"
    root = write_project(tmp_path, {"train.py": TRAIN, "meters.py": METERS, "main.py": main})
    by_row = codes_by_row(check(root, "--no-cache", "--exit-zero", "--jobs", "1", "."))
    assert {(12, "GPU001"), (17, "GPU101"), (18, "GPU112")} <= by_row
    assert not any("GPU202" == code for _, code in by_row)
