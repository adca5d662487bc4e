"""An editor's re-lint after an edit that changed no code reruns the rules only on the edited statements
(gpulint.rule_reuse), and its findings are exactly those of a fresh lint (what `gpulint check` gives the text):
after random sequences of edits, comments with the words raw-text facts look for, code edits, and edits of
another module of the project."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulint import checker, incremental, rule_reuse
from gpulint.analysis.project import project_for
from gpulint.config import Settings
from gpulint.fixes import edits_for
from gpulint.pipeline import Input, lint_input
from gpulint.rule import all_rules

ROOT = Path(__file__).resolve().parent.parent
# every rule, preview ones and the unused-noqa check included
SETTINGS = Settings(select=tuple(all_rules()), unused_noqa=True)


@pytest.fixture
def reuse():
    saved = incremental._reuse
    incremental._reuse = None
    incremental.enable()
    rule_reuse._records.clear()
    yield incremental._reuse
    incremental._reuse = saved
    rule_reuse._records.clear()


def lint(text: str, path: Path) -> list[tuple]:
    outcome = lint_input(Input.from_text(text, str(path), path), SETTINGS)
    module = outcome.module
    return [(d.code, d.location, d.end_location, d.message, d.related,
             None if d.fix is None or module is None else (d.fix.applicability, edits_for(d, module, text)))
            for d in outcome.diagnostics]


def fresh(text: str, path: Path) -> list[tuple]:
    """What a lint with nothing kept gives (the CLI's lint of the text)."""
    saved, incremental._reuse = incremental._reuse, None
    try:
        return lint(text, path)
    finally:
        incremental._reuse = saved


DDP = textwrap.dedent("""\
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    def train(loader):
        model = DDP(torch.nn.Linear(4, 2).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step, x in enumerate(loader):
            model(x).sum().backward()
            if (step + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()


    def other():
        return 1
""")
HELPER = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)


    def helper(x):
        return x.item()


    def make():
        return DataLoader(dataset, batch_size=32)


    def train(model):
        for x, y in make():
            y = model(x.cuda())
            helper(y)
            torch.cuda.synchronize()
