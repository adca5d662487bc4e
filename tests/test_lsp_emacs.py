"""A real editor: Emacs with eglot (Debian's emacs-nox 28 and elpa-eglot 1.9 are enough) runs `gpulint server`
with the `init.el` lines of docs/editors.md, read from that file, opens a training script, waits for flymake to
show the findings, then does what a user does with `M-x eglot-code-actions`: picks the quick fix on one line,
then "gpulint: fix all safe findings". We read the buffer back after each step.

`emacs --batch --user ""` starts as an interactive Emacs does: the packages (Debian's elpa-eglot) are activated,
then `~/.emacs.d/init.el` (the documented lines) is loaded; `-l` then loads the user's session below. Batch mode
is enough: eglot's process filter and flymake's report run while the session waits in `accept-process-output`;
`eglot-ensure` connects from `post-command-hook`, which the session runs as the command loop would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

ROOT = Path(__file__).resolve().parents[1]
EMACS = shutil.which("emacs")


def _eglot_missing() -> str | None:
    if EMACS is None:
        return "emacs is not installed (apt-get install -y emacs-nox elpa-eglot)"
    probe = subprocess.run([EMACS, "--batch", "--eval", "(require 'eglot)"], capture_output=True, text=True,
                           timeout=120)
    if probe.returncode != 0:
        return f"eglot is not installed for {EMACS} (apt-get install -y elpa-eglot, or Emacs 29+)"
    return None


MISSING = _eglot_missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def documented_setup() -> str:
    """The ```elisp block under docs/editors.md's Emacs heading: the test runs exactly what users copy."""
    docs = (ROOT / "docs" / "editors.md").read_text()
    section = docs.split("## Emacs (eglot)", 1)[1]
    found = re.search(r"```elisp\n(.*?)```", section, re.S)
    assert found, "docs/editors.md has no ```elisp block under '## Emacs (eglot)'"
    return found.group(1)


# The user's session after the documented setup: open the script, wait for the findings, then on line 19 run
# `M-x eglot-code-actions` and pick the gpulint quick fix from the minibuffer, then run it again and pick
# "gpulint: fix all safe findings". The minibuffer is answered by a `completing-read-function`, as completion
# frameworks (vertico, ivy) plug in; it records what was offered.
DRIVER = textwrap.dedent("""\
    (require 'json)
    (require 'seq)
    (defvar gpulint-test-offered nil)
    (defun gpulint-test-finish (result)
      (with-temp-file (getenv "GPULINT_TEST_OUT") (insert (json-encode result)))
      (kill-emacs 0))
    (defun gpulint-test-wait (pred secs)
      (let ((deadline (+ (float-time) secs)) ok)
        (while (and (not (setq ok (funcall pred))) (< (float-time) deadline))
          (run-hooks 'post-command-hook)
          (accept-process-output nil 0.05))
        ok))
    (defun gpulint-test-diagnostics ()
      (vconcat (mapcar (lambda (d) (vector (line-number-at-pos (flymake-diagnostic-beg d))
                                           (flymake-diagnostic-text d)))
                       (flymake-diagnostics))))
    (defun gpulint-test-code-actions (prefix)
      "M-x eglot-code-actions RET, then pick the action whose title starts with PREFIX."
      (let ((last-nonmenu-event ?\\r)
            (completing-read-function
             (lambda (_prompt collection &rest _)
               (let ((titles (mapcar (lambda (c) (if (consp c) (car c) c)) collection)))
                 (push (vconcat titles) gpulint-test-offered)
                 (or (seq-find (lambda (title) (string-prefix-p prefix title)) titles) "")))))
        (call-interactively #'eglot-code-actions)))
    (condition-case err
        (progn
          (find-file (getenv "GPULINT_TEST_FILE"))
          (unless (gpulint-test-wait (lambda () (flymake-diagnostics)) 60)
            (gpulint-test-finish `((error . "no diagnostics")
                                   (managed . ,(bound-and-true-p eglot--managed-mode)))))
          (let ((diagnostics (gpulint-test-diagnostics)))
            (goto-char (point-min))
            (forward-line 18)
            (search-forward "inputs.to")
            (gpulint-test-code-actions "gpulint (GPU202)")
            (let ((after-quickfix (buffer-string)))
              (gpulint-test-code-actions "gpulint: fix all safe findings")
              (gpulint-test-finish `((diagnostics . ,diagnostics)
                                     (offered . ,(vconcat (reverse gpulint-test-offered)))
                                     (quickfix . ,after-quickfix)
                                     (fixall . ,(buffer-string)))))))
      (error (gpulint-test-finish `((error . ,(format "%S" err))
                                    (offered . ,(vconcat gpulint-test-offered))))))
""")


def test_emacs_eglot_shows_findings_and_applies_quick_fix_and_fix_all(tmp_path: Path):
    original = (ROOT / "fixtures" / "examples" / "naive_train.py").read_text()
    project = tmp_path / "project"
    project.mkdir()
    script = project / "train.py"
    script.write_text(original)
    user_init = tmp_path / ".emacs.d" / "init.el"
    user_init.parent.mkdir()
    user_init.write_text(documented_setup())
    session = tmp_path / "session.el"
    session.write_text(";;; -*- lexical-binding: t -*-\n" + DRIVER)
    out = tmp_path / "out.json"
    gpulint_bin = Path(sys.executable).parent  # the documented setup runs plain "gpulint", found on PATH
    env = {**os.environ, "PATH": f"{gpulint_bin}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(tmp_path),
           "GPULINT_TEST_OUT": str(out), "GPULINT_TEST_FILE": str(script)}
    run = subprocess.run([EMACS, "--batch", "--user", "", "-l", str(session)], cwd=project, env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.exists(), f"emacs wrote nothing (exit {run.returncode}): {run.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert "error" not in result, (result, run.stderr[-2000:])

    # flymake shows each finding on its line, with the rule code, as the user reads it in the buffer:
    shown = {(line, text.split(":", 1)[0]) for line, text in result["diagnostics"]}
    assert (11, "gpulint [GPU201]") in shown and (19, "gpulint [GPU202]") in shown
    assert (27, "gpulint [GPU302]") in shown

    # The first `M-x eglot-code-actions` on line 19 offered the fix, the noqa action and fix-all:
    offered_here = result["offered"][0]
    assert offered_here[0] == "gpulint (GPU202): Add `non_blocking=True`"
    assert "Disable GPU202 for this line" in offered_here and "gpulint: fix all safe findings" in offered_here

    # The quick fix changed that one copy, nothing else:
    lines = original.splitlines(keepends=True)
    assert lines[18] == "        inputs, labels = inputs.to(device), labels.to(device)\n"
    lines[18] = "        inputs, labels = inputs.to(device, non_blocking=True), labels.to(device)\n"
    assert result["quickfix"] == "".join(lines)

    # Fix all: the buffer is what `gpulint check --fix` makes of the same text.
    expected = tmp_path / "expected" / "train.py"
    expected.parent.mkdir()
    expected.write_text(result["quickfix"])
    subprocess.run([str(gpulint_bin / "gpulint"), "check", "--fix", "--no-cache", str(expected)], cwd=tmp_path,
                   capture_output=True)
    assert result["fixall"] != result["quickfix"] and result["fixall"] == expected.read_text()
    assert "pin_memory=" in result["fixall"].splitlines()[10]
    assert script.read_text() == original  # the edits went to the buffer, not behind the editor's back to the file
