"""GPU203's second shape: a tensor built on the host by a torch factory in a hot loop, bound to a name, and copied
to the accelerator later in the same iteration (`t = torch.randint(...)` ... `model(x, t.to(device))`), and a host
table defined before the loop that such a tensor indexes, the rows copied each step (`table[t].to(device)`).

What it needs to decide, for one name: where it is bound (one binding, in the body of the hot loop that copies
it), and what every use of it does. A use that is neither a copy to the accelerator nor an index into a table
whose rows are copied (or that lives on the device) is a use on the host: then the tensor belongs where it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from gpulint.analysis import Kind
from gpulint.analysis.data import _FACTORIES, _SAME_ON_DEVICE
from gpulint.analysis.data_facts import ACCELERATOR, data_facts, keyword
from gpulint.syntax import argument, positional, statement_of

# Factories whose device result equals the host result bit for bit whatever the arguments: constants.
# (`arange`/`linspace` of floats may round differently in a device kernel; random ones draw other numbers.)
EXACT_ON_DEVICE = {"zeros", "ones", "full", "eye", "zeros_like", "ones_like", "full_like"}


def exact_on_device(rule, factory: cst.Call) -> bool:
    """The factory computes bit-identical values on an accelerator: a constant, or `arange` of integer literals."""
    name = rule.analysis.qualified(factory.func).split(".")[1]
    if name in EXACT_ON_DEVICE:
        return True
    return name == "arange" and keyword(factory, "dtype") is None and bool(factory.args) and \
        all(a.keyword is None and not a.star and type(a.value) is cst.Integer for a in factory.args)


@dataclass
class Uses:
    """What the uses of one name do: `copies` (calls `.to(<accelerator>)`/`.cuda()`, maybe through methods that
    compute the same values on either device), `tables` (`table[name]`: the name indexes a table), `rows`
    (`name[...]`: the name is a table indexed); `host` is True when some use is none of these."""

    copies: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    host: bool = False
    cpu_path: bool = False  # some use is on the path taken without a GPU (`else:` of `if x.is_cuda:`)
    writes: list = field(default_factory=list)  # `name[...] = <constant>`: filled on the host (the rule's
    # `_constant_fill` decides; any other write is a host use)


def under_cuda_test(rule, node: cst.CSTNode) -> bool:
    """`node` runs only where a GPU is (`if x.is_cuda: I = I.cuda()`): building the tensor on the device
    unconditionally would break the CPU path, so no fix."""
    for parent in rule.analysis.index.ancestors(node):
        if type(parent) is cst.If and _cuda_test(rule, parent.test):
            return True
        if type(parent) is cst.FunctionDef:
            return False
    return False


def strip_same_on_device(rule, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` without trailing `.float()`, `.view(...)`, ... calls that compute the same values on any device, and
    without `Variable(...)` (old PyTorch's wrapper: the same tensor)."""
    while True:
        if type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
                expr.func.attr.value in _SAME_ON_DEVICE and rule.analysis.is_tensor(expr.func.value):
            expr = expr.func.value
        elif type(expr) is cst.Call and len(expr.args) == 1 and expr.args[0].keyword is None and \
                not expr.args[0].star and rule.analysis.qualified(expr.func) in _VARIABLE:
            expr = expr.args[0].value
        else:
            return expr


def copy_above(rule, expr: cst.BaseExpression) -> Optional[cst.Call]:
    """The copy to an accelerator that `expr` flows into through same-on-device methods, if any
    (`expr.long().to(device)` gives the `.to` call)."""
    analysis = rule.analysis
    node = expr
    while True:
        attr = analysis.parent(node)
        call = analysis.parent(attr) if type(attr) is cst.Attribute else None
        if type(call) is not cst.Call or call.func is not attr or attr.value is not node:
            return None
        if attr.attr.value in _SAME_ON_DEVICE:
            node = call
            continue
        if data_facts(analysis).copy_target(call) == ACCELERATOR or to_a_device_tensor(analysis, call):
            return call
        return None


def to_a_device_tensor(analysis, call: cst.Call) -> bool:
    """`t.to(x1)`: the copy to the device (and dtype) of a tensor not known to be on the host, in code that runs
    every step of a GPU loop (the rule's question): the batch or a model's output there, SiT's
    `t = th.rand((B,))` then `t = t.to(x1)` in the sampler of its transport's `training_losses`."""
    if type(call.func) is not cst.Attribute or call.func.attr.value != "to" or len(call.args) != 1 or \
            call.args[0].keyword is not None or call.args[0].star:
        return False
    other = call.args[0].value
    kinds = analysis.kinds
    if type(other) is not cst.Name or kinds.on_host(other):
        return False
    return kinds.is_tensor(other) or _read_as_tensor_here(analysis, other)


