"""`type(node) is cst.Call` stands for `isinstance(node, cst.Call)` across the engine and the rules: LibCST's node
classes are ABCs, so `isinstance` goes through `ABCMeta.__instancecheck__` (a Python call, about ten times the
cost of `type(...) is`), and the analysis asks ~300,000 of them per lint of a 1,000-line script. The two agree
only for a class that nothing subclasses and that has no virtual subclass: this test checks every class named in
such a test in the source (a LibCST release that subclasses one, or a new test on an abstract class, fails here).
"""

from __future__ import annotations

import abc
import inspect
import re
from pathlib import Path

import libcst as cst

from gpulint.rule import all_rules

ROOT = Path(__file__).resolve().parent.parent
EXACT = re.compile(r"type\([^()]*(?:\([^()]*\))?[^()]*\)\s+(?:is not|is|not in|in)\s+(\(?(?:\s*cst\.\w+\s*,?)+\)?)")


def _exact_tests() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted([*ROOT.joinpath("gpulint").rglob("*.py"), *ROOT.joinpath("rules").rglob("*.py")]):
        for match in EXACT.finditer(path.read_text()):
            for name in re.findall(r"cst\.(\w+)", match.group(1)):
                found.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    return found


def _subclasses(cls: type) -> list[type]:
    found, stack = [], [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.append(sub)
            stack.append(sub)
    return found


def test_exact_type_tests_name_only_classes_without_subclasses():
    all_rules()  # every rule module imported: a subclass defined by one would show
    tests = _exact_tests()
    assert sum(map(len, tests.values())) > 500, "the scan no longer finds the exact-type tests"
    wrong = {}
    for name, where in tests.items():
        cls = getattr(cst, name, None)
        if not (inspect.isclass(cls) and issubclass(cls, cst.CSTNode)):
            wrong[name] = ("not a LibCST node class", where[:3])
        elif inspect.isabstract(cls) or _subclasses(cls) or abc._get_dump(cls)[0]:
            wrong[name] = ("has subclasses: isinstance and type() differ", where[:3])
    assert not wrong, wrong


def test_the_scan_sees_a_test_on_a_class_with_subclasses():
    source = "if type(node) in (cst.Name, cst.BaseExpression):\n"
    names = [n for m in EXACT.finditer(source) for n in re.findall(r"cst\.(\w+)", m.group(1))]
    assert names == ["Name", "BaseExpression"] and _subclasses(cst.BaseExpression)
