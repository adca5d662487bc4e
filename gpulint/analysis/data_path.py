"""Module-wide facts about the data path and the model's shape, for the throughput rules (GPU409-GPU413).

Which map-style dataset classes do per-sample work in `__getitem__`, whether the script has a
`if __name__ == "__main__":` guard (DataLoader workers on spawn platforms need one), where a statement can go
after the imports, which convolution layers the module builds, and whether it already chooses cuDNN's
algorithm policy. Built once per module through `analysis.fact(data_path_facts)`.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

import libcst as cst

from gpulint.analysis import ModuleAnalysis
from gpulint.analysis.data_facts import _walk
from gpulint.analysis.node_types import of_types
from gpulint.syntax import string_value

_CONVS = {f"torch.nn.{kind}{n}d" for kind in ("Conv", "ConvTranspose", "LazyConv") for n in (1, 2, 3)}
# Calls in `__getitem__` that are bookkeeping, not per-sample work.
_TRIVIAL_CALLS = {"int", "float", "len", "tuple", "list", "str", "bool", "dict", "super", "isinstance", "range"}
# Setting any of these is a decision about cuDNN's algorithm choice: GPU413 stays silent.
_CUDNN_CHOICE = re.compile(r"cudnn\.(benchmark|deterministic)$|\buse_deterministic_algorithms$")
_CUDNN_NAMES = {"benchmark", "deterministic", "use_deterministic_algorithms"}
_ITERABLE_DATASETS = {"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"}
_MAP_DATASETS = {"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"}


class TensorColumns(NamedTuple):
    """What a tensor-row dataset class returns per index: `keys` (dict keys, or all None for a tuple), the
    attribute of each, and which of them `__len__` counts."""
    keys: tuple
    attrs: tuple
    counted: int

    @property
    def as_dict(self) -> bool:
        return self.keys[0] is not None


class DataPathFacts:
    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.analysis = analysis
        body = analysis.module.body
        self.main_guard = any(_is_main_guard(stmt) for stmt in body)
        self.import_anchor = _last_top_import(body)
        self.top_imports = {alias for stmt in body for alias in _imported_names(stmt)}
        self.conv_layers = [n for n in of_types(analysis.index, cst.Call)
                            if analysis.qualified(n.func) in _CONVS]
        self._work: dict[str, Optional[str]] = {}
        self._columns: dict[str, Optional[TensorColumns]] = {}
        self._device_items: dict[str, bool] = {}

    @property
    def chooses_cudnn_algorithms(self) -> bool:
        """The module sets `cudnn.benchmark`/`cudnn.deterministic` or asks for deterministic algorithms."""
        return any(n.attr.value in _CUDNN_NAMES and _CUDNN_CHOICE.search(self.analysis.code(n))
                   for n in of_types(self.analysis.index, cst.Attribute))

    @property
    def trains_in_a_loop(self) -> bool:
        """`.backward()` and `.step()` calls inside loops: the module is a training script, not a model
        definition or a profiling utility."""
        index = self.analysis.index
        found = {n.func.attr.value for n in of_types(index, cst.Call) if type(n.func) is cst.Attribute
                 and n.func.attr.value in ("backward", "step")
                 and any(type(a) in (cst.For, cst.While) for a in index.ancestors(n))}
        return found == {"backward", "step"}

    def imports(self, name: str) -> bool:
        """`import <name>` binds `name` at the top of the module."""
        return name in self.top_imports

    def per_sample_work(self, dataset_class: cst.ClassDef) -> Optional[str]:
        """What the map-style dataset class's `__getitem__` does per sample (a call it makes), else None."""
        key = dataset_class.name.value
        if key not in self._work:
            self._work[key] = self._compute_work(dataset_class)
        return self._work[key]

    def dataset_class(self, expr: Optional[cst.BaseExpression], depth: int = 0) -> Optional[cst.ClassDef]:
        """The class of this module that `expr` (a `MyDataset(...)` call, or a name bound to one) instantiates."""
        if expr is None or depth > 4:
            return None
        if type(expr) is cst.Call and type(expr.func) is cst.Name:
            classes = [n for n in of_types(self.analysis.index, cst.ClassDef) if n.name.value == expr.func.value]
            return classes[0] if len(classes) == 1 else None
        if type(expr) is cst.Name:
            values = [b.value for b in self.analysis.index.visible_bindings(expr) if b.kind == "assign"]
            found = [self.dataset_class(v, depth + 1) for v in values]
            if len(found) == 1:
                return found[0]
        return None

    def device_items(self, cls: Optional[cst.ClassDef]) -> bool:
        """The map-style dataset class's `__getitem__` hands back tensors it moved to an accelerator itself
        (`return seq.cuda()`, `return x.to(device), y`): its batches are CUDA tensors already. Pinning them raises
        and DataLoader workers cannot use CUDA after a fork, so GPU201 and GPU409 have nothing safe to ask."""
        if cls is None:
            return False
        key = cls.name.value
        if key not in self._device_items:
            self._device_items[key] = self._compute_device_items(cls)
        return self._device_items[key]

    def _compute_device_items(self, cls: cst.ClassDef) -> bool:
        from gpulint.analysis.data_facts import data_facts

        getitem = next((s for s in cls.body.body if type(s) is cst.FunctionDef
                        and s.name.value == "__getitem__"), None)
        if getitem is None:
            return False
        body = list(_walk(getitem.body))
        if not any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in ("cuda", "to")
                   for n in body):
            return False  # the items are moved by `__getitem__` itself, or they are not known to be on a device
        returned = [n.value for n in body if type(n) is cst.Return and n.value is not None]
        facts = data_facts(self.analysis)
        return bool(returned) and all(facts.on_device(value) for value in returned)

    def sample_draws(self, cls: cst.ClassDef) -> list[cst.CSTNode]:
        """Where the hot loops of this module draw batches of a `DataLoader` over an instance of the map-style
        dataset class `cls` (each loop's `next(...)` of the loader, or its first statement), so that `cls`'s
        `__getitem__` runs for every sample of every such draw; none when an instance is built from device data
        (`Dataset(x.cuda())`: what `__getitem__` then moves is on the device already)."""
        from gpulint.analysis.data import _dataset
        from gpulint.analysis.data_facts import data_facts
        from gpulint.analysis.loops import LoopRole

        facts = data_facts(self.analysis)
        for node in of_types(self.analysis.index, cst.Call):
            if type(node.func) is cst.Name and node.func.value == cls.name.value and \
                    any(facts.on_device(a.value) for a in node.args):  # type: ignore[attr-defined]
                return []
        nexts = facts._next_calls()
        draws: list[cst.CSTNode] = []
        for loop in of_types(self.analysis.index, cst.For, cst.While):
            loaders = facts.loop_loaders(loop)  # type: ignore[arg-type]
            if not any(self.dataset_class(_dataset(c)) is cls for c in loaders) or \
                    self.analysis.loops.role(loop) is not LoopRole.HOT:  # type: ignore[arg-type]
                continue
            drawn = [c for c in nexts.get(id(loop), ()) if facts._next_of(c)]
            if drawn:
                draws.extend(drawn)
            elif type(loop.body) is cst.IndentedBlock and loop.body.body:  # type: ignore[union-attr]
                draws.append(loop.body.body[0])  # type: ignore[union-attr]
        return draws

    def tensor_columns(self, cls: cst.ClassDef) -> Optional["TensorColumns"]:
        """The tensors a map-style dataset class of this module holds and returns row by row, when that is all its
        `__getitem__` does: `return self.x[i], self.y[i]` or `return {"ids": self.ids[i], ...}`, every attribute
        a host tensor built in `__init__` and nowhere else, `__len__` the length of one of them. Such a class is a
        `TensorDataset` by another name (GPU204); None for anything else."""
        key = cls.name.value
        if key not in self._columns:
            self._columns[key] = self._compute_columns(cls)
        return self._columns[key]

    def _compute_columns(self, cls: cst.ClassDef) -> Optional["TensorColumns"]:
        from gpulint.analysis.data_facts import data_facts
        from gpulint.analysis.kinds import Kind

        if not any(self.analysis.qualified(base.value) in _MAP_DATASETS for base in cls.bases):
            return None
        methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        getitem, length, init = (methods.get(n) for n in ("__getitem__", "__len__", "__init__"))
        if getitem is None or length is None or init is None or set(methods) - {"__init__", "__len__", "__getitem__"}:
            return None
        params = [p.name.value for p in getitem.params.params]
        returned = _only_return(getitem)
        if len(params) != 2 or returned is None:
            return None
        if isinstance(returned, cst.Tuple):
            keys, rows = [None] * len(returned.elements), [e.value for e in returned.elements]
            if any(isinstance(e, cst.StarredElement) for e in returned.elements):
                return None
        elif isinstance(returned, cst.Dict):
            keys = [string_value(e.key) if isinstance(e, cst.DictElement) else None for e in returned.elements]
            rows = [e.value for e in returned.elements if isinstance(e, cst.DictElement)]
            if None in keys or len(rows) != len(keys) or len(set(keys)) != len(keys):
                return None
        else:
            return None
        attrs = [_self_row(row, params) for row in rows]
        if not attrs or None in attrs:
            return None
        counted = _self_length(_only_return(length), params=[p.name.value for p in length.params.params])
        if counted not in attrs:
            return None
        assigned = {}
        for method in methods.values():
            for node in _walk(method.body):
                targets = []
                if isinstance(node, cst.Assign):
                    targets = [t.target for t in node.targets]
                elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                    targets = [node.target]
                for target in targets:
                    unpacked = isinstance(target, (cst.Tuple, cst.List))
                    for element in ([e.value for e in target.elements] if unpacked else [target]):
                        if isinstance(element, cst.Attribute) and isinstance(element.value, cst.Name) and \
                                element.value.value == "self":
                            if method is not init or not isinstance(node, cst.Assign) or len(targets) != 1 or \
                                    element is not target:
                                return None  # set twice, or outside __init__, or unpacked: not a plain column
                            assigned.setdefault(element.attr.value, []).append(node.value)
        facts = data_facts(self.analysis)
        for attr in set(attrs):
            values = assigned.get(attr)
            if not values or len(values) != 1 or self.analysis.kind(values[0]) is not Kind.TENSOR or \
                    facts.on_device(values[0]):
                return None
        return TensorColumns(tuple(keys), tuple(attrs), attrs.index(counted))

    def _compute_work(self, cls: cst.ClassDef) -> Optional[str]:
        if any(self.analysis.qualified(base.value) in _ITERABLE_DATASETS for base in cls.bases):
            return None
        getitem = next((s for s in cls.body.body if type(s) is cst.FunctionDef
                        and s.name.value == "__getitem__"), None)
        if getitem is None:
            return None
        for node in _walk(getitem.body):
            if type(node) is cst.Call:
                name = self.analysis.qualified(node.func) if type(node.func) in (cst.Name, cst.Attribute) \
                    else None
                if name not in _TRIVIAL_CALLS:
                    return self.analysis.code(node.func)
        return None