def _read_as_tensor_here(analysis, name: cst.Name) -> bool:
    """Some read of `name` in its function is a tensor's: `name.shape`, `name.size(...)`, `name.device`, or the
    first argument of a `torch.*_like` factory (`x0 = th.randn_like(x1)`); a dtype or a device has none."""
    fn = analysis.index.enclosing_function(name)
    if fn is None:
        return False
    for other in analysis.index.names(name.value):
        if not analysis.index.is_ancestor_or_self(fn, other):
            continue
        parent = analysis.parent(other)
        if type(parent) is cst.Attribute and parent.value is other and parent.attr.value in ("shape", "size", "device"):
            return True
        if type(parent) is cst.Arg and parent.keyword is None:
            call = analysis.parent(parent)
            q = analysis.qualified(call.func) if type(call) is cst.Call else None
            if q and q.startswith("torch.") and q.endswith("_like") and call.args and call.args[0] is parent:
                return True
    return False


def single_assignment(rule, name: cst.Name):
    """The one `name = value` binding `name` refers to, or None (several bindings, a parameter, a loop target)."""
    bindings = data_facts(rule.analysis).bindings(name)
    if len(bindings) > 1:  # `I = I.cuda()`: a rebinding read by its own statement, outside loops, comes after
        bindings = [b for b in bindings if not _rebinds_itself(rule, b, name)]
    if len(bindings) > 1:  # `noise = torch.randn(...)` earlier in the read's block: the one binding it sees
        dominating = _dominating_assignment(rule, name, bindings)
        bindings = [b for b in bindings if b.source is dominating] if dominating is not None else bindings
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
            bindings[0].value is None or not isinstance(bindings[0].source, cst.Assign) or \
            len(bindings[0].source.targets) != 1:
        return None
    return bindings[0]


def _dominating_assignment(rule, name: cst.Name, bindings: list) -> Optional[cst.Assign]:
    """The last outright `name = ...` before the statement holding the read `name`, in its block or, out of the
    body of an `if`, in the block holding that `if` (up through nested `if`s): every path to the read passes
    it, so the read sees that binding alone (a step loop that draws `noise` twice, once per network). None when
    a statement in between may bind the name otherwise, or the search leaves a loop or a function first."""
    analysis = rule.analysis
    index = analysis.index
    statement = next((a for a in (name, *index.ancestors(name))
                      if type(analysis.parent(a)) in (cst.IndentedBlock, cst.Module)), None)
    while statement is not None:
        block = analysis.parent(statement)
        if type(block) not in (cst.IndentedBlock, cst.Module):
            return None  # an `elif` (the `if` of another's `orelse`): the chain of tests decides, not followed
        body = list(block.body)
        at = next(i for i, s in enumerate(body) if s is statement)
        for earlier in reversed(body[:at]):
            if _assigns(earlier, name.value):
                return next(s for s in earlier.body if type(s) is cst.Assign and any(
                    type(t.target) is cst.Name and t.target.value == name.value for t in s.targets))
            if any(b.source is not None and index.is_ancestor_or_self(earlier, b.source) for b in bindings):
                return None  # an `if`, a loop or `x, name = ...` before it binds the name too
        branch = analysis.parent(block)
        if type(branch) is not cst.If or block is not branch.body:
            return None
        statement = branch
    return None


def _unseen(rule, binding, name: cst.Name) -> bool:
    """The read `name` cannot see `binding`: `_rebinds_itself`, or, in a loop's block, `binding` comes at or after
    the read's statement and a plain assignment of the name earlier in the block comes before it
    (`t = torch.rand(B)`, `print(t.tolist())`, `t = t.to(device)`: the print sees the draw of its iteration)."""
    if _rebinds_itself(rule, binding, name):
        return True
    parent = rule.analysis.parent
    line = parent(binding.source) if binding.source is not None else None
    block = parent(line) if type(line) is cst.SimpleStatementLine else None
    if type(block) is not cst.IndentedBlock:
        return False
    statement = next((a for a in (name, *rule.analysis.index.ancestors(name)) if parent(a) is block), None)
    if statement is None:
        return False
    body = list(block.body)
    at = next(i for i, s in enumerate(body) if s is statement)
    return at <= next(i for i, s in enumerate(body) if s is line) and \
        any(_assigns(s, name.value) for s in body[:at])


