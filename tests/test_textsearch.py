"""gpulint.textsearch.found_in(pattern, text) is `pattern.search(text) is not None`, for every pattern the analysis
and the rules search a module's raw text with, on random texts made of the patterns' own words in any case,
word boundaries, brackets and non-ASCII look-alikes (the long s, the Kelvin sign: IGNORECASE matches them)."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpulint import rule_reuse
from gpulint.rule import all_rules
from gpulint.textsearch import _plans, found_in


def patterns() -> list[re.Pattern]:
    from gpulint.analysis import GPU_HINT
    from gpulint.analysis.precision import _MIXED
    from gpulint.analysis.training import (_CHOSEN_PRECISION, _DTYPE_CHOICE, _FLOAT_DTYPE_ARGUMENT, _FREEZES,
                                           _REDUCED_PRECISION)

    rules = all_rules()
    modules = [sys.modules[rules[code].__module__] for code in ("GPU415", "GPU501", "GPU413")]
    found = [GPU_HINT, _MIXED, _REDUCED_PRECISION, _FREEZES, modules[0]._HANDLED, modules[1]._COMPILES,
             modules[2]._ONE_SHAPE, _CHOSEN_PRECISION, _DTYPE_CHOICE, _FLOAT_DTYPE_ARGUMENT]
    # the text every rule's findings need (the prefilter searches them in every file: runner.could_have_findings)
    found += sorted({cls.needs_text for cls in rules.values() if cls.needs_text is not None} - set(found),
                    key=lambda p: p.pattern)
    # and some shapes the splitting must get right
    found += [re.compile(p, f) for p, f in (
        (r"ab?c|x(y|z)w|\bq\b", 0), (r"a|", 0), (r"(a)|b\1", 0), (r"[|]x|y", 0), (r"[A-z]x|Kq", re.I),
        (r"\bS\S+|s\s*=", re.I), (r"^ab|cd$", re.M), (r"(?i:Ab)|cd", 0), (r"(?P<N>a)|b", re.I), (r"\x41|b", re.I),
        (r"Ab[\"':]|x[^:(]y|q", re.I), (r"[a:]b|c", re.I), (r"[\w]x|y", re.I), (r"[(-:]a|b", re.I))]
    return found


def words() -> list[str]:
    out = set()
    for p in patterns():
        out.update(w for w in re.findall(r"[A-Za-z0-9_]+", p.pattern) if len(w) > 1)
    return sorted(out)


TOKENS = st.one_of(st.sampled_from(words()), st.sampled_from([" ", "\n", "(", ")", ".", "=", "  =", "_", "[", "3",
                                                              "\u017f", "\u212a", "\u0130", "é", "#", "ab", "c",
                                                              "x", "yw", "q", ":", "'", "\""]))


@st.composite
def texts(draw) -> str:
    parts = draw(st.lists(TOKENS, max_size=30))
    return "".join(draw(st.sampled_from([p, p.upper(), p.lower(), p.title()])) for p in parts)


@settings(max_examples=400, deadline=None)
@given(text=texts())
def test_found_in_is_the_patterns_search(text):
    for pattern in patterns():
        assert found_in(pattern, text) == (pattern.search(text) is not None), (pattern.pattern, text)


def test_the_text_signature_patterns_are_split_not_searched_whole():
    """The slow ones (IGNORECASE alternations) take the fast path on an ASCII text."""
    rule_reuse.text_signature("x = 1\n")
    from gpulint.analysis.training import _REDUCED_PRECISION

    found_in(_REDUCED_PRECISION, "x = 1\n")
    assert _plans[_REDUCED_PRECISION] is not None and _plans[_REDUCED_PRECISION].lower


@pytest.mark.parametrize("text", ["", "AUTOCAST", "with torch.autocast('cuda'):", "x.half()", "x.Half (", "ſtuff"])
def test_examples(text):
    from gpulint.analysis.training import _REDUCED_PRECISION

    assert found_in(_REDUCED_PRECISION, text) == (_REDUCED_PRECISION.search(text) is not None)


def test_the_prefilters_text_is_searched_split_into_alternatives():
    """The prefilter searches each rule's `needs_text` in every file (runner.could_have_findings): through
    `found_in`, each pattern split into its alternatives, each searched from where its literal first occurs.
    GPU_HINT (IGNORECASE, with the class `[\\"':]`) was searched whole: about 4% of a cold check of fairseq."""
    import ast

    from gpulint.runner import _prefilters, could_have_findings

    rules = all_rules()
    codes = frozenset(rules)
    assert _prefilters(codes) is not None
    source = "import os\nprint(os.getcwd())\n"  # no text any rule needs: every pattern is searched
    _plans.clear()
    assert could_have_findings(source, codes, ast.parse(source)) is False
    needed = {cls.needs_text for cls in rules.values() if cls.needs_text is not None}
    assert needed and all(_plans.get(p) is not None for p in needed), \
        [p.pattern for p in needed if _plans.get(p) is None]