""")
IN_PROJECT = ROOT / "fixtures" / "projects" / "lsp_edit.py"  # a path in a project: helpers are summarised
SCRIPTS = [(path, path.read_text()) for path in (ROOT / "fixtures" / "examples" / "naive_train.py",
                                                 ROOT / "fixtures" / "projects" / "engine" / "trainer.py")]
SCRIPTS += [(IN_PROJECT, DDP), (IN_PROJECT, HELPER)]
WORDS = ["note", "cuda", "device", "DistributedDataParallel", "no_sync", "capture_scalar_outputs", "channels_last",
         "autocast", "bfloat16", "compile", "noqa", "noqa: GPU101", "type: ignore", "x.to(", "def f():", "mps"]
STATEMENTS = ["lr3 = 0.13", "lr4 = -2e-3 * 4", "loss = 0.5", "steps = 10", "x = loss.item()", "import torch", "torch = None", "loader = None",
              "device = 'cuda'", "model = model.cuda()", "print(float(loss))", "pass"]


@st.composite
def edit(draw, text: str) -> str:
    lines = text.splitlines(keepends=True)
    at = draw(st.integers(0, len(lines)))
    kind = draw(st.sampled_from(["comment", "comment", "inline", "blank", "code", "code", "delete", "definition"]))
    if kind == "inline" and lines:
        line = lines[min(at, len(lines) - 1)]
        if line.rstrip("\n").strip() and "#" not in line and not line.rstrip().endswith(("\\", ",", "(")):
            lines[min(at, len(lines) - 1)] = line.rstrip("\n") + f"  # {draw(st.sampled_from(WORDS))}\n"
        return "".join(lines)
    if kind == "delete" and lines:
        del lines[min(at, len(lines) - 1)]
        return "".join(lines)
    following = next((line for line in lines[at:] if line.strip()), "")
    indent = following[:len(following) - len(following.lstrip())]
    if kind == "comment":
        new = f"{indent}# {draw(st.sampled_from(WORDS))} {draw(st.sampled_from(WORDS))}\n"
    elif kind == "blank":
        new = "\n"
    elif kind == "code":
        new = f"{indent}{draw(st.sampled_from(STATEMENTS))}\n"
    else:
        new = "\n\ndef added(x):\n    return x.item()\n\n\n"
        indent = ""
    return "".join(lines[:at] + [new] + lines[at:])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_random_edit_sequences_give_the_findings_of_a_fresh_lint(reuse, data):
    script, text = data.draw(st.sampled_from(SCRIPTS))
    lint(text, script)
    for _ in range(data.draw(st.integers(1, 4))):
        text = data.draw(edit(text))
        assert lint(text, script) == fresh(text, script)


def visited(monkeypatch) -> list[int]:
    counts: list[int] = []
    original = checker.Run.visit

    def counting(self, nodes, per_node=None):
        nodes = list(nodes)
        counts.append(len(nodes))
        return original(self, nodes, per_node)

    monkeypatch.setattr(checker.Run, "visit", counting)
    return counts


def test_a_comment_typed_reruns_the_rules_on_the_edited_definition_only(reuse, monkeypatch):
    lint(HELPER, IN_PROJECT)
    nodes = len(__import__("gpulint.analysis", fromlist=["ModuleAnalysis"]).ModuleAnalysis(
        incremental.parse_module(HELPER), HELPER).index.nodes)
    counts = visited(monkeypatch)
    typed = HELPER.replace("def make():\n", "def make():\n    # typing a note\n")
    found, seen = lint(typed, IN_PROJECT), sum(counts)
    assert found == fresh(typed, IN_PROJECT)
    assert 0 < seen < nodes  # not `helper` nor the imports (`train` is: its finding names a line of `helper`)
    counts.clear()
    code = HELPER.replace("def make():\n", "def make():\n    print(1)\n")  # code changed: every node visited
    lint(code, IN_PROJECT)
    assert sum(counts) >= nodes


def assert_reused_after_typing(monkeypatch, typed: str, reused: bool) -> None:
    """HELPER linted, then `typed`: the findings are a fresh lint's, and the rules visited fewer nodes than the
    module has exactly when the edit was reused."""
    lint(HELPER, IN_PROJECT)
    nodes = len(__import__("gpulint.analysis", fromlist=["ModuleAnalysis"]).ModuleAnalysis(
        incremental.parse_module(HELPER), HELPER).index.nodes)
    counts = visited(monkeypatch)
    found, seen = lint(typed, IN_PROJECT), sum(counts)
    assert found == fresh(typed, IN_PROJECT)
    assert (seen < nodes) == reused, (seen, nodes)


@pytest.mark.parametrize("statement, reused", [
    ("lr3 = 0.13", True),  # a number bound to a name used nowhere else: nothing else can tell
    ("lr3 = -2e-3 * 4", True),
    ("x = 0.13", False),  # `x` is used elsewhere
    ("lr3 = 'cuda'", False),  # a string: module-wide scans read strings
    ("lr3 = y", False),  # reads a name
])
def test_a_statement_typed_in_a_function_reruns_the_rules_on_that_function_only_if_inert(
        reuse, monkeypatch, statement, reused):
    assert_reused_after_typing(monkeypatch, HELPER.replace("def make():\n", f"def make():\n    {statement}\n"), reused)


@pytest.mark.parametrize("where, reused", [
    ("end", True),  # typed at the end of the file, after the last function
    ("between", True),  # typed at the top level between two functions
    ("header", False),  # among the imports: it could move where a fix inserts its line
])
def test_a_number_typed_at_the_top_level_after_a_definition_reruns_no_rule_on_the_rest(
        reuse, monkeypatch, where, reused):
    typed = {"end": HELPER + "lr3 = 0.13\n",
             "between": HELPER.replace("\n\ndef make():\n", "\nlr3 = 0.13\n\ndef make():\n"),
             "header": HELPER.replace("import torch\n", "import torch\nlr3 = 0.13\n")}[where]
    assert_reused_after_typing(monkeypatch, typed, reused)


def test_a_comment_that_makes_a_module_target_the_gpu_changes_the_findings(reuse):
    path = ROOT / "fixtures" / "projects" / "lsp_edit.py"
    text = textwrap.dedent("""\
        def train(loader, model):
            for x in loader:
                loss = model(x)
                print(loss.item())
    """)
    assert lint(text, path) == fresh(text, path) == []
    commented = text + "# runs on cuda:0\n"
    assert lint(commented, path) == fresh(commented, path) != []


@pytest.mark.parametrize("comment", ["# no_sync is not needed here", "# a note"])
def test_a_comment_read_by_a_raw_text_fact_changes_the_findings_of_unchanged_definitions(reuse, comment):
    before = lint(DDP, IN_PROJECT)
    assert "GPU415" in [d[0] for d in before]
    typed = DDP.replace("    return 1\n", f"    {comment}\n    return 1\n")
    after = lint(typed, IN_PROJECT)
    assert after == fresh(typed, IN_PROJECT)
    assert ("GPU415" in [d[0] for d in after]) == (comment == "# a note")


def test_a_line_added_above_a_helper_moves_the_related_location_of_an_unchanged_caller(reuse):
    before = lint(HELPER, IN_PROJECT)
    typed = HELPER.replace("def helper(x):\n", "def helper(x):\n    # a note\n    # another\n")
    after = lint(typed, IN_PROJECT)
    assert after == fresh(typed, IN_PROJECT) and after != before


def test_an_edit_of_another_module_is_seen_by_the_unchanged_definitions(reuse, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    helpers = tmp_path / "helpers.py"
    helpers.write_text("def log(x):\n    return x\n")
    train = tmp_path / "train.py"
    text = textwrap.dedent("""\
        import torch
        from helpers import log


        def train(loader, model):
            for x in loader:
                loss = model(x.cuda())
                log(loss)
    """)
    train.write_text(text)
    assert lint(text, train) == fresh(text, train) == []
    project_for(helpers).set_text(helpers, "def log(x):\n    return x.item()\n")  # another buffer, unsaved
    commented = text + "# a note\n"
    found = lint(commented, train)
    assert found == fresh(commented, train) and [d[0] for d in found] == ["GPU112"]
    project_for(helpers).set_text(helpers, None)


def test_every_reader_of_the_raw_text_is_in_the_text_signature():
    """A fact read from `analysis.source` (comments included) must be in rule_reuse's text signature: a new
    reader fails here until it is added there (and to this list)."""
    readers = set()
    for folder in (ROOT / "gpulint" / "analysis", ROOT / "rules"):
        for path in folder.rglob("*.py"):
            if re.search(r"analysis\.source\b", path.read_text()):
                readers.add(path.relative_to(ROOT).as_posix())
    assert readers == {
        "gpulint/analysis/__init__.py",  # GPU_HINT (targets_gpu)
        "gpulint/analysis/calls.py",  # the buffer's digest for the project model (positions: not reused)
        "gpulint/analysis/data_facts.py",  # "cuda"
        "gpulint/analysis/forward.py",  # a caller's line (related locations: not reused)
        "gpulint/analysis/isinstance_narrowing.py",  # "isinstance(" (a shortcut: absent, no narrowing to look for)
        # a shortcut on the class's own name: absent from the text, nothing can build the wrapper; present only
        # in a comment, the search runs and finds no call (the answer depends on code, not on the text)
        "gpulint/analysis/wrapped_calls.py",
        "rules/throughput/constructed_in_loop.py",  # GPU408's `reset_parameters()` text guard
        "gpulint/analysis/precision.py",  # _MIXED
        "gpulint/analysis/pyg_loaders.py",  # "ToDevice", "PrefetchLoader"
        "gpulint/analysis/training.py",  # _REDUCED_PRECISION, _FREEZES
        "gpulint/analysis/tensor_uses.py",  # _HINT_BUT_TO (a GPU named other than by `.to(`)
        "rules/throughput/cudnn_benchmark_unset.py",  # _ONE_SHAPE
        "rules/throughput/graph_break_in_compiled.py",  # "capture_scalar_outputs"
        "rules/throughput/conv_net_without_channels_last.py",  # "channels_last" (and visit_Module: always run)
        "rules/throughput/ddp_accumulation_without_no_sync.py",  # "DistributedDataParallel", _HANDLED
        "rules/advisory/model_not_compiled.py",  # _COMPILES (visit_Module: always run)
        "rules/throughput/eval_without_no_grad.py",  # _FROZEN (a freeze, or grad turned off by a statement)
    }
    assert all(isinstance(x, bool) for x in rule_reuse.text_signature("x = 1\n"))


SAMPLERS = ROOT / "fixtures" / "projects" / "samplers"  # train.py's step calls timesteps.py's `log_losses`
LOG_CALL = '        log_losses({"loss": loss.detach()})\n'


def fresh_project(text: str, path: Path, *, on_disk: dict) -> list[tuple]:
    """A fresh lint of `text` with the other modules as `on_disk` gives them (written there), in a project
    model that remembers nothing: what `gpulint check` gives for those files."""
    from gpulint.analysis import project as model

    for file, content in on_disk.items():
        file.write_text(content)
    saved = dict(model._PROJECTS)
    model._PROJECTS.clear()
    try:
        return fresh(text, path)
    finally:
        model._PROJECTS.clear()
        model._PROJECTS.update(saved)


def test_an_edit_of_the_loop_that_calls_a_helper_every_step_is_seen_by_the_helpers_module(reuse, tmp_path):
    """The project's name index and hot-loop facts are kept across edits of an open buffer (only its own facts
    are computed again): removing the per-step call from the buffer must drop the helper's finding elsewhere,
    and typing it back must bring it back, as a fresh lint of the files finds."""
    import shutil

    root = tmp_path / "samplers"
    shutil.copytree(SAMPLERS, root)
    train, helpers = root / "train.py", root / "diffusion" / "timesteps.py"
    original, helper_text = train.read_text(), helpers.read_text()
    project = project_for(train)
    project.set_text(train, original)  # an open buffer, as the server shares it
    before = lint(helper_text, helpers)
    assert ("GPU101", 30) in [(d[0], d[1].row) for d in before]
    without = original.replace(LOG_CALL, "")
    for text in (without, original, without):
        project.set_text(train, text)  # typed in the editor, not saved
        found = lint(helper_text, helpers)
        assert found == fresh_project(helper_text, helpers, on_disk={train: text})
        assert (("GPU101", 30) in [(d[0], d[1].row) for d in found]) == (text == original)
        train.write_text(original)  # the file on disk stays as it was (only the buffer changed)
    project.set_text(train, None)


def test_an_edit_of_which_helper_a_per_step_function_calls_moves_the_findings(reuse, tmp_path):
    """The calls each function makes (which of the module's functions a per-step entry reaches) are kept by
    node between lints: an edit that makes `log_losses` call another function must move the finding to it,
    although the functions called did not change."""
    import shutil

    root = tmp_path / "samplers"
    shutil.copytree(SAMPLERS, root)
    helpers = root / "diffusion" / "timesteps.py"
    text = helpers.read_text()
    body = "    for value in losses.values():\n        print(value.mean().item())\n"
    assert body in text
    split = text.replace(body, "    _show(losses)\n") + "\n\ndef _show(losses):\n" + body + \
        "\n\ndef _quiet(losses):\n" + body
    other = split.replace("    _show(losses)\n", "    _quiet(losses)\n")
    project = project_for(helpers)
    rows = []
    for edited in (split, other, split):
        project.set_text(helpers, edited)
        found = lint(edited, helpers)
        project.set_text(helpers, None)
        assert found == fresh_project(edited, helpers, on_disk={helpers: edited})
        helpers.write_text(text)
        rows.append(sorted(d[1].row for d in found if d[0] == "GPU101"))
    lines = split.splitlines()
    show = next(i for i, line in enumerate(lines, 1) if line.startswith("def _show"))
    quiet = next(i for i, line in enumerate(lines, 1) if line.startswith("def _quiet"))
    assert rows[0] == rows[2] and any(show < r < quiet for r in rows[0]) and not any(r > quiet for r in rows[0])
    assert any(r > quiet for r in rows[1]) and not any(show < r < quiet for r in rows[1])