def _rebinds_itself(rule, binding, name: cst.Name) -> bool:
    """`binding` is the statement reading `name` (`I = I.cuda()`), outside any loop of its function: the read
    sees the binding before it, not this one."""
    index = rule.analysis.index
    source = binding.source
    if source is None or not index.is_ancestor_or_self(source, name):
        return False
    for ancestor in index.ancestors(source):
        if type(ancestor) in (cst.For, cst.While):
            # in a loop the read may see the last iteration's rebinding, unless an earlier statement of the
            # same block binds the name first (`t = torch.rand(B)` then `t = t.to(x)`, every iteration)
            return _bound_earlier_in_block(rule, source, name.value)
        if type(ancestor) in (cst.FunctionDef, cst.Module):
            return True
    return True


def _bound_earlier_in_block(rule, source: cst.CSTNode, name: str) -> bool:
    """A statement before `source`'s, in the same block, assigns `name` outright (`name = ...`); or, where
    `source` is in the body of an `if` (`if use_cuda: noise = noise.cuda()`), a statement before that `if` in
    the block holding it (up through nested `if`s)."""
    analysis = rule.analysis
    line = analysis.parent(source)
    if type(line) is not cst.SimpleStatementLine:
        return False
    while True:
        block = analysis.parent(line)
        if type(block) not in (cst.IndentedBlock, cst.Module):
            return False
        for stmt in block.body:
            if stmt is line:
                break
            if _assigns(stmt, name):
                return True
        branch = analysis.parent(block)
        if type(branch) is not cst.If or block is not branch.body:
            return False
        line = branch  # the `if` statement itself, in its own block


def _assigns(stmt: cst.CSTNode, name: str) -> bool:
    """`stmt` is a statement line assigning `name` outright (`name = ...`)."""
    return type(stmt) is cst.SimpleStatementLine and any(
        type(s) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name for t in s.targets)
        for s in stmt.body)


def _cuda_test(rule, test: cst.BaseExpression) -> bool:
    """`x.is_cuda` or `torch.cuda.is_available()`, or a name every binding of which is one of these (`use_cuda =
    torch.cuda.is_available()`): true where the GPU runs."""
    if type(test) is cst.Attribute and test.attr.value == "is_cuda":
        return True
    if type(test) is cst.Name:
        bindings = data_facts(rule.analysis).bindings(test)
        return bool(bindings) and all(b.kind == "assign" and b.index is None and b.value is not None and
                                      type(b.value) is not cst.Name and _cuda_test(rule, b.value) for b in bindings)
    return type(test) is cst.Call and not test.args and rule.analysis.qualified(test.func) == "torch.cuda.is_available"


def _cpu_path(rule, name: cst.Name) -> bool:
    """`name` is read only where no GPU runs: on the `else:` of `if x.is_cuda:`, or after an
    `if x.is_cuda: return ...` in the same block (`if y.is_cuda: return t.cuda()` then `return t`)."""
    analysis = rule.analysis
    child: cst.CSTNode = name
    for parent in analysis.index.ancestors(name):
        if type(parent) in (cst.If, cst.IfExp) and _cuda_test(rule, parent.test) and child is parent.orelse:
            return True  # `else:` of `if use_cuda:`, or `x.cuda() if use_cuda else x`
        if type(parent) in (cst.IndentedBlock, cst.Module):
            body = list(parent.body)
            position = next((i for i, s in enumerate(body) if s is child), None)
            for stmt in body[:position] if position is not None else ():
                if type(stmt) is cst.If and _cuda_test(rule, stmt.test) and stmt.orelse is None and \
                        type(stmt.body) is cst.IndentedBlock and stmt.body.body and \
                        type(stmt.body.body[-1]) is cst.SimpleStatementLine and \
                        type(stmt.body.body[-1].body[-1]) in (cst.Return, cst.Raise):
                    return True
        if type(parent) in (cst.FunctionDef, cst.For, cst.While):
            return False
        child = parent
    return False


