"""Host reads of device values: which calls copy a tensor to the host, NaN/Inf checks, and where a value is
already on the host. Shared by the host-sync rules (GPU1xx).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Optional

import libcst as cst

from gpulint.analysis import Kind
from gpulint.syntax import argument, is_true, method_call, positional, string_value

if TYPE_CHECKING:  # only for annotations: analysis never imports the rule layer
    from gpulint.rule import Rule



# Receivers that certainly are not tensors: a sync method on them is someone else's API.
_NOT_TENSOR = (Kind.NUMPY, Kind.NUMBER, Kind.OTHER, Kind.MODULE, Kind.MODULE_CLASS, Kind.LOADER,
               Kind.OPTIMIZER, Kind.DEVICE)


_MODULE_ONLY_METHODS = {"parameters", "named_parameters", "state_dict", "modules", "named_modules", "children",
                        "buffers", "eval", "train", "load_state_dict", "apply", "zero_grad"}


def _to_host_call(rule: Rule, node: cst.CSTNode) -> bool:
    """`.cpu()` or `.to("cpu")` (blocking) on something that may be a tensor."""
    attr = method_call(node, ("cpu", "to"))
    if attr is None or rule.analysis.kinds.on_host(attr.value):
        return False
    kind = rule.analysis.kind(attr.value)
    if kind in _NOT_TENSOR and not (kind is Kind.NUMPY and _detached(rule, attr.value)):
        return False
    user = rule.analysis.parent(node)
    if type(user) is cst.Attribute and user.attr.value in _MODULE_ONLY_METHODS:
        return False  # `m.cpu().parameters()`: m is a model
    if attr.attr.value == "cpu":
        return True
    if is_true(getattr(argument(node, "non_blocking"), "value", None)):
        return False
    target = argument(node, "device", 0)
    if target is None:
        return False
    value = target.value
    if string_value(value) == "cpu":
        return True
    if type(value) is cst.Call and rule.analysis.qualified(value.func) == "torch.device":
        return string_value(positional(value)[0] if positional(value) else None) == "cpu"
    return _cpu_device_name(rule, value, attr.value)


def _detached(rule: Rule, receiver: cst.BaseExpression) -> bool:
    """`actions.detach().cpu()` where the kinds say numpy (SAC's `actions` is a numpy array in the warm-up branch
    and the policy's tensor in the other, one name for both): a numpy array has no `.detach()`, so on this path the
    value is a tensor; a copy to the host when some binding of it comes from the accelerator (the policy's output
    on a moved observation). Targets a loader left on the host (`T = T.detach().cpu().numpy()` rebinding itself
    each batch) stay quiet: nothing of theirs went to the accelerator."""
    from gpulint.analysis.data_facts import data_facts

    return type(receiver) is cst.Call and type(receiver.func) is cst.Attribute and \
        receiver.func.attr.value == "detach" and not receiver.args and data_facts(rule.analysis).on_device(receiver)


def _cpu_device_name(rule: Rule, value: cst.BaseExpression, receiver: cst.BaseExpression) -> bool:
    """`.to(loss_device)` with every binding of `loss_device` a CPU device (`torch.device("cpu")`, `"cpu"`), of a
    tensor built from copies to an accelerator (a model's output, a moved batch): a device-to-host copy. A CPU
    device name in a CPU-only script moves nothing, so the receiver must come from the accelerator."""
    from gpulint.analysis.data_facts import CPU, data_facts

    if type(value) is not cst.Name:
        return False
    facts = data_facts(rule.analysis)
    if facts.device_of(value) != CPU or not facts.on_device(receiver):
        return False
    # In a loop over batches (a training or evaluation step), not in a network's own loop over slices that
    # offloads each one to the CPU on purpose to bound GPU memory (`x = x.to(cpu_device)` in a sliced VAE).
    loops = rule.analysis.loops
    return any(type(a) in (cst.For, cst.While) and loops.loops_over_batches(a) for a in rule.analysis.index.ancestors(
        receiver))


def _on_host_already(rule: Rule, receiver: cst.BaseExpression) -> bool:
    """`x.cpu().numpy()`: the copy (and the sync) happened at `.cpu()`, which is reported there; likewise a value
    read from an earlier host copy (`correct = (a == b).cpu()` ... `correct[i].item()`)."""
    if rule.analysis.kinds.on_host(receiver):
        return True
    if type(receiver) in (cst.Subscript, cst.Attribute):
        from gpulint.analysis.pinned_stores import stored_pinned

        if stored_pinned(rule.analysis, receiver):  # `self.host_stats[name].item()`: a pinned host buffer
            return True
    while type(receiver) is cst.Call and type(receiver.func) is cst.Attribute:
        if _to_host_call(rule, receiver):
            return True
        if receiver.func.attr.value not in ("detach", "float", "double", "half", "long", "int", "contiguous",
                                            "squeeze", "flatten", "view", "reshape", "clone"):
            return False
        receiver = receiver.func.value
    return False


def nan_check(analysis, test: cst.BaseExpression) -> Optional[tuple[str, cst.BaseExpression]]:
    """Recognise `torch.isnan(x).any()`-style tests.

    Returns (flag expression to accumulate on the device, the tested tensor) or None. The flag is the test's own
    tensor expression without `.item()`/`bool()`, negated where the test was `not ...all()`.
    """
    negated = False
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        negated, test = True, test.expression
    inner = test
    if method_call(inner, "item") and not inner.args:
        inner = inner.func.value
    if type(inner) is cst.Call and analysis.qualified(inner.func) in ("bool",) and len(inner.args) == 1:
        inner = inner.args[0].value
    reducer = None
    if method_call(inner, ("any", "all")) and not inner.args:
        reducer, core = inner.func.attr.value, inner.func.value
    elif type(inner) is cst.Call and analysis.qualified(inner.func) in ("torch.any", "torch.all") \
            and len(inner.args) == 1:
        reducer, core = analysis.qualified(inner.func).split(".")[1], inner.args[0].value
    else:
        core = inner
    check = None
    if type(core) is cst.Call:
        q = analysis.qualified(core.func)
        if q in ("torch.isnan", "torch.isinf", "torch.isfinite", "torch.isneginf", "torch.isposinf") \
                and len(core.args) == 1:
            check, tensor = q.split(".")[1], core.args[0].value
        elif method_call(core, ("isnan", "isinf", "isfinite")) and not core.args:
            check, tensor = core.func.attr.value, core.func.value
    if check is None:
        return None
    if check == "isfinite":
        # `if not torch.isfinite(x).all():` fires when something is not finite.
        if not negated or reducer == "any":
            return None
        return cst.UnaryOperation(operator=cst.BitInvert(), expression=inner), tensor
    # `if torch.isnan(x).any():` fires when something is NaN.
    if negated or reducer == "all":
        return None
    return inner, tensor


def inside_nan_check(rule: Rule, node: cst.CSTNode) -> bool:
    """`node` is part of a NaN/Inf test that GPU108 reports; the other rules stay quiet about it."""
    for ancestor in rule.analysis.index.ancestors(node):
        if type(ancestor) in (cst.If, cst.While):
            return nan_check(rule.analysis, ancestor.test) is not None and \
                rule.analysis.index.is_ancestor_or_self(ancestor.test, node)
        if isinstance(ancestor, cst.BaseStatement):
            return False
    return False


_FLAG_NAMES = {"isnan": "found_nan", "isinf": "found_inf"}


def check_kind(code: str) -> str:
    for name in ("isnan", "isinf"):
        if name in code and "isfinite" not in code:
            return name
    return "isfinite"


def _before(new: cst.BaseStatement, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
    """`new` inserted before `stmt`, taking over the comments and blank lines above it."""
    return [new.with_changes(leading_lines=stmt.leading_lines), stmt.with_changes(leading_lines=())]


# Arguments torch takes as Python ints: a 0-dim tensor given there is converted with `__index__`, a host read.
# (function, keyword, position in a `torch.` call; the method form takes the same keyword one position earlier)
_INT_ARGUMENTS = {"torch.topk": ("k", 1), "torch.kthvalue": ("k", 1)}
_INT_BOUND_FUNCTIONS = {"torch.randint": ("low", "high")}  # every positional argument but the size, too
_PAD_FUNCTIONS = ("torch.nn.functional.pad",)


def int_reads(analysis, node: cst.CSTNode) -> list[tuple[str, cst.BaseExpression]]:
    """Device tensors that `node` (a Call, a Subscript or a Comparison) hands to Python as numbers, each a host read:
    (what takes it, the tensor). A 0-dim tensor is what such a place accepts (a bigger one is an error there),
    so each is a sync, whatever it holds:
    - a slice bound, `x[:, :n]` (`__index__`);
    - an argument of `range(...)`, a size or bound of a torch factory (`torch.arange(lengths.max())`,
      `torch.zeros(n, d)`: `project.SIZE_FUNCTIONS`), an argument of the builtin `max`/`min` given two or more
      values (their comparison calls `bool()`), the `k` of `topk`/`kthvalue`, the bounds of `torch.randint`, the amounts of `F.pad`'s `pad`;
    - the left side of `in`/`not in` over a list, a tuple, a tensor or a value of unknown kind (each `==` is
      tested with `bool()`; a tensor's `__contains__` returns a Python bool); a set or a dict hashes instead.
    Only tensors known to be on the device count (a host tensor's read costs no wait)."""
    found: list[tuple[str, cst.BaseExpression]] = []

    def take(what: str, value: Optional[cst.BaseExpression]) -> None:
        if value is None or not analysis.is_device_tensor(value):
            return
        if type(value) in (cst.BinaryOperation, cst.UnaryOperation) and _no_tensor_reaches(analysis, value):
            return  # `end - ex` where `ex = 0` before the loop and `ex = end` in it: ints, whatever `ex` held before
        if type(value) is cst.Name:
            # a name's kind joins all its bindings; the assignment that runs last before the read decides
            # (`end = torch.clip(...)` in one loop, `end = start + size` before this `x[start:end]`)
            last = analysis.kinds.last_assigned(value)
            if last is not None and not analysis.is_tensor(last):
                return
        found.append((what, value))

    if type(node) is cst.Comparison:
        left = node.left
        for target in node.comparisons:
            if type(target.operator) in (cst.In, cst.NotIn) and _compared_one_by_one(analysis, target.comparator) \
                    and not _key_of_a_mapping(analysis, left):
                take("`in`", left)
            left = target.comparator
        return found
    if type(node) is cst.Subscript:
        if analysis.kind(node.value) is Kind.TENSOR and analysis.kinds.on_host(node.value):
            return found  # slicing a host tensor (`obm[i, lo:hi] = 1` of `torch.zeros(n, m)`): host arithmetic,
            # its bounds computed beside it on the host even where their own place is not known
        for element in node.slice:
            if type(element.slice) is cst.Slice:
                for bound in (element.slice.lower, element.slice.upper, element.slice.step):
                    take("a slice bound", bound)
        if len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index and \
                type(node.value) in (cst.Name, cst.Attribute, *_SEQUENCES) and \
                analysis.is_device_tensor(node.slice[0].slice.value) and python_sequence(analysis, node.value):
            # `self.label_name[label]` of a Python list: `list.__getitem__` converts the 0-dim index with
            # `__index__`, a host read
            take("indexing a Python list", node.slice[0].slice.value)
        return found
    if type(node) is not cst.Call:
        return found
    if type(node.func) is cst.Name and node.func.value in ("range", "max", "min"):
        if any(a.star or a.keyword is not None for a in node.args):
            return found
        if node.func.value == "range" or len(node.args) >= 2:
            for arg in node.args:
                take(f"`{node.func.value}()`", arg.value)
        return found
    q = analysis.qualified(node.func) if type(node.func) in (cst.Name, cst.Attribute) else None
    if q in _INT_ARGUMENTS:
        keyword, position = _INT_ARGUMENTS[q]
        arg = argument(node, keyword, position)
        take(f"the `{keyword}` of `{q.split('.')[-1]}`", arg.value if arg else None)
    elif q is None or not q.startswith("torch."):
        method = method_call(node, tuple(name.split(".")[-1] for name in _INT_ARGUMENTS))
        if method is not None and analysis.is_tensor(method.value):
            keyword, position = _INT_ARGUMENTS["torch." + method.attr.value]
            arg = argument(node, keyword, position - 1)
            take(f"the `{keyword}` of `{method.attr.value}`", arg.value if arg else None)
    if q in _INT_BOUND_FUNCTIONS:
        for arg in node.args:
            if arg.star:
                continue
            if arg.keyword is None or arg.keyword.value in _INT_BOUND_FUNCTIONS[q]:
                take(f"a bound of `{q.split('.')[-1]}`", arg.value)
    if q in _size_functions():  # `torch.arange(lengths.max())`, `torch.zeros(n, d)`: sizes converted to ints
        count = _size_functions()[q]
        for arg in node.args[:count] if count is not None else node.args:
            if arg.star:
                break
            if arg.keyword is not None and arg.keyword.value not in ("start", "end", "step", "size", "n"):
                continue
            values = [e.value for e in arg.value.elements if type(e) is cst.Element] \
                if type(arg.value) in (cst.Tuple, cst.List) else [arg.value]
            for value in values:
                take(f"a size of `{q.split('.')[-1]}`", value)
    if q in _PAD_FUNCTIONS:
        arg = argument(node, "pad", 1)
        if arg is not None and type(arg.value) in (cst.List, cst.Tuple):
            for element in arg.value.elements:
                if type(element) is cst.Element:
                    take("an amount of `pad`'s `pad`", element.value)
    return found


def _no_tensor_reaches(analysis, value: cst.BaseExpression) -> bool:
    """Every name of `value` that is a tensor somewhere holds no tensor where `value` reads it: each binding that
    reaches the read (`KindInference.reaching_bindings`) assigns a value not known to be one (what such a value
    alone makes is not taken for a device tensor either)."""
    names = [n for n in _walk_names(value) if analysis.is_tensor(n)]
    if not names:
        return False
    for name in names:
        reaching = analysis.kinds.reaching_bindings(name)
        if not reaching or any(b.kind != "assign" or b.index is not None or b.value is None or
                               analysis.kind(b.value) is Kind.TENSOR for b in reaching):
            return False
    return True


def _walk_names(node: cst.CSTNode):
    if type(node) is cst.Name:
        yield node
        return
    if type(node) in (cst.BinaryOperation, cst.UnaryOperation):
        for child in node.children:
            yield from _walk_names(child)


def _size_functions() -> dict:
    from gpulint.analysis.project import SIZE_FUNCTIONS  # one table for the loop's reads and the helpers'

    return SIZE_FUNCTIONS


_SEQUENCES = (cst.List, cst.Tuple, cst.ListComp)


def _compared_one_by_one(analysis, container: cst.BaseExpression) -> bool:
    """`x in container` tests `x == element` with `bool()` element by element (a list, a tuple, a name bound
    only to those), or asks a tensor's `__contains__`; a value of unknown kind is taken to be one of them, never
    a set or dict literal (those hash)."""
    if type(container) in _SEQUENCES:
        return True
    if type(container) in (cst.Dict, cst.Set, cst.DictComp, cst.SetComp):
        return False
    if type(container) is cst.Name and _string_keyed(analysis, container):
        return False  # `x not in stats` where the function reads `stats['loss']`: a mapping, hashed
    kind = analysis.kind(container)
    if kind in (Kind.TENSOR, Kind.UNKNOWN):
        return True
    if type(container) is cst.Name:
        bindings = analysis.index.visible_bindings(container)
        return bool(bindings) and all(b.kind == "assign" and b.index is None and type(b.value) in _SEQUENCES
                                      for b in bindings)
    return False


def _key_of_a_mapping(analysis, value: cst.BaseExpression) -> bool:
    """`for key in batch: assert key not in end_points`, where the scope reads `batch['point_clouds']`: iterating
    a mapping yields its keys (strings here), never a tensor of its values."""
    if type(value) is not cst.Name:
        return False
    for parent in analysis.index.ancestors(value):  # the nearest loop binding the name is the one it iterates
        if type(parent) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        if type(parent) is cst.For and type(parent.target) is cst.Name and parent.target.value == value.value:
            return type(parent.iter) is cst.Name and _string_keyed(analysis, parent.iter)
    return False


def _string_keyed(analysis, name: cst.Name) -> bool:
    """The scope `name` stands in also subscripts it with a string literal (`end_points['objectness_scores']`,
    `batch['image'] = ...`): a mapping (a tensor takes no string index), whose `in` hashes the key."""
    return name.value in analysis.fact(_string_keyed_names).get(id(analysis.index.enclosing_scope(name)), ())


def _string_keyed_names(analysis) -> dict:
    """Fact provider: id of a scope -> the names it subscripts with a string literal (one pass over the module)."""
    from gpulint.analysis.node_types import of_types

    found: dict = {}
    for node in of_types(analysis.index, cst.Subscript):
        if type(node.value) is cst.Name and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index \
                and type(node.slice[0].slice.value) is cst.SimpleString:
            found.setdefault(id(analysis.index.enclosing_scope(node)), set()).add(node.value.value)
    return found


# Calls that hand back a Python list (of strings or numbers, never tensors): what a label table is read with.
_LIST_CALLS = frozenset({"list", "sorted"})


def python_sequence(analysis, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """`expr` is a Python list or tuple (never a tensor, an array or a dict): a literal, a list comprehension,
    `list(...)`/`sorted(...)`/`f.readlines()`/`text.split()`, a name bound only to those, or a `self.<attr>`
    every store of which in the enclosing class is one of those (`self.label_name = [l.rstrip() for l in f]`)."""
    if depth > 3:
        return False
    if type(expr) in _SEQUENCES:
        return True
    if type(expr) is cst.Call:
        func = expr.func
        if type(func) is cst.Name:
            return func.value in _LIST_CALLS and not analysis.index.visible_bindings(func)
        return type(func) is cst.Attribute and func.attr.value in ("readlines", "split", "splitlines")
    if type(expr) is cst.Name:
        bindings = analysis.index.visible_bindings(expr)
        return bool(bindings) and all(b.kind == "assign" and b.index is None and b.value is not None
                                      and b.value is not expr and python_sequence(analysis, b.value, depth + 1)
                                      for b in bindings)
    if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
        cls = analysis.index.enclosing_class(expr)
        if cls is None:
            return False
        stores = analysis.fact(_self_stores).get((id(cls), expr.attr.value))
        return bool(stores) and all(v is not None and python_sequence(analysis, v, depth + 1) for v in stores)
    return False


def _self_stores(analysis) -> dict:
    """(id of the class, attribute) -> the values its methods assign to `self.<attribute>` (plain `=` of one
    target); an augmented or annotated store, or an element of a tuple target, records None (unknown). One pass
    per module."""
    from gpulint.analysis.node_types import of_types

    stores: dict = {}
    for node in of_types(analysis.index, cst.Assign, cst.AugAssign, cst.AnnAssign):
        targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
        for target in targets:
            for t in (target.elements if type(target) in (cst.Tuple, cst.List) else ()):
                t = t.value
                if type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self":
                    cls = analysis.index.enclosing_class(node)
                    if cls is not None:
                        stores.setdefault((id(cls), t.attr.value), []).append(None)
            if type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
                cls = analysis.index.enclosing_class(node)
                if cls is not None:
                    value = node.value if type(node) is cst.Assign else None
                    stores.setdefault((id(cls), target.attr.value), []).append(value)
    return stores
