"""What kind of value an expression holds: a tensor, a numpy array, a Python number, a model, a data loader...

Flow-insensitive and per scope, like a reader skimming the file: a name is a tensor when what is assigned to it is
one. Unknown stays unknown: rules that need certainty (float(x), `if x:`) only fire on TENSOR, so a wrong guess
costs a missed finding, never a false alarm.
"""

from __future__ import annotations

import enum
import re
from typing import Callable, Optional

from gpulint.analysis.progress_wrappers import is_progress_wrapper
import libcst as cst

from gpulint.analysis.imports import dotted_name
from gpulint.analysis.narrowing import guarded_into_loader
from gpulint.analysis.tree import Binding, Scope, SyntaxIndex
from gpulint.analysis.node_types import of_types
from gpulint.analysis.tree import child_nodes as _child_nodes, own_scope_nodes
from gpulint.analysis.unmoved import read_before_its_move, torch_layer, unmoved_loader_element
from gpulint.syntax import code_of, positional_names, target_names


# Calls that iterate what they are given (their first argument's elements, numbered or zipped).
_LOOPING = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "islice",
                                 "itertools.islice", "reversed", "zip"})

class Kind(enum.Enum):
    TENSOR = "tensor"  # a torch.Tensor, or a batch/model output holding tensors
    NUMPY = "numpy"
    NUMBER = "number"  # a Python int/float/bool
    MODULE = "module"  # an nn.Module or other callable whose call runs the model (criterion, loss_fn)
    MODULE_CLASS = "module-class"  # a class deriving from nn.Module: calling it builds a MODULE
    LOADER = "loader"  # a DataLoader-like iterable of batches
    OPTIMIZER = "optimizer"
    DEVICE = "device"
    OTHER = "other"  # known, and none of the above (str, list, dict, None, a scheduler...)
    UNKNOWN = "unknown"


# Module methods yielding `(name, member)` pairs, and the kind of the member
_NAMED_MEMBERS = {"named_parameters": Kind.TENSOR, "named_buffers": Kind.TENSOR, "named_children": Kind.MODULE,
                  "named_modules": Kind.MODULE}

# diffusers' network classes (`AutoencoderKL`, `UNet2DConditionModel`, `VQModel`, `Transformer2DModel`), not its
# schedulers, pipelines or configurations.
_DIFFUSERS_MODEL = re.compile(r"^(Autoencoder\w*|\w*Model|VQModel|\w*VAE\w*)$")

# Names people give these objects; used only when the assignments say nothing.
_MODULE_NAME = re.compile(r"^(model|net|network|module|criterion|loss_fn|lossfn|loss_func|loss_function|"
                          r".*_model|model_.*|.*_net|.*_criterion|criterion_.*|encoder|decoder|generator|"
                          r"discriminator|classifier|backbone|ddp_model|raw_model|teacher|student)$")
# A name that starts with a verb names a function or method (`self.get_bare_model(net)`, `self.save_model()`,
# `log_optimizer`), not the model, loader or optimizer its other words mention. (Factories, `self._setup_model(...)`
# or `build_model(...)`, are left to the name's other words: what they return is the thing named.)
_VERB_PREFIX = re.compile(r"^_*(get|save|print|export|freeze|unfreeze|update|reset|log|set|apply|convert|copy)_")
# `model_func`: a function that runs the model (OpenPCDet's `model_func(model, batch)` returning `loss, tb_dict,
# disp_dict`) or builds one (`self.feature = model_func()`), not the model; the listed loss names stay modules.
_FUNCTION_NAME = re.compile(r"^(?!loss_func$).*_func$")
# Methods a tensor, an array or a Python object does not have and a PyTorch module does (`_run_module_params`).
_ONLY_MODULE_METHODS = frozenset({"eval", "parameters", "named_parameters", "state_dict", "load_state_dict",
                                  "modules", "named_modules", "children", "named_children"})
# Methods only a PyTorch module answers together (`self.model.train()`, `.parameters()`): `_treated_as_module`
_MODULE_METHODS = frozenset({"train", "eval", "parameters", "named_parameters", "state_dict", "load_state_dict",
                             "zero_grad", "modules", "named_modules", "children", "requires_grad_", "half", "float",
                             "cuda", "to", "apply", "register_forward_hook", "buffers"})
_LOADER_NAME = re.compile(r"^(.*loader.*|.*_dl|dl|dl_.*|.*dataloader.*)$", re.IGNORECASE)
# `data_loaders_val`, `loaders`: a collection of loaders (`for name, loader in zip(names, loaders)`), not batches
_SEVERAL_LOADERS = re.compile(r"loaders|_dls$|^dls$", re.IGNORECASE)
_OPTIMIZER_NAME = re.compile(r"^(opt|optim|optimizer|optimiser|.*_optimizer|optimizer_.*|.*_opt|opt_.*|"
                             r"scaler|grad_scaler|.*_scaler)$")

# torch.* callables that do not return a tensor.
_TORCH_NON_TENSOR_PREFIXES = (
    "torch.cuda.", "torch.backends.", "torch.distributed.", "torch.jit.", "torch.autograd.profiler",
    "torch.profiler.", "torch.utils.", "torch.multiprocessing.", "torch.hub.", "torch.onnx.", "torch.fx.",
    "torch.testing.", "torch.amp.", "torch.mps.", "torch.xpu.", "torch.accelerator.", "torch.compiler.",
    "torch.optim.lr_scheduler.", "torch._dynamo.", "torch.export.", "torch.serialization.", "torch.random.",
)
_TORCH_NON_TENSOR = {
    "torch.device", "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled",
    "torch.autocast", "torch.manual_seed", "torch.seed", "torch.save", "torch.load", "torch.is_tensor",
    "torch.is_floating_point", "torch.is_complex", "torch.is_grad_enabled", "torch.numel", "torch.Size",
    "torch.Generator", "torch.dtype", "torch.finfo", "torch.iinfo", "torch.compile", "torch.get_default_dtype",
    "torch.set_default_dtype", "torch.use_deterministic_algorithms", "torch.set_float32_matmul_precision",
    "torch.set_num_threads", "torch.get_num_threads", "torch.set_printoptions", "torch.equal",
    "torch.allclose", "torch.is_nonzero", "torch.initial_seed", "torch.set_anomaly_enabled",
    "torch.autograd.set_detect_anomaly", "torch.autograd.detect_anomaly", "torch.stream", "torch.Event",
    "torch.Stream", "torch.typename", "torch.is_storage",
}
_TORCH_NUMBER = {"torch.numel", "torch.is_tensor", "torch.equal", "torch.allclose", "torch.is_nonzero",
                 "torch.is_floating_point", "torch.is_complex", "torch.is_grad_enabled", "torch.initial_seed"}

# Tensor methods whose result is not a tensor.
TENSOR_METHODS_NUMBER = {"item", "dim", "ndimension", "numel", "nelement", "element_size", "data_ptr",
                         "get_device", "is_contiguous", "is_floating_point", "is_complex", "is_pinned",
                         "equal", "is_set_to", "is_shared", "__len__", "__bool__", "__float__", "__int__"}
TENSOR_METHODS_OTHER = {"tolist", "size", "stride", "backward", "register_hook", "storage", "untyped_storage",
                        "type", "__repr__", "__str__", "__format__", "retain_grad", "record_stream"}
TENSOR_ATTRS_OTHER = {"shape", "dtype", "ndim", "is_cuda", "is_sparse", "requires_grad", "grad_fn", "is_leaf",
                      "names", "layout", "is_quantized", "is_meta", "is_mps", "itemsize", "nbytes"}
# Counts a batch or graph object carries as Python ints, whatever device its tensors are on (PyG's `Data`/`Batch`
# `num_nodes`, `num_graphs`, a `NeighborLoader` batch's `batch_size`): no tensor has such a field
# A sampled batch's counts per hop (a `NeighborLoader` batch's `num_sampled_nodes`/`num_sampled_edges`) are lists of
# Python ints: `batch.num_sampled_nodes[0]` is a host int, whatever device the batch moved to.
COUNT_FIELDS = {"batch_size", "num_nodes", "num_graphs", "num_edges", "num_features", "num_node_features",
                "num_edge_features", "num_sampled_nodes", "num_sampled_edges"}
_MODULE_METHODS_SELF = {"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16",
                        "requires_grad_", "share_memory", "to_empty", "type"}
_NUMBER_BUILTINS = {"float", "int", "bool", "len", "round", "complex", "ord", "hash", "id"}
_OTHER_BUILTINS = {"str", "repr", "format", "list", "dict", "tuple", "set", "frozenset", "range", "sorted",
                   "print", "open", "isinstance", "type", "getattr", "hasattr", "vars", "iter", "map", "filter"}


def _constant_key_of(expr: cst.BaseExpression) -> Optional[str]:
    """The text of a plain string key (`"critic"`), else None."""
    if type(expr) is cst.SimpleString and expr.prefix.lower() in ("", "r"):
        return expr.value[len(expr.prefix) + 1:-1]
    return None


def _constant_key(node: cst.Subscript) -> Optional[str]:
    """`"critic"` of `losses["critic"]`; None for any other subscript (a variable, a slice, several)."""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    return _constant_key_of(node.slice[0].slice.value)  # type: ignore[union-attr]


def _stored_by_key(scope: cst.CSTNode, name: str) -> bool:
    """Some statement of `scope` writes an entry of `name` (`name[...] = ...`, `name[...] += ...`) or updates
    it (`name.update(...)`, `name.setdefault(...)`)."""
    from gpulint.analysis.tree import descendants

    for node in descendants(scope):
        targets = [t.target for t in node.targets] if type(node) is cst.Assign else \
            [node.target] if type(node) in (cst.AugAssign, cst.AnnAssign) else []
        if any(type(t) is cst.Subscript and type(t.value) is cst.Name and t.value.value == name for t in targets):
            return True
        if type(node) is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name and \
                node.func.value.value == name and node.func.attr.value in ("update", "setdefault", "__setitem__"):
            return True
    return False


def _tensor_type_tested(test: cst.BaseExpression, qualified) -> Optional[cst.Name]:
    """`isinstance(n, torch.Tensor)` / `isinstance(n, Tensor)` / `torch.is_tensor(n)` of a plain name: the name."""
    if type(test) is not cst.Call or not test.args or type(test.args[0].value) is not cst.Name:
        return None
    func = qualified(test.func) or dotted_name(test.func)
    if func == "isinstance" and len(test.args) == 2:
        cls = qualified(test.args[1].value) or dotted_name(test.args[1].value)
        return test.args[0].value if cls in ("torch.Tensor", "Tensor", "torch.tensor.Tensor") else None
    if func in ("torch.is_tensor",) and len(test.args) == 1:
        return test.args[0].value
    return None


def _eager_size(value: cst.BaseExpression) -> bool:
    """`x.shape[0]`, `x.size(0)`, `x.numel()`, `x.dim()`, `len(x)`: a Python int in eager mode."""
    if type(value) is cst.Subscript:
        return type(value.value) is cst.Attribute and value.value.attr.value == "shape"
    if type(value) is not cst.Call:
        return False
    if type(value.func) is cst.Name:
        return value.func.value == "len"
    if type(value.func) is cst.Attribute:
        attr = value.func.attr.value
        return attr in ("numel", "dim") and not value.args or attr == "size" and len(value.args) == 1
    return False


def _assigns_none(b: Binding) -> bool:
    return b.kind == "assign" and type(b.value) is cst.Name and b.value.value == "None"


def _reads_itself(name: str, b: Binding) -> bool:
    """`loss = loss.item()`, `loss = loss.detach().mean().item()`, `loss = float(loss)`: a plain assignment of
    a host read of the name's own earlier value."""
    if b.kind != "assign" or b.index is not None or type(b.value) is not cst.Call:
        return False
    call = b.value
    if type(call.func) is cst.Name and call.func.value in ("float", "int") and len(call.args) == 1:
        receiver = call.args[0].value
    elif type(call.func) is cst.Attribute and call.func.attr.value in ("item", "tolist") and not call.args:
        receiver = call.func.value
    else:
        return False
    while type(receiver) is cst.Call and type(receiver.func) is cst.Attribute:
        receiver = receiver.func.value
    return type(receiver) is cst.Name and receiver.value == name


def _join(kinds: list[Kind]) -> Kind:
    known = {k for k in kinds if k is not Kind.UNKNOWN}
    if not known:
        return Kind.UNKNOWN
    if len(known) == 1:
        return known.pop()
    # `total = 0` then `total += loss`: the number is only the starting value.
    if known == {Kind.TENSOR, Kind.NUMBER}:
        return Kind.TENSOR
    return Kind.UNKNOWN