def data_path_facts(analysis: ModuleAnalysis) -> DataPathFacts:
    return analysis.fact(DataPathFacts)


def _only_return(function: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    """The value of a function whose body is one `return <value>` (a docstring before it allowed)."""
    body = [s for s in function.body.body if not (isinstance(s, cst.SimpleStatementLine) and all(
        isinstance(x, cst.Expr) and isinstance(x.value, cst.SimpleString) for x in s.body))]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1 or \
            not isinstance(body[0].body[0], cst.Return):
        return None
    return body[0].body[0].value


def _self_row(expr: cst.BaseExpression, params: list) -> Optional[str]:
    """`x` for `self.x[i]`, where `self` and `i` are the method's two parameters."""
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 1 or \
            not isinstance(expr.slice[0].slice, cst.Index):
        return None
    index, value = expr.slice[0].slice.value, expr.value
    if isinstance(index, cst.Name) and index.value == params[1] and isinstance(value, cst.Attribute) and \
            isinstance(value.value, cst.Name) and value.value.value == params[0]:
        return value.attr.value
    return None


def _self_length(expr: Optional[cst.BaseExpression], params: list) -> Optional[str]:
    """`x` for `len(self.x)`, `self.x.shape[0]` or `self.x.size(0)`."""
    def attr_of(node):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and params and \
                node.value.value == params[0]:
            return node.attr.value
        return None

    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "len" and \
            len(expr.args) == 1:
        return attr_of(expr.args[0].value)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size" and \
            len(expr.args) == 1 and isinstance(expr.args[0].value, cst.Integer) and expr.args[0].value.value == "0":
        return attr_of(expr.func.value)
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and \
            expr.value.attr.value == "shape" and len(expr.slice) == 1 and \
            isinstance(expr.slice[0].slice, cst.Index) and isinstance(expr.slice[0].slice.value, cst.Integer) and \
            expr.slice[0].slice.value.value == "0":
        return attr_of(expr.value.value)
    return None


def _is_main_guard(stmt: cst.CSTNode) -> bool:
    if type(stmt) is not cst.If or type(stmt.test) is not cst.Comparison:
        return False
    test = stmt.test
    if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return any(type(s) is cst.Name and s.value == "__name__" for s in sides) and \
        any(string_value(s) == "__main__" for s in sides)


def _imported_names(stmt: cst.CSTNode) -> list[str]:
    if type(stmt) is not cst.SimpleStatementLine:
        return []
    names = []
    for small in stmt.body:
        if type(small) is cst.Import:
            for alias in small.names:
                if alias.asname is None and type(alias.name) is cst.Name:
                    names.append(alias.name.value)
    return names


def _last_top_import(body) -> Optional[cst.SimpleStatementLine]:
    """The last import line of the module's leading block of imports (docstring and comments allowed)."""
    last = None
    for stmt in body:
        if type(stmt) is cst.SimpleStatementLine and all(
                type(s) in (cst.Import, cst.ImportFrom) for s in stmt.body):
            last = stmt
        elif type(stmt) is cst.SimpleStatementLine and last is None and \
                all(type(s) is cst.Expr and type(s.value) is cst.SimpleString for s in stmt.body):
            continue  # the module docstring
        else:
            break
    return last


# -- GPU204's rewrite: a TensorDataset loader becomes device-resident tensors indexed by a device permutation -----
_RESIDENT_KEYWORDS = {"dataset", "batch_size", "shuffle", "drop_last", "pin_memory", "num_workers"}


def resident_loader(analysis: ModuleAnalysis, loader: cst.Call, dataset: cst.Call,
                    columns: Optional[TensorColumns] = None):
    """The changes (node -> replacement) that turn `name = DataLoader(TensorDataset(a, b), ...)` and the one
    loop over `name` into device tensors and batches indexed on the device, or None where that is not exact.
    With `columns`, `dataset` builds (or names) an instance of a tensor-row dataset class (`tensor_columns`):
    its tensors are moved instead, and the batches keep the class's shape (a dict, or a list as
    `default_collate` makes of tuples)."""
    from gpulint.analysis.data_facts import data_facts

    facts = data_facts(analysis)
    assign = analysis.parent(loader)
    if type(assign) is not cst.Assign or len(assign.targets) != 1 or \
            not isinstance(assign.targets[0].target, cst.Name) or _dataset_arg(loader) is not dataset:
        return None
    name = assign.targets[0].target.value
    options = _loader_options(loader)
    if options is None:
        return None
    if columns is None and (not dataset.args or any(
            a.keyword is not None or a.star or not _named_here(analysis, a.value) for a in dataset.args)):
        return None
    loops = facts.loops_over(loader)
    uses = [n for n in analysis.index.names(name) if n is not assign.targets[0].target]
    if len(loops) != 1 or len(uses) != 1 or not isinstance(loops[0], cst.For) or \
            not analysis.index.is_ancestor_or_self(loops[0].iter, uses[0]):
        return None
    device = _batch_device(analysis, loops[0])
    if device is None or not _defined_before(analysis, device, loader):
        return None
    tensors = f"{name}_tensors"
    if analysis.index.names(tensors):
        return None
    dev = analysis.code(device)
    shuffle, drop_last, batch = options
    order = "randperm" if shuffle else "arange"
    if columns is None:
        moved = ", ".join(f"{analysis.code(a.value)}.to({dev})" for a in dataset.args)
        value = f"({moved}{',' if len(dataset.args) == 1 else ''})"
        count, row = f"len({tensors}[0])", f"[t[i] for t in {tensors}]"
        line = None
    else:
        source = _columns_source(analysis, assign, dataset, name)
        if source is None:
            return None
        holder, line = source
        moved = [f"{holder}.{attr}.to({dev})" for attr in columns.attrs]
        if columns.as_dict:
            value = "{" + ", ".join(f"{_quoted(k)}: {m}" for k, m in zip(columns.keys, moved)) + "}"
            count = f"len({tensors}[{_quoted(columns.keys[columns.counted])}])"
            row = f"{{k: t[i] for k, t in {tensors}.items()}}"
        else:
            value = f"({', '.join(moved)}{',' if len(moved) == 1 else ''})"
            count, row = f"len({tensors}[{columns.counted}])", f"[t[i] for t in {tensors}]"
    batches = f"torch.{order}({count}, device={dev}).split({batch})"
    if drop_last:
        batches = f"{batches}[:{count} // {batch}]"
    replaced = assign.with_changes(targets=[cst.AssignTarget(cst.Name(tensors))], value=cst.parse_expression(value))
    changes: dict = {uses[0]: cst.parse_expression(f"({row} for i in {batches})")}
    if line is None:
        changes[assign] = replaced
    else:  # the dataset was built inline: bind it first, on a line of its own
        statement, first = line
        changes[statement] = cst.FlattenSentinel([statement.with_changes(body=[first]),
                                                  cst.SimpleStatementLine(body=[replaced])])
    return changes


def _columns_source(analysis: ModuleAnalysis, assign: cst.Assign, dataset: cst.BaseExpression, name: str):
    """Where the dataset instance comes from, as (the name that holds it, the line to add or None): a name this
    file binds once (nothing to add), or the inline `Cls(...)` call, bound to `<name>_dataset` on a line of its
    own before the loader's (the loader's line must hold only the loader)."""
    if isinstance(dataset, cst.Name):
        bindings = analysis.index.visible_bindings(dataset)
        if len(bindings) != 1 or bindings[0].kind != "assign" or not _defined_before(analysis, dataset, assign.value):
            return None
        return dataset.value, None
    statement = analysis.parent(assign)
    holder = f"{name}_dataset"
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1 or \
            analysis.index.names(holder):
        return None
    first = cst.Assign(targets=[cst.AssignTarget(cst.Name(holder))], value=dataset)
    return holder, (statement, first)


def _quoted(key: str) -> str:
    return repr(key) if '"' in key else f'"{key}"'


def _dataset_arg(loader: cst.Call):
    from gpulint.analysis.data import _dataset

    return _dataset(loader)


def _loader_options(loader: cst.Call):
    """(shuffle, drop_last, batch size text) when every argument can be carried over exactly, else None."""
    values = {}
    for i, arg in enumerate(loader.args):
        key = arg.keyword.value if arg.keyword is not None else ("dataset" if i == 0 else None)
        if key not in _RESIDENT_KEYWORDS or arg.star:
            return None
        values[key] = arg.value
    flags = []
    for key in ("shuffle", "drop_last"):
        value = values.get(key, cst.Name("False"))
        if type(value) is not cst.Name or value.value not in ("True", "False"):
            return None
        flags.append(value.value == "True")
    workers = values.get("num_workers", cst.Integer("0"))
    batch = values.get("batch_size", cst.Integer("1"))
    if not (type(workers) is cst.Integer and workers.value == "0") or type(batch) not in (cst.Name, cst.Integer):
        return None
    return flags[0], flags[1], batch.value


def _named_here(analysis: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """A name this file assigns (the tensor is created here, not handed in)."""
    if type(expr) is not cst.Name:
        return False
    bindings = analysis.index.visible_bindings(expr)
    return bool(bindings) and all(b.kind == "assign" for b in bindings)


def _batch_device(analysis: ModuleAnalysis, loop: cst.For) -> Optional[cst.BaseExpression]:
    """The device the loop copies its batch to (`x.to(device)`, `x.cuda()`), when it names one plainly."""
    from gpulint.analysis.data_facts import ACCELERATOR, data_facts

    facts = data_facts(analysis)
    found = []
    for call in facts.body_calls(loop):
        if facts.copy_target(call) == ACCELERATOR and facts.batch_loop(call.func.value) is loop:  # type: ignore
            if call.func.attr.value == "cuda":  # type: ignore[union-attr]
                found.append(cst.SimpleString('"cuda"') if not call.args else None)
            else:
                found.append(call.args[0].value if call.args and call.args[0].keyword is None else None)
    codes = {analysis.code(f) for f in found if f is not None}
    if not found or None in found or len(codes) != 1:
        return None
    device = found[0]
    return device if type(device) in (cst.Name, cst.SimpleString) else None


def _defined_before(analysis: ModuleAnalysis, device: cst.BaseExpression, loader: cst.Call) -> bool:
    if type(device) is cst.SimpleString:
        return True
    bindings = analysis.index.visible_bindings(device)
    if not bindings or any(b.kind != "assign" or b.source is None for b in bindings):
        return False
    index = analysis.index
    last = len(index.nodes)
    return all((index.order(b.source) if index.order(b.source) is not None else last) < index.order(loader)
               for b in bindings)
