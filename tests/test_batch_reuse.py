"""What a batch run (`gpulint check`) keeps and frees between the lints of its files (issue 11, speed5).

- A finished lint leaves no reference cycle holding its trees (`ModuleAnalysis.release`, `FileFacts.release`):
  they are freed by reference counting, so the batch run's garbage collector can stay idle
  (gpulint/runtime.py). Checked by collecting with `gc.DEBUG_SAVEALL`: nothing of a lint is left for it.
- A file's `ast` tree is parsed once per process although both its own lint and the project model (summaries,
  call sites, the loops of callers) read it (`incremental._recent_trees`): counted, not timed.
"""

from __future__ import annotations

import ast
import gc
import shutil
from pathlib import Path

import libcst as cst

from gpulint import incremental, runtime
from gpulint.analysis import ModuleAnalysis, project
from gpulint.config import Settings
from gpulint.diagnostics import FixMode
from gpulint.pipeline import lint_file
from gpulint.prefilter import FileFacts

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "projects" / "models"


def _fresh() -> None:
    project._PROJECTS.clear()
    project._ROOTS.clear()
    incremental._recent_modules.clear()
    incremental._recent_trees.clear()


def _lint_all(root: Path, files: list[Path], fix: FixMode = FixMode.NONE) -> list:
    settings = Settings(root=root)
    return [lint_file(f, settings, fix, write=False) for f in files]


def _cycles_left(root: Path, files: list[Path], fix: FixMode) -> tuple[list, list]:
    """(the outcomes of a batch lint of `files`, what of its trees and analyses only a collection would free)."""
    _fresh()
    enabled = gc.isenabled()
    gc.disable()
    try:
        with runtime.batch():
            gc.collect()
            gc.set_debug(gc.DEBUG_SAVEALL)
            outcomes = [o.portable() for o in _lint_all(root, files, fix)]  # as a worker hands them back
            gc.collect()
            left = [o for o in gc.garbage if isinstance(o, (cst.Module, ast.Module, ModuleAnalysis, FileFacts))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
        _fresh()
    return outcomes, left


def test_a_finished_batch_lint_leaves_no_tree_in_a_cycle(tmp_path: Path):
    root = tmp_path / "models"
    shutil.copytree(PROJECT, root)
    (root / ".git").mkdir()
    outcomes, left = _cycles_left(root, sorted(root.rglob("*.py")), FixMode.NONE)
    assert sum(bool(o.diagnostics) for o in outcomes) >= 2  # the training script, and the model it runs
    assert left == []


def test_the_passes_of_a_fix_leave_no_tree_in_a_cycle(tmp_path: Path):
    script = tmp_path / "train.py"
    shutil.copy(ROOT / "fixtures" / "examples" / "naive_train.py", script)
    (tmp_path / ".git").mkdir()
    outcomes, left = _cycles_left(tmp_path, [script], FixMode.UNSAFE)
    assert outcomes[0].fixed_count > 1
    assert left == []


def test_the_own_lint_and_the_project_model_share_one_ast_parse(tmp_path: Path, monkeypatch):
    root = tmp_path / "models"
    shutil.copytree(PROJECT, root)
    (root / ".git").mkdir()
    files = sorted(root.rglob("*.py"), key=lambda p: p.name != "train.py")  # the script first: it asks about all
    parsed: list[str] = []
    real_parse = ast.parse

    def counting_parse(source, *args, **kwargs):
        text = source.decode() if isinstance(source, bytes) else source
        parsed.append(text)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting_parse)
    _fresh()
    try:
        with runtime.batch():
            _lint_all(root, files)
    finally:
        _fresh()
    texts = {f.read_text() for f in files}
    whole_files = [t for t in parsed if t in texts]
    assert set(whole_files) <= texts and len(whole_files) == len(set(whole_files)), \
        "a file's ast tree was parsed more than once in one process"


def test_the_training_text_shortcut_agrees_with_its_expression():
    """`project._training_text` skips `_TRAINING_TEXT`'s search where it cannot match; same answer everywhere."""
    from gpulint.analysis.project import _TRAINING_TEXT, _training_text

    texts = [p.read_bytes() for p in sorted(ROOT.joinpath("fixtures").rglob("*.py"))]
    texts += [b"loss.backward()\n", b"x.Backward(\n", b"for b in LOADER:\n", b"for b in my_Loader_x :\n",
              b"it = iter(train_dl)\n", b"it = iter(DataLoader(ds))\n", b"for a in b: loader\n", b"loader = 1\n",
              b"for x in (\n  loader):\n", b"", b"in loader:", b"\xff\xfe loader in x:"]
    assert any(_training_text(t) for t in texts) and not all(_training_text(t) for t in texts)
    assert [_training_text(t) for t in texts] == [_TRAINING_TEXT.search(t) is not None for t in texts]


def test_a_caller_parsed_for_a_model_file_is_not_parsed_again_for_its_own_lint(tmp_path: Path, monkeypatch):
    """The model file is linted first: its caller search parses the training script with LibCST (to read which
    calls its loops make every step); the script's own lint then takes that parse (`incremental._recent_modules`)."""
    from gpulint import bigfile

    root = tmp_path / "models"
    shutil.copytree(PROJECT, root)
    (root / ".git").mkdir()
    fillers = []
    for k in range(12):  # more than the 8 modules once kept: each is parsed (a loop over a loader) in between
        filler = root / f"step_{k}.py"
        filler.write_text(f"def run_{k}(loader, net, opt):\n    for x in loader:\n"
                          "        loss = net(x.cuda()).sum()\n        loss.backward()\n        opt.step()\n")
        fillers.append(filler)
    script = root / "train.py"
    models = sorted(p for p in root.rglob("*.py") if p != script and p not in fillers)
    files = [*models, *fillers, script]  # the model files, then the others, then the script
    parsed: list[str] = []
    real_parse = bigfile.parse_module
    monkeypatch.setattr(bigfile, "parse_module", lambda text, *a, **k: parsed.append(text) or real_parse(text, *a, **k))
    _fresh()
    try:
        with runtime.batch():
            outcomes = _lint_all(root, files)
    finally:
        _fresh()
    assert any(o.diagnostics for o in outcomes if o.path in models)  # the model's forward: per step
    assert sum(t in {f.read_text() for f in fillers} for t in parsed) == len(fillers)
    assert parsed.count(script.read_text()) == 1 and len(parsed) == len(set(parsed))