class KindInference:
    def __init__(self, index: SyntaxIndex) -> None:
        self.index = index
        self._cache: dict[int, Kind] = {}
        self._host_copies: dict[int, bool] = {}  # `_host_copy`, by node (False while one is being worked out)
        self._assumed_host: set[str] = set()  # `on_host`: names rebound from themselves, while their bindings are checked
        self._binding_cache: dict[tuple[int, str], Kind] = {}
        self._in_progress: set[tuple[int, str]] = set()
        # The names whose bindings were being decided when a question came back to them (`t = t[j]`, asked
        # from inside `t`): an answer that leaned on such a cut is provisional until that name is decided,
        # and is not remembered before then (else the order in which rules ask would change the answers).
        self._cuts: list[tuple[int, str]] = []
        self._buffers: Optional[set[str]] = None
        self._stored_values: Optional[dict] = None  # (class, attribute) -> the values `self.<attribute> =` stores
        self._module_params: Optional[set] = None  # (function, parameter) run as a network: `_run_module_params`
        self._module_evidence: Optional[set] = None  # (class, attribute or "*backward*"): `_treated_as_module`
        self._backward_entries: Optional[set[tuple[int, str, str]]] = None  # (class, attribute, key): `_backpropagated_entry`
        self._returning: set[int] = set()  # nested functions whose returns are being read (recursion guard)
        self._rereads: dict[tuple[int, str], list] = {}  # (scope, name) -> statements `x = x.item()` (`_after_own_read`)
        self._globals: Optional[dict[str, list]] = None  # name -> the functions declaring it `global`
        # name -> the scopes where a str-only method / `.backward()` is called on it (`_used_as_text`,
        # `_backward_called_on`): each name's uses walked once, not once per question (a module of a thousand
        # functions each naming `loss` asked about every one of them: quadratic)
        self._text_scopes: dict[str, list[Scope]] = {}
        self._backward_scopes: dict[str, list[Scope]] = {}
        self._name_aliases: dict[str, list] = {}  # `_aliases_named`
        # analysis/__init__.py: the kind of `self.<name>` from what the project passes to the class (a loader
        # handed to `__init__` and stored), asked only where the module itself cannot tell
        self.self_attribute_hook: Optional[Callable[[cst.Attribute], Kind]] = None
        # `self.network` named like a model, which the class's declarations or its own use say holds an
        # `nn.Module` (analysis/module_attrs.py): calling it runs the network
        self.declared_module_hook: Optional[Callable[[cst.Attribute], bool]] = None
        # `meter.avg` that an earlier `meter.update(<device tensor>)` had the object's class keep (kept_values.py)
        self.kept_attribute_hook: Optional[Callable[[cst.Attribute], bool]] = None
        # a project helper computing its result from the device tensors a call hands it (derived_returns.py)
        self.derived_tensor_hook: Optional[Callable[[cst.Call], bool]] = None
        # analysis/__init__.py: whether a call into the project (`self._loss_step(batch)`, `compute_loss(...)`)
        # returns a tensor by its summary; asked only for what an accumulator is given (`total += <call>`)
        self.returns_tensor_hook: Optional[Callable[[cst.Call], bool]] = None
        # analysis/__init__.py (analysis/host_values.py): a call whose result is in host memory (a torch factory
        # without `device=` where no CUDA default is set, a project function returning `.cpu()` copies), and a
        # parameter every call site of which passes a host value; asked only by `on_host`
        self.host_call_hook: Optional[Callable[[cst.Call], bool]] = None
        # analysis/host_values.py: the arguments of a call of a project function that computes its result where
        # they live (`xyxy2xywh(boxes)`), else None
        self.where_given_hook: Optional[Callable[[cst.Call], Optional[list]]] = None
        self.host_param_hook: Optional[Callable[[cst.Name, int], bool]] = None
        # analysis/__init__.py (analysis/skipped_keys.py): `batch['meta']` of a parameter that the per-step caller
        # passes a batch whose copy loop skips that key; asked only by `on_host`
        self.host_entry_hook: Optional[Callable[[cst.Subscript], bool]] = None
        # analysis/__init__.py (analysis/unmoved.py): `T` of `X, T = unpack_batch(batch)` in a loop over a loader
        # is a part of the batch the loop leaves on the host; asked only by `on_host`
        self.unpacked_part_hook: Optional[Callable[[cst.Name, Binding], bool]] = None
        # analysis/__init__.py: the kind of a parameter from what the calls of its function pass (a loader)
        self.parameter_hook: Optional[Callable[[Binding], Kind]] = None
        # analysis/__init__.py: a call of a project function of another module returning a loader
        # (analysis/loader_calls.py: `data = load_data(...)`, a generator handing on a DataLoader's batches)
        self.loader_call_hook: Optional[Callable[[cst.Call], bool]] = None
        # analysis/loader_classes.py: the call builds a project class that wraps a DataLoader and hands on its batches
        self.loader_class_hook: Optional[Callable[[cst.Call], bool]] = None
        # analysis/__init__.py: `X` of `X.apply(...)` is a project subclass of `torch.autograd.Function`
        self.autograd_function_hook: Optional[Callable[[cst.BaseExpression], bool]] = None

    # -- public ------------------------------------------------------------------------------------------------
    def of(self, node: cst.CSTNode) -> Kind:
        key = id(node)
        cached = self._cache.get(key)
        if cached is None:
            start = len(self._cuts)
            cached = self._infer(node)
            if self._settled(start):
                self._cache[key] = cached
        return cached

    def _settled(self, start: int) -> bool:
        """No answer since `start` leaned on a name still being decided."""
        cuts = self._cuts
        if not self._in_progress:
            cuts.clear()
            return True
        return not any(k in self._in_progress for k in cuts[start:])

    def is_tensor(self, node: cst.CSTNode) -> bool:
        return self.of(node) is Kind.TENSOR

    def qualified(self, node: cst.BaseExpression) -> Optional[str]:
        return self.index.imports.qualify(node)

    def name_kind(self, name: str, at: cst.CSTNode) -> Kind:
        scope = self.index.enclosing_scope(at) if type(at) not in (cst.Module, cst.FunctionDef, cst.Lambda) \
            else at
        return self._name_in_scope(name, scope)

    def on_host(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """A value known to be in host memory: a copy to the host (`.cpu()`, `.to("cpu")`, `.numpy()`,
        `.tolist()`, `.item()`), `torch.from_numpy(...)`, or what is indexed or computed from such values alone
        (`correct[i]`, `host.sum()`, `host * 2`). Reading it into Python waits for no GPU. False when unsure."""
        if depth > _MAX_HOST_DEPTH:
            return False
        if type(node) is cst.Call:
            func = node.func
            if type(func) in (cst.Name, cst.Attribute) and self.qualified(func) == "torch.from_numpy":
                return True
            if self.host_call_hook is not None and self.host_call_hook(node):
                return True
            given = self.where_given_hook(node) if self.where_given_hook is not None else None
            if given:  # `xyxy2xywh(host)`: a project function that computes where its arguments live
                hosts = [self.on_host(a, depth + 1) for a in given]
                if any(hosts) and all(h or self.of(a) is Kind.NUMBER for h, a in zip(hosts, given)):
                    return True
            if type(func) is cst.Attribute:
                method = func.attr.value
                if method in ("cpu", "numpy", "tolist", "item"):
                    return True
                if method == "to":
                    # `.to(torch.bool)` converts where the tensor lives
                    return _names_cpu(self, node) or _dtype_only(self, node) and self.on_host(func.value, depth + 1)
                if method == "cuda":
                    return False
                if method == "type_as":  # `torch.ones(n).type_as(x)` goes where `x` is
                    return bool(node.args) and self.on_host(node.args[0].value, depth + 1)
                if method == "type" and node.args:  # `.type(torch.cuda.FloatTensor)` may move it
                    return False
                if self.on_host(func.value, depth + 1):
                    return True
            if type(func) is cst.Name and func.value in _BUILTIN_REDUCTIONS and node.args and \
                    self.index.visible_bindings(func) == [] and \
                    all(not a.star and a.keyword is None and self.on_host(a.value, depth + 1) for a in node.args):
                return True  # `max(predicted)` of a host tensor: its elements are host tensors
            if type(func) is cst.Name and torch_layer(self, func):
                # `upsample(host)` of `upsample = nn.Upsample(...)`: a layer computes where its input lives
                first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
                return first is not None and self.on_host(first, depth + 1)
            # `torch.sigmoid(host)`, `F.interpolate(host, size)`: torch computes where its tensor input lives
            name = self.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None
            if name in _EINOPS_RESHAPES:
                first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
                return first is not None and self.on_host(first, depth + 1)
            if name in _LEGACY_CPU_TENSORS:
                return True  # `torch.IntTensor([n])`: the typed legacy constructors build in host memory
            if name in ("torch.tensor", "torch.as_tensor") and not any(
                    a.keyword is not None and a.keyword.value == "device" for a in node.args):
                # `torch.as_tensor(seeds)` of Python numbers, a list or an array: built in host memory (of a
                # tensor: where that tensor lives)
                first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
                return first is not None and (self.of(first) is not Kind.TENSOR or self.on_host(first, depth + 1))
            if name is not None and name.startswith("torch.") and not any(
                    a.keyword is not None and a.keyword.value == "device" for a in node.args):
                first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
                return first is not None and self.on_host(first, depth + 1)
            return False
        if type(node) in (cst.Subscript, cst.Attribute):
            if type(node) is cst.Subscript and self.host_entry_hook is not None and self.host_entry_hook(node):
                return True  # `batch['meta']` that the caller's copy loop leaves on the host (skipped_keys.py)
            return self.on_host(node.value, depth + 1)
        if type(node) is cst.UnaryOperation:
            return self.on_host(node.expression, depth + 1)
        if type(node) is cst.BooleanOperation:  # `a and b` is one of its operands
            sides = [node.left, node.right]
            # (the operands are within the node, as a tuple's elements are: no name followed, no depth spent)
            # `expand and n < target`: a side the kinds do not take for a tensor (a flag, a number) is no device
            # value; the tensors among the sides must be on the host, and one side at least
            hosts = [self.on_host(side, depth) for side in sides]
            return any(hosts) and all(h or self.of(side) is not Kind.TENSOR for h, side in zip(hosts, sides))
        if type(node) in (cst.Tuple, cst.List):
            # `(ids[0].unsqueeze(0), ids[i:j], ids[-1].unsqueeze(0))` of host tensors, handed to `torch.cat`
            return bool(node.elements) and all(type(e) is cst.Element and self.on_host(e.value, depth)
                                               for e in node.elements)
        if type(node) in (cst.BinaryOperation, cst.Comparison):
            sides = [node.left, node.right] if type(node) is cst.BinaryOperation else \
                [node.left, *(c.comparator for c in node.comparisons)]
            hosts = [self.on_host(side, depth + 1) for side in sides]
            if any(hosts) and any(h and self._host_copy(side) and not self._maybe_scalar(side)
                                  for h, side in zip(hosts, sides)):
                # `flow.cpu() - flow_gt`, `predicted == y` of `_, predicted = torch.max(scores.cpu(), 1)`: a
                # tensor copied to the host mixes with host tensors only (a CUDA operand would raise)
                return True
            return any(hosts) and all(h or self.of(side) is Kind.NUMBER or self._number_by_default(side) or
                                      _special_token_id(side) for h, side in zip(hosts, sides))
        if type(node) is cst.Name:
            if self._moved_to_device_later(node) or unmoved_loader_element(self, node) or \
                    read_before_its_move(self, node) or self._unmoved_batch_part(node):
                return True
            scope = self.index.enclosing_scope(node)
            bindings = self.index.lookup(node.value, scope) if scope is not None else []
            last = self._last_assignment(node, bindings)
            if last is not None:
                return self.on_host(last, depth + 1)
            if len(bindings) == 1 and bindings[0].kind == "param" and self.host_param_hook is not None:
                return self.host_param_hook(node, depth + 1)
            if len(bindings) == 1 and bindings[0].kind == "for" and bindings[0].value is not None:
                # `for seed, image in zip(batch_seeds, images_np)` over host values: each element is on the host
                return self._iterated_on_host(bindings[0].value, bindings[0].index, depth + 1)
            if node.value in self._assumed_host:
                return True  # `p = 0.5 * (q + p)`: host if every other binding is (checked by the caller)
            own = [b for b in bindings if b.value is not None and _reads_name(b.value, node.value)]
            if own and len(own) < len(bindings) and all(type(b.value) is cst.BinaryOperation for b in own):
                self._assumed_host.add(node.value)
            bindings = self._reaching(node, bindings)
            if any(b.kind == "augassign" for b in bindings) and self._host_through_updates(node, depth):
                return True
            try:
                return bool(bindings) and all(b.kind in ("assign", "walrus") and b.value is not None and (
                    self.on_host(b.value, depth + 1) if b.index is None else self._computed_on_host(b.value, depth)
                    or self._returned_on_host(b.value, b.index, depth)) or self._host_update(b, depth) or
                    # `for index, i in enumerate(keys)` in two loops of the function: each over host values
                    b.kind == "for" and b.value is not None and self._iterated_on_host(b.value, b.index, depth + 1)
                    for b in bindings)
            finally:
                self._assumed_host.discard(node.value)
        return False

    def _host_through_updates(self, name: cst.Name, depth: int) -> bool:
        """`boxes = boxes.cpu()` then `boxes /= scale` before the read: an in-place update of a tensor never moves
        it, whatever the operand (a CUDA operand of a host tensor's in-place op raises), so a name whose plain
        bindings reaching the read are all host tensors (not numbers: `n = t.item(); n += cuda_t` is a CUDA
        tensor) stays on the host through its augmented assignments."""
        reaching = self.reaching_bindings(name)
        plain = [b for b in reaching if b.kind != "augassign"]
        return bool(plain) and len(plain) < len(reaching) and all(
            b.kind == "augassign" and b.index is None for b in reaching if b.kind == "augassign") and all(
            b.kind in ("assign", "walrus") and b.index is None and b.value is not None and
            self.of(b.value) is Kind.TENSOR and self.on_host(b.value, depth + 1) for b in plain)

    def _host_update(self, b: Binding, depth: int) -> bool:
        """`n += to_mask.numel()`, `n -= host[i]`: an augmented assignment adding a Python number or a host value
        leaves a host tensor on the host (the name's other bindings decide whether it is one)."""
        return b.kind == "augassign" and b.value is not None and b.index is None and \
            (self.of(b.value) is Kind.NUMBER or self.on_host(b.value, depth + 1))

    def _reaching(self, name: cst.Name, bindings: list[Binding]) -> list[Binding]:
        """The bindings of a function's local name that may run before `name` is read: not those that come after
        the read (or hold it: `x = x.squeeze(0)` binds after reading) unless a loop around the read holds them too."""
        scope = self.index.enclosing_scope(name)
        if type(scope) is not cst.FunctionDef or any(b.scope is not scope or b.source is None for b in bindings):
            return bindings
        read = self.index.order(name)
        if read is None:
            return bindings
        # a comprehension's `for` clause binds before its element is computed, though written after it
        # (`[data[i:i + n] for i in ix]`): a comprehension around the read holds its bindings as a loop does
        loops = [a for a in self.index.ancestors(name) if type(a) in _LOOPING
                 and self.index.is_ancestor_or_self(scope, a)]
        kept = []
        for b in bindings:
            place = self.index.order(b.source)
            # an assignment holding the read reads before it binds; a `def`, `for` or `with` binds before its body
            holds = type(b.source) in _ASSIGNMENTS and self.index.is_ancestor_or_self(b.source, name)
            if place is None or place < read and not holds or \
                    any(self.index.is_ancestor_or_self(loop, b.source) for loop in loops):
                kept.append(b)
        return kept

    def reaching_bindings(self, name: cst.Name) -> list[Binding]:
        """The bindings of a function's local `name` that may hold its value where it is read, after the nearest
        plain assignment that every path to the read runs (`ex = 0` before `for end in intervals:` hides an
        `ex = val` of an earlier loop); a binding after the read reaches it only through a loop around the read
        that starts after that assignment (`ex = end` at the end of the loop's body)."""
        bindings = self._reaching(name, self.index.visible_bindings(name))
        read = self.index.order(name)
        if read is None:
            return bindings
        sources = {id(b.source) for b in bindings if b.source is not None}
        child: cst.CSTNode = name
        kill = None
        for parent in self.index.ancestors(name):
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module):
                break
            if type(parent) is cst.IndentedBlock:
                before = parent.body[:next((i for i, st in enumerate(parent.body) if st is child), 0)]
                for stmt in reversed(before):
                    if type(stmt) is cst.SimpleStatementLine and any(
                            type(small) is cst.Assign and id(small) in sources and len(small.targets) == 1 and
                            type(small.targets[0].target) is cst.Name for small in stmt.body):
                        kill = stmt
                        break
                if kill is not None:
                    break
            child = parent
        if kill is None:
            return bindings
        start = self.index.order(kill)
        if start is None:
            return bindings
        loops = [a for a in self.index.ancestors(name) if type(a) in (cst.For, cst.While)
                 and (self.index.order(a) or -1) > start]
        kept = []
        for b in bindings:
            place = self.index.order(b.source) if b.source is not None else None
            if place is None:
                kept.append(b)
            elif place >= start and (place < read or any(self.index.is_ancestor_or_self(loop, b.source)
                                                          for loop in loops)):
                kept.append(b)
        return kept

    def _returned_on_host(self, call: cst.BaseExpression, index: int, depth: int) -> bool:
        """Element `index` of what a call of a function or method of this module returns is in host memory:
        every `return` hands back a tuple whose element there is (`return torch.tensor(tokens).unsqueeze(0),
        torch.tensor(weights).unsqueeze(0)`)."""
        returns = self._local_returns(call) if type(call) is cst.Call else None
        if not returns:
            return False
        for ret in returns:
            value = ret.value
            if type(value) is not cst.Tuple or len(value.elements) <= index or \
                    any(type(e) is cst.StarredElement for e in value.elements) or \
                    not self.on_host(value.elements[index].value, depth):
                return False
        return True

    def _local_returns(self, call: cst.Call) -> Optional[list]:
        """The `return` statements of the function (`f(...)`) or method (`self.f(...)`) of this module a call
        runs, the only one by that name; None when it is not one."""
        func = call.func
        if type(func) is cst.Name:
            name = func.value
        elif type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            name = func.attr.value
        else:
            return None
        candidates = self.index.functions.get(name, [])
        if len(candidates) > 1 and type(func) is cst.Attribute:
            # `self.parse_batch_test(batch)` where a base class of this module declares it abstract and a
            # subclass defines it: the enclosing class's own method, else the one definition that returns values
            cls = self.index.enclosing_class(call)
            own = [c for c in candidates if cls is not None and self.index.enclosing_class(c) is cls]
            candidates = own or [c for c in candidates if any(
                type(n) is cst.Return and n.value is not None for n in _own_nodes(c))]
        if len(candidates) != 1:
            return None
        return [n for n in _own_nodes(candidates[0]) if type(n) is cst.Return]

    def _backpropagated_entry(self, node: cst.Subscript) -> bool:
        """`self.<attr>["<key>"]` read in a class one of whose methods calls `self.<attr>["<key>"].backward()`: a
        trainer keeping its losses in a dict attribute; the entry it backpropagates is a tensor (its other
        methods log it: `"%.5f" % self.losses["total_loss"]`). A module's `.backward()` calls are indexed once."""
        key = _constant_key(node)
        value = node.value
        if key is None or type(value) is not cst.Attribute or type(value.value) is not cst.Name or \
                value.value.value != "self":
            return False
        cls = self.index.enclosing_class(node)
        if cls is None:
            return False
        if self._backward_entries is None:
            found: set[tuple[int, str, str]] = set()
            for attr in self.index.names("backward"):
                attribute = self.index.parent.get(attr)
                call = self.index.parent.get(attribute)
                if not (isinstance(attribute, cst.Attribute) and attribute.attr is attr and
                        isinstance(call, cst.Call) and call.func is attribute):
                    continue
                entry = attribute.value
                entry_key = _constant_key(entry) if type(entry) is cst.Subscript else None
                holder = entry.value if type(entry) is cst.Subscript else None
                owner = self.index.enclosing_class(entry)
                if entry_key is not None and type(holder) is cst.Attribute and type(holder.value) is cst.Name and \
                        holder.value.value == "self" and owner is not None:
                    found.add((id(owner), holder.attr.value, entry_key))
            self._backward_entries = found
        return (id(cls), value.attr.value, key) in self._backward_entries

    def _nested_function_returns(self, func: cst.Name) -> Optional[Kind]:
        """What a function defined inside the calling function returns (an optimizer's `closure` that runs the
        forward pass and `loss.backward()` and returns the loss): a tensor when every `return` hands back one;
        None when the name is not bound once to such a `def`, or its returns say nothing."""
        bindings = self.index.visible_bindings(func)
        if len(bindings) != 1 or bindings[0].kind != "def" or type(bindings[0].value) is not cst.FunctionDef:
            return None
        fn = bindings[0].value
        if type(self.index.enclosing_scope(fn)) is not cst.FunctionDef or id(fn) in self._returning:
            return None  # a module's function or a method: its callers are many, its summary decides elsewhere
        self._returning.add(id(fn))
        try:
            returns = [n for n in _own_nodes(fn) if type(n) is cst.Return]
            if not returns or any(r.value is None for r in returns):
                return None
            return Kind.TENSOR if all(self.of(r.value) is Kind.TENSOR for r in returns) else None
        finally:
            self._returning.discard(id(fn))

    def _unmoved_batch_part(self, name: cst.Name) -> bool:
        """`videos, masks = batch` of `for batch in loader`, then only converted (`masks = masks.flatten(1).to(
        torch.bool)`) or copied to the host (`masks = masks.detach().cpu().numpy()`), never copied to a device: the
        part stays where the loader put it, in host memory."""
        from gpulint.analysis.unmoved import iterates_a_loader, rebinds_itself_off_device

        bindings = self.index.visible_bindings(name)
        unpacked = [b for b in bindings if b.kind == "assign" and b.index is not None]
        if len(unpacked) != 1 or type(unpacked[0].value) is not cst.Name:
            return False
        for b in bindings:
            if b is unpacked[0]:
                continue
            if not (b.kind == "assign" and b.index is None and b.value is not None and
                    rebinds_itself_off_device(self, name.value, b.value)):
                return False  # bound to something else, or moved
        whole = self.index.visible_bindings(unpacked[0].value)
        return len(whole) == 1 and whole[0].kind == "for" and \
            type(whole[0].source) is cst.For and iterates_a_loader(self, whole[0].source.iter)

    def _iterated_on_host(self, iterable: cst.BaseExpression, index: Optional[int], depth: int) -> bool:
        """The loop target (element `index` when unpacked) of iterating `iterable` is in host memory: the rows of
        a host tensor or array, through `tqdm`/`enumerate`/`zip` (False when unsure)."""
        if type(iterable) is cst.Call:
            fn = dotted_name(iterable.func)
            args = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if fn == "enumerate" and args and len(iterable.args) == len(args):
                # the counter; or the element, a row of what is enumerated (`for i, l in enumerate(host_lengths)`)
                return index == 0 or index == 1 and self._iterated_on_host(args[0], None, depth)
            if (fn in ("tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "reversed") or is_progress_wrapper(fn)) and args:
                return self._iterated_on_host(args[0], index, depth)
            if fn == "zip" and args and len(iterable.args) == len(args) and index is not None and index < len(args):
                return self.on_host(args[index], depth)
            return False
        return index is None and self.of(iterable) is Kind.TENSOR and self.on_host(iterable, depth)

    def _host_copy(self, node: cst.CSTNode, depth: int = 0) -> bool:
        key = id(node)
        known = self._host_copies.get(key)
        if known is None:
            self._host_copies[key] = False  # a name bound from itself (`epe = epe.view(-1)`) is not followed round
            known = self._host_copies[key] = self._compute_host_copy(node, depth)
        return known

    def _maybe_scalar(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """The value may be a 0-dim tensor (or a numpy scalar): it, or what it is computed from, went through a
        full reduction (`x.norm()`, `x.sum()`, `torch.mean(x)`, no `dim=`). A 0-dim CPU tensor mixes with CUDA
        tensors (`updown.norm() * ratio.cpu()` runs on the GPU), so a copy of one says nothing of the result."""
        if depth > 2:
            return False  # the reduction that makes a scalar sits next to the copy (`norm.cpu()`), not far up
        for sub in _walk_expression(node):
            if type(sub) is cst.Call and type(sub.func) in (cst.Name, cst.Attribute):
                last = sub.func.attr.value if type(sub.func) is cst.Attribute else sub.func.value
                if last in _REDUCTIONS:
                    own = type(sub.func) is cst.Attribute and not (self.qualified(sub.func) or "").startswith("torch.")
                    positional = [a for a in sub.args if a.keyword is None and not a.star]
                    if not any(a.keyword is not None and a.keyword.value in ("dim", "axis") for a in sub.args) and \
                            len(positional) <= (0 if own else 1):
                        return True
            elif type(sub) is cst.Name:
                scope = self.index.enclosing_scope(sub)
                for b in (self.index.lookup(sub.value, scope) if scope is not None else []):
                    if b.kind in ("assign", "walrus") and b.value is not None and b.value is not node and \
                            self._maybe_scalar(b.value, depth + 1):
                        return True
        return False

    def _compute_host_copy(self, node: cst.CSTNode, depth: int) -> bool:
        """A tensor or array copied to the host (`.cpu()`, `.numpy()`, `.to("cpu")`, `torch.from_numpy(...)`), or
        one computed from such a copy (`flow.cpu().permute(1, 2, 0)`, `(host - other).sqrt()`). Arithmetic that
        mixes such a value with another tensor runs on the host: PyTorch refuses a CUDA operand there (only a
        0-dim CPU tensor mixes with CUDA ones, and a copy of a whole batch or image is not one)."""
        if depth > _MAX_HOST_DEPTH:
            return False
        if type(node) is cst.Call:
            func = node.func
            if type(func) is cst.Attribute:
                method = func.attr.value
                if method in ("cpu", "numpy"):
                    return True
                if method == "to":
                    return _names_cpu(self, node)
                if method in ("cuda", "item", "tolist", "type", "type_as"):
                    return False
            name = self.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None
            if name == "torch.from_numpy":
                return True
            if name in _EINOPS_RESHAPES:
                first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
                return first is not None and self._host_copy(first, depth + 1)
            if name is not None and name.startswith("torch.") and not any(
                    a.keyword is not None and a.keyword.value == "device" for a in node.args):
                first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
                return first is not None and self._host_copy(first, depth + 1)  # `torch.sum(host, dim=0)`
            if type(func) is cst.Attribute:
                return self._host_copy(func.value, depth + 1)  # `host.view(-1)`, `host.sqrt()`
            return False
        if type(node) in (cst.Subscript, cst.Attribute):
            return self._host_copy(node.value, depth + 1)
        if type(node) is cst.UnaryOperation:
            return self._host_copy(node.expression, depth + 1)
        if type(node) is cst.BinaryOperation:
            return self._host_copy(node.left, depth + 1) or self._host_copy(node.right, depth + 1)
        if type(node) is cst.Name:
            scope = self.index.enclosing_scope(node)
            bindings = self.index.lookup(node.value, scope) if scope is not None else []
            last = self._last_assignment(node, bindings)
            if last is not None:
                return self._host_copy(last, depth + 1)
            # `predicted = predicted % model.classes`: arithmetic on the copy itself keeps it where it is
            others = [b for b in bindings if not (type(b.value) is cst.BinaryOperation and
                                                  _reads_name(b.value, node.value))]
            bindings = others or bindings
            # `_, predicted = torch.max(scores.cpu(), 1)`: a part of what a torch function computes from a copy
            return bool(bindings) and all(b.kind in ("assign", "walrus") and b.value is not None and
                                          (b.index is None or self._torch_call(b.value)) and
                                          self._host_copy(b.value, depth + 1) for b in bindings)
        return False

    def _torch_call(self, value: cst.CSTNode) -> bool:
        name = self.qualified(value.func) if type(value) is cst.Call and type(value.func) in (
            cst.Name, cst.Attribute) else None
        return name is not None and name.startswith("torch.")

    def _computed_on_host(self, value: cst.CSTNode, depth: int) -> bool:
        """`loss, eer = model.loss(embeds.to(loss_device))` with `loss_device = torch.device("cpu")`: a call whose
        tensor arguments the caller moved to the CPU itself (`.cpu()`, `.to(<a CPU device>)`), deliberately, to
        compute there; what it hands back lives on the host too."""
        if type(value) is not cst.Call or not value.args:
            return False
        moved = False
        for arg in value.args:
            if arg.star:
                return False
            if self._moved_to_cpu(arg.value, depth + 1):
                moved = True
            elif self.of(arg.value) is Kind.TENSOR:
                return False
        return moved

    def _moved_to_cpu(self, node: cst.CSTNode, depth: int) -> bool:
        if depth > _MAX_HOST_DEPTH:
            return False
        if type(node) is cst.Call and type(node.func) is cst.Attribute:
            if node.func.attr.value == "cpu" or node.func.attr.value == "to" and _names_cpu(self, node):
                return True
        if type(node) is cst.Name:
            scope = self.index.enclosing_scope(node)
            bindings = self.index.lookup(node.value, scope) if scope is not None else []
            return bool(bindings) and all(b.kind == "assign" and b.index is None and b.value is not None and
                                          self._moved_to_cpu(b.value, depth + 1) for b in bindings)
        return False

    def _moved_to_device_later(self, name: cst.Name) -> bool:
        """A later statement of the same block moves this very value to the accelerator and rebinds the name
        (`batch = move_to_device(batch, self.device)`, `x = x.cuda()`), with nothing rebinding it in between: the
        value read here is still in host memory (OLMo's `batch.get("instance_mask")` counted before the move)."""
        statement: cst.CSTNode = name
        for parent in self.index.ancestors(name):
            if isinstance(parent, (cst.IndentedBlock, cst.Module)):
                break
            if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.For, cst.While,
                                   cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                return False  # read in a nested scope or loop header: not a plain straight-line read
            statement = parent
        block = self.index.parent.get(statement)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)) or \
                not isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
        body = list(block.body)
        if not any(s is statement for s in body):
            return False
        after = body[next(i for i, s in enumerate(body) if s is statement) + 1:]
        for stmt in after:
            if not isinstance(stmt, cst.SimpleStatementLine):
                return False  # a compound statement may rebind it on some paths: stop looking
            for small in stmt.body:
                targets = small.targets if isinstance(small, cst.Assign) else []
                if isinstance(small, (cst.AugAssign, cst.AnnAssign)) or \
                        any(name.value in target_names(t.target) for t in targets):
                    return len(targets) == 1 and isinstance(targets[0].target, cst.Name) and \
                        self._device_copy_of(small.value, name.value)
        return False

    def _device_copy_of(self, value: cst.BaseExpression, name: str) -> bool:
        """`name.to(<device>)`, `name.cuda()`, or `<...>to_device(name, ...)`/`move_to_<...>(name, ...)`."""
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name:
            if func.attr.value == "cuda":
                return True
            if func.attr.value == "to" and value.args and not _names_cpu(self, value):
                target = value.args[0].value
                code = code_of(target)
                return any(word in code.lower() for word in ("device", "cuda", "gpu", "rank"))
            return False
        callee = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) \
            else ""
        first = value.args[0].value if value.args and value.args[0].keyword is None else None
        return isinstance(first, cst.Name) and first.value == name and \
            (callee.endswith(("to_device", "to_cuda", "to_gpu")) or callee.startswith("move_to"))

    def _number_by_default(self, node: cst.CSTNode) -> bool:
        """A parameter whose default is a number literal (`out_threshold=0.5`), never bound again."""
        found = self.index.parameter_of(node) if type(node) is cst.Name else None
        default = found[1].default if found is not None else None
        if type(default) is cst.UnaryOperation:
            default = default.expression
        return type(default) in (cst.Integer, cst.Float)

    def _last_assignment(self, name: cst.Name, bindings: list[Binding]) -> Optional[cst.BaseExpression]:
        """The value of the plain assignment (`x = value`) that runs last before `name` is read, found by going
        back through the statements of the enclosing blocks; None when that is not plain to see (the name is
        bound again in a loop around the read, or last bound by a compound statement or an unpacking)."""
        last = self._binding_statement_before(name, bindings)
        if last is None:
            return None
        stmt, found = last
        if type(stmt) is cst.If:
            copied = _host_copy_when_on_gpu(stmt, [b.source for b in found], name.value)
            if copied is not None:
                return copied
        source = found[0].source
        plain = type(stmt) is cst.SimpleStatementLine and len(found) == 1 and isinstance(source, cst.Assign) and \
            len(source.targets) == 1 and isinstance(source.targets[0].target, cst.Name)
        return source.value if plain else None  # type: ignore[union-attr]

    def _binding_statement_before(self, name: cst.Name, bindings: list[Binding]
                                  ) -> Optional[tuple[cst.CSTNode, list[Binding]]]:
        """The statement that runs last before `name` is read and binds it (holds the source of one of
        `bindings`), with the bindings it holds, found by going back through the statements of the enclosing
        blocks (`_last_assignment`, `_last_unpacking`); None when there is none in the read's own function, or
        the name is bound again in a loop around the read (a later iteration may read what the loop assigns)."""
        sources = [b.source for b in bindings if b.source is not None]
        child: cst.CSTNode = name
        for parent in self.index.ancestors(name):
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return None
            if type(parent) in (cst.For, cst.While) and any(
                    self.index.is_ancestor_or_self(parent, src) for src in sources):
                return None
            if type(parent) in (cst.IndentedBlock, cst.Module):
                before = parent.body[:next((i for i, st in enumerate(parent.body) if st is child), 0)]
                for stmt in reversed(before):
                    found = [b for b in bindings if b.source is not None and
                             self.index.is_ancestor_or_self(stmt, b.source)]
                    if found:
                        return stmt, found
            child = parent
        return None

    # -- names -------------------------------------------------------------------------------------------------
    def _tracing_only(self, b: Binding) -> bool:
        """`b` is bound in the body of `if isinstance(n, torch.Tensor):` (or `torch.is_tensor(n)`) where every
        binding of `n` visible there is a size (`x.shape[0]`, `x.size(0)`, `x.numel()`, `len(x)`): a Python int in
        eager mode, a tensor only while tracing (detectron2's `num_topk = torch.clamp(topk_idxs_size, ...)`)."""
        if b.kind != "assign" or b.source is None:
            return False
        child: cst.CSTNode = b.source
        for parent in self.index.ancestors(b.source):
            if type(parent) in (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module):
                return False
            if type(parent) is cst.If and child is parent.body:
                tested = _tensor_type_tested(parent.test, self.qualified)
                if tested is not None:
                    bound = self.index.visible_bindings(tested)
                    return bool(bound) and all(t.kind == "assign" and t.index is None and t.value is not None and
                                               _eager_size(t.value) for t in bound)
            child = parent
        return False

    def _name_in_scope(self, name: str, scope: Optional[Scope]) -> Kind:
        while scope is not None:
            bindings = self.index.lookup(name, scope)
            if bindings:
                kind = self._bindings_kind(name, scope, bindings)
                if kind is Kind.UNKNOWN:
                    kind = _kind_from_name(name)
                return kind
            scope = self.index.enclosing_scope(scope) if type(scope) is not cst.Module else None
        if name == "torch":
            return Kind.OTHER
        kind = self._declared_global_kind(name)
        if kind is not Kind.UNKNOWN:
            return kind
        return _kind_from_name(name)

    def declared_global_bindings(self, name: str) -> list:
        """The bindings of a module-level name that only functions declaring it `global` bind (`def main():
        global cuda; cuda = torch.device('cuda')`), in those functions; [] for any other name."""
        self._declared_global_kind("")  # builds self._globals
        found = []
        for scope in self._globals.get(name, ()):  # type: ignore[union-attr]
            found.extend(self.index.lookup(name, scope))
        return found

    def _declared_global_kind(self, name: str) -> Kind:
        """A module-level name with no binding at module level, bound only in functions that declare it
        `global` (`def run(): global dlrm; dlrm = DLRM_Net(...)`): what those functions bind it to."""
        from gpulint.analysis.node_types import of_types

        if self._globals is None:
            self._globals = {}
            for node in of_types(self.index, cst.Global):
                scope = self.index.enclosing_scope(node)
                if type(scope) is cst.FunctionDef:
                    for item in node.names:  # type: ignore[attr-defined]
                        self._globals.setdefault(item.name.value, []).append(scope)
        scopes = self._globals.get(name)
        if not scopes:
            return Kind.UNKNOWN
        kinds = []
        for scope in scopes:
            bindings = self.index.lookup(name, scope)
            if bindings:
                kinds.append(self._bindings_kind(name, scope, bindings))
        return _join(kinds) if kinds else Kind.UNKNOWN

    def _bindings_kind(self, name: str, scope: Scope, bindings: list[Binding]) -> Kind:
        key = (id(scope), name)
        if key in self._binding_cache:
            return self._binding_cache[key]
        if key in self._in_progress:
            self._cuts.append(key)
            return Kind.UNKNOWN
        start = len(self._cuts)
        self._in_progress.add(key)
        try:
            if len(bindings) > 1 and bindings[0].kind == "param" and guarded_into_loader(self.index, name, bindings, self.qualified):
                # `if not isinstance(train_set, DataLoader): train_set = make(train_set)`: a loader after it
                self._binding_cache[key] = Kind.LOADER
                return Kind.LOADER
            kinds = [self._binding_kind(b) for b in bindings]
            # `loss = loss.item()` on one path: the number says the name held a tensor before the read, not that
            # it always holds a number; the other bindings decide (`loss = loss_fn(out, y)`), and a number
            # literal among them (`top1_err = 0.0` on a path that computes no accuracy) is one alternative.
            rereads = [k is Kind.NUMBER and _reads_itself(name, b) and not self._type_tested(name, b.source)
                       for b, k in zip(bindings, kinds)]
            # Only where the other bindings are assignments: a loop variable (`for qid in zip(ids, preds):
            # qid = int(qid.item())`) may be an element of a batch left on the host.
            if any(rereads) and not all(rereads) and all(b.kind == "assign" for b in bindings):
                kinds = [Kind.UNKNOWN if reread or k is Kind.NUMBER and b.kind == "assign" and
                         _number_literal(b.value) else k for b, k, reread in zip(bindings, kinds, rereads)]
            # `x = None` in one branch and a tensor in the other: an optional tensor is a tensor where used.
            kinds = [k for b, k in zip(bindings, kinds) if not _assigns_none(b)] or kinds
            if len(kinds) == len(bindings) and len(bindings) > 1:
                # `if isinstance(n, Tensor): k = torch.clamp(n, max=m)` with `n = idxs.shape[0]`: a size is an int
                # in eager mode, a tensor only under tracing; the branch's binding is not what a run holds
                eager = [k for b, k in zip(bindings, kinds) if not self._tracing_only(b)]
                kinds = eager or kinds
            result = _join(kinds)
            if result is Kind.UNKNOWN and all(k is Kind.UNKNOWN for k in kinds) and \
                    self._backward_called_on(name, scope):
                result = Kind.TENSOR  # `loss = self._loss_step(batch) * n` ... `loss.backward()`
            elif result is Kind.UNKNOWN and all(k is Kind.UNKNOWN for k in kinds) and \
                    all(_moved_value(b) for b in bindings) and self._called_in(name, scope):
                # `G = legacy.load_network_pkl(f)['G_ema'].to(device)`, then `img = G(z, label)`: a value moved to
                # a device and called is a module (a tensor is not callable)
                result = Kind.MODULE
            elif result is Kind.NUMBER and _started_at_a_number(bindings, kinds) and \
                    self._backward_called_on(name, scope):
                # `gen_loss = 0.0`, then `gen_loss += self.criterion["mel"](y_, y)` (a loss held in a dict or
                # passed in, of unknown kind), then `gen_loss.backward()`: the literal is only the starting value
                result = Kind.TENSOR
            if result is Kind.TENSOR and self._used_as_text(name, scope):
                result = Kind.UNKNOWN  # `gt.find('[s]')`, `pred.lower()`: a str in this scope, whatever else
            if result is Kind.TENSOR and _TEXT_NAME.match(name) and all(_part_of_a_value(b) for b in bindings):
                # `imgs, labels, img_paths = batch`, `input_file = batch["input"][0]`: a part of a batch that its
                # name says is a file path or name holds text (a loader collates strings into lists of str)
                result = Kind.UNKNOWN
            if result is Kind.TENSOR and Kind.NUMBER in kinds:
                # Tensor wins over number only for accumulators started at a literal (`total = 0.0`); a name
                # rebound to `loss.item()` holds a number from then on: say nothing.
                numbers = [b for b, k in zip(bindings, kinds) if k is Kind.NUMBER]
                if not all(b.kind == "assign" and _number_literal(b.value) for b in numbers):
                    result = Kind.UNKNOWN
        finally:
            self._in_progress.discard(key)
        if self._settled(start):
            self._binding_cache[key] = result
        return result

    def _type_tested(self, name: str, stmt: Optional[cst.CSTNode]) -> bool:
        """`stmt` runs under `if isinstance(name, ...):` (`if isinstance(v, torch.Tensor): v = v.item()`): the
        code itself says the name may hold something else, and reads it only when it does not."""
        for parent in self.index.ancestors(stmt) if stmt is not None else ():
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return False
            test = parent.test if type(parent) in (cst.If, cst.IfExp) else None
            if type(test) is cst.Call and type(test.func) is cst.Name and test.func.value == "isinstance" and \
                    test.args and type(test.args[0].value) is cst.Name and test.args[0].value.value == name:
                return True
        return False

    def _after_own_read(self, name: cst.Name) -> Optional[Kind]:
        """Where `name` is read after the statement rebinding it to a host read of its own value (`loss =
        loss.item()`, `loss, acc = loss.item(), acc.item()`) last ran, going back through the statements of the
        enclosing blocks: NUMBER; UNKNOWN when that statement is compound and rebinds it so on some path (`if
        det: loss = loss.item() else: ...`); None when the last binding before the read is not such a read."""
        scope = self.index.enclosing_scope(name)
        key = (id(scope), name.value)
        rereads = self._rereads.get(key)
        if rereads is None:
            rereads = self._rereads[key] = [b.source for b in self.index.lookup(name.value, scope)
                                            if b.source is not None and _reads_itself(name.value, b)
                                            and not self._type_tested(name.value, b.source)]
        if not rereads:
            return None
        for parent in self.index.ancestors(name):
            if type(parent) is cst.AssignTarget:
                assign = self.index.parent.get(parent)
                if any(assign is r for r in rereads):
                    return Kind.UNKNOWN  # the target of `loss = loss.item()` itself: say nothing, as before
                break
            if isinstance(parent, (cst.BaseStatement, cst.BaseSmallStatement)):
                break
        sources = [b.source for b in self.index.lookup(name.value, scope) if b.source is not None]
        child: cst.CSTNode = name
        for parent in self.index.ancestors(name):
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return None
            if type(parent) in (cst.IndentedBlock, cst.Module):
                before = parent.body[:next((i for i, st in enumerate(parent.body) if st is child), 0)]
                for stmt in reversed(before):
                    found = [src for src in sources if self.index.is_ancestor_or_self(stmt, src)]
                    if not found:
                        continue
                    own = [src for src in found if any(src is r for r in rereads)]
                    if not own:
                        return None
                    plain = type(stmt) is cst.SimpleStatementLine and len(own) == len(found)
                    return Kind.NUMBER if plain else Kind.UNKNOWN
                if type(parent) is cst.Module:
                    return None
            child = parent
        return None

    def _used_as_text(self, name: str, scope: Scope) -> bool:
        """A method only `str` has is called on `name` in `scope` (`gt = gt[:gt.find('[s]')]`, `pred.lower()`):
        the name holds text there, although another binding (a batch element zipped with decoded strings, a
        loader's `labels` rebound to `converter.decode(...)`) looks like a tensor."""
        scopes = self._text_scopes.get(name)
        if scopes is None:
            scopes = self._text_scopes[name] = []
            for node in self.index.names(name):
                attribute = self.index.parent.get(node)
                if isinstance(attribute, cst.Attribute) and attribute.value is node and \
                        attribute.attr.value in _STR_ONLY_METHODS and \
                        isinstance(self.index.parent.get(attribute), cst.Call):
                    scopes.append(self.index.enclosing_scope(node))
        return any(s is scope for s in scopes)

    def _called_in(self, name: str, scope: Scope) -> bool:
        """`name(...)` is called in `scope`."""
        for node in self.index.names(name):
            call = self.index.parent.get(node)
            if isinstance(call, cst.Call) and call.func is node and self.index.enclosing_scope(node) is scope:
                return True
        return False

    def _backward_called_on(self, name: str, scope: Scope, depth: int = 0) -> bool:
        """`name.backward()` is called in `scope`: whatever the name is bound to there is a tensor."""
        scopes = self._backward_scopes.get(name)
        if scopes is None:
            scopes = self._backward_scopes[name] = []
            for node in self.index.names(name):
                attribute = self.index.parent.get(node)
                call = self.index.parent.get(attribute)
                # `loss.backward()`, `loss.backward(retain_graph=True)`; not `accelerator.backward(loss)`
                if isinstance(attribute, cst.Attribute) and attribute.value is node and \
                        attribute.attr.value == "backward" and isinstance(call, cst.Call) and \
                        all(a.keyword is not None for a in call.args):
                    scopes.append(self.index.enclosing_scope(node))
                elif self._scaled_backward(node):  # `scaler.scale(loss).backward()`
                    scopes.append(self.index.enclosing_scope(node))
        if any(s is scope for s in scopes):
            return True
        # `loss_value = loss_value_all`, then `loss_value.backward()`: the alias is backpropagated
        return depth < 2 and any(
            alias_scope is scope and self._backward_called_on(target, scope, depth + 1)
            for alias_scope, target in self._aliases_named(name))

    def _aliases_named(self, name: str) -> list:
        """(scope, other name) of each `other = name` in the module: found once per name (asked for each
        parameter of each function, a walk over every `name` of the module each time made a module of thousands of
        functions quadratic)."""
        found = self._name_aliases.get(name)
        if found is None:
            found = self._name_aliases[name] = []
            for node in self.index.names(name):
                assign = self.index.parent.get(node)
                if type(assign) is cst.Assign and assign.value is node and len(assign.targets) == 1 and \
                        type(assign.targets[0].target) is cst.Name and assign.targets[0].target.value != name:
                    found.append((self.index.enclosing_scope(node), assign.targets[0].target.value))
        return found

    def _scaled_backward(self, node: cst.Name) -> bool:
        """`scaler.scale(loss).backward()` (a GradScaler, or any `.scale(x)` whose result is backpropagated):
        the one argument of `scale` is the loss tensor."""
        arg = self.index.parent.get(node)
        scale = self.index.parent.get(arg)
        if not (isinstance(arg, cst.Arg) and arg.keyword is None and isinstance(scale, cst.Call) and
                len(scale.args) == 1 and type(scale.func) is cst.Attribute and scale.func.attr.value == "scale"):
            return False
        attribute = self.index.parent.get(scale)
        call = self.index.parent.get(attribute)
        return isinstance(attribute, cst.Attribute) and attribute.value is scale and \
            attribute.attr.value == "backward" and isinstance(call, cst.Call)

    def _comprehension_variable(self, node: cst.Name) -> Optional[Kind]:
        """The kind of a comprehension's own variable, from the comprehension's `for` clauses alone: the index
        keeps comprehension variables in the enclosing function's table, where another binding of the same name
        (`for cls in torch.unique(t):` elsewhere in the function) would make `int(cls)` of
        `[int(cls) for *xyxy, conf, cls in pred.tolist()]` a tensor read. None where `node` is no such variable."""
        names = getattr(self, "_comprehension_names", None)
        if names is None:
            from gpulint.analysis.node_types import of_types

            names = self._comprehension_names = {n for c in of_types(self.index, cst.CompFor)
                                                 for n in target_names(c.target)}  # type: ignore[attr-defined]
        if node.value not in names:
            return None
        scope = self.index.enclosing_scope(node)
        if scope is None:
            return None
        every = self.index.lookup(node.value, scope)
        if len(every) < 2 or not any(type(b.source) is cst.CompFor for b in every):
            return None
        visible = self.index.visible_bindings(node)
        if not visible or len(visible) == len(every) or any(type(b.source) is not cst.CompFor for b in visible):
            return None
        return _join([self._binding_kind(b) for b in visible])

    def _binding_kind(self, b: Binding) -> Kind:
        if b.kind == "assign" or b.kind == "walrus":
            if type(b.source) is cst.AnnAssign:
                ann = _annotation_kind(self, b.source.annotation.annotation)
                if ann is not Kind.UNKNOWN:
                    return ann
            if b.value is None:
                return Kind.UNKNOWN
            kind = self.of(b.value)
            return self._element(kind, b)
        if b.kind == "augassign":
            # `total += loss` makes a tensor of `total`; `im /= 255` keeps whatever `im` was: the other
            # bindings decide (a number on the right says nothing about the target).
            kind = self.of(b.value)
            if kind is Kind.UNKNOWN and self._project_tensor(b.value):
                return Kind.TENSOR  # `running_loss += self._loss_step(batch) * n`: the helper returns a tensor
            return kind if kind in (Kind.TENSOR, Kind.NUMPY) else Kind.UNKNOWN
        if b.kind == "for":
            return self.iteration_kind(b.value, b.index)
        if b.kind == "param":
            param = b.value
            if type(param) is cst.Param and param.annotation is not None:
                kind = _annotation_kind(self, param.annotation.annotation)
                if kind is not Kind.UNKNOWN:
                    return kind
            if self.parameter_hook is not None and type(param) is cst.Param and param.default is None:
                kind = self.parameter_hook(b)
                if kind is not Kind.UNKNOWN:
                    return kind
            if type(param) is cst.Param and (id(b.source), param.name.value) in self._run_module_params():
                return Kind.MODULE  # `retinanet.eval()` then `retinanet(img)`: a network handed in
            return Kind.UNKNOWN
        if b.kind == "class":
            return Kind.MODULE_CLASS if _is_module_class(self, b.value) else Kind.OTHER
        if b.kind in ("def", "import"):
            return Kind.OTHER
        return Kind.UNKNOWN

    def _project_tensor(self, value: Optional[cst.BaseExpression], depth: int = 0) -> bool:
        """What an accumulator is given is a tensor a project helper returns: the call, the call scaled
        (`* n`, `/ accum`), or the call detached (`.detach()`, `.float()`), as the helper's summary says."""
        if self.returns_tensor_hook is None or value is None or depth > 4:
            return False
        if type(value) is cst.BinaryOperation:
            return self._project_tensor(value.left, depth + 1) or self._project_tensor(value.right, depth + 1)
        if type(value) is not cst.Call:
            return False
        func = value.func
        if type(func) is cst.Attribute and func.attr.value in ("detach", "float", "mean", "sum") and \
                type(func.value) is cst.Call:
            return self._project_tensor(func.value, depth + 1)
        return self.returns_tensor_hook(value)

    def _holds_loader_entries(self, base: cst.BaseExpression) -> bool:
        """The loader-named container of `_loader_by_key` is not something else named so: a plain name bound
        by a call builds it with a function named for loaders (`get_dataloaders(cfg)`), not `np.load(...)` of an
        archive (`loader['x']`)."""
        if type(base) is not cst.Name:
            return True
        for binding in self.index.visible_bindings(base):
            value = binding.value
            if binding.kind in ("assign", "walrus") and type(value) is cst.Call:
                callee = (dotted_name(value.func) or "").rsplit(".", 1)[-1].lower()
                if "loader" not in callee and not callee.endswith(("_dl", "_dls")):
                    return False
            elif binding.kind not in ("assign", "walrus", "param"):
                return False
        return True

    def holds_loaders(self, expr: cst.BaseExpression, dicts: bool = False) -> bool:
        """A name bound only (by plain assignments, at most 3) to lists or tuples whose every element is a loader:
        `loaders = [DataLoader(env, ...) for env in splits]`, `loaders = [train_loader, extra_loader]`."""
        if type(expr) is not cst.Name:
            return False
        bindings = self.index.visible_bindings(expr)
        if not bindings or len(bindings) > 3:
            return False
        for b in bindings:
            if b.kind != "assign" or b.index is not None:
                return False
            value = b.value
            if type(value) is cst.ListComp:
                elements = [value.elt]
            elif dicts and type(value) is cst.DictComp:
                elements = [value.value]  # a dict of loaders, only where it is subscripted (one loader)
            elif dicts and type(value) is cst.Dict and value.elements:
                elements = [e.value for e in value.elements if type(e) is cst.DictElement]
                if len(elements) != len(value.elements):
                    return False
            elif type(value) in (cst.List, cst.Tuple) and value.elements:
                elements = [e.value for e in value.elements if type(e) is cst.Element]
                if len(elements) != len(value.elements):
                    return False  # a starred element: cannot tell
            else:
                return False
            if not all(self.of(e) is Kind.LOADER for e in elements):
                return False
        return True

    def _element(self, kind: Kind, b: Binding) -> Kind:
        # Unpacking a batch or a model output gives tensors; unpacking anything else tells us nothing.
        if b.index is None:
            return kind
        if kind is Kind.TENSOR:
            return kind
        if type(b.value) is cst.Call and self._returned_element(b.value, b.index) is Kind.NUMPY:
            return Kind.NUMPY  # `lam_batch, use_cutmix = self._params_per_elem(n)` of `return lam, use_cutmix`
        if self._list_of_tensors(b.value):
            return Kind.TENSOR  # `batch = [t.to(device) for t in batch]`, then `x, lengths = batch`
        return Kind.UNKNOWN

    def _list_of_tensors(self, value: Optional[cst.BaseExpression], depth: int = 0) -> bool:
        """A list whose every element is a tensor: a comprehension of tensors (`[t.to(device) for t in batch]`),
        a list or tuple display of tensors, or a name its last plain assignment binds to one."""
        if value is None or depth > 2:
            return False
        if type(value) is cst.Name:
            return self._list_of_tensors(self.last_assigned(value), depth + 1)
        if type(value) is cst.ListComp:
            elt = value.elt
            if type(elt) is cst.Call and _to_a_device(elt) and type(elt.func) is cst.Attribute and \
                    type(value.for_in.target) is cst.Name and type(elt.func.value) is cst.Name and \
                    elt.func.value.value == value.for_in.target.value and value.for_in.inner_for_in is None and \
                    self.of(value.for_in.iter) in (Kind.TENSOR, Kind.UNKNOWN):
                return True  # `[b.to(device) for b in batch[1:]]`: the parts of a batch, each moved
            return self.of(elt) is Kind.TENSOR
        if type(value) in (cst.List, cst.Tuple):
            return bool(value.elements) and all(type(e) is cst.Element and self.of(e.value) is Kind.TENSOR
                                                for e in value.elements)
        return False

    def _returned_element(self, call: cst.Call, index: int) -> Kind:
        """For a call of a function (`f(...)`) or method (`self.f(...)`) of this module, the only one by that name:
        the kind of element `index` of what it returns, when every `return` hands back a tuple whose element there
        is a name of that one kind (`return lam, use_cutmix` with `lam = np.where(...)`); else UNKNOWN."""
        returns = self._local_returns(call)
        if returns is None:
            return Kind.UNKNOWN
        kinds = set()
        for ret in returns:
            value = ret.value
            if type(value) is not cst.Tuple or len(value.elements) <= index or \
                    any(type(e) is cst.StarredElement for e in value.elements) or \
                    type(value.elements[index].value) is not cst.Name:
                return Kind.UNKNOWN
            kinds.add(self.of(value.elements[index].value))
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN

    def wrapper_bound_to(self, iterable: cst.BaseExpression) -> cst.BaseExpression:
        """For a name bound once, by a plain assignment, to an iteration wrapper (`data_iter =
        enumerate(val_loader)`, `it = iter(loader)`, `pbar = tqdm(loader)`, `with tqdm(loader) as t:`): that call;
        else `iterable` itself."""
        if type(iterable) is not cst.Name:
            return iterable
        bindings = self.index.visible_bindings(iterable)
        if len(bindings) == 1 and bindings[0].kind in ("assign", "with") and bindings[0].index is None and \
                isinstance(bindings[0].value, cst.Call) and \
                (dotted_name(bindings[0].value.func) in _ITERATION_WRAPPERS or
                 is_progress_wrapper(dotted_name(bindings[0].value.func))):
            return bindings[0].value
        return iterable

    def iteration_kind(self, iterable: cst.BaseExpression, index: Optional[int]) -> Kind:
        """Kind of the loop target (element `index` when the target is unpacked)."""
        iterable = self.wrapper_bound_to(iterable)
        if type(iterable) is cst.Call:
            fn = dotted_name(iterable.func)
            args = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if fn == "enumerate" and args:
                if index == 0:
                    return Kind.NUMBER
                return self.iteration_kind(args[0], None)
            if (fn in ("tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "islice", "itertools.islice", "reversed")
                    or is_progress_wrapper(fn)) and args:
                return self.iteration_kind(args[0], index)
            if fn == "zip" and args:
                if index is not None and index < len(args):
                    return self.iteration_kind(args[index], None)
                return _join([self.iteration_kind(a, None) for a in args])
            if fn == "range":
                return Kind.NUMBER
            if type(iterable.func) is cst.Attribute and iterable.func.attr.value == "parameters" \
                    and self.of(iterable.func.value) is Kind.MODULE:
                return Kind.TENSOR
            if type(iterable.func) is cst.Attribute and iterable.func.attr.value in _NAMED_MEMBERS \
                    and self.of(iterable.func.value) is Kind.MODULE:
                # `for name, p in layer.named_parameters()`: the name, then the parameter (a submodule for
                # `named_children()`/`named_modules()`)
                return Kind.OTHER if index == 0 else _NAMED_MEMBERS[iterable.func.attr.value] if index == 1 \
                    else Kind.UNKNOWN
            if type(iterable.func) is cst.Attribute and iterable.func.attr.value in ("items", "keys",
                                                                                         "values"):
                # `for k, v in batch.items()`: keys are names, values are what the mapping holds.
                method = iterable.func.attr.value
                if method == "keys" or (method == "items" and index in (None, 0)):
                    return Kind.OTHER
                held = self.of(iterable.func.value)
                if held is Kind.OTHER and self._device_entries(iterable.func.value, None):
                    return Kind.TENSOR  # `for k, v in losses.items()` of a dict literal of losses
                return Kind.TENSOR if held is Kind.TENSOR else Kind.UNKNOWN
        kind = self.of(iterable)
        if kind is Kind.UNKNOWN and type(iterable) is cst.Name:
            kind = self._iterated_bindings(iterable)
        if kind is Kind.LOADER:
            return Kind.TENSOR
        if kind is Kind.TENSOR:
            return Kind.TENSOR  # rows of a tensor, or the tensors of a batch
        if kind is Kind.NUMPY:
            return Kind.NUMPY
        return Kind.UNKNOWN

    def _device_entries(self, mapping: cst.BaseExpression, key: Optional[str]) -> bool:
        """`mapping` is a name every binding of which is a dict literal (`losses = {"critic": critic_loss,
        "actor": actor_loss}`) that no statement of its scope changes by key (`losses["critic"] = ...item()`),
        and the entry `key` of each (every entry when `key` is None) is a tensor not known to be on the host (a
        network's output or a loss computed from one): reading it by key or iterating its values gives that
        tensor. A literal holding a host value (`torch.tensor(0.0)`, a `.item()`) or a `**` spread is not."""
        if type(mapping) is not cst.Name:
            return False
        scope = self.index.enclosing_scope(mapping)
        bindings = self.index.lookup(mapping.value, scope) if scope is not None else []
        if not bindings or any(b.kind != "assign" or b.index is not None or type(b.value) is not cst.Dict
                               for b in bindings):
            return False
        entries = []
        for b in bindings:
            elements = b.value.elements  # type: ignore[union-attr]
            if not elements or any(type(e) is not cst.DictElement for e in elements):
                return False
            chosen = [e.value for e in elements if key is None or _constant_key_of(e.key) == key]
            if not chosen:
                return False
            entries.extend(chosen)
        if any(self.of(v) is not Kind.TENSOR or self.on_host(v) for v in entries):
            return False
        return not _stored_by_key(scope, mapping.value)

    def _iterated_bindings(self, name: cst.Name) -> Kind:
        """What iterating `name` yields when its values disagree in kind: a tensor in one branch and a list of
        tensors in another (`pred = model(x)` ... `pred = [pred, None]`) both yield tensors."""
        scope = self.index.enclosing_scope(name)
        values = [b.value for b in self.index.lookup(name.value, scope) if b.kind == "assign" and b.index is None
                  and b.value is not None and not _assigns_none(b)] if scope is not None else []
        kinds = []
        for value in values:
            if type(value) in (cst.List, cst.Tuple):
                elements = [e.value for e in value.elements if type(e) is not cst.StarredElement
                            and not (type(e.value) is cst.Name and e.value.value == "None")]
                kinds.append(_join([self.of(e) for e in elements]) if elements else Kind.UNKNOWN)
            else:
                kinds.append(self.of(value))
        return Kind.TENSOR if _join(kinds) is Kind.TENSOR else Kind.UNKNOWN

    # -- expressions -------------------------------------------------------------------------------------------
    def _infer(self, node: cst.CSTNode) -> Kind:
        if type(node) is cst.Name:
            if node.value in ("True", "False"):
                return Kind.NUMBER
            if node.value == "None":
                return Kind.OTHER
            own = self._comprehension_variable(node)
            if own is not None:
                return own
            kind = self.name_kind(node.value, node)
            if kind is Kind.NUMPY and self._copied_to_host_by_own_binding(node):
                # `x = x.detach().cpu().numpy()`: the array is what the statement makes, not what it reads
                last = self._last_assignment(node, self.index.visible_bindings(node))
                return self.of(last) if last is not None else Kind.UNKNOWN
            if kind is not Kind.NUMBER:
                after = self._after_own_read(node)
                if after is not None:
                    return after
            if kind is Kind.UNKNOWN:
                return self._kind_at_read(node)
            return kind
        if type(node) in (cst.Integer, cst.Float, cst.Imaginary):
            return Kind.NUMBER
        if type(node) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Lambda):
            return Kind.OTHER
        if type(node) is cst.Tuple:
            return Kind.OTHER
        if type(node) is cst.Call:
            return self._call(node)
        if type(node) is cst.Attribute:
            return self._attribute(node)
        if type(node) is cst.Subscript:
            base = self.of(node.value)
            if base in (Kind.TENSOR, Kind.NUMPY):
                return base
            if base is Kind.OTHER and self._submodule_list(node.value):
                return Kind.MODULE  # `list(net.children())[-1]`: the network's last layer
            if self.holds_loaders(node.value, dicts=base is Kind.OTHER):
                # `loaders[0]` of `loaders = [DataLoader(d, ...) for d in splits]`; `dataloaders['gallery']` of
                # `dataloaders = {x: DataLoader(sets[x], ...) for x in ['gallery', 'query']}`
                return Kind.LOADER
            if _loader_by_key(node) and base in (Kind.LOADER, Kind.UNKNOWN) and self._holds_loader_entries(node.value):
                return Kind.LOADER  # `self.data_loader["dev"]`, `dataloaders[phase]`: one loader of a dict of them
            if base is Kind.OTHER and self._device_entries(node.value, _constant_key(node)):
                return Kind.TENSOR  # `losses["critic"]` of `losses = {"critic": critic_loss, ...}`
            if base is Kind.UNKNOWN and self._backpropagated_entry(node):
                return Kind.TENSOR  # `self.losses["total_loss"]` of a class calling `self.losses["total_loss"].backward()`
            return Kind.UNKNOWN
        if type(node) is cst.BinaryOperation:
            if is_text(node):
                return Kind.OTHER  # `"%g" % t`, `"-" * 20`: a str, whatever is formatted into it
            if _repeats_a_list(node) and not {self.of(node.left), self.of(node.right)} & {Kind.TENSOR, Kind.NUMPY}:
                return Kind.OTHER  # `[t] * batch_size`, `[0] + ids`: a Python list
            return _arith(self.of(node.left), self.of(node.right))
        if type(node) is cst.UnaryOperation:
            if type(node.operator) is cst.Not:
                return Kind.NUMBER
            return self.of(node.expression)
        if type(node) is cst.Comparison:
            if any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in node.comparisons):
                return Kind.NUMBER
            if len(node.comparisons) > 1:
                return Kind.NUMBER  # a < b < c goes through bool()
            if is_text(node.left) or is_text(node.comparisons[0].comparator):
                return Kind.NUMBER  # `if layer.kind == 'a':` compares strings: a Python bool
            kinds = [self.of(node.left), self.of(node.comparisons[0].comparator)]
            if Kind.TENSOR in kinds:
                return Kind.TENSOR
            if Kind.NUMPY in kinds:
                return Kind.NUMPY
            if kinds == [Kind.NUMBER, Kind.NUMBER]:
                return Kind.NUMBER
            return Kind.UNKNOWN
        if type(node) is cst.IfExp:
            # `None if y is None else F.cross_entropy(...)`: an optional value is what it is when it is one
            branches = [b for b in (node.body, node.orelse) if not (type(b) is cst.Name and b.value == "None")]
            return _join([self.of(b) for b in branches or (node.body, node.orelse)])
        if type(node) is cst.BooleanOperation:
            return _join([self.of(node.left), self.of(node.right)])
        if type(node) is cst.NamedExpr:
            return self.of(node.value)
        if type(node) is cst.Await:
            return Kind.UNKNOWN
        return Kind.UNKNOWN

    def last_assigned(self, name: cst.Name) -> Optional[cst.BaseExpression]:
        """The value of the plain assignment that runs last before `name` is read (`_last_assignment`), or None."""
        return self._last_assignment(name, self.index.visible_bindings(name))

    def _copied_to_host_by_own_binding(self, name: cst.Name) -> bool:
        """`name` is read in the value of the plain assignment that rebinds it to a host copy of that value
        (`neg = neg.data.cpu().numpy().astype(np.float32)`, `actions = actions.cpu().numpy()`): `.cpu()` on the
        way from the read to the value's outermost call says the name held a tensor before the statement."""
        node: cst.CSTNode = name
        element: Optional[int] = None  # `pred, tar = pred.cpu().numpy(), tar.cpu().numpy()`: the element's place
        for parent in self.index.ancestors(name):
            if type(parent) is cst.Assign:
                break
            if type(parent) is cst.Element and element is None:
                continue
            if type(parent) is cst.Tuple and element is None:
                element = next((i for i, e in enumerate(parent.elements) if e.value is node), None)
                if element is None or any(type(e) is not cst.Element for e in parent.elements):
                    return False
                node = parent
                continue
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseStatement)) or \
                    type(parent) not in (cst.Attribute, cst.Call) or element is not None:
                return False
            if type(parent) is cst.Call and node is not parent.func:
                return False  # an argument (`f(x)`), not the receiver of the chain
            node = parent
        else:
            return False
        if node is not parent.value or len(parent.targets) != 1 or self._type_tested(name.value, parent):
            return False  # `if isinstance(x, torch.Tensor): x = x.cpu().numpy()`: a helper taking host data too
        target = parent.targets[0].target
        chain = parent.value
        if element is not None:
            if type(target) not in (cst.Tuple, cst.List) or len(target.elements) != len(chain.elements):
                return False
            target = target.elements[element].value
            chain = chain.elements[element].value
        if type(target) is not cst.Name or target.value != name.value:
            return False
        while type(chain) in (cst.Call, cst.Attribute):
            if type(chain) is cst.Call and type(chain.func) is cst.Attribute and chain.func.attr.value == "cpu":
                return True
            chain = chain.func if type(chain) is cst.Call else chain.value
        return False

    def _kind_at_read(self, name: cst.Name) -> Kind:
        """A name whose bindings disagree (`all_b = []`, then `all_b = torch.cat(all_b)`, then `all_b =
        all_b[keep]`) holds a tensor where the plain assignment that runs last before this read, in the same
        block or an enclosing one, is a tensor: flow-sensitive, and only ever from unknown to tensor."""
        scope = self.index.enclosing_scope(name)
        bindings = self.index.lookup(name.value, scope) if scope is not None else []
        if len(bindings) < 2 or not all(b.kind in ("assign", "augassign", "walrus") for b in bindings):
            return Kind.UNKNOWN
        last = self._last_assignment(name, bindings)
        if last is None:
            # `_, preds = torch.max(scores, dim=2)` then `preds = preds.tolist()`: an unpacking that runs last
            unpacked = self._last_unpacking(name, bindings)
            return Kind.TENSOR if unpacked is not None and self._binding_kind(unpacked) is Kind.TENSOR \
                else Kind.UNKNOWN
        return Kind.TENSOR if self.of(last) is Kind.TENSOR else Kind.UNKNOWN

    def _last_unpacking(self, name: cst.Name, bindings: list[Binding]) -> Optional[Binding]:
        """The binding of `name` by a plain unpacking assignment (`_, preds = value`, one statement, no loop
        around the read binding it again) that runs last before the read, as `_last_assignment` goes back."""
        last = self._binding_statement_before(name, bindings)
        if last is None:
            return None
        stmt, found = last
        plain = type(stmt) is cst.SimpleStatementLine and len(found) == 1 and found[0].kind == "assign" and \
            found[0].index is not None and isinstance(found[0].source, cst.Assign) and \
            len(found[0].source.targets) == 1
        return found[0] if plain else None

    def _submodule_list(self, expr: cst.BaseExpression) -> bool:
        """`list(net.children())`, `list(model.modules())` of a module: a list of its submodules."""
        if type(expr) is not cst.Call or type(expr.func) is not cst.Name or expr.func.value != "list" or \
                len(expr.args) != 1 or expr.args[0].keyword is not None or expr.args[0].star:
            return False
        inner = expr.args[0].value
        return type(inner) is cst.Call and type(inner.func) is cst.Attribute and not inner.args and \
            inner.func.attr.value in ("children", "modules") and self.of(inner.func.value) is Kind.MODULE

    def _attribute(self, node: cst.Attribute) -> Kind:
        qualified = self.qualified(node)
        if qualified and qualified.startswith("numpy."):
            return Kind.OTHER
        base = self.of(node.value)
        attr = node.attr.value
        if base is Kind.TENSOR:
            if attr == "device":
                return Kind.DEVICE
            if attr in TENSOR_ATTRS_OTHER or attr in COUNT_FIELDS:
                return Kind.OTHER
            if attr == "size" and not (type(self.index.parent.get(node)) is cst.Call and
                                       self.index.parent.get(node).func is node):
                return Kind.OTHER  # `torch.zeros((segment.size, k))`: a NumPy array's element count, no method
            return Kind.TENSOR  # .T, .grad, .data, or a field of a model output
        if base is Kind.NUMPY:
            return Kind.OTHER if attr in ("shape", "dtype", "ndim", "size") else Kind.NUMPY
        if type(node.value) is cst.Name and node.value.value == "self":
            if attr in self._registered_buffers() and not self._own_method(node, attr):
                return Kind.TENSOR  # not a property of this class named like another class's buffer
            kind = _kind_from_name(attr)
            if kind is Kind.UNKNOWN and self.self_attribute_hook is not None:
                kind = self.self_attribute_hook(node)
            return kind
        if base in (Kind.UNKNOWN, Kind.OTHER):
            from gpulint.analysis.graph_fields import moved_graph_field

            if attr not in COUNT_FIELDS and moved_graph_field(self, node):  # `data.train_mask` of `data = data.to(device)` (a PyG graph)
                return Kind.TENSOR
            if self.kept_attribute_hook is not None and self.kept_attribute_hook(node):
                return Kind.TENSOR  # `top1.avg` after `top1.update(acc1[0], n)` (analysis/kept_values.py)
        return Kind.UNKNOWN

    def _hands_on_a_loader(self, name: str, call: cst.Call) -> bool:
        """`name` is the module's one function by that name, a generator handing on the items of a loader: one
        it builds, or the parameter a call gives a loader (analysis/generators.py)."""
        from gpulint.analysis.generators import yielded_source

        functions = self.index.functions.get(name, [])
        if len(functions) != 1:
            return False
        fn = functions[0]
        source = yielded_source(fn)
        if source is None:
            return False
        if self.of(source) is Kind.LOADER:
            return True
        params = positional_names(fn)
        if type(source) is not cst.Name or source.value not in params:
            return False
        position = params.index(source.value)
        args = [a for a in call.args if a.keyword is None]
        given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == source.value),
                     None) or (args[position].value if position < len(args) and not any(a.star for a in args)
                               else None)
        return given is not None and self.of(given) is Kind.LOADER

    def _own_method(self, node: cst.CSTNode, name: str) -> bool:
        """The class around `node` defines a method or `@property` called `name` (Tacotron's `r` property reads
        `self.decoder.r.item()`, a Python int, where the decoder's `r` is a buffer)."""
        cls = self.index.enclosing_class(node)
        return cls is not None and any(
            type(stmt) is cst.FunctionDef and stmt.name.value == name for stmt in cls.body.body)

    def _registered_buffers(self) -> set[str]:
        """Names a module registers as buffers (`self.register_buffer("queue_ptr", torch.zeros(1))`): tensors
        that live where the model lives, on the GPU when it is there."""
        if self._buffers is None:
            self._buffers = set()
            for node in of_types(self.index, cst.Call):
                if type(node.func) is cst.Attribute \
                        and node.func.attr.value == "register_buffer" and node.args \
                        and isinstance(node.args[0].value, cst.SimpleString):
                    self._buffers.add(node.args[0].value.evaluated_value)
        return self._buffers

    def _call(self, node: cst.Call) -> Kind:
        func = node.func
        qualified = self.qualified(func) if type(func) in (cst.Name, cst.Attribute) else None
        if qualified is not None:
            kind = self._qualified_call(qualified, node)
            if kind is not None:
                return kind
        if type(func) is cst.Attribute:
            return self._method_call(func, node)
        if type(func) is cst.Name:
            if func.value in _NUMBER_BUILTINS:
                return Kind.NUMBER
            if func.value in _OTHER_BUILTINS:
                return Kind.OTHER
            if func.value in ("abs", "max", "min", "sum"):
                args = [self.of(a.value) for a in node.args]
                return Kind.TENSOR if Kind.TENSOR in args else Kind.UNKNOWN
        if type(func) is cst.Name:
            returned = self._nested_function_returns(func)
            if returned is not None:
                return returned  # `loss = closure()` of `def closure(): ...; loss.backward(); return loss`
        if type(func) is cst.Name and self._hands_on_a_loader(func.value, node):
            return Kind.LOADER  # `cycle(loader)`: a generator of this module yielding the loader's batches
        if type(func) is cst.Name and self.derived_tensor_hook is not None and self.derived_tensor_hook(node):
            return Kind.TENSOR  # `accuracy(output, target)` of device tensors (analysis/derived_returns.py)
        if self.loader_call_hook is not None and self.loader_call_hook(node):
            return Kind.LOADER
        if self.loader_class_hook is not None and self.loader_class_hook(node):
            return Kind.LOADER  # `InfiniteLoader(dataset, ...)`: a project class handing on a DataLoader's batches
        callee = self.of(func)
        if callee is Kind.MODULE:
            return Kind.TENSOR
        if callee is Kind.MODULE_CLASS:
            return Kind.MODULE
        return Kind.UNKNOWN

    def _qualified_call(self, q: str, node: cst.Call) -> Optional[Kind]:
        if q in ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader") or q.endswith(
                ".DataLoader") or q == "DataLoader":
            return Kind.LOADER
        if q.startswith("diffusers.") and q.endswith(".from_pretrained") and \
                _DIFFUSERS_MODEL.search(q.rsplit(".", 2)[-2]) is not None:
            return Kind.MODULE  # `vae = AutoencoderKL.from_pretrained(...)`: a network (a forward, `decode`)
        if q.startswith("torch.optim.") and not q.startswith("torch.optim.lr_scheduler"):
            return Kind.OPTIMIZER
        if q in ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"):
            return Kind.OPTIMIZER  # the scaler steps the optimizer
        if q.startswith("torch.nn.functional.") or q.startswith("torch.nn.utils.clip_grad"):
            return Kind.TENSOR
        if q == "torch.nn.Parameter" or q == "torch.nn.parameter.Parameter":
            return Kind.TENSOR
        if q.startswith("torch.nn.") and q.split(".")[-1][:1].isupper():
            return Kind.MODULE
        if q == "torch.compile":
            args = [a.value for a in node.args]
            return Kind.MODULE if args and self.of(args[0]) is Kind.MODULE else Kind.OTHER
        if q.rsplit(".", 1)[-1] == "quantize_dynamic" and q.startswith(("torch.quantization.", "torch.ao.")):
            return Kind.MODULE  # `torch.quantization.quantize_dynamic(model, ...)`: the model, quantized
        if q.startswith("torchvision.models.") or q.startswith("timm.create_model"):
            return Kind.MODULE
        if q.startswith("torch."):
            if q in _TORCH_NUMBER:
                return Kind.NUMBER
            if q in _TORCH_NON_TENSOR or q.startswith(_TORCH_NON_TENSOR_PREFIXES):
                return Kind.OTHER
            last = q.rsplit(".", 1)[-1]
            if last.startswith("is_"):
                return Kind.NUMBER  # `torch.is_autocast_cache_enabled()`: a flag
            if last.startswith(("get_", "set_")) or last.endswith("_dtype"):
                return Kind.OTHER  # `torch.get_autocast_gpu_dtype()`, `torch.set_default_device(...)`: settings
            return Kind.TENSOR
        if q in _EINOPS_RESHAPES:
            # `rearrange(x, "b c h w -> b (h w) c")`: the same tensor (or array), rearranged where it lives
            first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
            kind = self.of(first) if first is not None else Kind.UNKNOWN
            return kind if kind in (Kind.TENSOR, Kind.NUMPY) else Kind.UNKNOWN
        if q.startswith("numpy."):
            return Kind.NUMPY
        if q in ("math.isnan", "math.isinf", "math.isfinite", "math.sqrt", "math.exp", "math.log",
                 "time.time", "time.perf_counter", "time.monotonic"):
            return Kind.NUMBER
        return None

    def _stored_parameter_module(self, func: cst.Attribute) -> bool:
        """`self.model` whose every assignment in its class stores an `__init__` parameter that is a module
        (`def __init__(self, model, train_loss, ...): self.model = model`, a trainer handed its network), in a class
        that treats it as a PyTorch module (`self.model.train()`, `.parameters()`, `.state_dict()`, ...) or runs a
        backward pass: calling it runs the network, as calling the parameter `model(x)` does. A wrapper that only
        calls what it was handed (a pipeline that may wrap another framework's model) stays unknown."""
        cls = self.index.enclosing_class(func)
        if cls is None or not self._treated_as_module(cls, func.attr.value):  # type: ignore[attr-defined]
            return False
        if self._stored_values is None:
            stored: dict = {}
            for assign in of_types(self.index, cst.Assign):
                if len(assign.targets) != 1:  # type: ignore[attr-defined]
                    continue
                target = assign.targets[0].target  # type: ignore[attr-defined]
                if type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
                    owner = self.index.enclosing_class(assign)
                    if owner is not None:
                        stored.setdefault((id(owner), target.attr.value), []).append(assign.value)  # type: ignore
            self._stored_values = stored
        values = self._stored_values.get((id(cls), func.attr.value))  # type: ignore[attr-defined]
        if not values:
            return False
        for value in values:
            if type(value) is not cst.Name:
                return False
            bindings = self.index.visible_bindings(value)
            if len(bindings) != 1 or bindings[0].kind != "param" or type(bindings[0].source) is not cst.FunctionDef \
                    or bindings[0].source.name.value != "__init__" or self.of(value) is not Kind.MODULE:
                return False
        return True

    def _run_module_params(self) -> set:
        """(function, parameter) pairs where the function both calls a method only a PyTorch module answers on
        the parameter (`net.eval()`, `net.parameters()`, `net.load_state_dict(...)`) and calls the parameter itself
        (`net(images)`): whatever its name (`def _get_detections(dataset, retinanet)`), a network the caller hands
        in, run on every item. One pass over the module's calls, kept per analysis."""
        if self._module_params is None:
            methods: set = set()
            called: set = set()
            for call in of_types(self.index, cst.Call):
                callee = call.func  # type: ignore[attr-defined]
                if type(callee) is cst.Name:
                    scope = self.index.enclosing_scope(call)
                    if type(scope) is cst.FunctionDef:
                        called.add((id(scope), callee.value))
                elif type(callee) is cst.Attribute and type(callee.value) is cst.Name and \
                        callee.attr.value in _ONLY_MODULE_METHODS:
                    scope = self.index.enclosing_scope(call)
                    if type(scope) is cst.FunctionDef:
                        methods.add((id(scope), callee.value.value))
            self._module_params = methods & called
        return self._module_params

    def _treated_as_module(self, cls: cst.ClassDef, attribute: str) -> bool:
        """Some method of `cls` calls a PyTorch module method on `self.<attribute>`, or some call in it is a
        `.backward(...)` (one pass over the module's calls, kept per analysis)."""
        if self._module_evidence is None:
            evidence: set = set()
            for call in of_types(self.index, cst.Call):
                callee = call.func  # type: ignore[attr-defined]
                if type(callee) is not cst.Attribute:
                    continue
                name = callee.attr.value
                if name == "backward":
                    key = "*backward*"
                elif name in _MODULE_METHODS and type(callee.value) is cst.Attribute and \
                        type(callee.value.value) is cst.Name and callee.value.value.value == "self":
                    key = callee.value.attr.value
                else:
                    continue
                owner = self.index.enclosing_class(call)
                if owner is not None:
                    evidence.add((id(owner), key))
            self._module_evidence = evidence
        return (id(cls), attribute) in self._module_evidence or (id(cls), "*backward*") in self._module_evidence

    def _method_call(self, func: cst.Attribute, node: cst.Call) -> Kind:
        method = func.attr.value
        if not node.args and method in ("item", "tolist", "numpy"):
            # Whatever the receiver, these leave the tensor world.
            return {"item": Kind.NUMBER, "tolist": Kind.OTHER, "numpy": Kind.NUMPY}[method]
        if not node.args and method in ("split", "splitlines", "strip", "lower", "upper"):
            # `words.split()`: `Tensor.split` takes a size, these no-argument forms are `str`'s (a list of words
            # handed to a BLEU helper is no tensor, whatever the name held before it was decoded)
            return Kind.OTHER
        if method == "apply" and node.args and type(func.value) in (cst.Name, cst.Attribute) \
                and self.autograd_function_hook is not None and self.autograd_function_hook(func.value):
            # `AllReduce.apply(x)` of a project `torch.autograd.Function`: its `forward` hands back tensors
            # computed from the tensors given (an all-reduce, a gather, a custom gradient)
            given = [self.of(a.value) for a in node.args if a.keyword is None and not a.star]
            if Kind.TENSOR in given or Kind.UNKNOWN in given:
                return Kind.TENSOR  # `AllReduce.apply(clips.var(dim=1).mean())`: a tensor, whatever it was given
            return Kind.UNKNOWN
        receiver = self.of(func.value)
        if type(func.value) is cst.Name and func.value.value == "self" and self.of(func) is Kind.MODULE and \
                _is_module_class(self, next((a for a in self.index.ancestors(node) if type(a) is cst.ClassDef), None)):
            return Kind.TENSOR  # `self.decoder(...)` in a module's method: a submodule run
        if type(func.value) is cst.Name and func.value.value == "self" and _kind_from_name(method) is Kind.UNKNOWN \
                and self.of(func) is Kind.MODULE:
            return Kind.TENSOR  # `self.policy(obs)`: an attribute the class declares an `nn.Module` (module_attrs.py)
        if type(func.value) is cst.Name and func.value.value == "self" and _kind_from_name(method) is Kind.MODULE \
                and self.declared_module_hook is not None and self.declared_module_hook(func):
            return Kind.TENSOR  # `self.network(states)` of `self.network = config.network_fn()` whose parameters it reads
        if type(func.value) is cst.Name and func.value.value == "self" and self._stored_parameter_module(func):
            return Kind.TENSOR  # `self.model(src, tgt)` of `self.model = model` stored from a module parameter
        if receiver is Kind.TENSOR:
            if method in TENSOR_METHODS_NUMBER:
                return Kind.NUMBER
            if method == "numpy":
                return Kind.NUMPY
            if method in TENSOR_METHODS_OTHER or method in ("items", "keys", "values"):
                return Kind.OTHER  # a batch that is a dict: its views are not tensors
            return Kind.TENSOR
        if receiver is Kind.NUMPY:
            if method == "item":
                return Kind.NUMBER
            if method == "tolist":
                return Kind.OTHER
            return Kind.NUMPY
        if receiver is Kind.MODULE:
            if method in _MODULE_METHODS_SELF:
                return Kind.MODULE
            if method in ("forward", "generate", "__call__"):
                return Kind.TENSOR
            return Kind.UNKNOWN
        if receiver is Kind.OPTIMIZER and method == "scale":
            return Kind.TENSOR  # scaler.scale(loss)
        if method in ("forward", "generate") and type(func.value) is cst.Call and \
                type(func.value.func) is cst.Name and func.value.func.value == "super" and \
                _is_module_class(self, next((a for a in self.index.ancestors(node) if type(a) is cst.ClassDef), None)):
            return Kind.TENSOR  # `super().generate(**batch)` in a module's override: the parent's run of the network
        if receiver is Kind.UNKNOWN and method in _DIM_REDUCTIONS and self._part_of_a_batch(func.value) and \
                any(a.keyword is not None and a.keyword.value == "dim" for a in node.args):
            return Kind.TENSOR  # `batch['loss_ids'].argmax(dim=-1)`: `dim=` is torch's keyword (numpy's is `axis=`)
        # Methods that make tensors whatever we know of the receiver.
        if method in ("cuda", "to") and receiver is Kind.UNKNOWN and _looks_like_tensor_name(func.value):
            return Kind.TENSOR
        if method in ("cuda", "to") and receiver is Kind.UNKNOWN and _to_a_device(node) and \
                self._part_of_a_batch(func.value):
            return Kind.TENSOR  # `videos, masks = batch` ... `videos.to(device, non_blocking=True)`
        if method == "detach" and not node.args and receiver in (Kind.UNKNOWN, Kind.NUMBER):
            # only tensors detach from the graph (`running_loss += loss.detach()`); a name also rebound to a
            # number elsewhere (`loss = meter.compute().item()` when logging) is a tensor where it is detached
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _part_of_a_batch(self, expr: cst.BaseExpression) -> bool:
        """`videos` of `videos, masks = batch`, `x` of `for x, y in batches`, `batch["image"]`, and their
        conversions (`batch_x.float()`): a part of a batch or record, which, copied to a device, is a tensor
        (a model is built, not unpacked from a batch)."""
        while type(expr) is cst.Call and type(expr.func) is cst.Attribute and not expr.args and \
                expr.func.attr.value in ("float", "long", "half", "int", "double", "bool", "contiguous"):
            expr = expr.func.value
        if type(expr) is cst.Subscript:
            return type(expr.value) is cst.Name and type(expr.slice[0].slice) is cst.Index and \
                type(expr.slice[0].slice.value) in (cst.SimpleString, cst.Integer) and \
                _BATCH_NAME.match(expr.value.value) is not None
        if type(expr) is not cst.Name or _kind_from_name(expr.value) is not Kind.UNKNOWN:
            return False
        bindings = self.index.visible_bindings(expr)
        # `label = batch["label"]`: an entry of a batch, bound to a name
        entries = [b for b in bindings if b.kind == "assign" and b.index is None and type(b.value) is cst.Subscript
                   and self._part_of_a_batch(b.value)]
        return bool(bindings) and all(b.kind in ("assign", "for") and b.index is not None or
                                      b.kind == "assign" and _reads_itself_converted(expr.value, b) or
                                      any(b is e for e in entries)
                                      for b in bindings) and \
            (any(b.index is not None for b in bindings) or bool(entries))


