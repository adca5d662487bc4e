"""One walk over the syntax tree that records what every later question needs.

Parents, nodes in document order, name bindings per scope, imports. LibCST's ParentNodeProvider and ScopeProvider
would give the same answers at several times the cost; a linter that runs on every commit cannot afford them.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Iterator, Optional, Union

import libcst as cst

from gpulint import incremental
from gpulint.analysis.imports import ImportMap
from gpulint.analysis.node_types import of_types

Scope = Union[cst.Module, cst.FunctionDef, cst.Lambda]
SCOPE_TYPES = (cst.Module, cst.FunctionDef, cst.Lambda)


@dataclass(frozen=True)
class Binding:
    """`name` is bound in `scope` by `node` (an Assign, For, Param...); `value` is what it gets, when known.

    `index` picks an element when the value is unpacked (`x, y = pair` gives x index 0); `source` is the
    statement that binds it.
    """

    name: str
    scope: Scope
    kind: str  # assign | augassign | for | param | import | def | class | with | walrus | comp
    value: Optional[cst.CSTNode]
    index: Optional[int] = None
    source: Optional[cst.CSTNode] = None


def descendants(node: cst.CSTNode):
    """`node` and every node under it (through `child_nodes`: no layout tokens, no rebuilt nodes)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))


_OWN_SCOPE_STOPS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def own_scope_nodes(stack: list):
    """The nodes in `stack` and every node under them that runs in their scope: a nested function, class or
    lambda is yielded but not entered. Depth first, last of `stack` first, each node's children last first.
    `stack` is the walk's own (it is emptied): `[fn.body]` for a function's body (kinds' `_own_nodes`), a
    scope's statements for the loop analysis' `_walk_scope`."""
    while stack:
        node = stack.pop()
        yield node
        if type(node) in _OWN_SCOPE_STOPS:
            continue
        stack.extend(child_nodes(node))


_FIELDS: dict[type, tuple[str, ...]] = {}


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children, read straight from its fields, layout tokens (`_TRIVIA`) left out.

    LibCST's `children` and `visit` rebuild every node they pass (its `_visit_and_replace_children`), which is
    most of the cost of a walk. The order is that of the fields, which is the source order for statements and
    for almost all expressions (exceptions: `a if test else b` lists test first; decorators come after the name).
    """
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = _node_fields(type(node))
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        kind = _KIND.get(type(value))
        if kind is None:
            kind = _kind(type(value))
        if kind is _NODE:
            out.append(value)
        elif kind is _SEQUENCE:
            for item in value:
                if (_KIND.get(type(item)) or _kind(type(item))) is _NODE:
                    out.append(item)
    return out


def _node_fields(t: type) -> tuple[str, ...]:
    """The fields of a node type that may hold a node other than a layout token, by the types LibCST declares
    for them: `Name.lpar` (a sequence of `LeftParen`), `Call.whitespace_after_func`, `Arg.comma` (a `Comma` or
    `MaybeSentinel`) are never read. Every field when the declared types cannot be read.
    (tests/test_child_nodes.py compares them with every field, and with LibCST's own children, on every fixture.)"""
    fields = dataclasses.fields(t)
    try:
        hints = typing.get_type_hints(t)
    except Exception:  # noqa: BLE001 (a node type of a newer LibCST whose hints do not resolve: read them all)
        return tuple(f.name for f in fields)
    return tuple(f.name for f in fields if f.name not in hints or _may_hold_a_node(hints[f.name]))


def _may_hold_a_node(hint) -> bool:
    """Whether a value of the declared type may be (or hold) a node that is not a layout token."""
    origin = typing.get_origin(hint)
    if origin is not None:
        if origin is typing.Literal:
            return False
        return any(_may_hold_a_node(arg) for arg in typing.get_args(hint) if arg is not Ellipsis)
    if not isinstance(hint, type):
        return True  # a forward reference, a type variable: cannot tell
    if issubclass(hint, cst.CSTNode):
        return not issubclass(hint, _TRIVIA)
    return not issubclass(hint, (str, bytes, bool, int, float, type(None), cst.MaybeSentinel))


# isinstance() against CSTNode (an ABC) is slow; the answer per type is cached here.
_NODE, _SEQUENCE, _OTHER = "node", "sequence", "other"
_KIND: dict[type, str] = {}


# Layout tokens: whitespace, comments, commas, brackets, `=` of keywords, the dots of a dotted name. Two thirds
# of a module's nodes, and no question of the analysis is about them (rules read them, when they must, through
# their owner's fields: `arg.comma`, `import_from.relative`): they are not walked, indexed or visited.
_TRIVIA = (cst.BaseParenthesizableWhitespace, cst.Newline, cst.TrailingWhitespace, cst.EmptyLine, cst.Comment,
           cst.Comma, cst.Dot, cst.AssignEqual, cst.Colon, cst.Semicolon, cst.LeftParen, cst.RightParen,
           cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace)


def _kind(t: type) -> str:
    if issubclass(t, cst.CSTNode):
        kind = _OTHER if issubclass(t, _TRIVIA) else _NODE
    else:
        kind = _SEQUENCE if issubclass(t, (list, tuple)) else _OTHER
    _KIND[t] = kind
    return kind


_SCOPE_SET = frozenset(SCOPE_TYPES)
_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp})
_TOP = cst.Module(body=())  # stands for the module's scope in the walk of one top-level statement


