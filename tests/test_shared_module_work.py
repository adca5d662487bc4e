"""Work two analyses of one module object used to repeat (issue 11's cold speed, branch speed17).

- A training script is analysed twice in a batch run: by its own lint, and as a caller whose calls run every
  step (analysis/forward.py `_hot_calls`), from the same LibCST module (incremental.parse_module keeps it). Both
  analyses now share the module's syntax index and, for the same file, the loop roles (incremental
  `module_companion`); each was built or computed once per analysis before.
- A caller parsed only for its methods (`caller_analysis`: helper_sites' passed objects, factory loaders) is no
  longer walked for the calls that run every step until a question needs them.
The findings are the same (the fixture's per-step finding through the caller is still reported).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gpulint import incremental, runtime

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "models"


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    shutil.copytree(FIXTURE, root)
    return root


def _lint_counting(root: Path, monkeypatch) -> tuple[set, dict]:
    """(findings, counts) of a one-process batch lint of the project: index builds per module object, role
    computations per (module object, loop)."""
    from gpulint import parallel
    from gpulint.analysis.loops import LoopAnalysis
    from gpulint.analysis.tree import SyntaxIndex
    from gpulint.config import Settings
    from gpulint.diagnostics import FixMode
    from gpulint.discovery import iter_files

    builds: dict[int, int] = {}
    roles: dict[tuple[int, int], int] = {}
    kept = []  # the modules stay alive: their ids are not reused during the run
    build, compute_role = SyntaxIndex.build, LoopAnalysis._compute_role

    def counted_build(self, module):
        kept.append(module)
        builds[id(module)] = builds.get(id(module), 0) + 1
        return build(self, module)

    def counted_role(self, loop):
        key = (id(self.index), id(loop))
        roles[key] = roles.get(key, 0) + 1
        return compute_role(self, loop)

    monkeypatch.setattr(SyntaxIndex, "build", counted_build)
    monkeypatch.setattr(LoopAnalysis, "_compute_role", counted_role)
    incremental._recent_modules.clear()
    files = sorted(iter_files([root], Settings(root=root)))
    outcomes = parallel.lint_files(files, Settings(root=root), FixMode.NONE, write=False, want_edits=False, jobs=1)
    findings = {(Path(d.filename).name, d.location.row, d.code) for o in outcomes for d in o.diagnostics}
    return findings, {"builds": builds, "roles": roles}


def test_a_scripts_own_lint_and_its_caller_analysis_share_index_and_roles(tmp_path: Path, monkeypatch) -> None:
    findings, counts = _lint_counting(_project(tmp_path), monkeypatch)
    assert ("queue.py", 20, "GPU105") in findings  # model code a loop of train.py runs every step
    # train.py is analysed as a caller and linted, from one module object: one index for both (was 2)
    assert max(counts["builds"].values()) == 1
    # and each loop's role computed once for both analyses (the script's loops were computed twice before)
    assert counts["roles"] and max(counts["roles"].values()) == 1


def test_outside_a_batch_run_nothing_is_kept_with_the_module() -> None:
    """An editor's lints of one tree may see a changed project: no analysis hands its roles to the next."""
    source = "for x in loader:\n    y = model(x)\n"
    module = incremental.parse_module(source)
    assert incremental.module_companion(source, module) is None
    with runtime.batch():
        module = incremental.parse_module(source)
        kept = incremental.module_companion(source, module)
        assert kept is not None and incremental.module_companion(source, module) is kept
        # another tree of the same text (parsed afresh) is not that module: nothing is shared with it
        assert incremental.module_companion(source, incremental.bigfile.parse_module(source)) is None


def test_a_caller_parsed_for_its_methods_is_not_walked_for_its_hot_calls(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis import forward
    from gpulint.analysis.loops import LoopAnalysis
    from gpulint.analysis.project import project_for

    root = _project(tmp_path)
    train = (root / "train.py").resolve()
    project = project_for(train)
    walked = []
    compute = LoopAnalysis._compute_execution

    def counted(self, node):
        walked.append(node)
        return compute(self, node)

    monkeypatch.setattr(LoopAnalysis, "_compute_execution", counted)
    with runtime.batch():
        project.caller_analyses.pop(train, None)
        analysis = forward.caller_analysis(project, train)
        assert analysis is not None and not walked  # parsed, not walked (every call's walk up, before)
        calls = forward._hot_calls(project, train)  # asked for: found from the same analysis
        assert calls and all(a is analysis for a, _, _ in calls) and walked
        assert forward.caller_analysis(project, train) is analysis
        assert "model" in project.hot_call_names[train]
        # found once: asked again, nothing is walked
        walked.clear()
        assert forward._hot_calls(project, train) is calls and not walked