# Tensor reductions and scans that take torch's `dim=` keyword
_DIM_REDUCTIONS = frozenset({"argmax", "argmin", "sum", "mean", "max", "min", "amax", "amin", "any", "all", "cumsum",
                             "softmax", "log_softmax", "norm", "std", "var", "prod", "logsumexp"})
_BATCH_NAME = re.compile(r"^(batch|data|sample|samples|inputs|item|.*_batch|batch_.*)$")


_LEGACY_CPU_TENSORS = frozenset(f"torch.{t}Tensor" for t in ("Float", "Double", "Half", "BFloat16", "Byte", "Char",
                                                               "Short", "Int", "Long", "Bool"))


def _to_a_device(call: cst.Call) -> bool:
    """`.cuda()`, `.to(device)`, `.to(self.device, non_blocking=True)`, `.to(f"cuda:{rank}")`: a copy whose
    target names a device (not a dtype, not the CPU)."""
    func = call.func
    if type(func) is not cst.Attribute:
        return False
    if func.attr.value == "cuda":
        return True
    target = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if target is None and call.args and call.args[0].keyword is None:
        target = call.args[0].value
    if target is None:
        return False
    code = code_of(target).lower()
    return "cpu" not in code and any(word in code for word in ("device", "cuda", "gpu"))