def uses_of(rule, binding) -> Uses:
    """Classify every read of the name `binding` binds (the same binding, not a namesake elsewhere)."""
    analysis = rule.analysis
    uses = Uses()
    target = binding.source.targets[0].target
    for name in analysis.index.names(binding.name):
        if name is target or type(analysis.parent(name)) is cst.AssignTarget:
            continue  # a target binds, it does not read (`I = I.cuda()`)
        bindings = data_facts(analysis).bindings(name)
        sources = [b.source for b in bindings]
        if len(sources) > 1:
            sources = [b.source for b in bindings if not _unseen(rule, b, name)]
        if len(sources) > 1:
            dominating = _dominating_assignment(rule, name, bindings)
            sources = [dominating] if dominating is not None else sources
        if sources != [binding.source]:
            continue
        copy = copy_above(rule, name)
        if copy is not None:
            uses.copies.append(copy)
            continue
        table = _table_of(rule, name)
        if table is not None:
            uses.tables.append(table)
            continue
        subscript = analysis.parent(name)
        if type(subscript) is cst.Subscript and subscript.value is name:
            written = _written_value(analysis, subscript)
            if written is None:
                uses.rows.append(subscript)
            elif getattr(rule, "_constant_fill", None) is not None and rule._constant_fill(written):
                uses.writes.append(subscript)
            else:
                uses.host = True  # data written into it on the host: a host buffer the data needs
            continue
        if _cpu_path(rule, name):
            uses.cpu_path = True
            continue  # the path taken only without a GPU: there the tensor stays on the host, as it should
        uses.host = True
    return uses


def _written_value(analysis, subscript: cst.Subscript) -> Optional[cst.BaseExpression]:
    """The value `subscript[...] = value` (or `+=`) writes, when `subscript` is the assignment's target."""
    parent = analysis.parent(subscript)
    if type(parent) is cst.AssignTarget:
        statement = analysis.parent(parent)
        return statement.value if type(statement) is cst.Assign else None
    if type(parent) is cst.AugAssign and parent.target is subscript:
        return parent.value
    return None


def _table_of(rule, index: cst.Name) -> Optional[cst.Subscript]:
    """`table[index]`, `index` the whole subscript, `table` a name."""
    analysis = rule.analysis
    wrapper = analysis.parent(index)
    element = analysis.parent(wrapper) if type(wrapper) is cst.Index else None
    subscript = analysis.parent(element) if type(element) is cst.SubscriptElement else None
    if type(subscript) is cst.Subscript and len(subscript.slice) == 1 and \
            type(subscript.value) is cst.Name:
        return subscript
    return None


def factory_of(rule, binding, depth: int = 0) -> Optional[cst.Call]:
    """The torch factory call (without `device=`) the binding's value starts from; through a rebinding of the
    same name by a method that keeps the values where they are (`alpha = torch.rand(B, 1)`, then `alpha =
    alpha.expand(x.size())`: the draw the second binding reads, the assignment just before it)."""
    expr = strip_same_on_device(rule, _scaled(rule, binding.value))
    if type(expr) is cst.Name and expr.value == binding.name and depth < 3:
        bindings = data_facts(rule.analysis).bindings(expr)
        earlier = _dominating_assignment(rule, expr, bindings) if len(bindings) > 1 else None
        previous = next((b for b in bindings if b.source is earlier), None) if earlier is not None else None
        if previous is not None and previous.source is not binding.source and previous.kind == "assign" and \
                previous.index is None and previous.value is not None:
            return factory_of(rule, previous, depth + 1)
        return None
    while type(expr) is cst.Subscript and type(expr.value) is cst.Call:
        expr = strip_same_on_device(rule, expr.value)  # `torch.eye(d)[None, :, :]`: rows of a host tensor stay there
    if type(expr) is cst.Call and rule.analysis.qualified(expr.func) in _VARIABLE and len(expr.args) == 1:
        expr = strip_same_on_device(rule, expr.args[0].value)  # `Variable(t)`: the same tensor (old PyTorch)
    for _ in range(4):  # `torch.triu(torch.ones(shape), diagonal=1)`: computed where the factory built it
        if type(expr) is not cst.Call or rule.analysis.qualified(expr.func) not in _SAME_DEVICE_FUNCTIONS or \
                not expr.args or expr.args[0].keyword is not None or expr.args[0].star or \
                any(a.keyword is not None and a.keyword.value in ("out", "device") for a in expr.args):
            break
        expr = strip_same_on_device(rule, expr.args[0].value)
    if type(expr) is not cst.Call:
        return None
    q = rule.analysis.qualified(expr.func)
    if q == "torch.from_numpy" and len(expr.args) == 1 and _numpy_constant(rule, expr.args[0].value):
        return expr  # an identity from `np.eye(k)`: a constant built on the host, not data
    if q is None or not q.startswith("torch.") or q.count(".") != 1 or q.split(".")[1] not in _FACTORIES:
        return None
    return None if keyword(expr, "device") is not None else expr


