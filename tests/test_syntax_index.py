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


def test_the_parameter_a_name_refers_to_and_the_names_a_call_may_pass_by_position():
    """One lookup of "the function and parameter a name is" (`SyntaxIndex.parameter_of`) and one list of the
    positional parameters (`syntax.positional_names`) serve the call-site readers (`calls.py`, `forward.py`)."""
    from gpulint.syntax import positional_names

    module = cst.parse_module("def train(a, /, loader, *rest, scaler=None, **kw):\n    return loader, rest, scaler\n")
    index = SyntaxIndex().build(module)
    fn = module.body[0]
    returned = [n for n in index.nodes if type(n) is cst.Return][0].value
    loader, rest, scaler = (e.value for e in returned.elements)
    assert positional_names(fn) == ["a", "loader"]
    assert index.parameter_of(loader) == (fn, fn.params.params[0])
    assert index.parameter_of(scaler) == (fn, fn.params.kwonly_params[0])
    assert index.parameter_of(rest) is None  # `*rest`: the call's remaining arguments, no one argument
