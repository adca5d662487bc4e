"""Properties over generated programs: never raise, fixes parse and are idempotent, touch only what they fix.

Two generators: hypothesmith's grammar-based programs (odd but valid Python), and training loops assembled
from templates (random nesting, import aliases, periodic guards, else branches, helper functions), which is
where the rules actually fire. Profiles: `ci` (default, ~30 s) and `long` (GPULINT_HYPOTHESIS_PROFILE=long).
"""

from __future__ import annotations

import difflib
import ast
import os
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, Phase, example, find, given, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, PositionProvider

from gpulint.diagnostics import FixMode
from gpulint.rule import all_rules
from gpulint.runner import _analyse, first_lines, lint_source

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("long", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("GPULINT_HYPOTHESIS_PROFILE", "ci"))

CODES = frozenset(all_rules())

# -- training loops from templates -------------------------------------------------------------------------------
IMPORTS = {
    "torch": ("import torch\nimport torch.nn as nn\n", "torch"),
    "alias": ("import torch as T\nfrom torch import nn\n", "T"),
    "from": ("import torch\nfrom torch import nn, isnan\n", "torch"),
}
SETUPS = [
    "device = {t}.device('cuda')\nmodel = nn.Linear(4, 2).to(device)\n",
    "model = nn.Linear(4, 2).cuda()\n",
    "model = nn.Linear(4, 2)\n",  # never leaves the CPU: the GPU1xx rules must stay silent
    "model = nn.Linear(4, 2)  # trained on cuda elsewhere\n",
]
LOADERS = ["loader = {t}.utils.data.DataLoader([1, 2])\n", "train_dl = make_loader()\nloader = train_dl\n"]
HEADERS = ["for step, (x, y) in enumerate(loader):", "for x, y in loader:", "for epoch in range(3):\n{i}for x, y in loader:"]
STATEMENTS = [
    "loss = model(x).sum()",
    "loss.backward()",
    "optimizer.step()",
    "print(loss.item())",
    "value = loss.item()",
    "total += loss.item()",
    "rows = x.tolist()",
    "arr = x.cpu().numpy()",
    "host = loss.cpu()",
    "{t}.cuda.synchronize()",
    "{t}.cuda.empty_cache()",
    "{t}.cuda.empty_cache(); print('freed')",
    "idx = {t}.nonzero(x)",
    "picked = x[x > 0]",
    "text = f'{{loss}}'",
    "scalar = float(loss)",
    "if {isnan}(loss):\n{i}    print('nan')",
    "if {isnan}(loss).any():\n{i}    break",
    "if loss > 0:\n{i}    pass",
    "assert loss > 0",
    "pass  # a comment that mentions .item()",
    "helper(loss)",
]
GUARDS = [None, "if step % 10 == 0:", "if step % 10 != 0:\n{i}    pass\n{i}else:", "if verbose:",
          "with {t}.no_grad():", "try:"]


@st.composite
def training_programs(draw) -> str:
    style = draw(st.sampled_from(sorted(IMPORTS)))
    header, t = IMPORTS[style]
    isnan = "isnan" if style == "from" else f"{t}.isnan"
    out = [header, draw(st.sampled_from(SETUPS)).format(t=t), draw(st.sampled_from(LOADERS)).format(t=t),
           "optimizer = {t}.optim.SGD(model.parameters(), lr=0.1)\ntotal = 0.0\nverbose = False\n".format(t=t)]
    helper_body = draw(st.lists(st.sampled_from(STATEMENTS[3:12]), min_size=1, max_size=3))
    out.append("def helper(loss):\n" + "".join(f"    {s.format(t=t, isnan=isnan, i='    ')}\n"
                                               for s in helper_body))

    def block(indent: str, depth: int) -> str:
        lines = []
        for _ in range(draw(st.integers(1, 4))):
            guard = draw(st.sampled_from(GUARDS)) if depth < 3 else None
            if guard is None:
                stmt = draw(st.sampled_from(STATEMENTS))
                lines.append(indent + stmt.format(t=t, isnan=isnan, i=indent) + "\n")
            else:
                lines.append(indent + guard.format(t=t, i=indent) + "\n")
                lines.append(block(indent + "    ", depth + 1))
                if guard == "try:":
                    lines.append(f"{indent}except RuntimeError:\n{indent}    raise\n")
        return "".join(lines)

    in_function = draw(st.booleans())
    base = "    " if in_function else ""
    if in_function:
        out.append("def train(model, loader, optimizer, step=0):\n")
    loop = draw(st.sampled_from(HEADERS)).format(i=base + "    ")
    inner = base + ("        " if "epoch" in loop else "    ")
    out.append(base + loop + "\n")
    if "step" not in loop:
        out.append(f"{inner}step = 0\n")
    out.append(block(inner, 0))
    if in_function:
        out.append("train(model, loader, optimizer)\n")
    text = "".join(out)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


# -- checks shared by both generators ---------------------------------------------------------------------------
def changed_lines_allowed(source: str) -> set[int]:
    """Lines (1-based) of the nodes fixes replace, leading comment lines included, plus the line after each."""
    analysis, diagnostics = _analyse(source, "gen.py", CODES, False, [])
    positions = MetadataWrapper(analysis.module, unsafe_skip_copy=True).resolve(PositionProvider)
    allowed: set[int] = set()
    for d in diagnostics:
        if d.fix is None:
            continue
        for node in d.fix.changes:
            where = positions[node]
            first = where.start.line - len(getattr(node, "leading_lines", ()))
            allowed.update(range(first, where.end.line + 2))
    return allowed