def _scaled(rule, expr: cst.BaseExpression) -> cst.BaseExpression:
    """The tensor operand of host arithmetic by values that are no tensors: `th.rand((B,)) * (t1 - t0) + t0`
    (SiT's timestep draw) gives `th.rand((B,))`, computed on the host where the factory built it."""
    for _ in range(4):
        if type(expr) is not cst.BinaryOperation or \
                type(expr.operator) not in (cst.Add, cst.Subtract, cst.Multiply, cst.Divide):
            break
        left, right = expr.left, expr.right
        if _scalar(rule, right) and not _scalar(rule, left):
            expr = left
        elif _scalar(rule, left) and not _scalar(rule, right):
            expr = right
        else:
            break
    return expr


def scaled_factory(rule, binding) -> bool:
    """The binding's value is such arithmetic over the factory (no `device=` fix: the other operands are not
    looked into further)."""
    return _scaled(rule, binding.value) is not binding.value


def _scalar(rule, expr: cst.BaseExpression) -> bool:
    """A Python number, or arithmetic of names and attributes the kinds do not call tensors or arrays."""
    if type(expr) in (cst.Integer, cst.Float):
        return True
    if type(expr) is cst.UnaryOperation:
        return _scalar(rule, expr.expression)
    if type(expr) is cst.BinaryOperation:
        return _scalar(rule, expr.left) and _scalar(rule, expr.right)
    if type(expr) in (cst.Name, cst.Attribute):
        return rule.analysis.kind(expr) not in (Kind.TENSOR, Kind.NUMPY, Kind.MODULE, Kind.OTHER) and \
            not (type(expr) is cst.Name and expr.value in ("True", "False", "None"))
    return False


# torch functions of one tensor whose result lives where that tensor does
_SAME_DEVICE_FUNCTIONS = frozenset(f"torch.{f}" for f in (
    "triu", "tril", "flip", "roll", "diag", "diag_embed", "t", "transpose", "unsqueeze", "squeeze", "reshape",
    "logical_not", "cumsum", "abs", "neg"))
_VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
_NUMPY_CONSTANTS = frozenset(f"numpy.{f}" for f in ("eye", "identity", "zeros", "ones", "full", "arange", "array"))
_NUMPY_SAME = frozenset({"astype", "flatten", "reshape", "ravel", "copy"})


def _numpy_constant(rule, expr: cst.BaseExpression) -> bool:
    """A numpy array of constants: `np.eye(k)`, `np.array([1, 0, 0, 1])` (literal numbers only), through
    `.astype(...)`/`.flatten()`/`.reshape(...)`: nothing read from data. Also an array computed from Python sizes
    alone (`numpy_of_sizes`: few-shot episode labels `np.repeat(range(n_way), n_query)`)."""
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _NUMPY_SAME:
        expr = expr.func.value
    if type(expr) is not cst.Call:
        return False
    q = rule.analysis.qualified(expr.func)
    if q in _NUMPY_OF_SIZES:
        return numpy_of_sizes(rule.analysis, expr)
    if q not in _NUMPY_CONSTANTS or not expr.args:
        return False
    if q == "numpy.array":
        data = expr.args[0].value
        return type(data) in (cst.List, cst.Tuple) and bool(data.elements) and all(
            type(e) is cst.Element and type(e.value) in (cst.Integer, cst.Float) for e in data.elements)
    return True


# numpy functions that build an array from sizes (and, for `repeat`/`tile`, from a sequence given first)
_NUMPY_OF_SIZES = frozenset(f"numpy.{f}" for f in ("repeat", "tile", "arange", "zeros", "ones", "full", "eye",
                                                   "identity"))
_SIZE_KINDS = frozenset({Kind.NUMBER, Kind.OTHER, Kind.UNKNOWN})  # not a tensor, an array, a loader...