_CONVERSIONS = frozenset({"float", "long", "half", "int", "double", "bool", "squeeze", "unsqueeze", "flatten",
                          "view", "reshape", "contiguous", "permute", "to", "cuda"})


def _reads_itself_converted(name: str, b: Binding) -> bool:
    """`x = x.float()`, `mask = mask.to(device).flatten(1).to(torch.bool)`: conversions, moves and reshapes of the
    name's own value (a part of the batch still)."""
    value = b.value
    if b.index is not None or type(value) is not cst.Call:
        return False
    while type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in _CONVERSIONS:
        value = value.func.value
    return type(value) is cst.Name and value.value == name


# (13: a block mask built in either branch of an `if`, reshaped, counted per row, then compared in a loop: fairseq's
# `compute_block_mask_2d`, tests/test_host_counter_updates.py)
_MAX_HOST_DEPTH = 13
_BUILTIN_REDUCTIONS = frozenset({"max", "min", "sum", "abs"})
# einops functions whose result is their first argument reshaped (or reduced), on the same device
_EINOPS_RESHAPES = frozenset({"einops.rearrange", "einops.repeat", "einops.reduce"})
# Reductions that give a 0-dim tensor when called without `dim=` (`_maybe_scalar`).
_REDUCTIONS = frozenset({"norm", "sum", "mean", "max", "min", "prod", "std", "var", "amax", "amin", "median",
                         "logsumexp", "dist", "dot", "vdot", "trace", "det", "all", "any", "count_nonzero"})


