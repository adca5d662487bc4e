"""Where a training loop's batches come from, and where its copies go.

Shared by the transfer rules (GPU2xx): which `DataLoader(...)` a loop iterates (through names, `self.` attributes
and the arguments of the module's own functions), which values are batches of that loop (unpacked, indexed, or
rebuilt in a comprehension), and whether a `.to(...)`/`.cuda(...)` sends a tensor to an accelerator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional, Union

from gpulint.analysis.progress_wrappers import is_progress_wrapper
import libcst as cst

from gpulint.analysis import Kind, ModuleAnalysis
from gpulint.analysis.calls import module_calls, project_calls
from gpulint.analysis.generators import yielded_source
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.libraries import DEVICE_BATCH_METHODS, Effect, fact_for_method
from gpulint.analysis.node_types import of_types
from gpulint.analysis.loader_classes import dataloader_subclass_call, loader_fact
from gpulint.analysis.project import ClassSummary, FunctionSummary, LoaderFact
from gpulint.analysis.helper_copies import unpacked_element
from gpulint.analysis.pyg_loaders import PYG_LOADERS, data_on_host
from gpulint.analysis.tree import child_nodes, descendants
from gpulint.syntax import argument, argument_for, positional, positional_names, string_value

DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
               "torchdata.stateful_dataloader.StatefulDataLoader", "torchdata.stateful_dataloader.StatefulDataLoader",
               # webdataset's loader hands its arguments to a torch `DataLoader` (`pin_memory=` included)
               "webdataset.WebLoader", "webdataset.compat.WebLoader"}
# Library functions that build a torch `DataLoader` and return it (or a prefetcher iterating it): the keyword that
# sets its `pin_memory`, and that keyword's default. timm's `create_loader(..., pin_memory=False)` (wrapped in
# its `PrefetchLoader` by default, whose `.cuda(non_blocking=True)` of a pageable batch is a staged copy).
LIBRARY_LOADER_FACTORIES = {"timm.data.create_loader": ("pin_memory", False),
                            "timm.data.loader.create_loader": ("pin_memory", False)}
# The keyword of such a factory that wraps the loader in a prefetcher moving each batch to the GPU itself, and its
# default: timm's `PrefetchLoader` (`use_prefetcher=True`) yields CUDA tensors, so the loop's own `.to("cuda")` of
# them copies nothing (GPU201 still reports the factory's call: the prefetcher's copy is pageable).
LIBRARY_PREFETCHERS = {"timm.data.create_loader": ("use_prefetcher", True),
                       "timm.data.loader.create_loader": ("use_prefetcher", True)}
TENSOR_DATASETS = {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"}
_WRAPPERS = {"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "zip", "islice", "itertools.islice"}
# Flags a program sets exactly when it runs on CUDA (`cuda = model._is_on_cuda()`, `use_cuda = torch.cuda.is_available()`)
_CUDA_FLAGS = frozenset({"cuda", "use_cuda", "is_cuda", "on_cuda", "with_cuda", "use_gpu", "on_gpu", "cuda_available"})
_DEVICE_NAMES = ("device", "dev", "gpu", "rank", "local_rank", "device_id", "gpu_id")
_MAX_DEPTH = 6

CPU, ACCELERATOR = "cpu", "accelerator"
Loop = Union[cst.For, cst.While]


def is_dataloader(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    if type(node) is not cst.Call:
        return False
    qualified = analysis.qualified(node.func)
    if qualified in DATALOADERS:
        return True
    if qualified in PYG_LOADERS:
        return data_facts(analysis).pyg_on_host(qualified, node)
    return dataloader_subclass_call(analysis, node)  # `DataLoaderMasking(...)`: a project subclass of torch's


# PyTorch 0.3's wrapper of a tensor for autograd (a no-op since 0.4): `Variable(inputs).cuda()` copies `inputs`.
_VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    """The argument passed by keyword `name` (`non_blocking`: PyTorch 0.3's `async=` too, `syntax.argument`)."""
    return argument(call, name)


def has_star_args(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def is_false(node: Optional[cst.BaseExpression]) -> bool:
    return type(node) is cst.Name and node.value == "False"


def append_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` added last, keeping a multi-line call's layout and trailing comma."""
    new = cst.Arg(value=value, keyword=cst.Name(name),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if type(last.comma) is cst.Comma:  # trailing comma: the new argument goes on its own line, alike
        between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else \
            cst.Comma(whitespace_after=call.whitespace_before_args)
        args[-1] = last.with_changes(comma=between)
        new = new.with_changes(comma=last.comma)
    return call.with_changes(args=[*args, new])


# What `**options` carries, where it can be read: key -> value (None: more than one value, or not a literal key's).
StarKeywords = dict[str, Optional[cst.BaseExpression]]
_READS = {"get", "keys", "items", "values", "copy", "__contains__"}
# builtins that only read the dict they are given
_SHOWS = {"print", "len", "str", "repr", "sorted", "list", "json.dumps", "pprint.pprint"}


def star_keywords(analysis: ModuleAnalysis, call: cst.Call) -> Optional[StarKeywords]:
    """The keywords `call`'s `**name` arguments carry, where each `name` is a dict the module builds from literal
    keys (`kw = {"num_workers": 1}`, `dict(shuffle=True)`) and changes only in ways that name their keys
    (`kw.update({...})`, `kw.update(other_literal_dict)`, `kw.update(k=v)`, `kw["k"] = v`, `kw.setdefault("k", v)`;
    `kw.pop("k", None)` and `print(kw)` change no key it may carry),
    wherever in its scope that happens (before or after the call, in any branch: the keys are a superset). None
    when anything else may add keys: a `*args`, a parameter or another call's result, `kw.update(opts)` of an
    unknown dict, `kw` handed to a function or deleted from, a second kind of binding."""
    if not any(a.star for a in call.args):
        return {}
    found: StarKeywords = {}
    for arg in call.args:
        if not arg.star:
            continue
        if arg.star != "**":
            return None
        # `**kw`, or written in place: `**{"k": v}`, `**dict(k=v)`, `**options()` of a project function
        keys = _dict_keys(analysis, arg.value, 0) if type(arg.value) is cst.Name else \
            _literal_keys(analysis, arg.value, 0)
        if keys is None:
            return None
        _merge(found, keys)
    return found


def _merge(into: StarKeywords, keys: StarKeywords) -> None:
    for key, value in keys.items():
        if key in into and (into[key] is None or value is None or
                            cst.Module([]).code_for_node(into[key]) != cst.Module([]).code_for_node(value)):
            into[key] = None
        else:
            into[key] = value


def _literal_keys(analysis: ModuleAnalysis, value: cst.CSTNode, depth: int) -> Optional[StarKeywords]:
    """The keys of a dict literal, `dict(k=v, ...)`, a name bound to one (followed `depth` < 2 times), or a call of
    a project function returning one (values unknown)."""
    if type(value) is cst.Dict:
        keys: StarKeywords = {}
        for element in value.elements:
            if type(element) is not cst.DictElement:
                return None  # `{**other}`
            key = string_value(element.key)
            if key is None:
                return None
            _merge(keys, {key: element.value})
        return keys
    if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value == "dict" and \
            analysis.index.visible_bindings(value.func) == []:
        if any(a.star or a.keyword is None for a in value.args):
            return None
        return {a.keyword.value: a.value for a in value.args}
    if type(value) is cst.Name and depth < 2:
        return _dict_keys(analysis, value, depth + 1)
    if type(value) is cst.Call:  # a project function returning a dict of literal keys (analysis/option_dicts.py)
        from gpulint.analysis.option_dicts import call_keys

        returned = call_keys(analysis, value)
        if returned is not None:
            return {key: None for key in returned}  # its values are not followed
    return None


def _dict_keys(analysis: ModuleAnalysis, name: cst.Name, depth: int) -> Optional[StarKeywords]:
    index = analysis.index
    bindings = index.visible_bindings(name)
    if not bindings or any(b.kind != "assign" or b.index is not None or b.value is None for b in bindings):
        return None
    keys: StarKeywords = {}
    for binding in bindings:
        found = _literal_keys(analysis, binding.value, depth)
        if found is None:
            return None
        _merge(keys, found)
    scope = bindings[0].scope
    stack: list[cst.CSTNode] = [scope]
    while stack:  # every use of the name in its scope, nested functions included
        node = stack.pop()
        stack.extend(child_nodes(node))
        if type(node) is not cst.Name or node.value != name.value or node is name:
            continue
        if index.visible_bindings(node) != bindings:
            continue  # another variable of the same name (a nested function's own)
        added = _use(analysis, node, depth)
        if added is None:
            return None
        _merge(keys, added)
    return keys


def _use(analysis: ModuleAnalysis, node: cst.Name, depth: int) -> Optional[StarKeywords]:
    """The keys one use of the dict adds ({} for a read or its own binding); None for a use that may add any."""
    parent = analysis.parent(node)
    if type(parent) is cst.AssignTarget or (type(parent) is cst.Arg and parent.star == "**"):
        return {}
    if type(parent) is cst.Arg and not parent.star and parent.keyword is None:
        call = analysis.parent(parent)  # `other.update(kw)`: read, not changed
        if type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value == "update":
            return {}
        if type(call) is cst.Call and (analysis.qualified(call.func) in _SHOWS or type(call.func) is cst.Name and
                                       call.func.value in _SHOWS and not analysis.index.visible_bindings(call.func)):
            return {}  # `print("optimizer settings:", opt_args)`: shown, not changed
        return None
    if type(parent) is cst.Attribute and parent.value is node:
        call = analysis.parent(parent)
        method = parent.attr.value
        if type(call) is not cst.Call or call.func is not parent:
            return None
        if method in _READS or method == "pop":
            return {}  # `opt_args.pop('eps', None)` takes a key away: the keys stay a superset
        if method == "update":
            keys: StarKeywords = {}
            for arg in call.args:
                if arg.star:
                    return None
                if arg.keyword is not None:
                    _merge(keys, {arg.keyword.value: arg.value})
                    continue
                found = _literal_keys(analysis, arg.value, depth)
                if found is None:
                    return None
                _merge(keys, found)
            return keys
        if method == "setdefault" and call.args and string_value(call.args[0].value) is not None:
            value = call.args[1].value if len(call.args) > 1 else cst.Name("None")
            return {string_value(call.args[0].value): value}
        return None
    if type(parent) is cst.Subscript and parent.value is node:
        holder = analysis.parent(parent)
        if type(holder) is cst.AssignTarget:
            assign = analysis.parent(holder)
            key = string_value(parent.slice[0].slice.value) \
                if len(parent.slice) == 1 and isinstance(parent.slice[0].slice, cst.Index) else None
            if key is None or type(assign) is not cst.Assign:
                return None
            return {key: assign.value}
        if type(holder) in (cst.Del, cst.AugAssign) or isinstance(analysis.parent(holder), cst.Del):
            return None
        return {}  # `kw["batch_size"]`: read
    return None


# dtype conversions of a batch (`batch_x.float().to(device)`): still the batch's values, on the host
CONVERSIONS = frozenset({"float", "half", "double", "bfloat16", "long", "int", "short", "byte", "bool"})


class DataFacts:
    """Loader and batch facts for one module; built once, on first use, and shared by the GPU2xx rules."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.analysis = analysis
        self.index = analysis.index
        self._loops_over: Optional[dict[int, list[Loop]]] = None
        self._nexts: Optional[dict[int, list[cst.Call]]] = None
        self._stores: Optional[dict[str, list[cst.Assign]]] = None
        self._self_attrs: Optional[dict[str, list[cst.BaseExpression]]] = None
        self._prepared: Optional[set[int]] = None
        self._factories: dict[str, Optional[LoaderFact]] = {}
        self._feeds: Optional[bool] = None
        self._cuda: Optional[bool] = None
        # per node, memoised: every rule asks them of the same calls and loops
        self._copy_targets: dict[int, Optional[str]] = {}
        self._moves: dict[int, bool] = {}
        self.would_pin: dict[int, bool] = {}  # analysis/data.py would_pin, per loader
        self._pyg: dict[int, bool] = {}  # PyG loader call -> its data is known to be on the host

    def pyg_on_host(self, qualified: str, call: cst.Call) -> bool:
        """A PyG loader (analysis/pyg_loaders.py) counts as a DataLoader only over data known to be on the host."""
        key = id(call)
        if key not in self._pyg:
            self._pyg[key] = False  # (re-entered while deciding: not known)
            self._pyg[key] = data_on_host(self, qualified, call)
        return self._pyg[key]

    # -- loaders built elsewhere ----------------------------------------------------------------------------
    def factory(self, call: cst.CSTNode) -> Optional[LoaderFact]:
        """What a call to a loader factory of the project returns (`create_dataloader(...)`, in this module or
        another): where its `DataLoader` is built and whether it pins. None when `call` is not one."""
        if type(call) is not cst.Call or is_dataloader(self.analysis, call):
            return None
        qualified = self.analysis.qualified(call.func) or ""
        if qualified in LIBRARY_LOADER_FACTORIES:  # `timm.data.create_loader(...)`: pinned as this call says
            # built in the library: no project file and line (path: the function's name, line 0)
            return LoaderFact(Path(qualified), 0, self._library_pinned(call, *LIBRARY_LOADER_FACTORIES[qualified]))
        dotted = dotted_name(call.func)
        if dotted is None or dotted.split(".")[0] == "self":
            return None
        if dotted not in self._factories:  # one project lookup per name, not per call
            calls = self.analysis.fact(project_calls)
            found = calls.project.lookup(calls.path, dotted) if calls is not None else None
            self._factories[dotted] = (found.returns_loader, found) if isinstance(found, FunctionSummary) else None
            if isinstance(found, ClassSummary):  # a project class wrapping a DataLoader (analysis/loader_classes.py)
                wrapped = loader_fact(calls.project, found)
                self._factories[dotted] = (wrapped, None) if wrapped is not None else None
        entry = self._factories[dotted]
        if entry is None:
            return None
        made, summary = entry
        if made is None or made.pin_param is None:
            return made
        return LoaderFact(made.path, made.line, self._pinned_by(call, summary, made))

    def library_prefetched(self, call: cst.CSTNode) -> bool:
        """`call` is a library loader factory's call whose prefetcher always moves the batches to the GPU itself
        (`LIBRARY_PREFETCHERS`: its keyword written True, or left at its default True). A flag
        (`use_prefetcher=args.prefetcher`) may turn it off, and the loop's copies under `if not args.prefetcher:`
        are then real ones: not this."""
        if type(call) is not cst.Call:
            return False
        entry = LIBRARY_PREFETCHERS.get(self.analysis.qualified(call.func) or "")
        if entry is None:
            return False
        found = keyword(call, entry[0])
        if found is None:
            return entry[1]
        return type(found.value) is cst.Name and found.value.value == "True"

    def _library_pinned(self, call: cst.Call, keyword_name: str, default: bool) -> Optional[bool]:
        """Whether a library loader factory's call pins: its `pin_memory` argument (a literal, or a flag of the
        module's parser: analysis/flags.py), else the library's default; None for `**options` or anything else."""
        from gpulint.analysis.flags import flag_defaults

        if any(a.star == "**" for a in call.args):
            return None
        found = keyword(call, keyword_name)
        if found is None:
            return default
        value = found.value
        if type(value) is cst.Name and value.value in ("True", "False"):
            return value.value == "True"
        return self.analysis.fact(flag_defaults).default(value)

    def _pinned_by(self, call: cst.Call, summary: FunctionSummary, made: LoaderFact) -> Optional[bool]:
        """Whether this call of a factory whose `pin_memory` is its parameter pins: the argument it passes (a
        literal, or a flag of the module's parser: analysis/flags.py), else the parameter's default."""
        from gpulint.analysis.flags import flag_defaults

        if any(a.star for a in call.args):
            return None
        found = argument_for(call, [*summary.params, *summary.keyword_only], made.pin_param)
        if found is None:
            return made.pin_default
        value = found.value
        if made.pin_test is not None:  # `pin_memory=(device != "cpu")`: the device string this call passes
            from gpulint.analysis.project import pin_by_test

            text = self._string_of(value)
            return pin_by_test(made.pin_test, text) if text is not None else None
        if type(value) is cst.Name and value.value in ("True", "False"):
            return value.value == "True"
        if made.pin_param.lower() in _CUDA_FLAGS and self._cuda_flag(value):
            return True  # `cuda=cuda` of `cuda = model.is_cuda`: pinned on every run that copies to the GPU
        return self.analysis.fact(flag_defaults).default(value)

    def _cuda_flag(self, value: cst.BaseExpression, depth: int = 0) -> bool:
        """`value` says whether the run uses CUDA: `torch.cuda.is_available()`, or a name or attribute spelled
        as such a flag (`cuda`, `use_cuda`, `args.cuda`) that no binding of this module sets to a literal."""
        if type(value) is cst.Call:
            return self.analysis.qualified(value.func) == "torch.cuda.is_available"
        if type(value) is cst.Attribute:
            return value.attr.value.lower() in _CUDA_FLAGS
        if type(value) is not cst.Name or value.value.lower() not in _CUDA_FLAGS:
            return False
        return all(b.kind != "assign" or b.value is None or
                   not (type(b.value) is cst.Name and b.value.value in ("True", "False", "None"))
                   for b in self.bindings(value))

    def _device_of_host(self, expr: cst.Attribute) -> bool:
        """`x.device` of a host value `x` (kinds.on_host). Not asked again while it is being answered: deciding
        whether `x` is on the host may ask where `x.device` is (a host call whose device argument is `x.device`),
        and that inner question is answered as any other `.device` (the device the code chose)."""
        asking = self.__dict__.setdefault("_asking_host", set())
        if id(expr) in asking:
            return False
        asking.add(id(expr))
        try:
            return self.analysis.kinds.on_host(expr.value)
        finally:
            asking.discard(id(expr))

    def _string_of(self, value: cst.BaseExpression) -> Optional[str]:
        """A string literal, or a name bound (only) to one string literal in this module."""
        text = string_value(value)
        if text is not None or type(value) is not cst.Name:
            return text
        bindings = self.bindings(value)
        texts = {string_value(b.value) if b.kind == "assign" and b.index is None and b.value is not None else None
                 for b in bindings}
        return texts.pop() if len(texts) == 1 and None not in texts else None

    def prepared(self, loader: cst.Call) -> bool:
        """The loader is handed to a library that moves its batches to the device itself (Accelerate's
        `accelerator.prepare(...)`, see analysis/libraries.py): pinning and non_blocking advice do not apply."""
        if self._prepared is None:
            self._prepared = set()
            calls = self.analysis.fact(project_calls) or self.analysis.fact(module_calls)
            for node in of_types(self.index, cst.Call):
                if type(node.func) is cst.Attribute and \
                        node.func.attr.value in DEVICE_BATCH_METHODS:  # type: ignore[attr-defined]
                    fact = fact_for_method(calls.constructor(node.func.value), node.func.attr.value)
                    if fact is not None and fact.effect is Effect.DEVICE_BATCHES:
                        for arg in node.args:
                            self._prepared.update(id(c) for c in self.loaders(arg.value))
        return id(loader) in self._prepared

    # -- which DataLoader(...) an expression holds -------------------------------------------------------------
    def loaders(self, expr: cst.CSTNode, depth: int = 0) -> list[cst.Call]:
        """The `DataLoader(...)` calls `expr` may hold (through wrappers such as enumerate/tqdm/zip)."""
        if depth > _MAX_DEPTH or expr is None:
            return []
        a = self.analysis
        if is_dataloader(a, expr):
            return [expr]
        if type(expr) is cst.Call:
            if dotted_name(expr.func) in _WRAPPERS or is_progress_wrapper(dotted_name(expr.func)):
                return [c for arg in positional(expr) for c in self.loaders(arg, depth + 1)] + [
                    c for arg in expr.args if arg.star == "*" and type(arg.value) is cst.Name and
                    a.kinds.holds_loaders(arg.value) for c in self._listed_loaders(arg.value, depth + 1)]
            handed_on = self._generator_source(expr) or self.project_generator_source(expr)
            if handed_on is not None:  # `cycle(loader)`: a generator that yields the loader's batches
                return self.loaders(handed_on, depth + 1)
            return [expr] if self.factory(expr) is not None else []
        if type(expr) is cst.Name:
            found: list[cst.Call] = []
            for b in self.bindings(expr):
                if b.kind == "assign" and b.index is not None and type(b.value) is cst.Call:
                    found.extend(self._unpacked_loaders(b.value, b.index, depth + 1))
                elif b.kind in ("assign", "walrus"):
                    found.extend(self.loaders(b.value, depth + 1))
                elif b.kind == "with" and type(b.value) is cst.Call and (dotted_name(b.value.func) in _WRAPPERS or
                                                                     is_progress_wrapper(dotted_name(b.value.func))):
                    found.extend(self.loaders(b.value, depth + 1))  # `with tqdm(enumerate(loader)) as t:`
                elif b.kind == "param":
                    for arg in self.arguments_for(b):
                        found.extend(self.loaders(arg, depth + 1))
                elif b.kind == "for" and b.index is None and type(b.source) is cst.For and \
                        type(b.source.target) is cst.Name and type(b.value) is cst.Name:
                    # `for loader in loaders:` over `loaders = [get_loader(p) for p in paths]` (or a written-out
                    # list of loaders): each iteration's name is one of those loaders
                    found.extend(self._listed_loaders(b.value, depth + 1))
            return found
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
            return [c for v in self.self_attributes().get(expr.attr.value, []) for c in self.loaders(v, depth + 1)]
        if type(expr) is cst.Subscript and type(expr.value) is cst.Call and self.factory(expr.value) is not None:
            return [expr.value]  # `create_loader(...)[0]`: one of the loaders a project factory returns
        if type(expr) is cst.Subscript and a.kinds.holds_loaders(expr.value):
            return self._listed_loaders(expr.value, depth + 1)  # `loaders[0]`: one loader of a list of them
        if type(expr) is cst.Subscript and type(expr.value) is cst.Name:
            return self._mapped_loaders(expr.value, depth + 1)  # `dataloaders[phase]` of a dict of loaders
        if type(expr) is cst.Subscript and type(expr.value) is cst.Attribute and \
                type(expr.value.value) is cst.Name and expr.value.value.value == "self":
            return self._self_mapped_loaders(expr.value.attr.value, depth + 1)  # `self.data_loader['train']`
        return []

    def _self_mapped_loaders(self, attr: str, depth: int) -> list[cst.Call]:
        """The loaders a dict held on `self` may hand out: `self.data_loader = dict()` (or `{}`, or a dict of
        loaders), then `self.data_loader['train'] = DataLoader(...)` in the module's methods (the skeleton-action
        trainers' `Processor.load_data`). Every value stored must give a loader, else nothing is known."""
        assigned = self.self_attributes().get(attr, [])
        if not assigned or len(assigned) > 2:
            return []
        values: list[cst.BaseExpression] = []
        for value in assigned:
            if type(value) is cst.Dict and all(type(e) is cst.DictElement for e in value.elements):
                values.extend(e.value for e in value.elements)  # type: ignore[union-attr]
            elif not (type(value) is cst.Call and dotted_name(value.func) == "dict" and not value.args):
                return []
        for node in of_types(self.index, cst.Assign):
            for target in node.targets:  # type: ignore[attr-defined]
                t = target.target
                if type(t) is cst.Subscript and type(t.value) is cst.Attribute and type(t.value.value) is cst.Name \
                        and t.value.value.value == "self" and t.value.attr.value == attr:
                    values.append(node.value)  # type: ignore[attr-defined]
        return self._every_value_a_loader(values, depth)

    def _every_value_a_loader(self, values: list, depth: int) -> list[cst.Call]:
        """The loaders of `values`, when each gives at least one; else [] (a dict of settings, not of loaders)."""
        found: list[cst.Call] = []
        for value in values:
            one = self.loaders(value, depth + 1)
            if not one:
                return []
            found.extend(one)
        return found

    def _mapped_loaders(self, name: cst.Name, depth: int) -> list[cst.Call]:
        """The loaders a dict of loaders may hand out: `dataloaders = {x: DataLoader(sets[x], ...) for x in
        splits}` (or a dict literal of them), and every `dataloaders["extra"] = DataLoader(...)` stored into it
        by name in the same scope. Every value must give a loader, else nothing is known (a dict of settings)."""
        bindings = self.index.visible_bindings(name)
        if not bindings or len(bindings) > 3:
            return []
        values: list[cst.BaseExpression] = []
        for b in bindings:
            if b.kind != "assign" or b.index is not None:
                return []
            if type(b.value) is cst.DictComp:
                values.append(b.value.value)
            elif type(b.value) is cst.Dict and b.value.elements and \
                    all(type(e) is cst.DictElement for e in b.value.elements):
                values.extend(e.value for e in b.value.elements)  # type: ignore[union-attr]
            else:
                return []
        if self._stores is None:  # `d[key] = value` by the name stored into, one look at the module's assignments
            self._stores = {}
            for node in of_types(self.index, cst.Assign):
                for t in node.targets:  # type: ignore[attr-defined]
                    if type(t.target) is cst.Subscript and type(t.target.value) is cst.Name:
                        self._stores.setdefault(t.target.value.value, []).append(node)  # type: ignore[arg-type]
        for store in self._stores.get(name.value, ()):
            target = next(t.target for t in store.targets if type(t.target) is cst.Subscript
                          and type(t.target.value) is cst.Name and t.target.value.value == name.value)
            if self.index.visible_bindings(target.value) == bindings:  # type: ignore[attr-defined]
                values.append(store.value)
        return self._every_value_a_loader(values, depth)

    def _listed_loaders(self, name: cst.Name, depth: int) -> list[cst.Call]:
        """The loaders of `loaders = [DataLoader(env, ...) for env in envs]` (or a written-out list of them)."""
        found: list[cst.Call] = []
        for b in self.bindings(name):
            value = b.value
            elements = [value.elt] if type(value) is cst.ListComp else \
                [e.value for e in getattr(value, "elements", ()) if type(e) is cst.Element]
            for element in elements:
                found.extend(self.loaders(element, depth + 1))
        return found

    def _unpacked_loaders(self, call: cst.Call, index: int, depth: int) -> list[cst.Call]:
        """The loaders element `index` of what `call` returns may hold (`train_data, train_loader = f(...)`): for a
        project loader factory that says where its loader is (`return data_set, data_loader`), that element only;
        for a function or method of this module (`self._get_data(flag)`), that element of each of its returns."""
        made = self.factory(call)
        if made is not None:
            at = self._loader_position(call)
            return [call] if at is None or at == index else []
        fn = self.analysis.loops.local_function(call)
        if fn is None:
            return self.loaders(call, depth)
        found: list[cst.Call] = []
        for node in descendants(fn.body):
            if type(node) is cst.Return and type(node.value) is cst.Tuple and index < len(node.value.elements) \
                    and self._returns_from(node, fn):
                element = node.value.elements[index]
                if type(element) is cst.Element:
                    found.extend(self.loaders(element.value, depth + 1))
        return found

    def _returns_from(self, node: cst.Return, fn: cst.FunctionDef) -> bool:
        """`node` returns from `fn` itself, not from a function or class nested in it."""
        for parent in self.index.ancestors(node):
            if parent is fn:
                return True
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return False
        return False

    def _loader_position(self, call: cst.Call) -> Optional[int]:
        """Where in its returned tuple the project factory `call` calls puts its loader (None: not known)."""
        dotted = dotted_name(call.func)
        entry = self._factories.get(dotted) if dotted is not None else None
        return entry[1].returns_loader_at if entry is not None and entry[1] is not None else None

    def project_generator_source(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """For a call of a project generator (another module's, or a method resolved through its instance:
        `metric_logger.log_every(data_loader, print_freq)`) that hands on the items of a parameter
        (`FunctionSummary.yields_param`): the argument the call passes for it."""
        if type(call.func) not in (cst.Name, cst.Attribute):
            return None
        calls = self.analysis.fact(project_calls)
        target = calls.callee(call, own_module=True) if calls is not None else None
        if target is None or target[1].yields_param is None:
            return None
        summary, bound = target[1], target[2]
        params = summary.params[1:] if bound and summary.params else summary.params
        name = summary.yields_param
        from gpulint.analysis.calls import _call_argument

        return _call_argument(call, params.index(name) if name in params else None, name)

    def _generator_source(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """For a call of a generator of this module that hands on the items of one iterable: that iterable,
        as the caller gives it (the argument, for a parameter) or as the generator builds it."""
        fn = self.analysis.loops.local_function(call)
        source = yielded_source(fn) if fn is not None else None
        if type(source) is not cst.Name:
            return source
        params = positional_names(fn)
        if source.value not in params and source.value not in {p.name.value for p in fn.params.kwonly_params}:
            return source
        position = params.index(source.value) if source.value in params else None
        if type(call.func) is cst.Attribute and position is not None:
            position -= 1  # `self.cycle(loader)`: `self` is the first parameter
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == source.value:
                return arg.value
        args = [a for a in call.args if a.keyword is None]
        if position is None or position < 0 or any(a.star for a in args) or position >= len(args):
            return None
        return args[position].value

    def iterates_a_loader(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        """`expr` yields a loader's batches, built here or not: a `DataLoader(...)` this module can see, a value
        known to be a loader (`train_loader = create_dataloader(...)`), or one of those through names and
        wrappers, including an unknown one given it first (`TQDM(enumerate(loader))`, a progress bar)."""
        if depth > _MAX_DEPTH or expr is None:
            return False
        if self.loaders(expr) or self.analysis.kind(expr) is Kind.LOADER:
            return True
        if type(expr) is cst.Call:
            args = positional(expr)
            return bool(args) and self.iterates_a_loader(args[0], depth + 1)
        if type(expr) is cst.Name:
            return any(self.iterates_a_loader(b.value, depth + 1) for b in self.bindings(expr)
                       if b.kind in ("assign", "walrus") and b.index is None)
        return False

    def loops_over(self, loader: cst.Call) -> list[Loop]:
        """The loops of this module that iterate `loader`: `for batch in loader:`, and `while` loops that take
        the next batch of an iterator over it (`it = iter(loader)` ... `while True: batch = next(it)`)."""
        if self._loops_over is None:
            self._loops_over = {}
            for node in of_types(self.index, cst.For, cst.While):
                for call in {id(c): c for c in self.loop_loaders(node)}.values():  # type: ignore[arg-type]
                    self._loops_over.setdefault(id(call), []).append(node)
        return self._loops_over.get(id(loader), [])

    def loop_loaders(self, loop: Loop) -> list[cst.Call]:
        """The `DataLoader(...)` calls whose batches `loop` takes, one per iteration."""
        if type(loop) is cst.For:
            found = self.loaders(loop.iter)
            if found:
                return found
        # `it = iter(loader)` / `batches = cycle(loader)`, then `batch = next(it)` in the loop's own body
        return [c for node in self._next_calls().get(id(loop), ()) for c in self._next_of(node)]

    def _next_calls(self) -> dict[int, list[cst.Call]]:
        """The module's `next(...)` calls by the loop whose own body holds them (the innermost loop around each,
        not across a nested function or class), in document order: what a walk of each loop's body found, with
        one look at the module's calls instead of a walk of every loop's body (loops nest)."""
        if self._nexts is None:
            self._nexts = {}
            for node in of_types(self.index, cst.Call):
                if dotted_name(node.func) != "next" and not _dunder_next(node):  # type: ignore[arg-type]
                    continue  # (`_next_of` answers nothing for any other call)
                loop = self._innermost_loop(node)
                if loop is not None and self.index.is_ancestor_or_self(loop.body, node):
                    self._nexts.setdefault(id(loop), []).append(node)  # type: ignore[arg-type]
        return self._nexts

    def _next_of(self, call: cst.Call) -> list[cst.Call]:
        """`next(it)` (or `it.__next__()`) where `it` iterates a loader: that loader."""
        if _dunder_next(call):
            return self.loaders(call.func.value)  # type: ignore[attr-defined]
        if dotted_name(call.func) != "next" or not call.args or call.args[0].keyword is not None:
            return []
        return self.loaders(call.args[0].value)

    def _innermost_loop(self, node: cst.CSTNode) -> Optional[Loop]:
        for parent in self.index.ancestors(node):
            if type(parent) in (cst.For, cst.While):
                return parent
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return None
        return None

    # -- which loop's batch a value comes from -----------------------------------------------------------------
    def batch_loop(self, expr: cst.CSTNode, within: Optional[cst.CSTNode] = None,
                   depth: int = 0) -> Optional[Loop]:
        """The loop over a DataLoader, around `within` (default: `expr`), whose batch `expr` is part of."""
        within = expr if within is None else within
        if depth > _MAX_DEPTH:
            return None
        if type(expr) is cst.Subscript:
            return self.batch_loop(expr.value, within, depth + 1)
        if type(expr) is cst.Call and self._next_of(expr):
            loop = self._innermost_loop(expr)  # `batch = next(it)`: one batch per iteration of this loop
            return loop if loop is not None and self.index.is_ancestor_or_self(loop.body, within) else None
        if type(expr) is cst.Call and type(expr.func) is cst.Attribute:
            if expr.func.attr.value in ("items", "values", "to", "cuda") or (
                    expr.func.attr.value in CONVERSIONS and not expr.args):
                return self.batch_loop(expr.func.value, within, depth + 1)  # `x.float()` holds x's values
            return None
        if type(expr) is cst.Call and expr.args and expr.args[0].keyword is None and not expr.args[0].star and \
                self.analysis.qualified(expr.func) in _VARIABLE:
            return self.batch_loop(expr.args[0].value, within, depth + 1)  # `Variable(inputs)`: the same tensor
        if type(expr) is not cst.Name:
            return None
        for b in self.bindings(expr):
            if b.kind == "for" and type(b.source) is cst.For and self.iterates_a_loader(b.source.iter):
                if self.index.is_ancestor_or_self(b.source.body, within):
                    return b.source
                continue
            if b.kind == "assign" and b.index is not None and type(b.value) is cst.Call:
                # `X, offsets, T = unpack_batch(batch)`: parts of the batch (analysis/helper_copies.py)
                element = unpacked_element(self, b.value, b.index)
                if element is not None:
                    loop = self.batch_loop(element, within, depth + 1)
                    if loop is not None:
                        return loop
            if b.kind in ("for", "assign") and b.value is not None:
                loop = self.batch_loop(b.value, within, depth + 1)
                if loop is not None:
                    return loop
        return None

    def moves_batches(self, loop: Loop) -> bool:
        """The loop copies one of its batches to an accelerator in its own body."""
        found = self._moves.get(id(loop))
        if found is None:
            found = self._moves[id(loop)] = any(
                type(node) is cst.Call and (self.copy_target(node) == ACCELERATOR and (
                    self.batch_loop(node.func.value) is loop  # type: ignore[union-attr]
                    or self._built_from_batch(node.func.value, loop))  # type: ignore[union-attr]
                                            or self._helper_moves(node, loop)) for node in _walk(loop.body))
        return found

    def _built_from_batch(self, value: cst.BaseExpression, loop: Loop) -> bool:
        """`torch.cat([1 - torch.sum(msk[:, i], dim=0), msk[:, i]], 0)` moved with `.cuda()`: a host tensor a
        `torch.*` function builds from parts of the loop's batch (the batch goes to the device piece by piece)."""
        if type(value) is not cst.Call or not (dotted_name(value.func) or "").startswith("torch."):
            return False
        return any(type(n) is cst.Name and self.batch_loop(n) is loop
                   for arg in value.args for n in _walk(arg.value))

    def _helper_moves(self, call: cst.Call, loop: Loop) -> bool:
        """A project function or method handed the loop's batch that copies it to the GPU on every call
        (`model.parse_batch(batch)`: `FunctionSummary.moves_params`)."""
        return any(self.batch_loop(value) is loop for value in self.helper_moved_args(call))

    def helper_moved_args(self, call: cst.Call, tensors: bool = False) -> list[cst.BaseExpression]:
        """The arguments `call` passes at parameters its project callee copies to the GPU on every call
        (`FunctionSummary.moves_params`: `model_wrap(X, offsets, device)` moving `X` and `offsets`); [] when
        unknown (a star argument hides the positions after it). `tensors`: also the parameters it copies whenever
        they are tensors (`FunctionSummary.moves_tensor_params`), for a caller that knows it hands a tensor."""
        if not call.args or type(call.func) not in (cst.Name, cst.Attribute):
            return []
        calls = self.analysis.fact(project_calls)
        target = (calls.callee(call, own_module=True) or calls.local_callee(call)) if calls is not None else None
        moves = (target[1].moves_params | target[1].moves_tensor_params if tensors else target[1].moves_params) \
            if target is not None else frozenset()
        if not moves:
            return []
        summary, bound = target[1], target[2]
        params = summary.params[1:] if bound and summary.params else summary.params
        position = 0
        moved = []
        for arg in call.args:
            if arg.star:
                return moved  # the positions after a star argument are unknown
            name = arg.keyword.value if arg.keyword is not None else (
                params[position] if position < len(params) else None)
            if arg.keyword is None:
                position += 1
            if name in moves:
                moved.append(arg.value)
        return moved

    def body_calls(self, loop: Loop) -> Iterator[cst.Call]:
        return (n for n in _walk(loop.body) if type(n) is cst.Call)

    # -- where a copy goes -------------------------------------------------------------------------------------
    def copy_target(self, call: cst.Call) -> Optional[str]:
        """ACCELERATOR for `.cuda()`/`.to(<device>)` of a possible tensor, CPU for copies to the host, else None."""
        key = id(call)
        if key not in self._copy_targets:
            self._copy_targets[key] = self._copy_target(call)
        return self._copy_targets[key]

    def _copy_target(self, call: cst.Call) -> Optional[str]:
        func = call.func
        if type(func) is not cst.Attribute or func.attr.value not in ("to", "cuda") or has_star_args(call):
            return None
        if self.analysis.kind(func.value) in (Kind.MODULE, Kind.MODULE_CLASS, Kind.LOADER, Kind.OPTIMIZER,
                                              Kind.NUMBER, Kind.NUMPY, Kind.DEVICE):
            return None
        if func.attr.value == "cuda":
            return ACCELERATOR
        target = argument(call, "device", 0)
        return self.device_of(target.value) if target is not None else None

    def device_of(self, expr: cst.CSTNode, depth: int = 0) -> Optional[str]:
        """CPU, ACCELERATOR, or None when `expr` is not known to name a device (a dtype, a tensor, ...)."""
        if depth > _MAX_DEPTH:
            return None
        text = string_value(expr)
        if text is not None:
            return CPU if text.split(":")[0] == "cpu" else (ACCELERATOR if _accelerator_name(text) else None)
        if type(expr) is cst.FormattedString:
            head = "".join(p.value for p in expr.parts if type(p) is cst.FormattedStringText)
            return ACCELERATOR if _accelerator_name(head) else None
        if type(expr) is cst.Integer:
            return ACCELERATOR  # a CUDA device index
        if type(expr) is cst.IfExp:
            sides = {self.device_of(expr.body, depth + 1), self.device_of(expr.orelse, depth + 1)}
            return ACCELERATOR if ACCELERATOR in sides else (CPU if sides == {CPU} else None)
        if type(expr) is cst.Call:
            q = self.analysis.qualified(expr.func)
            if q == "torch.device":
                args = positional(expr) or [a.value for a in expr.args if a.keyword and a.keyword.value == "type"]
                return self.device_of(args[0], depth + 1) if args else None
            if q in ("torch.cuda.current_device", "torch.accelerator.current_accelerator"):
                return ACCELERATOR
            from gpulint.analysis.device_functions import returned_device

            return returned_device(self.analysis, expr)  # `dist_util.dev()`: a project function returning one
        if type(expr) is cst.Attribute:
            if expr.attr.value == "device" and self._device_of_host(expr):
                return CPU  # `batch_y.device` of a host batch never moved (`batch_y = batch_y.float()`)
            if expr.attr.value == "device" or self.analysis.kind(expr) is Kind.DEVICE:
                return ACCELERATOR  # `x.device`, `self.device`, `args.device`: a device the code chose
            if expr.attr.value.lower() in _DEVICE_NAMES:
                # `.to(self.gpu_id)`, `.to(args.local_rank)`: a CUDA device index (an `mp.spawn` rank, `LOCAL_RANK`),
                # as for a name; unless every `self.<name> = ...` of the module names the CPU
                if type(expr.value) is cst.Name and expr.value.value == "self":
                    values = self.self_attributes().get(expr.attr.value, [])
                    if values and {self.device_of(v, depth + 1) for v in values} == {CPU}:
                        return CPU
                return ACCELERATOR
            return None
        if type(expr) is cst.Name:
            bindings = self.bindings(expr)
            if not bindings and type(self.index.enclosing_scope(expr)) is cst.FunctionDef:
                # `global cuda; cuda = torch.device('cuda')` in `main()`, read as `.to(cuda)` in `train()`
                bindings = self.analysis.kinds.declared_global_bindings(expr.value)
            values = [b.value for b in bindings if b.kind in ("assign", "walrus")]
            kinds = {self.device_of(v, depth + 1) for v in values if v is not None}
            if kinds == {CPU}:
                return CPU
            if ACCELERATOR in kinds:
                return ACCELERATOR
            if self.analysis.kind(expr) is Kind.DEVICE or expr.value.lower() in _DEVICE_NAMES or \
                    expr.value.lower().endswith("_device"):
                return ACCELERATOR
        return None

    # -- module-wide hints -------------------------------------------------------------------------------------
    def feeds_an_accelerator(self) -> bool:
        """A loader of this module may need pinning at all (`would_pin`): the module names CUDA itself, or one
        of its loops copies its batch to an accelerator. Asked before looking calls up as loader factories of
        the project, which costs a summary of every function the module calls."""
        if self._feeds is None:
            self._feeds = self.clearly_cuda() or any(self._moves_a_batch(call) for call in of_types(self.index, cst.Call))
        return self._feeds

    def _moves_a_batch(self, call: cst.Call) -> bool:
        """`call` copies a batch to an accelerator in the body of the loop that takes it (`moves_batches` of
        that loop), asked of each copy once rather than of each loop's whole body."""
        if self.copy_target(call) != ACCELERATOR:
            return False
        loop = self.batch_loop(call.func.value)  # type: ignore[union-attr]
        return loop is not None and any(a is loop for a in self.index.ancestors(call)) and \
            self.index.is_ancestor_or_self(loop.body, call)

    def clearly_cuda(self) -> bool:
        """The module names CUDA itself: a "cuda" device string, `.cuda()`, or `torch.cuda.*`."""
        if self._cuda is None:
            self._cuda = self._names_cuda()
        return self._cuda

    def _names_cuda(self) -> bool:
        source = self.analysis.source
        if source is not None and "cuda" not in source:
            return False  # every way below of naming CUDA spells it (an alias is imported by its name)
        for node in of_types(self.index, cst.SimpleString, cst.Attribute):
            if type(node) is cst.SimpleString:
                text = string_value(node)
                if text is not None and text.startswith("cuda"):
                    return True
            elif type(node) is cst.Attribute:
                if node.attr.value == "cuda" and isinstance(self.analysis.parent(node), cst.Call):
                    return True
                q = self.analysis.qualified(node)
                if q is not None and q.startswith("torch.cuda."):
                    return True
        return False

    def on_device(self, expr: Optional[cst.CSTNode], depth: int = 0) -> bool:
        """`expr` (a dataset, a tensor) was built from tensors moved to an accelerator."""
        if expr is None or depth > _MAX_DEPTH:
            return False
        if type(expr) is cst.Name:
            return any(self.on_device(b.value, depth + 1) for b in self.bindings(expr)
                       if b.kind in ("assign", "walrus") and not self._bound_after(b, expr))
        for node in _walk(expr):
            if type(node) is cst.Call:
                if self.copy_target(node) == ACCELERATOR:
                    return True
                device = keyword(node, "device")
                if device is not None and self.device_of(device.value) == ACCELERATOR:
                    return True
                if node is not expr and type(node.func) is cst.Name and self.on_device(node.func, depth + 1):
                    return True
            if type(node) is cst.Name and node is not expr and self.on_device(node, depth + 1):
                return True
        return False

    # -- helpers -----------------------------------------------------------------------------------------------
    def _bound_after(self, binding, name: cst.Name) -> bool:
        """`binding` is written after `name` is read, and no loop around the read holds it: it cannot reach the
        read (`x = x_train.to(device)` in the loop over a loader built before from `x`, the function's host data)."""
        source = binding.source
        here, there = self.index.order(name), self.index.order(source) if source is not None else None
        if here is None or there is None or there < here:
            return False
        return not any(type(a) in (cst.For, cst.While) and self.index.is_ancestor_or_self(a, source)
                       for a in self.index.ancestors(name))

    def bindings(self, name: cst.Name):
        return self.index.visible_bindings(name)

    def arguments_for(self, binding) -> Iterator[cst.BaseExpression]:
        """The arguments this module's own calls pass to the parameter `binding`."""
        fn = binding.source
        if type(fn) is not cst.FunctionDef:
            return
        params = list(fn.params.posonly_params) + list(fn.params.params)
        names = [p.name.value for p in params]
        for call in self._calls_to(fn):
            arg = argument_for(call, names, binding.name)
            if arg is not None:
                yield arg.value

    def _calls_to(self, fn: cst.FunctionDef) -> list[cst.Call]:
        return self.analysis.loops.calls_to(fn)

    def self_attributes(self) -> dict[str, list[cst.BaseExpression]]:
        """What `self.<name> = value` assigns anywhere in the module."""
        if self._self_attrs is None:
            self._self_attrs = {}
            for node in of_types(self.index, cst.Assign):
                for target in node.targets:
                    t = target.target
                    if type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self":
                        self._self_attrs.setdefault(t.attr.value, []).append(node.value)
        return self._self_attrs


def _accelerator_name(text: str) -> bool:
    return text.split(":")[0] in ("cuda", "mps", "xpu", "xla", "npu", "hpu")


def _dunder_next(call: cst.Call) -> bool:
    """`it.__next__()`: what `next(it)` calls."""
    return type(call.func) is cst.Attribute and call.func.attr.value == "__next__" and not call.args


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and its descendants, not entering nested function or class definitions."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and type(current) in (cst.FunctionDef, cst.ClassDef):
            continue
        stack.extend(reversed(child_nodes(current)))  # not `.children`: that rebuilds every node


def data_facts(analysis: ModuleAnalysis) -> DataFacts:
    return analysis.fact(DataFacts)