def numpy_of_sizes(analysis, call: cst.Call, depth: int = 0) -> bool:
    """`call` builds a numpy array from Python sizes only: `np.repeat(range(n_way), n_query)`,
    `np.tile(np.arange(k), b)`, `np.arange(n)`, `np.zeros((n, k))` whose arguments are integer literals, names or
    attributes that hold no tensor or array (`self.n_way`), `len(...)`, or arithmetic over these; the sequence that
    `repeat`/`tile` repeats is a `range(...)`, a list of number literals or another such array. Labels rebuilt
    each episode from the episode's sizes, not data: the same values every call with the same sizes."""
    q = analysis.qualified(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
    if q not in _NUMPY_OF_SIZES or not call.args or depth > 3 or \
            any(a.star or a.keyword is not None and a.keyword.value not in ("dtype", "axis") for a in call.args):
        return False
    args = [a.value for a in call.args if a.keyword is None]
    if q in ("numpy.repeat", "numpy.tile"):
        if not args or not _sequence_of_sizes(analysis, args[0], depth):
            return False
        args = args[1:]
    return all(_size(analysis, a, depth) for a in args)


def _sequence_of_sizes(analysis, expr: cst.BaseExpression, depth: int) -> bool:
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "range" and \
            not analysis.index.visible_bindings(expr.func):
        return all(not a.star and a.keyword is None and _size(analysis, a.value, depth) for a in expr.args)
    if type(expr) in (cst.List, cst.Tuple):
        return bool(expr.elements) and all(
            type(e) is cst.Element and type(e.value) in (cst.Integer, cst.Float) for e in expr.elements)
    return type(expr) is cst.Call and numpy_of_sizes(analysis, expr, depth + 1)


def _size(analysis, expr: cst.BaseExpression, depth: int) -> bool:
    """A Python size: an int literal, a name or attribute of no tensor/array kind, `len(...)`, a tuple of sizes,
    arithmetic over these."""
    if type(expr) is cst.Integer:
        return True
    if type(expr) in (cst.Tuple, cst.List):
        return bool(expr.elements) and all(type(e) is cst.Element and _size(analysis, e.value, depth)
                                           for e in expr.elements)
    if type(expr) is cst.BinaryOperation:
        return _size(analysis, expr.left, depth) and _size(analysis, expr.right, depth)
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "len" and \
            len(expr.args) == 1 and not analysis.index.visible_bindings(expr.func):
        return True
    if type(expr) in (cst.Name, cst.Attribute):
        if type(expr) is cst.Name and expr.value in ("True", "False", "None"):
            return False
        return analysis.kind(expr) in _SIZE_KINDS
    return False


def built_this_step(rule, name: cst.Name, at: cst.CSTNode):
    """(binding, factory) when `name` is bound once, to a torch factory of the host, every iteration of the hot
    loop that also runs `at`, before it."""
    binding = single_assignment(rule, name)
    factory = factory_of(rule, binding) if binding is not None else None
    if factory is None:
        return None
    q = rule.analysis.qualified(factory.func) or ""
    if q.endswith("_like"):
        first = next((a.value for a in factory.args if a.keyword is None and not a.star), None)
        if first is None or not rule.analysis.kinds.on_host(first):
            return None  # `torch.zeros_like(Q)`: built where `Q` lives, not known to be the host
    where = rule.where(factory)
    if where is None or not where.every_iteration:
        return None
    index = rule.analysis.index
    if index.order(binding.source) > index.order(at):
        return None
    if where.loop is not None and index.is_ancestor_or_self(where.loop.body, at):
        return binding, factory
    if _same_step_function(rule, binding.source, at, where) and not (
            hasattr(rule, "_of_host_values") and rule._of_host_values(factory)):
        return binding, factory  # a constant built in a per-step helper (host data there is GPU410's: a batch)
    return None


def _same_step_function(rule, source: cst.CSTNode, at: cst.CSTNode, where) -> bool:
    """`source` and `at` are in one function that runs every step (a helper the loop calls, a model's
    `forward` or what it calls: `I = torch.eye(d)` then `I.cuda()` in a loss helper), the function itself not
    holding the loop: one call builds the tensor and copies it, and the loop calls it every step."""
    index = rule.analysis.index
    fn = next((a for a in index.ancestors(source) if type(a) is cst.FunctionDef), None)
    if fn is None or not index.is_ancestor_or_self(fn, at) or \
            next((a for a in index.ancestors(at) if type(a) is cst.FunctionDef), None) is not fn:
        return False
    return where.loop is None or not index.is_ancestor_or_self(fn, where.loop)


def host_table(rule, subscript: cst.Subscript, copy: cst.Call):
    """The binding of `subscript`'s table when it is a host tensor bound once, before the loop that runs `copy`."""
    analysis = rule.analysis
    binding = single_assignment(rule, subscript.value)
    where = rule.where(copy)
    if binding is None or where is None or where.loop is None:
        return None
    if analysis.index.is_ancestor_or_self(where.loop, binding.source) or \
            analysis.index.order(binding.source) > analysis.index.order(where.loop):
        return None
    value = binding.value
    q = analysis.qualified(value.func) if type(value) is cst.Call else None
    torch_call = q is not None and q.startswith("torch.")
    if not (torch_call or analysis.is_tensor(value)) or data_facts(analysis).on_device(value):
        return None
    return binding


def copy_device(copy: cst.Call) -> Optional[cst.BaseExpression]:
    """The device a `.to(device, ...)`/`.cuda(device)` copy goes to, as written (`"cuda"` for a bare `.cuda()`)."""
    target = argument(copy, "device", 0)
    if target is not None:
        return target.value
    return cst.SimpleString('"cuda"') if copy.func.attr.value == "cuda" else None  # type: ignore[union-attr]


def same_device(rule, copies: list, device: cst.BaseExpression) -> bool:
    """Every copy goes to the device spelt as `device`."""
    code = rule.analysis.code
    spelt = code(device)
    return all(target is not None and code(target) == spelt for target in map(copy_device, copies))


def defined_before(rule, device: cst.BaseExpression, statement: cst.CSTNode) -> bool:
    """`device` can be evaluated at `statement`: a literal, or a name bound only by earlier statements of the
    same scope (so moving it there reads the same device)."""
    if type(device) in (cst.SimpleString, cst.Integer):
        return True
    if type(device) is not cst.Name:
        return False
    index = rule.analysis.index
    bindings = data_facts(rule.analysis).bindings(device)
    scope = index.enclosing_scope(statement)
    return bool(bindings) and all(
        b.scope is scope and b.source is not None and index.order(b.source) < index.order(statement) and
        not any(type(a) in (cst.For, cst.While) for a in index.ancestors(b.source))
        for b in bindings)


def moved_table(rule, binding, device: cst.BaseExpression) -> Optional[dict]:
    """The changes that move a host table to `device` once where it is defined and drop the copies of its rows,
    when every use of the table is `table[...]` copied to that device; else None."""
    analysis = rule.analysis
    uses = uses_of(rule, binding)
    if uses.host or uses.copies or uses.tables or uses.writes or not uses.rows:
        return None  # the table itself is read on the host, or copied whole: moving it changes more than rows
    copies = [copy_above(rule, rows) for rows in uses.rows]
    if any(c is None for c in copies) or not same_device(rule, copies, device) or \
            not defined_before(rule, device, statement_of(binding.source, analysis.parent)):
        return None
    changes = {}
    for copy in copies:
        stripped = without_copy(copy)
        if stripped is None:
            return None
        changes[copy] = stripped
    value = binding.value
    receiver = value if type(value) in (cst.Call, cst.Name, cst.Attribute, cst.Subscript) else \
        value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    changes[value] = cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("to")),
                              args=[cst.Arg(device.deep_clone())])
    return changes


def without_copy(copy: cst.Call) -> Optional[cst.BaseExpression]:
    """`x.to(device)` as `x`, `x.to(device, dtype)` as `x.to(dtype)`, `x.cuda()` as `x`; None for other forms."""
    method = copy.func.attr.value  # type: ignore[union-attr]
    allowed = {"device", "non_blocking"} | ({"dtype"} if method == "to" else set())
    if any(a.keyword is not None and a.keyword.value not in allowed for a in copy.args):
        return None
    args = positional(copy)
    if method == "cuda" and len(args) > 1 or method == "to" and (argument(copy, "device", 0) is None or len(args) > 2):
        return None
    receiver = copy.func.value  # type: ignore[union-attr]
    dtype = argument(copy, "dtype", 1) if method == "to" else None
    if dtype is not None:
        receiver = cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("to")),
                            args=[dtype.with_changes(comma=cst.MaybeSentinel.DEFAULT)])
    return receiver.with_changes(lpar=copy.lpar, rpar=copy.rpar)