def _walk_expression(node: cst.CSTNode):
    """`node` and every expression under it (not into lambdas)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if type(current) is not cst.Lambda:
            stack.extend(current.children)


def _dtype_only(inference: KindInference, call: cst.Call) -> bool:
    """`x.to(torch.bool)`, `x.to(dtype=torch.float16)`: a conversion that names a dtype and no device."""
    if len(call.args) != 1 or call.args[0].keyword is not None and call.args[0].keyword.value != "dtype":
        return False
    target = call.args[0].value
    q = inference.qualified(target) if type(target) in (cst.Name, cst.Attribute) else None
    return q is not None and q.startswith("torch.") and q.count(".") == 1 and q != "torch.device" and \
        q.split(".")[1][:1].islower()


def _names_cpu(inference: KindInference, call: cst.Call) -> bool:
    """`x.to("cpu")`, `x.to(device="cpu")`, `x.to(torch.device("cpu"))`."""
    target = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if target is None and call.args and call.args[0].keyword is None:
        target = call.args[0].value
    return _cpu_device(inference, target)


def _cpu_device(inference: KindInference, target: Optional[cst.CSTNode], depth: int = 0) -> bool:
    """`"cpu"`, `torch.device("cpu")`, or a name every binding of which is one (`loss_device =
    torch.device("cpu")`)."""
    if type(target) is cst.Call and type(target.func) in (cst.Name, cst.Attribute) and \
            inference.qualified(target.func) == "torch.device" and target.args:
        target = target.args[0].value
    if type(target) is cst.Name and depth < 3:
        scope = inference.index.enclosing_scope(target)
        bindings = inference.index.lookup(target.value, scope) if scope is not None else []
        return bool(bindings) and len(bindings) <= 8 and all(
            b.kind == "assign" and b.index is None and b.value is not None and
            _cpu_device(inference, b.value, depth + 1) for b in bindings)
    return type(target) is cst.SimpleString and isinstance(target.evaluated_value, str) and \
        target.evaluated_value.split(":")[0] == "cpu"


# Methods of `str` that a tensor does not have (`Tensor.split`, `.count`-like names are left out).
# A name that says it holds a file path or name (`img_paths`, `input_file`, `fname`, `video_names`): text, where
# it is bound to a part of a batch or of a record (`_bindings_kind`).
_TEXT_NAME = re.compile(r"^(.*_)?(paths?|files?|file_?names?|fnames?|filepaths?|(img|image|video|audio|wav|utt|"
                        r"sample|file|doc|speaker|spk)_?(names?|ids?_?str|keys?)|names?|urls?)$", re.IGNORECASE)


# `use_gpu`, `args.cuda`, `cfg.NUM_GPUS`, `self.on_gpu`, `torch.cuda.is_available()`, `x.is_cuda`: a test that
# the run uses a GPU.
_GPU_TEST = re.compile(r"(^|[._])(use_?gpus?|gpus?|num_gpus|n_gpus?|ngpus?|on_gpu|use_cuda|cuda|is_cuda|"
                       r"cuda\.is_available\(\))$", re.IGNORECASE)


def _host_copy_when_on_gpu(stmt: cst.If, found: list, name: str) -> Optional[cst.BaseExpression]:
    """`if use_gpu: imgs, outputs = imgs.cpu(), outputs.cpu()` (no `else`): after it `name` is on the host
    either way (copied there on the GPU path; never left it on the other). The `.cpu()` call `name` gets, or None.
    """
    if stmt.orelse is not None or not _GPU_TEST.search(code_of(stmt.test).replace(" ", "")):
        return None
    if len(found) != 1 or type(found[0]) is not cst.Assign or len(found[0].targets) != 1:
        return None
    assign = found[0]
    target, value = assign.targets[0].target, assign.value
    pairs = [(target, value)]
    if type(target) is cst.Tuple and type(value) is cst.Tuple and len(target.elements) == len(value.elements):
        pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
    for t, v in pairs:
        if type(t) is cst.Name and t.value == name:
            call_ok = type(v) is cst.Call and type(v.func) is cst.Attribute and v.func.attr.value == "cpu" and \
                type(v.func.value) is cst.Name and v.func.value.value == name
            return v if call_ok else None
    return None


def _part_of_a_value(b: Binding) -> bool:
    """`a, b, paths = batch` / `for x, path in loader` (an element unpacked), `f = batch["input"][0]` (a
    subscript) or `name = data_dict.pop("name")` / `batch.get("name")` (an entry taken out by its key): a part of
    something else, whose kind the whole decided."""
    if b.index is not None:
        return True
    value = b.value if b.kind == "assign" else None
    if type(value) is cst.Subscript:
        return True
    return type(value) is cst.Call and type(value.func) is cst.Attribute and \
        value.func.attr.value in ("pop", "get") and bool(value.args) and \
        type(value.args[0].value) is cst.SimpleString and value.args[0].keyword is None


_STR_ONLY_METHODS = frozenset({"find", "rfind", "lower", "upper", "strip", "lstrip", "rstrip", "startswith",
                               "endswith", "encode", "isdigit", "isalpha", "isalnum", "isspace", "casefold",
                               "capitalize", "ljust", "rjust", "zfill", "splitlines", "partition", "rpartition"})


def _moved_value(b: Binding) -> bool:
    """`name = <value>.to(device)` / `.cuda()` (after `.eval()`, `.train()`, `.requires_grad_(False)`): an
    assignment of a value moved to a device."""
    value = b.value if b.kind == "assign" and b.index is None else None
    if type(value) is not cst.Call or type(value.func) is not cst.Attribute:
        return False
    return value.func.attr.value in ("to", "cuda")


def _started_at_a_number(bindings: list[Binding], kinds: list[Kind]) -> bool:
    """The numbers among `bindings` are all plain `name = 0.0` literals, and at least one other binding is an
    augmented assignment (`name += value`) whose value's kind is unknown: an accumulator started at a literal."""
    numbers = [b for b, k in zip(bindings, kinds) if k is Kind.NUMBER]
    return bool(numbers) and all(b.kind == "assign" and _number_literal(b.value) for b in numbers) and \
        any(b.kind == "augassign" and k is Kind.UNKNOWN for b, k in zip(bindings, kinds)) and \
        all(k in (Kind.NUMBER, Kind.UNKNOWN) for k in kinds)