class SyntaxIndex(cst.CSTVisitor):
    """Collects parents, all nodes in order, bindings and imports in a single walk (`build`)."""

    def __init__(self) -> None:
        super().__init__()
        self.parent: dict[cst.CSTNode, cst.CSTNode] = {}
        # The same map keyed by `id(node)`: a walk up asks it without LibCST's `CSTNode.__hash__` (a Python call
        # per step; `ancestors`, `enclosing_scope` and `is_ancestor_or_self` are asked ~100,000 times a lint).
        self.up: dict[int, cst.CSTNode] = {}
        self.nodes: list[cst.CSTNode] = []
        self.bindings: dict[tuple[int, str], list[Binding]] = {}
        self.functions: dict[str, list[cst.FunctionDef]] = {}
        self.classes: dict[str, cst.ClassDef] = {}
        self.imports = ImportMap()
        self.import_nodes: list[Union[cst.Import, cst.ImportFrom]] = []  # in document order
        self._stack: list[cst.CSTNode] = []
        self._scopes: list[Scope] = []
        self._names: Optional[dict[str, list[cst.Name]]] = None
        self._order: Optional[dict[int, int]] = None
        self._name_places: dict[str, list[int]] = {}
        self._bound_names: Optional[frozenset[str]] = None
        self._visible: dict[int, list[Binding]] = {}  # `visible_bindings` by id(name): the index does not change

    # -- the walk ---------------------------------------------------------------------------------------------
    def build(self, module: cst.Module) -> "SyntaxIndex":
        """The same as `module.visit(self)`, several times faster (see `child_nodes`).

        When an editor's lints share work (gpulint.incremental), each top-level statement's walk is kept by its
        node: an unchanged definition is not walked again, its tables are merged in (`_merge`)."""
        kept = incremental.statement_indexes()
        if kept is None:
            return self._walk(module)
        self.nodes.append(module)
        statements = {id(s) for s in module.body}
        for child in child_nodes(module):
            if id(child) not in statements:  # the module's header and footer lines
                self._scopes.append(module)
                self._walk(child, module)
                self._scopes.pop()
                continue
            part = kept.get(child)
            if part is None:
                part = SyntaxIndex()
                part._scopes.append(_TOP)
                part._walk(child)
                kept.put(child, part, len(part.nodes))
            self._merge(part, child, module)
        return self

    def _merge(self, part: "SyntaxIndex", statement: cst.CSTNode, module: cst.Module) -> None:
        """Add the walk of one top-level statement (made with `_TOP` standing for the module's scope), as the
        walk of the whole module records it: tables in document order, keys in order of first appearance."""
        self.parent.update(part.parent)
        self.parent[statement] = module
        self.up.update(part.up)
        self.up[id(statement)] = module
        self.nodes.extend(part.nodes)
        bindings = self.bindings
        for (scope, name), found in part.bindings.items():
            if scope == id(_TOP):
                bindings.setdefault((id(module), name), []).extend(
                    Binding(b.name, module, b.kind, b.value, b.index, b.source) for b in found)
            else:  # a scope inside the statement: its own key
                bindings[(scope, name)] = list(found)
        for name, functions in part.functions.items():
            self.functions.setdefault(name, []).extend(functions)
        self.classes.update(part.classes)
        for node in part.import_nodes:
            self.imports.add(node)
        self.import_nodes.extend(part.import_nodes)

    def _walk(self, root: cst.CSTNode, up: Optional[cst.CSTNode] = None) -> "SyntaxIndex":
        """Walk `root`'s subtree (`up`: its parent, if any)."""
        leave = object()
        work: list = [root if up is None else (root, up)]
        parent = self.parent
        up_by_id = self.up
        nodes = self.nodes
        scopes = self._scopes
        while work:
            node = work.pop()
            if node is leave:
                scopes.pop()
                continue
            if type(node) is tuple:  # (child, its parent)
                node, up = node
                parent[node] = up
                up_by_id[id(node)] = up
            nodes.append(node)
            handler = _HANDLERS.get(type(node))
            if handler is not None:
                handler(self, node)
            if type(node) in _SCOPE_SET:
                scopes.append(node)
                work.append(leave)
            children = child_nodes(node)
            if children:
                work.extend((child, node) for child in reversed(children))
        return self

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parent[node] = self.up[id(node)] = self._stack[-1]
        self._stack.append(node)
        self.nodes.append(node)
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)
        if isinstance(node, SCOPE_TYPES):
            self._scopes.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        if isinstance(original_node, SCOPE_TYPES):
            self._scopes.pop()

    # -- tables over `nodes`, built on first use (a rule asking per finding must not scan the module per finding)
    def names(self, value: str) -> list[cst.Name]:
        """The `Name` nodes spelled `value`, in document order."""
        if self._names is None:
            names: dict[str, list[cst.Name]] = {}
            for node in of_types(self, cst.Name):
                names.setdefault(node.value, []).append(node)  # type: ignore[attr-defined]
            self._names = names
        return self._names.get(value, [])

    def bound_names(self) -> frozenset[str]:
        """Every name some scope of the module binds (asked per fix that needs a fresh name)."""
        if self._bound_names is None:
            self._bound_names = frozenset(name for (_scope, name) in self.bindings)
        return self._bound_names

    def name_places(self, value: str) -> list[int]:
        """The places in `nodes` (document order, increasing) of the `Name` nodes spelled `value` (`names`)."""
        places = self._name_places.get(value)
        if places is None:
            places = self._name_places[value] = [self.order(n) for n in self.names(value)]  # type: ignore[misc]
        return places

    def order(self, node: cst.CSTNode) -> Optional[int]:
        """The node's place in `nodes` (document order); None for a node not in this module."""
        if self._order is None:
            self._order = {id(n): i for i, n in enumerate(self.nodes)}
        return self._order.get(id(node))

    # -- bindings ----------------------------------------------------------------------------------------------
    @property
    def scope(self) -> Scope:
        return self._scopes[-1]

    def bind(self, target: cst.BaseExpression, kind: str, value, source, scope=None, index=None) -> None:
        scope = scope if scope is not None else self.scope
        if type(target) is cst.Name:
            key = (id(scope), target.value)
            self.bindings.setdefault(key, []).append(Binding(target.value, scope, kind, value, index, source))
        elif type(target) in (cst.Tuple, cst.List):
            elements = [e.value for e in target.elements]
            # `x, y = a, b` binds pairwise; `x, y = pair` binds element i of pair.
            if type(value) in (cst.Tuple, cst.List) and len(value.elements) == len(elements):
                for el, val in zip(elements, value.elements):
                    if type(val) is not cst.StarredElement:
                        self.bind(el, kind, val.value, source, scope)
            else:
                for i, el in enumerate(elements):
                    if type(el) is cst.StarredElement:
                        el = el.value
                    self.bind(el, kind, value, source, scope, i if index is None else index)

    def lookup(self, name: str, scope: Scope) -> list[Binding]:
        return self.bindings.get((id(scope), name), [])

    def parameter_of(self, name: cst.Name) -> Optional[tuple[cst.FunctionDef, cst.Param]]:
        """The function and the parameter `name` refers to, when its only binding where it stands is a parameter
        of a `def` (not a lambda's, not one bound again in the body)."""
        bindings = self.visible_bindings(name)
        if len(bindings) != 1 or bindings[0].kind != "param" or not isinstance(bindings[0].source, cst.FunctionDef):
            return None
        fn = bindings[0].source
        params = (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)
        param = next((p for p in params if p.name.value == name.value), None)
        return (fn, param) if param is not None else None

    def visible_bindings(self, name: cst.Name) -> list[Binding]:
        """The bindings `name` refers to where it stands: its own scope's, else the nearest enclosing one's
        (asked again for one name, the answer found the first time: the tables do not change after the walk)."""
        found = self._visible.get(id(name))
        if found is None:
            found = self._visible[id(name)] = self._visible_bindings(name)
        return found

    def _visible_bindings(self, name: cst.Name) -> list[Binding]:
        scope = self.enclosing_scope(name)
        while scope is not None:
            found = self.lookup(name.value, scope)
            if found and any(type(b.source) is cst.CompFor for b in found):
                found = self._comprehension_scoped(name, found)
            if found:
                return found
            scope = self.enclosing_scope(scope) if type(scope) is not cst.Module else None
        return []

    def _comprehension_scoped(self, name: cst.Name, found: list[Binding]) -> list[Binding]:
        """Python 3 scoping of comprehension variables (the index keeps them in the enclosing function's table):
        a name inside a comprehension whose `for` clauses bind it refers to those bindings only (the innermost
        such comprehension; the first clause's iterable is evaluated outside it), and a name outside every
        comprehension binding it never refers to them (`for cls in torch.unique(t):` then
        `[int(cls) for *xyxy, conf, cls in pred.tolist()]`: two different `cls`)."""
        path = set()
        node: Optional[cst.CSTNode] = name
        for parent in self.ancestors(name):
            path.add(id(node))
            node = parent
            if type(parent) in _SCOPE_SET:
                break
            if type(parent) not in _COMPREHENSIONS:
                continue
            clauses = []
            clause = parent.for_in  # type: ignore[attr-defined]
            while clause is not None:
                clauses.append(id(clause))
                clause = clause.inner_for_in
            if id(parent.for_in.iter) in path:  # type: ignore[attr-defined]
                continue  # the first iterable: evaluated in the enclosing scope
            own = [b for b in found if id(b.source) in clauses]
            if own:
                return own
        return [b for b in found if type(b.source) is not cst.CompFor]

    def enclosing_scope(self, node: cst.CSTNode) -> Scope:
        up = self.up
        current = up.get(id(node))
        while current is not None and type(current) not in _SCOPE_SET:  # (no subclasses: isinstance is slow)
            current = up.get(id(current))
        return current  # type: ignore[return-value]

    def enclosing_function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        """The `def` whose body holds `node` directly (not through a lambda or a class body), if any."""
        for parent in self.ancestors(node):
            if type(parent) is cst.FunctionDef:
                return parent
            if type(parent) in (cst.Lambda, cst.ClassDef):
                return None
        return None

    def enclosing_class(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        """The innermost class holding `node` (through methods and nested functions; for a method, its class)."""
        for parent in self.ancestors(node):
            if type(parent) is cst.ClassDef:
                return parent
        return None

    def outermost(self, node: cst.CSTNode, node_type: type) -> Optional[cst.CSTNode]:
        """The outermost ancestor of `node` of exactly `node_type` (e.g. the top-level class or the method of it
        that holds `node` through nested functions), else None."""
        found = None
        for parent in self.ancestors(node):
            if type(parent) is node_type:
                found = parent
        return found

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        up = self.up
        current = up.get(id(node))
        while current is not None:
            yield current
            current = up.get(id(current))

    def subtree(self, node: cst.CSTNode) -> Optional[tuple[int, int]]:
        """(first, last): the places in `nodes` (`order`) of `node` and of its last descendant; its descendants
        are exactly the nodes between them (`nodes` is the walk's pre-order). None for a node not indexed."""
        first = self.order(node)
        if first is None:
            return None
        last, current = first, node
        while True:
            children = child_nodes(current)
            if not children:
                return first, last
            current = children[-1]
            place = self.order(current)
            if place is None:
                return None
            last = place

    def is_ancestor_or_self(self, ancestor: cst.CSTNode, node: cst.CSTNode) -> bool:
        up = self.up
        current = node
        while current is not None:
            if current is ancestor:
                return True
            current = up.get(id(current))
        return False


def _on_assign(idx: SyntaxIndex, node: cst.Assign) -> None:
    for target in node.targets:
        idx.bind(target.target, "assign", node.value, node)


def _on_annassign(idx: SyntaxIndex, node: cst.AnnAssign) -> None:
    idx.bind(node.target, "assign", node.value if node.value is not None else node.annotation, node)


def _on_augassign(idx: SyntaxIndex, node: cst.AugAssign) -> None:
    idx.bind(node.target, "augassign", node.value, node)


def _on_for(idx: SyntaxIndex, node: cst.For) -> None:
    idx.bind(node.target, "for", node.iter, node)


def _on_comp_for(idx: SyntaxIndex, node: cst.CompFor) -> None:
    idx.bind(node.target, "for", node.iter, node)


def _on_withitem(idx: SyntaxIndex, node: cst.WithItem) -> None:
    if node.asname is not None:
        idx.bind(node.asname.name, "with", node.item, node)


def _on_walrus(idx: SyntaxIndex, node: cst.NamedExpr) -> None:
    idx.bind(node.target, "walrus", node.value, node)


def _on_function(idx: SyntaxIndex, node: cst.FunctionDef) -> None:
    idx.bind(node.name, "def", node, node)
    idx.functions.setdefault(node.name.value, []).append(node)
    params = node.params
    for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
        idx.bind(param.name, "param", param, node, scope=node)
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            idx.bind(star.name, "param", None, node, scope=node)


def _on_class(idx: SyntaxIndex, node: cst.ClassDef) -> None:
    idx.bind(node.name, "class", node, node)
    idx.classes[node.name.value] = node


def _on_import(idx: SyntaxIndex, node) -> None:
    idx.imports.add(node)
    idx.import_nodes.append(node)
    if type(node) is cst.Import or type(node.names) is not cst.ImportStar:
        for alias in node.names:
            if alias.asname is not None:
                idx.bind(alias.asname.name, "import", node, node)
            else:
                name = alias.name
                while type(name) is cst.Attribute:
                    name = name.value
                idx.bind(name, "import", node, node)


_HANDLERS = {
    cst.Assign: _on_assign,
    cst.AnnAssign: _on_annassign,
    cst.AugAssign: _on_augassign,
    cst.For: _on_for,
    cst.CompFor: _on_comp_for,
    cst.WithItem: _on_withitem,
    cst.NamedExpr: _on_walrus,
    cst.FunctionDef: _on_function,
    cst.ClassDef: _on_class,
    cst.Import: _on_import,
    cst.ImportFrom: _on_import,
}
