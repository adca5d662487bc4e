"""The syntax index's one answer to "which class holds this node" (gpulint/analysis/tree.py `enclosing_class`),
which the loop analysis, the module's calls, pinned stores, `self` lists and wrapped calls all ask."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.analysis.tree import SyntaxIndex

SOURCE = textwrap.dedent("""\
    class Outer:
        def method(self):
            def helper():
                return self.a
            return helper

        class Inner:
            def other(self):
                return self.b


    def free():
        return c
""")


def _names(module: cst.Module) -> dict[str, cst.Name]:
    found: dict[str, cst.Name] = {}

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.setdefault(node.value, node)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            found.setdefault(node.attr.value, node.attr)

    module.visit(Visitor())
    return found


def test_enclosing_class_is_the_innermost_class_through_nested_functions():
    module = cst.parse_module(SOURCE)
    index = SyntaxIndex().build(module)
    names = _names(module)
    assert index.enclosing_class(names["a"]).name.value == "Outer"  # through a function nested in a method
    assert index.enclosing_class(names["b"]).name.value == "Inner"  # the innermost class
    assert index.enclosing_class(names["c"]) is None  # a module-level function
    outer = module.body[0]
    method = outer.body.body[0]
    assert index.enclosing_class(method) is outer  # a method: its class
    assert index.enclosing_class(outer) is None