def _number_literal(node: Optional[cst.BaseExpression]) -> bool:
    """`0`, `0.0`, `-1.0` (a placeholder such as `norm = -1.0` before the loop that computes it)."""
    if type(node) is cst.UnaryOperation and type(node.operator) in (cst.Minus, cst.Plus):
        node = node.expression
    return type(node) in (cst.Integer, cst.Float)


def _repeats_a_list(node: cst.BinaryOperation) -> bool:
    """`[x] * n`, `n * [x]`, `[a] + rest`: a list (or tuple) display repeated or joined."""
    return type(node.operator) in (cst.Multiply, cst.Add) and any(
        type(side) in (cst.List, cst.ListComp, cst.Tuple) for side in (node.left, node.right))


def is_text(node: cst.BaseExpression) -> bool:
    """A str-valued expression: a string literal, or `+`, `*` or `%` with a string on the left (`"%11s" * 2 +
    "%g"`, `"%g" % t`)."""
    if type(node) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
        return True
    return type(node) is cst.BinaryOperation and type(node.operator) in (cst.Add, cst.Multiply, cst.Modulo) \
        and is_text(node.left)


def _looks_like_tensor_name(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value in ("x", "y", "inputs", "targets", "labels", "images",
                                                         "data", "target", "input", "input_ids", "X", "Y")


def _arith(a: Kind, b: Kind) -> Kind:
    if Kind.TENSOR in (a, b):
        return Kind.TENSOR
    if Kind.NUMPY in (a, b):
        return Kind.NUMPY
    if a is Kind.NUMBER and b is Kind.NUMBER:
        return Kind.NUMBER
    return Kind.UNKNOWN


_ASSIGNMENTS = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr)