def check_positions(source: str) -> None:
    """The runner's per-statement positions equal LibCST's whole-module PositionProvider, with statements found
    from the lines of CPython's tree (what lint_source does) and by printing the statements before them."""
    check_positions_found(source, first_lines(ast.parse(source)))
    check_positions_found(source, None)


def check_positions_found(source: str, firsts) -> None:
    analysis, diagnostics = _analyse(source, "gen.py", CODES, True, [], firsts=firsts)
    full = MetadataWrapper(analysis.module, unsafe_skip_copy=True).resolve(PositionProvider)
    for d in diagnostics:
        where = full[d.node]
        assert (d.location.row, d.location.column) == (where.start.line, where.start.column + 1)
        assert (d.end_location.row, d.end_location.column) == (where.end.line, where.end.column + 1)


TOP_LEVEL_SHAPES = '''# a header comment

import torch; import functools
model = torch.nn.Linear(2, 2).cuda(); opt = torch.optim.SGD(model.parameters(), lr=0.1)


# comment before the decorators
@functools.lru_cache()
# comment between decorators
@functools.wraps(print)
def train(loader):
    for x in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        print(loss.item())
    # a trailing comment of the body

# comment before a one-liner
if True: print(float(model(torch.ones(2).cuda()).sum()))
class Trainer:
    """a docstring
    over lines"""
    def fit(self, loader):
        for x in loader:
            print(model(x.cuda()).sum().item())
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("final_newline", [True, False])
def test_positions_of_statements_found_from_cpython_lines(newline: str, final_newline: bool):
    source = TOP_LEVEL_SHAPES.replace("\n", newline)
    if not final_newline:
        source = source.rstrip()
    assert len(lint_source(source, "gen.py", CODES).diagnostics) >= 3
    check_positions(source)


def check_program(source: str) -> None:
    result = lint_source(source, "gen.py", CODES)
    assert not result.errors, result.errors
    assert result.source == source
    if result.diagnostics and result.diagnostics[0].code != "GPU001":
        check_positions(source)

    # The prefilter never hides a finding.
    unfiltered = lint_source(source, "gen.py", CODES, prefilter=False)
    assert [(d.code, d.location) for d in unfiltered.diagnostics] == \
        [(d.code, d.location) for d in result.diagnostics]

    fixed = lint_source(source, "gen.py", CODES, fix=FixMode.UNSAFE)
    assert not fixed.errors, fixed.errors
    if fixed.source == source:
        return
    cst.parse_module(fixed.source)
    compile(fixed.source, "gen.py", "exec")
    # Idempotent.
    again = lint_source(fixed.source, "gen.py", CODES, fix=FixMode.UNSAFE)
    assert again.source == fixed.source and again.fixed_count == 0
    # Only the fixed statements changed: every other line is byte for byte the same.
    allowed = changed_lines_allowed(source)
    before = source.splitlines(keepends=True)
    after = fixed.source.splitlines(keepends=True)
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag != "equal":
            touched = set(range(i1 + 1, i2 + 1)) or {i1 + 1}
            assert touched <= allowed, f"lines {sorted(touched)} changed outside the fixed statements"
    # The fixes removed what they claimed: nothing fixable is left, and the count went down accordingly.
    checked = lint_source(fixed.source, "gen.py", CODES)
    assert len(checked.diagnostics) <= len(result.diagnostics) - fixed.fixed_count
    assert not [d for d in checked.diagnostics if d.fix is not None]


@given(training_programs())
def test_training_loops(source: str):
    compile(source, "gen.py", "exec")  # the generator makes valid Python
    check_program(source)


def test_the_template_generator_reaches_findings_and_fixes():
    fixable = find(training_programs(), lambda s: lint_source(s, "gen.py", CODES, fix=FixMode.UNSAFE).fixed_count > 1,
                   settings=settings(max_examples=500, database=None, phases=[Phase.generate]))
    assert lint_source(fixable, "gen.py", CODES).diagnostics
    quiet = find(training_programs(), lambda s: "nn.Linear(4, 2)\n" in s and ".item()" in s,
                 settings=settings(max_examples=500, database=None, phases=[Phase.generate]))
    assert not lint_source(quiet, "gen.py", CODES).diagnostics  # no GPU in sight: no GPU1xx finding


@settings(max_examples=max(10, settings.default.max_examples // 3))
@given(hypothesmith.from_grammar())
def test_grammar_programs(source: str):
    # As written (mostly skipped by the prefilter), and with GPU evidence so every rule really runs.
    for text in (source, "import torch\nx = torch.zeros(1, device=\"cpu\").cuda()\n" + source):
        try:
            compile(text, "gen.py", "exec")
        except (SyntaxError, ValueError):
            continue  # hypothesmith's grammar is looser than CPython's compiler
        check_program(text)


@given(st.text(max_size=300))
@example("\U00031350")  # found by the long campaign: LibCST parses it, then refuses its own Name node
def test_arbitrary_text_never_raises(text: str):
    result = lint_source(text, "gen.py", CODES, fix=FixMode.UNSAFE)
    assert isinstance(result.diagnostics, list)
    assert result.errors == []  # no rule crashed (a crash is reported in `errors`, never raised)


REAL_FILES = sorted(p for folder in ("fixtures", "tests/data", "benchmarks")
                    for p in (Path(__file__).resolve().parent.parent / folder).rglob("*.py"))


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_real_files_raise_no_rule_error(path: Path):
    """Every Python file the tests and benchmarks use: no rule crashes on it, fixed or not."""
    text = path.read_text(encoding="utf-8", errors="replace")
    for fix in (FixMode.NONE, FixMode.UNSAFE):
        assert lint_source(text, path.name, CODES, fix=fix, report_periodic=True).errors == []