def _special_token_id(expr: cst.BaseExpression) -> bool:
    """`tokenizer.eos_token_id`: a Python int (analysis/tokenizers.py, which imports the analysis package)."""
    from gpulint.analysis.tokenizers import special_token_id

    return special_token_id(expr)


def _loader_by_key(node: cst.Subscript) -> bool:
    """`self.data_loader["dev"]`, `dataloaders[phase]`, `loaders["train"]`: an entry, picked by a string or a
    name, of a container the project names for loaders (a name, or an attribute of `self`) (a DataLoader itself takes no subscript, so a loader-named
    value that is subscripted is a dict or list of them). Not a slice, a number or an expression as the key."""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return False
    key = node.slice[0].slice.value
    if type(key) not in (cst.SimpleString, cst.Name):
        return False
    base = node.value
    if type(base) is cst.Attribute and not (type(base.value) is cst.Name and base.value.value == "self"):
        return False  # `solver.loaders['train']` of another object (a tool peeking at one batch of a solver)
    name = base.attr.value if type(base) is cst.Attribute else base.value if type(base) is cst.Name else None
    return name is not None and not _VERB_PREFIX.match(name) and not _LOADER_SETTINGS.search(name) and bool(
        _LOADER_NAME.match(name) or _SEVERAL_LOADERS.search(name))


# `loader_kwargs`, `dataloader_params`, `loaders_config`: the settings of loaders, not loaders
_LOADER_SETTINGS = re.compile(r"(config|cfg|conf|kwargs|params|args|opts|options|settings|cores|sizes?|names?|"
                              r"len|lens|length|lengths|steps|iters?|type|types|fn|cls|class)$", re.IGNORECASE)


def _kind_from_name(name: str) -> Kind:
    if _VERB_PREFIX.match(name):
        return Kind.UNKNOWN  # `self.get_bare_model`, `build_dataloader`: a function that makes or handles one
    if _LOADER_NAME.match(name) and not _SEVERAL_LOADERS.search(name):
        return Kind.LOADER
    if _MODULE_NAME.match(name) and not _FUNCTION_NAME.match(name):
        return Kind.MODULE
    if _OPTIMIZER_NAME.match(name):
        return Kind.OPTIMIZER
    return Kind.UNKNOWN


def _annotation_kind(inference: KindInference, annotation: cst.BaseExpression) -> Kind:
    q = inference.qualified(annotation) if type(annotation) in (cst.Name, cst.Attribute) else None
    if q is None and type(annotation) is cst.SimpleString:
        q = annotation.evaluated_value if isinstance(annotation.evaluated_value, str) else None
    if q is None:
        return Kind.UNKNOWN
    if q in ("torch.Tensor", "Tensor", "torch.FloatTensor", "torch.LongTensor"):
        return Kind.TENSOR
    if q in ("numpy.ndarray", "np.ndarray", "ndarray"):
        return Kind.NUMPY
    if q in ("int", "float", "bool"):
        return Kind.NUMBER
    if q in ("torch.nn.Module", "nn.Module"):
        return Kind.MODULE
    if q.endswith("DataLoader"):
        return Kind.LOADER
    if q.startswith("torch.optim."):
        return Kind.OPTIMIZER
    if q in ("str", "list", "dict", "tuple"):
        return Kind.OTHER
    return Kind.UNKNOWN


def _is_module_class(inference: KindInference, node: Optional[cst.CSTNode]) -> bool:
    if type(node) is not cst.ClassDef:
        return False
    for base in node.bases:
        q = inference.qualified(base.value) if type(base.value) in (cst.Name, cst.Attribute) else None
        if q in ("torch.nn.Module", "nn.Module", "Module", "torch.nn.modules.module.Module"):
            return True
        if type(base.value) is cst.Name:
            other = inference.index.classes.get(base.value.value)
            if other is not None and other is not node and _is_module_class(inference, other):
                return True
    return False


def _reads_name(value: cst.CSTNode, name: str) -> bool:
    """`value` reads the name `name` (`0.5 * (q + p)` reads `p`)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name and node.value == name:
            return True
        stack.extend(_child_nodes(node))
    return False


def _own_nodes(fn: cst.FunctionDef):
    """The nodes of `fn`'s body, not those of functions, lambdas or classes defined in it."""
    return own_scope_nodes([fn.body])
