"""The project around a linted file: its root, its imports, and summaries of the functions and classes it calls.

Real training code keeps its syncs one call away from the loop: a metric logger whose `update(**kw)` calls
`.item()` on every value, a `reduce_mean(x)` that returns `x.item()`, a timer whose `__exit__` calls
`torch.cuda.synchronize()`, a loader factory that forgets `pin_memory`. This module answers, for a function or
class of the user's own project, what a call to it costs, without executing anything:

- which parameters (including the values of `*args` / `**kwargs`) reach a host read inside it (`sink_params`);
- whether a call synchronises whatever it is given (`always_syncs`), including a class's `__enter__`,
  `__exit__` and `__call__`;
- whether it returns a host scalar (`return x.item()`), and whether it returns a `DataLoader` (and pinned or not).

Summaries are computed from Python's own `ast` (ten times cheaper than LibCST, see shared facts) for modules that
a linted file imports, lazily, once per file content, transitively (a helper calling a helper), and guarded
against recursion. Import resolution follows Python for the project (search order documented on `resolve`);
an import that cannot be resolved is simply unknown.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Optional, Union

from gpulint import ast_walk
from gpulint import incremental, legacy_syntax, runtime
from gpulint.files import FileError, read_regular
from gpulint.syntax import NOT_CONSTANT
from gpulint.analysis.element_reads import element_read
from gpulint.analysis.host_copies import bind_host_data, copy_of_host_data, none_by_default
from gpulint.analysis.config_defaults import config_default, setting_path
from gpulint.analysis.comprehension_reads import device_read
from gpulint.analysis import lazy_module
from gpulint.analysis.libraries import HANDS_BACK, hands_back_elements
from gpulint.analysis.generators import yielded_source_ast
from gpulint.analysis.lazy_module import same_scope
from gpulint.analysis.memo_guards import memo_fill, memo_return
from gpulint.analysis.skip_guards import skip_guard
from gpulint.analysis.test_code import is_test_path
from gpulint import file_stats
from gpulint.analysis.kinds import (TENSOR_ATTRS_OTHER, TENSOR_METHODS_NUMBER, TENSOR_METHODS_OTHER,
                                    _TORCH_NON_TENSOR, _TORCH_NON_TENSOR_PREFIXES, _TORCH_NUMBER)

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
# Host reads of a tensor: each waits for the GPU. (`.to("cpu")` is recognised separately.)
SINK_METHODS = {"item": ".item()", "tolist": ".tolist()", "cpu": ".cpu()", "numpy": ".numpy()",
                "nonzero": ".nonzero()"}
SINK_BUILTINS = {"float", "int", "bool"}
# Functions of one tensor whose output is sized by a count the host reads (no host value comes back)
SHAPE_READS = {"torch.where": "torch.where(cond)", "torch.nonzero": "torch.nonzero()",
               "torch.argwhere": "torch.argwhere()"}
# `math` functions of one number: given a tensor, they convert it with `__float__` (a host read) first.
SINK_MATH = frozenset(f"math.{f}" for f in ("isnan", "isinf", "isfinite", "floor", "ceil", "trunc", "sqrt", "exp",
                                             "log", "log2", "log10", "fabs"))
# Torch factories whose positional arguments are sizes or Scalar bounds: a 0-dim tensor given there is read on the
# host (`__index__`, or `.item()` for a Scalar), whatever the factory makes (`torch.arange(lengths.max())`).
# The value: how many leading positional arguments are sizes (None: all of them; a tuple or list there, each element).
SIZE_FUNCTIONS = {"torch.arange": None, "torch.zeros": None, "torch.ones": None, "torch.empty": None,
                  "torch.rand": None, "torch.randn": None, "torch.randperm": 1, "torch.eye": None, "torch.full": 1}
SYNC_CALLS = {"torch.cuda.synchronize", "torch.cuda.current_stream().synchronize", "torch.cuda.Event.synchronize"}
LOADER_CLASSES = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
                  "torchdata.stateful_dataloader.StatefulDataLoader", "DataLoader", "StatefulDataLoader"}
# Tests that hold whenever code runs on a GPU, or on several (the runs this linter is for): a sync under them
# costs on every call there (`if torch.cuda.is_available():`, `if world_size > 1:`, `if args.distributed:`).
_GPU_GUARDS = ("cuda", "is_available", "device", "gpu", "world_size", "world >", "distributed", "dist_avail",
               "is_initialized")
MAX_DEPTH = 6  # transitive summaries: helper -> helper -> ... (deeper calls count as unknown)
MAX_PROJECT_FILES = 3000  # files searched for the call sites of a function (a parameter's class)
_SKIPPED_FOLDERS = {"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env"}
_UNKNOWN = NOT_CONSTANT  # not a known value (gpulint.syntax.literal_value says the same of non-literals)
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# A loop over a loader (`for x in train_loader:`, `it = iter(loader)`) or a backward pass, as text.
# `zip(*train_loaders)`: one batch of each of a list of loaders per `next(...)` (a step loop's iterator).
_TRAINING_TEXT = re.compile(rb"\.backward\(|\bin\s[^\n:]*(?i:loader)[^\n]*:|iter\([^\n)]*(?i:loader)|"
                            rb"zip\(\*[^\n)]*(?i:loader)")
# An environment step unpacked into four or five names (`obs, reward, done, info = env.step(action)`): an RL
# rollout, whose loop is a step loop of training although the file has no loader and no backward
# (`LoopAnalysis._rollout`, a network called through `self.policy`); what it calls runs every environment step.
_ENV_STEP_TEXT = re.compile(rb"^[ \t]*\w+(?:[ \t]*,[ \t]*\w+){3,4}[ \t]*=[ \t]*[\w.]+\.step\(", re.MULTILINE)
# A step loop over a counter (`while self.step < self.cfg.num_train_steps:`, `while global_step < max_steps:`): a
# trainer whose every iteration may be one training step of an agent's method (`LoopAnalysis._body_trains`,
# `steps_through_method`), although the file has no loader, no backward and no environment step.
_STEP_WHILE_TEXT = re.compile(rb"^[ \t]*while[ \t]+[\w.]*step[\w.]*[ \t]*<", re.MULTILINE | re.IGNORECASE)

# A step loop over a counter (`for T in trange(1, args.T_max + 1):`, `for step in range(num_steps):`, `while frame <
# max_frames:`): every iteration may run a step through methods of project objects (`dqn.act(state)`,
# analysis/step_callables.py), although the file has no loader, no backward and no environment step of four names.
# The words are looked for in the counter's name or in the range's arguments (`for frame in range(100000):`); not
# `max_new_tokens` or `iters` (a generation or refinement loop inside a model, not a training file).
_COUNTER_WORDS = rb"(?i:step|frame|episode|iteration|max_iter|_max\b)"
_STEP_FOR_TEXT = re.compile(rb"^[ \t]*(?:for[ \t]+(?:\w*" + _COUNTER_WORDS + rb"\w*[ \t]+in[ \t]+(?:\w+\.)?t?range\(|"
                            rb"\w+[ \t]+in[ \t]+(?:\w+\.)?t?range\([^\n]*" + _COUNTER_WORDS + rb")|"
                            rb"while[ \t]+[\w.]*" + _COUNTER_WORDS + rb"[\w.]*[ \t]*<)", re.MULTILINE)

# A prefetcher's batch loop (BasicSR and the restoration projects built on it: `train_data = prefetcher.next()`,
# then `while train_data is not None:`, the next batch drawn at the end of the body): one batch per iteration.
_PREFETCH_WHILE_TEXT = re.compile(rb"^[ \t]*while[ \t]+(\w+)[ \t]+is[ \t]+not[ \t]+None[ \t]*:", re.MULTILINE)


def _prefetch_loop_text(raw: bytes) -> bool:
    """`while X is not None:` where the module also binds `X = <something>.next()`."""
    for match in _PREFETCH_WHILE_TEXT.finditer(raw):
        if re.search(rb"\b" + re.escape(match.group(1)) + rb"[ \t]*=[ \t]*[\w.]+\.next\(\)", raw) is not None:
            return True
    return False


def _training_text(raw: bytes) -> bool:
    """`_TRAINING_TEXT.search(raw)`, without the search where it cannot match: its first branch is the literal
    `.backward(`, the other two need `loader` in some case (ASCII case-insensitive, as `(?i:)` is on bytes).
    The regular expression tries its branches at every position of every project file (on timm a third of
    building the identifier index, in every worker)."""
    if b".backward(" in raw:
        return True
    if b"loader" in raw.lower() and _TRAINING_TEXT.search(raw) is not None:
        return True
    if b".step(" in raw and _ENV_STEP_TEXT.search(raw) is not None:
        return True
    if b"while" in raw and _STEP_WHILE_TEXT.search(raw) is not None:
        return True
    if b".next()" in raw and b"is not None" in raw and _prefetch_loop_text(raw):
        return True
    return (b"range(" in raw or b"while" in raw) and _STEP_FOR_TEXT.search(raw) is not None


@dataclass(frozen=True)
class Sink:
    """Where a host read happens: the file, the line, and what it is (`.item()`)."""

    path: Path
    line: int
    what: str
    # "parameters": the read is of the parameters (or their gradients) of a module handed in, as a gradient
    # clipping helper does with `for p in model.parameters(): p.grad.norm().item()`.
    # "output": the read is of what calling the parameter returned (`out = net(img)`, then `out.cpu()`): a module
    # handed in runs there and its output is read back.
    through: str = ""
    # The read runs only where a parameter holds one of some constants: `if reduction == "mean": return
    # x.mean().item()` gives ("reduction", ("mean",), True); the last element says whether the parameter's
    # default (or a call leaving it out) takes the branch. () when the read is not under such a test.
    when: tuple = ()
    # The implementation that reads, where a call may run one of several (analysis/candidate_methods.py):
    # `SyncingImpl.inner_update`, which `self._impl.update(...)` may run.
    candidate: str = ""

    def runs_with(self, value: object, given: bool) -> bool:
        """Whether the read runs at a call passing `value` (a constant; `_UNKNOWN` for anything else) for the
        tested parameter (`given`: the call passes it at all)."""
        if not self.when:
            return True
        if not given:
            return self.when[2]
        if self.when[1] == (None,) and value is _UNKNOWN:
            return False  # `if size is None: size = int(index.max()) + 1`: a call passing a size reads nothing
        if value is _UNKNOWN:
            return True
        return any(_matches(tested, value) for tested in self.when[1])


class _Tested:
    """A value test of a parameter that is no constant (`Sink.when`): `if p is not None:` (`NOT_NONE`), `if p:`
    (`TRUTHY`). A call leaving the parameter at its default None takes neither branch."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Tested) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):  # a cached summary unpickles to the same test
        return (_tested, (self.name,))


def _tested(name: str) -> "_Tested":
    return NOT_NONE if name == NOT_NONE.name else TRUTHY


NOT_NONE = _Tested("<not None>")
TRUTHY = _Tested("<truthy>")


def _matches(tested: object, value: object) -> bool:
    """Whether a constant `value` passed for a tested parameter takes the branch `tested` stands for."""
    if tested == NOT_NONE:
        return value is not None
    if tested == TRUTHY:
        try:
            return bool(value)
        except Exception:  # pragma: no cover - constants all have a truth value
            return True
    try:
        return value == tested
    except Exception:  # pragma: no cover
        return False

    def where(self, relative_to: Optional[Path] = None) -> str:
        return f"{relative(self.path, relative_to)}:{self.line}"


def _sink_key(sink: Optional[Sink]) -> Optional[tuple]:
    return None if sink is None else (str(sink.path), sink.line, sink.what, sink.through, repr(sink.when),
                                      sink.candidate)


def relative(path: Path, root: Optional[Path]) -> str:
    """`path` relative to the project root (as messages name it), else as it is."""
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def display_path(path: Path) -> str:
    """How output names another file: relative to the working directory when inside it (as the linted files
    are named), else absolute."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path.as_posix()


@dataclass(frozen=True)
class LoaderFact:
    """A `DataLoader` a function returns: where it is built and whether it pins memory (None: cannot tell)."""

    path: Path
    line: int
    pinned: Optional[bool]
    # `pin_memory=<parameter>` (pinned None): the factory's parameter that decides it, and that parameter's
    # literal default (`def create_loader(..., pin_memory=False)`); a call site's argument resolves it
    # (analysis/data_facts.py `factory`).
    pin_param: Optional[str] = None
    pin_default: Optional[bool] = None
    # `pin_memory=(device != "cpu")`: the comparison of `pin_param` with a string that decides it ("!=" or "==",
    # the string); a call's string argument (or a name bound to one) is compared the same way
    pin_test: Optional[tuple[str, str]] = None


@dataclass
class FunctionSummary:
    qualname: str
    path: Path
    line: int
    params: tuple[str, ...] = ()  # positional parameters, in order (`self` included for methods)
    keyword_only: tuple[str, ...] = ()
    star: Optional[str] = None  # name of *args
    double_star: Optional[str] = None  # name of **kwargs
    sink_params: dict[str, Sink] = field(default_factory=dict)  # parameter name -> the read it reaches
    always_syncs: Optional[Sink] = None
    returns_host_scalar: Optional[Sink] = None
    returns_loader: Optional[LoaderFact] = None
    # Where in a returned tuple that loader is (`return data_set, data_loader` gives 1); None: the value itself,
    # or a position not known. A caller's `train_data, train_loader = data_provider(args, "train")` binds the
    # loader to that position's name only.
    returns_loader_at: Optional[int] = None
    returns_tensor: bool = False  # some `return` hands back a tensor (or a dict/tuple/list of tensors)
    returns_params: frozenset = frozenset()  # parameters returned as they are (`return input_dict`)
    # Every `return` that hands back tensors hands back tensors it built on the host (`torch.stack`,
    # `torch.tensor`, `torch.from_numpy`, ...; sliced or viewed, never moved or pinned): a `get_batch`/`next_batch`
    # whose caller copies the batch to the GPU from pageable memory (GPU410). Where the first one is built.
    returns_host_batch: Optional[Sink] = None
    # The project classes of what it returns: one element for `return Cls(...)`, one per element of a tuple
    # (`return model, criterion`); None where an element is not a project instance or cannot be told.
    returns_classes: tuple = ()
    # The project classes the function builds and returns, every `return` of a value counted (a factory:
    # `def build_optimizer(cfg): if ...: return LionW(...) ... return AdamW(...)` gives both), or, where a
    # return is not a project instance it can tell, the class its return annotation names (`-> Optimizer`);
    # () when neither tells. An instance of one of them is what a call of the function holds.
    returns_union: tuple = ()
    # A `@classmethod` alternative constructor: every `return` of a value hands back `cls(...)` (or a name
    # bound to it), an instance of the class it is called on (`LossCompute.from_opts(opt, model)`).
    returns_cls: bool = False
    returns_annotation: Optional[ast.expr] = None  # the return annotation, where `returns_union` is empty
    # Every `return` of a value hands back a model this function moved to a CUDA device
    # (`model = Darknet(cfg).to(device)` with `device = torch.device("cuda" if ... else "cpu")`; `return model`).
    returns_on_cuda: bool = False
    # The parameter every model this function hands back is moved to (`g = g.to(device)`, `AveragedModel(g,
    # device=device)`, `return g, ema, d`) where that parameter is the device: a caller passing a CUDA device
    # gets CUDA models (training.TrainingFacts._factory_on_cuda); None when not every returned model is.
    returns_on_device_param: Optional[str] = None
    # Every `return` of a value hands back an instance of the same library class of analysis/libraries.py's
    # table, built here (`accelerator = Accelerator(...)`; `return accelerator`): its qualified name.
    returns_library: Optional[str] = None
    # Every `return` of a value hands back the same function defined in this function's body (a closure
    # factory: `def make_train_fn(G, D): def train(x, y): ...; return train`): its qualname (`make_train_fn.train`).
    returns_function: Optional[str] = None
    # The body does nothing: only a docstring, `pass`, or `return` of a literal (`def train(x, y): return {}`,
    # the no-op a closure factory hands back for a dry run).
    stub: bool = False
    # Every `return` of a value hands back one parameter's object itself (`def warm_start(path, model): ...
    # return model`, through `.to()`/`.cuda()`, a model wrapper or another such function): a caller's
    # `model = warm_start(path, model)` keeps the class it had. `returns_param_elements`: the same per element
    # of a returned tuple (`return model, optimizer, lr` gives ("model", "optimizer", None)).
    returns_param: Optional[str] = None
    returns_param_elements: tuple = ()
    # A generator whose every `yield` hands on an item of this parameter (`def log_every(self, iterable, ...):
    # for obj in iterable: ... yield obj`): iterating a call of it iterates what the caller passes.
    yields_param: Optional[str] = None
    # Every `return` of a value hands back a copy in host memory (`return loss.detach().cpu()`, `.numpy()`,
    # `.tolist()`, `.item()`, `.to("cpu")`): what a call of it holds waits for no GPU when read.
    returns_host_copy: bool = False
    # Parameters the function copies to the GPU on every call (`x.cuda()`, `x.to(device)`, directly or through
    # another such function: `parse_batch(batch)` handing the batch's tensors to `to_gpu(x)`): a loop handing it
    # its batch copies the batch to the device.
    moves_params: frozenset = frozenset()
    # (parameter, line) of each `x.cuda()` / `x.to(device)` of a parameter's value written in the function itself
    # without `non_blocking=True` (`def to_var(x): if torch.cuda.is_available(): x = x.cuda(); return x`): a
    # loop handing it a pinned batch copies it blocking (GPU202 at the call).
    blocking_moves: tuple = ()
    # Parameters the function copies to the GPU whenever they are tensors: the copy sits under a test that the
    # parameter is one (`if torch.is_tensor(obj): return obj.cuda(dev, non_blocking=True)`, a project's recursive
    # `async_copy_to`/`to_device` helper); a tensor handed there is copied on every call.
    moves_tensor_params: frozenset = frozenset()
    # Parameters the function calls itself on every call (`def gpu_timer(closure): ... closure()`), outside a
    # periodic test or an option: a function passed there runs whenever the call does.
    calls_params: frozenset = frozenset()
    # The parameter whose device `always_syncs` waits on: the sync sits under `if device.type == "cuda":` (a
    # profiling `sync(device)`), so a call passing a CPU device (`torch.device("cpu")`) syncs nothing.
    syncs_on_device_of: Optional[str] = None
    # Every call copies a tensor it builds from host data to the GPU (`torch.from_numpy(a).to(device)`, directly
    # or through another such function; analysis/host_copies.py): where, and the parameter naming the device
    # it copies to (None: not a parameter), so a call passing the CPU copies nothing.
    copies_host: Optional[Sink] = None
    copies_host_device: Optional[str] = None
    # The project modules this summary was computed from (its own and every helper's it follows).
    dependencies: frozenset = frozenset()
    consulted: frozenset = frozenset()  # (module, qualname) of the summaries it was computed from

    def fingerprint(self) -> tuple:
        """Everything a caller may use, as plain values (for `Project.summary_digest`)."""
        return (self.qualname, self.line, self.params, self.keyword_only, self.star, self.double_star,
                sorted((k, _sink_key(v)) for k, v in self.sink_params.items()), _sink_key(self.always_syncs),
                _sink_key(self.returns_host_scalar),
                None if self.returns_loader is None else (self.returns_loader.line, self.returns_loader.pinned,
                                                          str(self.returns_loader.path), self.returns_loader_at),
                self.returns_tensor, sorted(self.returns_params), _sink_key(self.returns_host_batch),
                [None if c is None else (c.name, str(c.path)) for c in self.returns_classes],
                [(c.name, str(c.path)) for c in self.returns_union], self.returns_cls, self.returns_on_cuda,
                self.returns_on_device_param,
                None if self.returns_annotation is None else ast.dump(self.returns_annotation),
                sorted(self.calls_params), self.returns_library, self.returns_function, self.stub,
                self.syncs_on_device_of, self.returns_param, self.returns_param_elements, self.yields_param,
                sorted(self.moves_params), self.returns_host_copy, _sink_key(self.copies_host),
                self.copies_host_device, sorted(self.moves_tensor_params), self.blocking_moves)

    def sink_for_argument(self, position: Optional[int], keyword: Optional[str],
                          bound_method: bool = False) -> Optional[Sink]:
        """The sink an argument of a call reaches: by position (0 = first argument after `self` when the call
        is through an instance) or by keyword; `*args`/`**kwargs` catch the rest."""
        params = self.params[1:] if bound_method and self.params else self.params
        if keyword is not None:
            if keyword in params or keyword in self.keyword_only:
                return self.sink_params.get(keyword)
            return self.sink_params.get(self.double_star) if self.double_star else None
        if position is not None:
            if position < len(params):
                return self.sink_params.get(params[position])
            return self.sink_params.get(self.star) if self.star else None
        return None


@dataclass
class ClassSummary:
    name: str
    path: Path
    line: int
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)
    bases: tuple[str, ...] = ()
    properties: frozenset = frozenset()  # methods read as attributes (`@property`), run on every read
    # computed on first use (`_buffers`, `_moved_attributes`)
    buffers: Optional[frozenset] = field(default=None, repr=False, compare=False)
    moved: Optional[frozenset] = field(default=None, repr=False, compare=False)
    # attribute -> the values its methods assign to `self.<attribute>` (`_self_stores`), on first use
    self_stores: Optional[dict] = field(default=None, repr=False, compare=False)


@dataclass
class Registry:
    """A module-level dict literal of project functions or classes (`DiT_models = {"DiT-XL/2": DiT_XL_2, ...}`):
    `DiT_models[args.model](...)` builds what one of them builds. `values`: the dotted names, as written."""

    name: str
    path: Path
    values: tuple[str, ...]


Summary = Union[FunctionSummary, ClassSummary]


def find_root(path: Path) -> Path:
    """The project root: the nearest folder above `path` with a pyproject.toml, setup.cfg, setup.py or .git;
    else the file's own folder. In a batch run (`gpulint check`, runtime.batch) the answer is remembered per
    path: the run's files do not move, and a model of code run every step asks for every function it looks at
    (an editor's files may gain a pyproject.toml: the language server asks each time)."""
    if not runtime.batch_mode():
        return _find_root(path)
    if _ROOTS.get(None) != runtime.batch_number():  # a new run (tests run many in one process)
        _ROOTS.clear()
        _ROOTS[None] = runtime.batch_number()
    found = _ROOTS.get(path)
    if found is None:
        found = _ROOTS[path] = _find_root(path)
    return found  # type: ignore[return-value]


_ROOTS: dict = {}  # path -> its root, for the batch run numbered under the key None


def _find_root(path: Path) -> Path:
    path = path.resolve()
    start = path if path.is_dir() else path.parent
    found = None
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            if found is None and _extension_folder_on_path(folder):
                continue  # `lib/setup.py` building the C extensions of a `lib` the scripts above import from
            if found is None:
                found = folder
            if (folder / ".git").exists() or not (folder / "__init__.py").exists():
                return folder
            # a package of an enclosing project, not a project: its `setup.py` builds an extension
            # (VITS `monotonic_align/setup.py`, Cython) or is a module (`dinov2/eval/setup.py`)
    return found if found is not None else start


def _extension_folder_on_path(folder: Path) -> bool:
    """`folder` holds only a `setup.py` (no other root marker, no `__init__.py`) that builds extensions
    (`ext_modules`), and a script of the folder above puts it on `sys.path` by its name (faster-rcnn's
    `_init_paths.py`: `lib_path = osp.join(this_dir, 'lib')`): the folder is the importable half of the project
    above, not a project of its own (whose training scripts would be outside it)."""
    if any((folder / marker).exists() for marker in ROOT_MARKERS if marker != "setup.py") or \
            (folder / "__init__.py").exists():
        return False
    try:
        setup = (folder / "setup.py").read_bytes()[:200_000]
        if b"ext_modules" not in setup:
            return False
        scripts = sorted(folder.parent.glob("*.py"))[:_MAX_PATH_SCRIPTS]
    except OSError:
        return False
    quoted = (f"'{folder.name}'".encode(), f'"{folder.name}"'.encode())
    for script in scripts:
        try:
            text = script.read_bytes()[:200_000]
        except OSError:
            continue
        if b"sys.path" in text and any(q in text for q in quoted):
            return True
    return False


_MAX_PATH_SCRIPTS = 40  # top-level scripts of the folder above read for a `sys.path` entry naming the folder


_MAX_ANCESTORS = 4  # folders above an importer's own searched for its absolute imports (after the usual places)


# Libraries a package's own module may share a name with (`utils/torch.py`): Python 3 imports are absolute, so a
# module of that package importing the name gets the library (the sibling only when run as a script).
_SHADOWED_LIBRARIES = frozenset({"torch", "numpy", "torchvision", "scipy"})


class ImportResolver:
    """Python's import search, for one project, statically.

    Search order for an absolute import `a.b` made in file F: F's own folder (what `sys.path[0]` is when F runs
    as a script), the project root, then `<root>/src`. A relative import resolves from F's package. A module is
    `a/b.py` or the package `a/b/__init__.py`. Nothing outside the project is resolved (libraries are unknown).
    Last, the folders between F's and the root (at most four), nearest first: a launcher's `sys.path` entry.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.search = [self.root, self.root / "src"]
        self._memo: dict[tuple, Optional[Path]] = {}
        # (module, importer, level) -> the answer: `_memo` is by the importer's folder, and `importer.parent` is
        # a new Path (hashed afresh) each time; a monorepo asks this over a million times. Emptied whenever an
        # importer's `sys.path` folders are noted (they change what `_memo`'s key is).
        self._by_importer: dict[tuple, Optional[Path]] = {}
        # importer -> the project folders its own top-level `sys.path.append(...)`/`insert(...)` add
        self.extra: dict[Path, tuple[Path, ...]] = {}

    def add_paths(self, importer: Path, entries: tuple) -> None:
        """Note the folders `importer` puts on `sys.path` (`ModuleInfo.sys_path`): searched after the usual
        places, for that file's absolute imports. A path relative to the working directory is tried from the
        file's folder and from the project root; folders outside the project are left out (never resolved)."""
        found: list[Path] = []
        for anchor, rel in entries:
            for base in ((importer.parent,) if anchor == "file" else (importer.parent, self.root)):
                folder = Path(os.path.normpath(base / rel))
                if folder not in found and (folder == self.root or self.root in folder.parents) and folder.is_dir():
                    found.append(folder)
        previous = self.extra.get(importer)
        self.extra[importer] = tuple(found)
        if found or previous:
            self._by_importer.clear()

    def resolve(self, module: str, importer: Path, level: int = 0) -> Optional[Path]:
        direct = (module, importer, level)
        try:
            return self._by_importer[direct]
        except KeyError:
            pass
        extra = self.extra.get(importer, ()) if self.extra else ()
        key = (module, importer if extra else importer.parent, level)
        if key not in self._memo:  # the file system is asked once per name and folder in a run
            self._memo[key] = self._resolve(module, importer, level, extra)
        found = self._by_importer[direct] = self._memo[key]
        return found

    def _resolve(self, module: str, importer: Path, level: int, extra: tuple = ()) -> Optional[Path]:
        parts = [p for p in module.split(".") if p] if module else []
        if level:
            base = importer.resolve().parent
            for _ in range(level - 1):
                base = base.parent
            return self._find(base, parts) if parts else self._package(base)
        own = importer.resolve().parent
        if parts and parts[0] in _SHADOWED_LIBRARIES and (own / "__init__.py").is_file():
            own = None  # `import torch` in a package holding a `torch.py` (torchdrug's utils): the library
        for base in (*((own,) if own is not None else ()), *self.search, *extra):
            found = self._find(base, parts)
            if found is not None:
                return found
        # a folder above the importer's, inside the project, that a launcher puts on `sys.path` at run time
        # (CenterNet's `src/_init_paths.py` adds `src/lib`; `src/lib/trains/ctdet.py` imports `models.losses`)
        for base in list(importer.resolve().parent.parents)[:_MAX_ANCESTORS]:
            if base == self.root or self.root not in base.parents:
                break
            found = self._find(base, parts)
            if found is not None:
                return found
        return None

    def _find(self, base: Path, parts: list[str]) -> Optional[Path]:
        if not parts:
            return None
        target = base.joinpath(*parts)
        candidate = target.with_suffix(".py") if target.name else None
        if candidate is not None and candidate.is_file():
            return candidate
        return self._package(target)

    @staticmethod
    def _package(folder: Path) -> Optional[Path]:
        init = folder / "__init__.py"
        return init if init.is_file() else None


def _display_length(value: ast.expr) -> Optional[int]:
    """The number of items of a list, tuple or set display without `*` items (None: anything else)."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)) and \
            not any(isinstance(e, ast.Starred) for e in value.elts):
        return len(value.elts)
    return None


class ModuleInfo:
    """One parsed module of the project: its imports, top-level functions and classes (ast nodes)."""

    def __init__(self, path: Path, tree: ast.Module, digest: str) -> None:
        self.path = path
        self.digest = digest
        self.imports: dict[str, tuple[str, Optional[str], int]] = {}  # local -> (module, attribute, level)
        self.tree = tree
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ClassSummary] = {}
        self.registries: dict[str, Registry] = {}
        self.type_vars: dict[str, ast.expr] = {}  # `T = TypeVar("T", bound=X)`: T -> X
        self.star_imports: list[tuple[str, int]] = []  # `from helpers import *`: (module, level)
        self.plain_imports: list[str] = []  # `import _init_paths`: top-level imports of one undotted name
        # `MODEL = importlib.import_module(FLAGS.model)`: name -> the call (`Project.chosen_module` reads it)
        self.chosen_modules: dict[str, ast.Call] = {}
        # `criterion = MODEL.get_loss`: a top-level name bound once to a dotted name -> that name (None: rebound)
        self.aliases: dict[str, Optional[str]] = {}
        # `if FLAGS.model == 'boxnet': Detector = MODEL.BoxNet else: Detector = MODEL.VoteNet` at the top level:
        # a name every branch of one `if` binds once to a dotted name -> those names (None: bound elsewhere too)
        self.alias_choices: dict[str, Optional[tuple[str, ...]]] = {}
        # `PARTS = [TRAIN, VAL, TEST]` at the top level, its only binding and never extended there: name -> the
        # number of items (None: bound again, extended, or built with `*`); `Project.display_length` reads it
        self.displays: dict[str, Optional[int]] = {}
        self._calls_by_name: Optional[dict[str, list[tuple[ast.Call, dict]]]] = None
        self._indexes: dict[object, object] = {}  # `indexed`
        for stmt in tree.body:
            self._top_level(stmt)
        self.sys_path = _sys_path_entries(tree.body)  # folders this module adds to `sys.path` (ImportResolver)

    def _note_display(self, stmt: ast.stmt) -> None:
        """Keep `displays` (see `__init__`) for one top-level statement: a list, tuple or set display bound to a
        name once; any other binding of the name, an augmented assignment, or a call of its `append`, `extend`
        or `insert` forgets the count."""
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                isinstance(stmt.value.func, ast.Attribute) and isinstance(stmt.value.func.value, ast.Name) and \
                stmt.value.func.attr in ("append", "extend", "insert", "add", "update"):
            if stmt.value.func.value.id in self.displays:
                self.displays[stmt.value.func.value.id] = None
            return
        if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and isinstance(stmt.target, ast.Name):
            name = stmt.target.id
            value = stmt.value if isinstance(stmt, ast.AnnAssign) else None
            self.displays[name] = _display_length(value) if name not in self.displays and value is not None \
                else None
            return
        if not isinstance(stmt, ast.Assign):
            return
        for target in stmt.targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    single = len(stmt.targets) == 1 and target is node
                    self.displays[node.id] = _display_length(stmt.value) \
                        if single and node.id not in self.displays else None

    def calls_named(self, name: str) -> list[tuple[ast.Call, dict]]:
        """The calls in this module of something whose dotted name ends in `name` (`f(...)`, `utils.f(...)`),
        each with the assignments of its scope (see `_scopes`): built once per module, as call sites of many
        functions are looked for in the same modules."""
        if self._calls_by_name is None:
            index: dict[str, list[tuple[ast.Call, dict]]] = {}
            for calls, assigns in _scopes(self.tree):
                for call in calls:
                    dotted = _dotted(call.func)
                    if dotted is not None:
                        index.setdefault(dotted.rsplit(".", 1)[-1], []).append((call, assigns))
            self._calls_by_name = index
        return self._calls_by_name.get(name, [])

    def indexed(self, build):
        """`build(self.tree)`, computed once per module (`build` is the key): an index of the module that questions
        about many classes or names read in turn, instead of walking the whole tree for each (an index holding
        nodes keeps them alive as long as the module's tree is)."""
        indexes = getattr(self, "_indexes", None)  # a big module keeps only its last few (LazyModuleInfo.indexed)
        if indexes is None:
            indexes = self._indexes = {}
        found = indexes.get(build)
        if found is None:
            found = indexes[build] = build(self.tree)
        return found

    def _top_level(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self.imports[alias.asname] = (alias.name, None, 0)
                else:
                    if "." not in alias.name:
                        self.plain_imports.append(alias.name)
                    head = alias.name.split(".")[0]
                    self.imports[head] = (head, None, 0)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name != "*":
                    self.imports[alias.asname or alias.name] = (stmt.module or "", alias.name, stmt.level)
                else:
                    self.star_imports.append((stmt.module or "", stmt.level))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions[stmt.name] = stmt  # type: ignore[assignment]
            self.imports.pop(stmt.name, None)  # `from math import log` then `def log(t): ...`: the module's own
        elif isinstance(stmt, ast.ClassDef):
            self.imports.pop(stmt.name, None)
            methods: dict = {}
            for s in stmt.body:
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not (
                        s.name in methods and _accessor(s)):  # `@r.setter` keeps the getter `r`
                    methods[s.name] = s
            # `class DQN(OffPolicyAlgorithm[TPolicy], ...)`: a generic base is the class it subscripts
            bases = tuple(_dotted(b.value if isinstance(b, ast.Subscript) else b) or "" for b in stmt.bases)
            properties = frozenset(name for name, s in methods.items() if _is_property(s))
            self.classes[stmt.name] = ClassSummary(stmt.name, self.path, stmt.lineno, methods, bases,  # type: ignore
                                                   properties)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Call) and (_dotted(stmt.value.func) or "").rsplit(".", 1)[-1] \
                == "TypeVar":
            # `TImpl = TypeVar("TImpl", bound="ImplBase")`: an annotation naming it declares its bound (the
            # project base class whose subclasses the value may be: analysis/candidate_methods.py)
            bound = next((k.value for k in stmt.value.keywords if k.arg == "bound"), None)
            if bound is not None:
                self.type_vars[stmt.targets[0].id] = bound
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Dict) and stmt.value.values:
            values = [_dotted(v) for v in stmt.value.values]
            if all(values) and None not in stmt.value.keys:
                name = stmt.targets[0].id
                self.registries[name] = Registry(name, self.path, tuple(values))  # type: ignore[arg-type]
        self._note_display(stmt)
        if isinstance(stmt, ast.Assign):
            # `MODEL = importlib.import_module(FLAGS.model)` at the top level; bound again later: unknown (None)
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    dotted = _dotted(stmt.value) if len(stmt.targets) == 1 and \
                        isinstance(stmt.value, ast.Attribute) else None
                    self.aliases[target.id] = None if target.id in self.aliases else dotted
                    if target.id in self.alias_choices:
                        self.alias_choices[target.id] = None
                    if target.id in self.chosen_modules:
                        self.chosen_modules[target.id] = None  # type: ignore[assignment]
                    elif len(stmt.targets) == 1 and isinstance(stmt.value, ast.Call) and len(stmt.value.args) == 1 \
                            and not stmt.value.keywords and (_dotted(stmt.value.func) or "").endswith("import_module"):
                        self.chosen_modules[target.id] = stmt.value
        if isinstance(stmt, ast.If):
            for name, dotted in _branch_aliases(stmt).items():
                if name in self.aliases or name in self.alias_choices:
                    self.aliases[name] = None
                    self.alias_choices[name] = None
                else:
                    self.alias_choices[name] = dotted
        if isinstance(stmt, (ast.If, ast.Try)):
            # `try: from x import y except ImportError: ...` and `if TYPE_CHECKING:` blocks still bind names.
            for inner in _nested_statements(stmt):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    self._top_level(inner)

    def qualified(self, node: ast.expr) -> str:
        """`qualify` of a dotted expression (`np.zeros`, `CN`); "" when it is no dotted name or names nothing
        imported."""
        dotted = _dotted(node)
        return (self.qualify(dotted) or "") if dotted is not None else ""

    def qualify(self, dotted: str) -> str:
        """`np.zeros` -> `numpy.zeros`, `cuda.synchronize` (from torch import cuda) -> `torch.cuda.synchronize`."""
        head, _, rest = dotted.partition(".")
        if head in self.imports:
            module, attr, level = self.imports[head]
            if level == 0:
                full = f"{module}.{attr}" if attr else module
                return f"{full}.{rest}" if rest else full
        return dotted



def _pinned_by_options(info: "ModuleInfo", options: ast.expr, assigns: dict, pinned: Optional[bool]):
    """`DataLoader(ds, **loader_args)` where the caller's scope binds `loader_args` once to `dict(...,
    pin_memory=True)` or `{"pin_memory": True, ...}` and never updates it: what the options say about pinning
    (`pinned` unchanged when they leave it out); None when they cannot be told."""
    if not isinstance(options, ast.Name) or len(assigns.get(options.id, ())) != 1:
        return None
    value, index = assigns[options.id][0]
    if index is not None:
        return None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" and \
            not value.args and all(kw.arg is not None for kw in value.keywords):
        pairs = [(kw.arg, kw.value) for kw in value.keywords]
    elif isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                             for k in value.keys):
        pairs = [(k.value, v) for k, v in zip(value.keys, value.values)]  # type: ignore[union-attr]
    else:
        return None
    if any(isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and
           call.func.value.id == options.id and same_scope(scope, assigns) for call, scope in info.calls_named("update")):
        return None  # `loader_args.update(...)`: changed after it was built
    for key, item in pairs:
        if key == "pin_memory":
            return item.value is True if isinstance(item, ast.Constant) else None
    return pinned


def _flag_pinning(project, info: "ModuleInfo", value: ast.expr) -> Optional[bool]:
    """`pin_memory=args.pin_memory`: the boolean default of that command-line option, declared by the module's
    parser or the project's (`default=True` with `type=str2bool` pins, `action="store_true"` does not); None."""
    from gpulint.analysis.flags import ast_option_default

    found = ast_option_default(project, info, value)
    return found if isinstance(found, bool) else None


def _loader_identity(fact: "LoaderFact") -> tuple:
    """A loader is the `DataLoader(...)` call it was built by."""
    return fact.path, fact.line


def _function_identity(found: tuple) -> tuple:
    """A callable passed on is the project function (or method) it runs, bound or not."""
    return found[0].path, found[0].qualname

class Project:
    """Lazily parsed modules of one project, cached by content; summaries computed on demand and cached."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.resolver = ImportResolver(self.root)
        self._modules: dict[Path, tuple[tuple[int, int], Optional[ModuleInfo]]] = {}
        self._functions: dict[tuple[Path, str], Optional[FunctionSummary]] = {}
        self._lock = threading.RLock()
        self._launching: set = set()  # modules whose launcher imports `_with_paths` is reading (a cycle guard)
        self._active: set[tuple[Path, str]] = set()
        self._cut_short = 0  # how many times `function` answered None for a recursion (`_active`)
        # (importer, dotted, depth, text mode) -> `_SEEN`, or (what `lookup` found, the modules it consulted):
        # a batch run's look-ups, kept from the second on (`lookup`); emptied by `forget` and by a re-parse
        self._lookups: dict[tuple, object] = {}
        self._lookups_batch = -1
        self._overlays: dict[Path, ModuleInfo] = {}
        self._overlay_texts: dict[Path, str] = {}  # the text of each overlay (`text_of`)
        self._resolve_memo: dict[Path, Path] = {}  # unsaved editor buffers, stdin: text that is not on disk
        self._tests: dict[Path, bool] = {}  # path -> test code (`is_test`)
        self._files: Optional[list[Path]] = None
        # (path, function, parameter, resolver) -> (the one value every call site passes, the modules read)
        self._parameter_classes: dict[tuple, tuple[object, frozenset]] = {}
        # analysis/forward.py: (path, class) -> the hot call site running its `forward`; callers' analyses
        self.per_step_sites: dict = {}
        self.caller_analyses: OrderedDict = OrderedDict()
        self.hot_call_names: dict[Path, frozenset] = {}  # caller path -> last names of its hot calls (forward.py)
        self.hot_loop_files: dict[Path, tuple[str, bool]] = {}  # path -> (content digest, may hold a hot loop)
        self._names: Optional[dict[bytes, list[Path]]] = None  # identifier -> project files that contain it
        self._training_files: set[Path] = set()
        # (name, training) / name -> what `files_naming` / `_files_mentioning` found while there are editor
        # buffers (a buffer is set for any linted text that differs from its file, so a batch run can have one
        # too): each answer resolved every file found or every project file again. Emptied with the index and
        # whenever a buffer is set or dropped (`set_text`)
        self._naming_memo: dict = {}
        self._mentioning_memo: dict = {}

    def is_test(self, path: Path) -> bool:
        """`test_code.is_test_path(path, self.root)`, remembered per path (it resolves both paths: asked for
        every caller file of every class and function a lint looks at)."""
        found = self._tests.get(path)
        if found is None:
            found = self._tests[path] = is_test_path(path, self.root)
        return found

    def _resolved(self, path: Path) -> Path:
        found = self._resolve_memo.get(path)
        if found is None:
            found = self._resolve_memo[path] = path.resolve()
        return found

    def set_text(self, path: Path, text: Optional[str]) -> None:
        """Use `text` as the content of `path` (an editor's unsaved buffer); None goes back to the disk."""
        path = path.resolve()
        with self._lock:
            if text is not None and self._overlay_texts.get(path) == text:
                return  # the same buffer again (each chunk of a big module hands it over: gpulint/chunked.py)
            self._naming_memo.clear()
            self._mentioning_memo.clear()
            old = self._overlays.pop(path, None)
            self._overlay_texts.pop(path, None)
            if text is not None:
                info = self._parse_text(path, text.encode("utf-8", "surrogatepass"), text)
                if info is not None:
                    self._overlays[path] = info
                    self._overlay_texts[path] = text
            new = self._overlays.get(path)
            if (old.digest if old else None) != (new.digest if new else None):
                self.forget(path)

    def text_of(self, path: Path) -> Optional[str]:
        """The text an editor's buffer gives the module at `path` (`set_text`), None when the module is the file
        on disk: what a caller's LibCST analysis must read, as its `ast` summaries do."""
        return self._overlay_texts.get(self._resolved(path))

    def forget(self, path: Optional[Path] = None) -> None:
        """Drop the summaries that may depend on `path` (its own functions', and those computed through it: a
        summary records every module it read); None: every summary and import resolution (a module was created
        or deleted, so what an import names may change)."""
        with self._lock:
            self._lookups.clear()
            self._parameter_classes.clear()  # found from call sites in any module
            self.per_step_sites.clear()
            self.caller_analyses.clear()
            self.hot_call_names.clear()
            # `hot_loop_files` is kept by each file's content digest, so it stays right whatever changed. The
            # index of names (files on disk) stays right when `path` is an editor's buffer: the buffers are
            # added to what `files_naming` finds whatever their text, and its file on disk did not change (a
            # file changed on disk while it is open is forgotten again when its buffer is closed: set_text).
            if path is None or path not in self._overlays:
                self._names = None
            self._naming_memo.clear()
            self._mentioning_memo.clear()
            if path is None:
                self.hot_loop_files.clear()
                self._functions.clear()
                self._tests.clear()
                self.resolver = ImportResolver(self.root)
                return
            self._functions = {key: found for key, found in self._functions.items() if key[0] != path and (
                found is None or path not in found.dependencies)}

    # -- modules -----------------------------------------------------------------------------------------------
    def module(self, path: Path) -> Optional[ModuleInfo]:
        path = self._resolved(path)
        _record(path)
        overlay = self._overlays.get(path)
        if overlay is not None:
            return self._with_paths(path, overlay)
        try:
            st = file_stats.stat(path)  # once per lint of a file in a batch run (gpulint/file_stats.py)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        with self._lock:
            cached = self._modules.get(path)
            if cached is not None and cached[0] == stamp:
                return self._with_paths(path, cached[1])
            info = self._parse(path)
            if cached is not None:
                self._lookups.clear()  # a look-up may hold what the old parse's summaries were
            if cached is not None and (cached[1].digest if cached[1] else None) != (info.digest if info else None):
                self.forget(path)
            self._modules[path] = (stamp, info)
            return self._with_paths(path, info)

    def _with_paths(self, path: Path, info: Optional[ModuleInfo]) -> Optional[ModuleInfo]:
        """Tell the resolver which folders `info`'s module adds to `sys.path` (again after `forget(None)`),
        its own or those of a module of its folder it imports for that (`import _init_paths`, whose top-level
        code puts `lib` on the path: a launcher; its entries are relative to the same folder)."""
        if info is None or self.resolver.extra.get(path) is not None or path in self._launching:
            return info
        entries = info.sys_path
        self._launching.add(path)
        try:
            for name in info.plain_imports:
                sibling = path.parent / f"{name}.py"
                launcher = self.module(sibling) if sibling.is_file() else None
                if launcher is not None and launcher.sys_path:
                    entries = (*entries, *(e for e in launcher.sys_path if e[0] == "file"))
        finally:
            self._launching.discard(path)
        # noted even when there are none, so that the launcher search runs once per module, not per look-up
        self.resolver.add_paths(path, entries)
        return info

    @staticmethod
    def _parse(path: Path) -> Optional[ModuleInfo]:
        try:
            if not path.is_file() or path.stat().st_size > 5_000_000:
                return None
            raw = read_regular(path)[0]
        except (OSError, FileError):
            return None
        return Project._parse_text(path, raw)

    @staticmethod
    def _parse_text(path: Path, raw: bytes, text: Optional[str] = None) -> Optional[ModuleInfo]:
        if len(raw) > lazy_module.THRESHOLD and (text is None or not incremental.enabled()):
            # a big module (on disk, or a text handed over outside an editor): no whole tree (lazy_module.py)
            info = lazy_module.lazy_info(path, raw, hashlib.sha256(raw).hexdigest())
            if info is not None:
                return info
        # An editor's buffer: its unchanged definitions' trees are reused (gpulint.incremental; None: not on).
        tree = incremental.python_tree(text) if text is not None else None
        recent_text = None
        if tree is None and text is None:  # a file on disk: its own lint may have parsed it a moment ago
            recent_text, tree = incremental.recent_python_tree(raw)
        try:
            if tree is None:
                tree = legacy_syntax.parse_python(raw, str(path))  # `ast.parse`, reading `.cuda(async=True)`
                if not legacy_syntax.is_shimmed(tree):
                    incremental.remember_python_tree(recent_text, tree)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        return ModuleInfo(path, tree, hashlib.sha256(raw).hexdigest())

    def summary_digest(self, path: Path, qualnames) -> str:
        """A digest of what a dependent file used of `path`: its imports, its classes (bases, methods), its
        top-level displays and the summaries of the functions `qualnames` (those it consulted, `Consulted.summaries`). An edit that leaves
        them as they were (a comment, a new function nobody calls) keeps the digest, and the cache (cache.py)
        keeps the results of the files that import `path`; one that changes what a consulted function costs or
        returns changes it. '-' when the file cannot be read or parsed. Costs an `ast` parse, never LibCST."""
        info = self.module(path)
        if info is None:
            return "-"
        parts: list = [sorted((k, list(v)) for k, v in info.imports.items())]
        for cls in info.classes.values():
            parts.append((cls.name, cls.line, list(cls.bases), sorted(cls.methods)))
        parts.append(sorted((r.name, list(r.values)) for r in info.registries.values()))
        # where a star import leads, and the lengths of top-level displays (`display_length`: a loop over them)
        parts.append((list(info.star_imports), sorted(getattr(info, "displays", {}).items())))
        for qualname in sorted(qualnames):
            summary = self.function(info.path, qualname)
            parts.append((qualname, None if summary is None else summary.fingerprint()))
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def dependencies_digest(self, paths: list[Path]) -> str:
        """A digest of the contents of `paths` (the modules a file's findings depend on), for cache keys."""
        h = hashlib.sha256()
        for path in sorted({p.resolve() for p in paths}):
            info = self.module(path)
            h.update(str(path).encode())
            h.update((info.digest if info else "-").encode())
        return h.hexdigest()

    # -- names ---------------------------------------------------------------------------------------------------
    def lookup(self, importer: Path, dotted: str, depth: int = 0) -> Optional[Summary]:
        """What `dotted` (as written in `importer`) names in the project: a function or a class summary.

        In a batch run the answer is kept from the second time the same question is asked (in the same text
        mode, `text_dependency`) with the modules and summaries that computing it consulted, which are recorded
        again on each later answer, as computing it again would record them (the second computation's, which
        reads every summary from `function`'s memo, as every later one would). An answer that met `function`'s
        recursion guard depends on where it was asked from and is never kept. A monorepo asks the same look-up
        tens of times (fairseq: ~80% of the look-ups repeat one asked before)."""
        if not runtime.batch_mode():
            return self._lookup(importer, dotted, depth)
        memo = self._lookups
        if self._lookups_batch != runtime.batch_number():
            memo.clear()
            self._lookups_batch = runtime.batch_number()
        key = (importer, dotted, depth, getattr(_RECORDING, "text_mode", False))
        kept = memo.get(key)
        if kept is None:
            memo[key] = _SEEN
            return self._lookup(importer, dotted, depth)
        if kept is not _SEEN:
            found, used = kept  # type: ignore[misc]
            _replay(used)
            return found
        cut_short = self._cut_short
        with recording() as used:
            found = self._lookup(importer, dotted, depth)
        if self._cut_short == cut_short and memo.get(key) is _SEEN:
            memo[key] = (found, used)
        return found

    def _lookup(self, importer: Path, dotted: str, depth: int = 0) -> Optional[Summary]:
        if depth > MAX_DEPTH:
            return None
        info = self.module(importer)
        if info is None:
            return None
        head, _, rest = dotted.partition(".")
        if not rest:
            if head in info.functions:
                return self.function(info.path, head)
            if head in info.classes:
                return info.classes[head]
            if head in info.registries:
                return info.registries[head]  # type: ignore[return-value]
        elif head in info.classes and "." not in rest:
            return self.alternative_constructor(info.classes[head], rest)
        if head in info.imports:
            module, attr, level = info.imports[head]
            if attr is None:  # `import utils` / `import a.b as c`: the rest names something in that module
                target = self.resolver.resolve(module, info.path, level)
                if target is None:
                    # `import a.b` binds `a`; `a.b.f` is f in a/b.py
                    return self._lookup_dotted(f"{module}.{rest}" if rest else module, info.path)
                if not rest:
                    return None
                found = self.lookup(target, rest, depth + 1)
                if found is None and "." in rest:
                    found = self._submodule_lookup(module, rest, info.path, level, depth)
                return found
            # `from pkg import name` : name may be a module of pkg or a name defined in pkg/__init__.py
            target = self.resolver.resolve(f"{module}.{attr}" if module else attr, info.path, level)
            if target is not None and rest:
                return self.lookup(target, rest, depth + 1)
            owner = self.resolver.resolve(module, info.path, level) if (module or level) else None
            if owner is not None and owner != info.path:
                return self.lookup(owner, f"{attr}.{rest}" if rest else attr, depth + 1)
            return None
        alias = info.aliases.get(head) if hasattr(info, "aliases") else None
        if alias is not None and head not in info.imports:  # `criterion = MODEL.get_loss`, then `criterion(...)`
            return self.lookup(info.path, f"{alias}.{rest}" if rest else alias, depth + 1)
        choices = info.alias_choices.get(head) if hasattr(info, "alias_choices") and head not in info.imports \
            else None
        if choices:
            # `Detector = MODEL.BoxNet` on one branch, `= MODEL.VoteNet` on the other, MODEL the module chosen by
            # default: the one candidate that exists is the class (two that exist and differ: unknown)
            found_choices = [self.lookup(info.path, f"{c}.{rest}" if rest else c, depth + 1) for c in choices]
            distinct = {id(f): f for f in found_choices if f is not None}
            return next(iter(distinct.values())) if len(distinct) == 1 else None
        chosen = info.chosen_modules.get(head) if rest and hasattr(info, "chosen_modules") else None
        if chosen is not None:  # `MODEL.get_loss` of `MODEL = importlib.import_module(FLAGS.model)`
            target = self.chosen_module(info, chosen)
            return self.lookup(target, rest, depth + 1) if target is not None and target != info.path else None
        for module, level in info.star_imports:  # `from run_nerf_helpers import *`: a name it defines
            owner = self.resolver.resolve(module, info.path, level) if (module or level) else None
            if owner is not None and owner != info.path:
                found = self.lookup(owner, dotted, depth + 1)
                if found is not None:
                    return found
        return None

    def display_length(self, importer: Path, dotted: str, depth: int = 0) -> Optional[int]:
        """How many items the top-level list, tuple or set display `dotted` (as written in `importer`) names
        holds (`lib.PARTS` with `PARTS = [TRAIN, VAL, TEST]` in `lib/util.py`, re-exported by `from .util import
        *` in `lib/__init__.py`; `from lib.util import PARTS`), or None when it names anything else or is not
        known (see `ModuleInfo.displays`)."""
        if depth > MAX_DEPTH:
            return None
        info = self.module(importer)
        if info is None:
            return None
        displays = getattr(info, "displays", {})  # (a summary kept from before displays were recorded: none)
        head, _, rest = dotted.partition(".")
        if not rest and head in displays:
            return displays[head]
        if head in info.functions or head in info.classes:
            return None
        if head in info.imports:
            module, attr, level = info.imports[head]
            if attr is None:  # `import lib`: the rest names something in that module
                target = self.resolver.resolve(module, info.path, level)
                return self.display_length(target, rest, depth + 1) if target is not None and rest else None
            target = self.resolver.resolve(f"{module}.{attr}" if module else attr, info.path, level)
            if target is not None and rest:  # `from lib import util`, then `util.PARTS`
                return self.display_length(target, rest, depth + 1)
            owner = self.resolver.resolve(module, info.path, level) if (module or level) else None
            if owner is not None and owner != info.path:  # `from lib.util import PARTS`
                return self.display_length(owner, f"{attr}.{rest}" if rest else attr, depth + 1)
            return None
        for module, level in info.star_imports:  # `from .util import *`
            owner = self.resolver.resolve(module, info.path, level) if (module or level) else None
            if owner is not None and owner != info.path:
                found = self.display_length(owner, dotted, depth + 1)
                if found is not None:
                    return found
        return None

    def chosen_module(self, info: ModuleInfo, call: ast.Call) -> Optional[Path]:
        """The project module `importlib.import_module(name)` imports, `name` a string or a command-line option
        of the module's own parser with a literal default (`FLAGS.model`, `--model` defaulting to `'votenet'`):
        the program as it runs without options, the stance taken for option defaults (analysis/flags.py). The
        call is read once per module (`ModuleInfo.chosen_modules`); None when unknown."""
        from gpulint.analysis.flags import ast_option_text

        if info.qualify(_dotted(call.func) or "") != "importlib.import_module" or getattr(info, "tree", None) is None:
            return None
        arg = call.args[0]
        name = arg.value if isinstance(arg, ast.Constant) else ast_option_text(info, arg)
        if not isinstance(name, str) or not name or name.startswith("."):
            return None
        return self.resolver.resolve(name, info.path, 0)

    def _submodule_lookup(self, package: str, rest: str, importer: Path, level: int, depth: int) -> Optional[Summary]:
        """`import moco.builder` then `moco.builder.MoCo_ViT`: the package's `__init__.py` does not name
        `builder`, the submodule `moco/builder.py` does hold the class (Python binds `moco.builder` on import)."""
        sub, _, name = rest.partition(".")
        target = self.resolver.resolve(f"{package}.{sub}", importer, level)
        return self.lookup(target, name, depth + 1) if target is not None else None

    def external_name(self, importer: Path, dotted: str, depth: int = 0) -> Optional[str]:
        """The qualified name outside the project that `dotted` (as written in `importer`) stands for, following
        the project's own re-exports: `Profile` imported from `utils.general`, which imports it from
        `ultralytics.utils.ops`, is `ultralytics.utils.ops.Profile`. None when it is defined in the project or
        cannot be told."""
        info = self.module(importer)
        if info is None or depth > MAX_DEPTH:
            return None
        head, _, rest = dotted.partition(".")
        if head not in info.imports:
            if head.startswith("_"):
                return None  # `from m import *` binds no private name
            for module, level in info.star_imports:  # `from ..layers import *` re-exports its `nn`
                owner = self.resolver.resolve(module, info.path, level) if (module or level) else None
                if owner is not None and owner != info.path:
                    found = self.external_name(owner, dotted, depth + 1)
                    if found is not None:
                        return found
            return None
        module, attr, level = info.imports[head]
        if attr is None:
            target = self.resolver.resolve(module, info.path, level)
            if target is None:
                return f"{module}.{rest}" if (rest and not level) else (module if not level else None)
            return self.external_name(target, rest, depth + 1) if rest else None
        owner = self.resolver.resolve(module, info.path, level) if (module or level) else None
        if owner is None:
            full = f"{module}.{attr}" if module else attr
            return None if level else (f"{full}.{rest}" if rest else full)
        if owner == info.path:
            return None
        return self.external_name(owner, f"{attr}.{rest}" if rest else attr, depth + 1)

    def _lookup_dotted(self, dotted: str, importer: Path) -> Optional[Summary]:
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            target = self.resolver.resolve(".".join(parts[:cut]), importer)
            if target is not None:
                return self.lookup(target, ".".join(parts[cut:]), 1)
        return None

    def method(self, cls: ClassSummary, name: str, depth: int = 0) -> Optional[FunctionSummary]:
        """A method of a project class, looking through project base classes. Depth first, each base's chain
        before the next base (the first method found wins, as in Python's method resolution order for single
        chains), not `hierarchy.project_bases`' breadth-first walk, which lists bases nearest first."""
        if name in cls.methods:
            return self.function(cls.path, f"{cls.name}.{name}")
        if depth > MAX_DEPTH:
            return None
        for base in cls.bases:
            found = self.lookup(cls.path, base) if base else None
            if isinstance(found, ClassSummary) and found is not cls:
                result = self.method(found, name, depth + 1)
                if result is not None:
                    return result
        return None

    def alternative_constructor(self, cls: ClassSummary, name: str) -> Optional[FunctionSummary]:
        """`Cls.from_opts(...)`: the `@classmethod` `name` of `cls` (its own or a project base's) when it is an
        alternative constructor (`returns_cls`: it builds and returns `cls(...)`), as what a call of it returns:
        an instance of `cls`, the class named at the call (a subclass inheriting the factory builds itself).
        Any other attribute of a class (a static helper, a class constant) stays unknown here."""
        found = self.method(cls, name)
        if found is None or not found.returns_cls:
            return None
        if found.returns_classes == (cls,) and found.returns_union in ((), (cls,)):
            return found
        return replace(found, returns_classes=(cls,), returns_union=(cls,))

    def base_method(self, cls: ClassSummary, name: str) -> Optional[FunctionSummary]:
        """What `super().name(...)` in a method of `cls` calls: the method `name` of the first project base class
        of `cls` that has it (through that base's own bases, `method`); a base naming `cls` itself is passed over."""
        for base in cls.bases:
            found = self.lookup(cls.path, base) if base else None
            if isinstance(found, ClassSummary) and found is not cls:
                method = self.method(found, name)
                if method is not None:
                    return method
        return None

    def registry_class(self, importer: Path, dotted: str) -> Optional[ClassSummary]:
        """The project class that every entry of the registry `dotted` (as written in `importer`) builds: a class,
        or a project function returning one (`def DiT_XL_2(**kw): return DiT(...)`); None when they differ or
        any entry cannot be told."""
        found = self.registry_classes(importer, dotted)
        return found[0] if len(found) == 1 else None

    def registry_classes(self, importer: Path, dotted: str) -> tuple:
        """Every project class an entry of the registry `dotted` builds (`detector_factory = {'ctdet':
        CtdetDetector, 'ddd': DddDetector}`: both), each once; () when any entry cannot be told."""
        registry = self.lookup(importer, dotted)
        if not isinstance(registry, Registry):
            return ()
        found: dict = {}
        for value in registry.values:
            target = self.lookup(registry.path, value)
            if isinstance(target, ClassSummary):
                cls: Optional[ClassSummary] = target
            elif isinstance(target, FunctionSummary) and len(target.returns_classes) == 1:
                cls = target.returns_classes[0]
            else:
                return ()
            if cls is None:
                return ()
            found[(cls.path, cls.name)] = cls
        return tuple(found.values())

    def passed_arguments(self, info: ModuleInfo, call: ast.Call) -> Optional[tuple]:
        """What a call in `info` hands back of its own arguments: (the argument the result is, or None; per element
        of a returned tuple, the argument it is or None), through a known library call (`DDP(model)`,
        `amp.initialize(model, optimizer)`) or a project function whose every `return` hands back a parameter
        (`FunctionSummary.returns_param`); None when it hands back none."""
        library = library_passed(info.qualify(_dotted(call.func) or ""), call)
        if library is not None:
            return library
        dotted = _dotted(call.func)
        found = self.lookup(info.path, dotted) if dotted and not dotted.startswith("self.") else None
        if isinstance(found, ClassSummary) and self.wrapper_class(found):  # `MyDataParallel(loss_module)`
            first = _argument(call, 0, "module")
            return (first, ()) if isinstance(first, ast.expr) else None
        return summary_passed(found, call, False) if isinstance(found, FunctionSummary) else None

    def wrapper_class(self, cls: ClassSummary, depth: int = 0) -> bool:
        """A project subclass of a model wrapper (`class MyDataParallel(torch.nn.DataParallel)` that only adds
        `__getattr__`): calling an instance runs the wrapped module's `forward`, as the wrapper's does. One that
        defines `forward` or `__call__` of its own is not."""
        if "forward" in cls.methods or "__call__" in cls.methods or depth > MAX_DEPTH:
            return False
        info = self.module(cls.path)
        for base in cls.bases:
            if info is not None and info.qualify(base) in MODEL_WRAPPERS:
                return True
            found = self.lookup(cls.path, base) if base else None
            if isinstance(found, ClassSummary) and found is not cls and self.wrapper_class(found, depth + 1):
                return True
        return False

    def returned_classes(self, summary: FunctionSummary) -> tuple:
        """The project classes a call of the function hands back an instance of: every class its `return`s
        build (`returns_union`), or else the class its return annotation names (`-> Optimizer`); () when
        neither tells. The annotation is looked up only here, when a caller asks."""
        if summary.returns_union or summary.returns_annotation is None:
            return summary.returns_union
        found = annotation_class(self, summary.path, summary.returns_annotation)
        return (found,) if found is not None else ()

    def is_module_class(self, cls: ClassSummary) -> bool:
        """A subclass of `torch.nn.Module` (directly or through project classes, `MAX_DEPTH` levels up): calling
        it runs `forward`."""
        from gpulint.analysis.hierarchy import any_class  # it imports this module

        return any_class(self, cls, self._derives_module_directly, MAX_DEPTH)

    def _derives_module_directly(self, cls: ClassSummary) -> bool:
        info = self.module(cls.path)
        if info is None:
            return False
        for base in cls.bases:
            if info.qualify(base) in _LIBRARY_MODULES:
                return True
            if info.star_imports and base.partition(".")[0] not in info.imports and \
                    self.external_name(cls.path, base) in _LIBRARY_MODULES:
                return True  # `nn.Module` where `nn` comes from a project module through `from ..layers import *`
        return False

    # -- call sites ---------------------------------------------------------------------------------------------
    def parameter_loader(self, path: Path, function: str, parameter: str) -> Optional[LoaderFact]:
        """The DataLoader every call site of `function` (as for `parameter_class`: a top-level function, or
        `Class.__init__`) passes as `parameter`: a `DataLoader(...)`, what a project loader factory returns (a
        generator handing on a loader's batches included: `data = load_data(...)`), or a name bound to one in
        the caller. A trainer that stores it (`self.data = data`) and draws `next(self.data)` every step then
        iterates batches. Unknown when any site passes something else, or sites pass different loaders."""
        return self._one_passed(path, function, parameter, self.loader_at, _loader_identity)

    def loader_at(self, info: ModuleInfo, expr: ast.expr, assigns: dict, depth: int = 0):
        """What a call site passes: a LoaderFact, None (the literal), or _UNKNOWN."""
        if isinstance(expr, ast.Constant) and expr.value is None:
            return None
        if depth > 3:
            return _UNKNOWN
        if isinstance(expr, ast.Call) and getattr(expr, "annotation_only", False):
            return _UNKNOWN  # `loader: DataLoader`: a loader, but how it was built is not known here
        if isinstance(expr, ast.Call):
            qualified = info.qualify(_dotted(expr.func) or "")
            if qualified in LOADER_CLASSES or qualified.endswith(".DataLoader"):
                pinned: Optional[bool] = False
                explicit = [kw for kw in expr.keywords if kw.arg == "pin_memory"]
                for kw in explicit or expr.keywords:
                    # an explicit `pin_memory=` decides: `**options` holding it too would raise a TypeError
                    if kw.arg is None:
                        pinned = _pinned_by_options(info, kw.value, assigns, pinned)
                    elif kw.arg == "pin_memory":
                        pinned = kw.value.value is True if isinstance(kw.value, ast.Constant) else \
                            _flag_pinning(self, info, kw.value)
                return LoaderFact(info.path, expr.lineno, pinned)
            if qualified in ("iter", "itertools.cycle") and len(expr.args) == 1:
                return self.loader_at(info, expr.args[0], assigns, depth + 1)
            dotted = _dotted(expr.func)
            found = self.lookup(info.path, dotted) if dotted else None
            if found is None and isinstance(expr.func, ast.Attribute) and isinstance(expr.func.value, ast.Name) \
                    and expr.func.value.id in assigns:
                # `datamgr.get_data_loader(...)` of `datamgr = SimpleDataManager(...)`: the project method's loader
                cls = self.class_at(info, expr.func.value, assigns, depth + 1)
                found = self.method(cls, expr.func.attr) if isinstance(cls, ClassSummary) else None
                if isinstance(found, FunctionSummary) and found.returns_loader is not None and \
                        found.returns_loader.pin_param is not None:
                    return _UNKNOWN  # pinning decided by the call's own argument: not read here
            if isinstance(found, FunctionSummary) and found.returns_loader is not None:
                return found.returns_loader
            return _UNKNOWN
        if isinstance(expr, ast.Name) and expr.id in assigns:
            unpacked = self._unpacked_loader(info, assigns[expr.id])
            if unpacked is not None:
                return unpacked
            return self._one_assigned(self.loader_at, _loader_identity, info, expr.id, assigns, depth)
        return _UNKNOWN

    def _unpacked_loader(self, info: ModuleInfo, assigned: list) -> Optional[LoaderFact]:
        """The loader a name holds when its one assignment unpacks a project loader factory's tuple
        (`train_ds, test_ds = data.load_data(...)`) at a place the factory returns a loader: the one place it
        says, or any place where it returns several (what `DataFacts.factory` takes for a loop over the call)."""
        if len(assigned) != 1:
            return None
        value, index = assigned[0]
        if index is None or not isinstance(value, ast.Call):
            return None
        dotted = _dotted(value.func)
        found = self.lookup(info.path, dotted) if dotted else None
        if not isinstance(found, FunctionSummary) or found.returns_loader is None or \
                found.returns_loader_at not in (None, index):
            return None
        return found.returns_loader

    def parameter_function(self, path: Path, function: str, parameter: str) -> Optional[tuple[FunctionSummary, bool]]:
        """The project function (or bound method: True) every call site of `function` (a top-level function or
        `Class.__init__`) passes as `parameter`, a callable the callee calls: `train(training_step, ...)` with
        `training_step = trainer.train_step`, `Trainer(fwd_bwd_fn=forward_backward)`. Unknown when any site
        passes something else, or sites disagree."""
        return self._one_passed(path, function, parameter, self.function_at, _function_identity)

    def function_at(self, info: ModuleInfo, expr: ast.expr, assigns: dict, depth: int = 0):
        """What a call site passes: (a project function's summary, bound), None (the literal), or _UNKNOWN."""
        if isinstance(expr, ast.Constant) and expr.value is None:
            return None
        if depth > 3:
            return _UNKNOWN
        if isinstance(expr, ast.Name) and expr.id in assigns:
            return self._one_assigned(self.function_at, _function_identity, info, expr.id, assigns, depth)
        if isinstance(expr, ast.Name):
            found = self.lookup(info.path, expr.id)
            return (found, False) if isinstance(found, FunctionSummary) else _UNKNOWN
        if isinstance(expr, ast.Attribute):  # `trainer.train_step`: a bound method of a project instance
            cls = self.class_at(info, expr.value, assigns, depth + 1) if isinstance(expr.value, ast.Name) else None
            if isinstance(cls, ClassSummary):
                method = self.method(cls, expr.attr)
                return (method, True) if method is not None else _UNKNOWN
            dotted = _dotted(expr)
            found = self.lookup(info.path, dotted) if dotted else None
            return (found, False) if isinstance(found, FunctionSummary) else _UNKNOWN
        return _UNKNOWN

    def parameter_class(self, path: Path, function: str, parameter: str) -> Optional[ClassSummary]:
        """The project class of what every call site of the top-level `function` (defined in `path`), or of
        `Class.__init__` (whose call sites are `Class(...)`), passes
        as `parameter`: `train_one_epoch(..., log_writer=utils.TensorboardLogger(...))`, or a name bound to one
        in the caller. `None` passed (or the parameter left at its default) does not disagree: the code using
        the parameter runs when it is not None. Unknown when any site passes something else, when sites
        disagree, or when no site is found."""
        return self._one_passed(path, function, parameter, self.class_at, id)

    def parameter_element_classes(self, path: Path, function: str, parameter: str) -> Optional[tuple]:
        """The project classes of the instances in the list or tuple literal every call site of `function` (a
        top-level function or `Class.__init__`) passes as `parameter` (`Trainer(..., metrics=[PSNRMeter(),
        LPIPSMeter(device=device)])`, or a name bound to such a literal on every branch), one tuple for all;
        None when a site passes anything else, the sites disagree, or none passes one."""
        return self._one_passed(path, function, parameter, self.element_classes_at,
                                lambda found: tuple((str(c.path), c.name) for c in found))

    def element_classes_at(self, info: ModuleInfo, expr: ast.expr, assigns: dict, depth: int = 0):
        """What a call site passes, as `parameter_element_classes` tells it: the classes of a literal's elements
        (each a project class built there), None for `None` or an empty literal, _UNKNOWN for anything else."""
        if isinstance(expr, ast.Constant) and expr.value is None:
            return None
        if isinstance(expr, ast.Name) and depth == 0 and assigns.get(expr.id):
            found = [self.element_classes_at(info, value, assigns, 1) if index is None else _UNKNOWN
                     for value, index in assigns[expr.id]]
            keys = {tuple((str(c.path), c.name) for c in f) if f is not _UNKNOWN and f is not None else f
                    for f in found}
            return found[0] if len(keys) == 1 else _UNKNOWN
        if not isinstance(expr, (ast.List, ast.Tuple)) or any(isinstance(e, ast.Starred) for e in expr.elts):
            return _UNKNOWN
        if not expr.elts:
            return None  # `metrics=[]`: the loop over it never runs
        classes: list = []
        for element in expr.elts:
            if not isinstance(element, ast.Call):
                return _UNKNOWN
            found = self.class_at(info, element, assigns, 1)
            if not isinstance(found, ClassSummary):
                return _UNKNOWN
            if all(found is not c for c in classes):
                classes.append(found)
        return tuple(classes)

    def parameter_modules(self, path: Path, function: str, parameter: str) -> Optional[tuple]:
        """Which of what every call site of the top-level `function` passes as `parameter` is an `nn.Module`:
        `(True,)` when each site passes a module (`train(net, ...)` with `net = Net().cuda()`), or, when each
        passes a list or tuple literal of the same length (`train(args, [net_g, net_d], ...)`), one flag per
        element; None when a site passes anything else, the sites disagree, or none is found."""
        return self._one_passed(path, function, parameter, self.modules_at, lambda v: v)

    def modules_at(self, info: ModuleInfo, expr: ast.expr, assigns: dict, depth: int = 0):
        """What a call site passes, as `parameter_modules` tells it: (True,) for a module, one flag per element
        for a list or tuple literal (or a name bound once to one), None for the literal None, _UNKNOWN for
        anything else."""
        if isinstance(expr, ast.Constant) and expr.value is None:
            return None
        if isinstance(expr, ast.Name) and depth == 0 and len(assigns.get(expr.id, ())) == 1 and \
                assigns[expr.id][0][1] is None and isinstance(assigns[expr.id][0][0], (ast.List, ast.Tuple)):
            expr = assigns[expr.id][0][0]  # `model_list = [model, head]`, then `train(args, model_list, ...)`
        if isinstance(expr, (ast.List, ast.Tuple)) and depth == 0:
            if not expr.elts or any(isinstance(e, ast.Starred) for e in expr.elts):
                return _UNKNOWN
            return tuple(self.module_at(info, e, assigns, 1) for e in expr.elts)
        return (True,) if self.module_at(info, expr, assigns, depth) else _UNKNOWN

    def module_at(self, info: ModuleInfo, expr: ast.expr, assigns: dict, depth: int = 0) -> bool:
        """`expr`, in the caller `info`, holds an `nn.Module`: a `torch.nn` layer or a project module class built
        (`Net(...)`, `nn.Linear(...).to(device)`), a wrapper of one (`DDP(net)`), or a name every plain
        assignment of which is one (`net = net.cuda()` keeps what `net` held)."""
        if depth > 4:
            return False
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in _MODULE_SELF_METHODS:
                return self.module_at(info, func.value, assigns, depth + 1)  # `Net().cuda(rank)`, `.train()`
            passed = self.passed_arguments(info, expr)
            if passed is not None and passed[0] is not None:  # `DDP(net, device_ids=[rank])`
                return self.module_at(info, passed[0], assigns, depth + 1)
            qualified = info.qualify(_dotted(func) or "")
            last = qualified.rpartition(".")[2]
            if qualified.startswith("torch.nn.") and last[:1].isupper() and last not in _NOT_MODULES and \
                    not qualified.startswith(("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.")):
                return True
            dotted = _dotted(func)
            found = self.lookup(info.path, dotted) if dotted and not dotted.startswith("self.") else None
            if isinstance(found, FunctionSummary) and found.returns_classes:
                return all(c is not None and self.is_module_class(c) for c in found.returns_classes)
            return isinstance(found, ClassSummary) and self.is_module_class(found)
        if isinstance(expr, ast.Name) and expr.id in assigns:
            values = []
            for value, index in assigns[expr.id]:
                if index is not None:
                    return False
                if isinstance(value, ast.Call):
                    func = value.func
                    receiver = func.value if isinstance(func, ast.Attribute) and \
                        func.attr in _MODULE_SELF_METHODS else None
                    passed = self.passed_arguments(info, value)
                    kept = receiver if receiver is not None else (passed[0] if passed is not None else None)
                    if isinstance(kept, ast.Name) and kept.id == expr.id:
                        continue  # `net = net.cuda(rank)`, `net = DDP(net)`: what the name already held
                values.append(value)
            return bool(values) and all(self.module_at(info, v, assigns, depth + 1) for v in values)
        return False

    def _one_assigned(self, resolve, identity, info: ModuleInfo, name: str, assigns: dict, depth: int):
        """What `resolve` finds for the caller's plain assignments of `name`: the one value they agree on (told
        apart by `identity`), None when all give None, _UNKNOWN for an unpacking, an unknown value or two."""
        values = [resolve(info, value, assigns, depth + 1) if index is None else _UNKNOWN
                  for value, index in assigns[name]]
        if any(v is _UNKNOWN for v in values):
            return _UNKNOWN
        known = {identity(v): v for v in values if v is not None}
        return next(iter(known.values())) if len(known) == 1 else (None if not known else _UNKNOWN)

    def _one_passed(self, path: Path, function: str, parameter: str, resolve, identity):
        """The one value (told apart by `identity`) that `resolve` finds every call site passing as
        `parameter` (`_parameter_values`); None when sites disagree or one cannot be told. Remembered per
        (function, parameter, kind of value) until a module changes, with the modules read on the way
        recorded again for the caller's dependencies (call sites' arguments are not part of any summary)."""
        key = (self._resolved(path), function, parameter, resolve.__name__)
        with self._lock:
            if key not in self._parameter_classes:
                self._parameter_classes[key] = (None, frozenset())  # recursion guard
                with recording() as used, text_dependency():
                    found = self._parameter_values(key[0], function, parameter, resolve)
                    distinct = {identity(f): f for f in found or () if f is not None}
                    result = next(iter(distinct.values())) if len(distinct) == 1 else None
                self._parameter_classes[key] = (result, frozenset(used))
            result, used = self._parameter_classes[key]
            with text_dependency():
                for dependency in used:
                    _record(dependency)
            return result

    def _parameter_values(self, path: Path, function: str, parameter: str, resolve) -> Optional[list]:
        """`resolve(caller, argument, assigns)` of what each project call site of `function` passes as
        `parameter` (None where it is left out); None when a site's argument cannot be told."""
        info = self.module(path)
        if info is None:
            return None
        owner, _, name = function.rpartition(".")
        if owner:  # `Trainer.__init__`: its call sites are `Trainer(...)`
            cls = info.classes.get(owner)
            node = cls.methods.get(name) if cls is not None and name == "__init__" else None
        else:
            cls, node = None, info.functions.get(function)
        if node is None:
            return None
        positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)][1 if owner else 0:]
        position = positional.index(parameter) if parameter in positional else None
        found: list = []
        for file in self._files_mentioning(owner or function):
            caller = self.module(file)
            if caller is None:
                continue
            for call, assigns in caller.calls_named(owner or function):
                target = self.lookup(caller.path, _dotted(call.func))  # type: ignore[arg-type]
                if (target is not cls) if owner else (not isinstance(target, FunctionSummary) or
                                                      target.path != path or target.qualname != function):
                    continue
                argument = _argument(call, position, parameter)
                if argument is _UNKNOWN:
                    return None
                passed = resolve(caller, argument, assigns) if argument is not None else None
                if passed is _UNKNOWN:
                    return None
                found.append(passed)
        return found

    def class_at(self, info: ModuleInfo, expr: ast.expr, assigns: dict, depth: int = 0):
        """What a call site passes: a project class instance, None (the literal), or _UNKNOWN."""
        if isinstance(expr, ast.Constant) and expr.value is None:
            return None
        if depth > 3:
            return _UNKNOWN
        if isinstance(expr, ast.Call):
            passed = self.passed_arguments(info, expr)
            if passed is not None and passed[0] is not None:  # `DDP(model)`, `warm_start(path, model)`
                return self.class_at(info, passed[0], assigns, depth + 1)
            if isinstance(expr.func, ast.Subscript):  # `DiT_models[args.model](...)`: a registry of builders
                registry = _dotted(expr.func.value)
                found_class = self.registry_class(info.path, registry) if registry else None
                return found_class if found_class is not None else _UNKNOWN
            dotted = _dotted(expr.func)
            found = self.lookup(info.path, dotted) if dotted else None
            if isinstance(found, ClassSummary):
                return found
            if isinstance(found, FunctionSummary) and len(found.returns_classes) == 1 \
                    and found.returns_classes[0] is not None:
                return found.returns_classes[0]
            picked = self._registry_pick_at(info, expr.func, assigns) if found is None else ()
            return picked[0] if len(picked) == 1 and picked[0] is not None else _UNKNOWN
        if isinstance(expr, ast.Name) and expr.id in assigns:
            classes = []
            for value, index in assigns[expr.id]:
                passed = self.passed_arguments(info, value) if isinstance(value, ast.Call) else None
                if passed is not None:  # `model = wrap(model)`, `model, opt = amp.initialize(model, opt)`
                    argument = passed[0] if index is None else (
                        passed[1][index] if index < len(passed[1]) else None)
                    if isinstance(argument, ast.Name) and argument.id == expr.id:
                        continue  # what the name already held
                    if argument is not None:
                        classes.append(self.class_at(info, argument, assigns, depth + 1))
                        continue
                if index is None:
                    classes.append(self.class_at(info, value, assigns, depth + 1))
                elif isinstance(value, ast.Tuple) and index < len(value.elts):
                    classes.append(self.class_at(info, value.elts[index], assigns, depth + 1))
                elif isinstance(value, ast.Call):
                    dotted = _dotted(value.func)
                    found = self.lookup(info.path, dotted) if dotted else None
                    returned = found.returns_classes if isinstance(found, FunctionSummary) else \
                        self._registry_pick_at(info, value.func, assigns)
                    classes.append(returned[index] if index < len(returned) and returned[index] is not None
                                   else _UNKNOWN)
                else:
                    classes.append(_UNKNOWN)
            if any(c is _UNKNOWN for c in classes):
                return _UNKNOWN
            known = {id(c): c for c in classes if c is not None}
            return next(iter(known.values())) if len(known) == 1 else (None if not known else _UNKNOWN)
        return _UNKNOWN

    def _registry_pick_at(self, info: ModuleInfo, func: ast.expr, assigns: dict) -> tuple:
        """In a caller: what a build function picked from a project registry returns, per element (`R.get(name)`
        or a name bound once to it; analysis/named_classes.py `registry_returns`)."""
        from gpulint.analysis.named_classes import registry_returns  # it imports this module

        if isinstance(func, ast.Name):
            bound = assigns.get(func.id, ())
            if len(bound) != 1 or bound[0][1] is not None:
                return ()
            func = bound[0][0]
        return registry_returns(self, info.path, func) if isinstance(func, ast.Call) else ()

    def files_naming(self, name: str, training: bool = False) -> list[Path]:
        """The project's Python files that contain the identifier `name` (an index built once: one read of
        each file, however many names are asked), plus editor buffers. `training`: only files whose text
        looks like a training or evaluation loop (a `for` line or `iter(...)` over a loader, or `.backward(`)."""
        with self._lock:
            if self._names is None:
                names: dict[bytes, list[Path]] = {}
                self._training_files = set()
                for file in self._project_files():
                    try:
                        if file.stat().st_size > 5_000_000:
                            continue
                        raw = read_regular(file)[0]
                    except (OSError, FileError):  # a FIFO, a device: never opened to wait on
                        continue
                    for word in set(_IDENTIFIER.findall(raw)):
                        names.setdefault(word, []).append(file)
                    if _training_text(raw):
                        self._training_files.add(file)
                self._names = names
                self._naming_memo.clear()
                self._mentioning_memo.clear()
            if self._overlays:  # (a batch run has no buffers: no file of the index is resolved for them)
                kept = self._naming_memo.get((name, training))
                if kept is not None:
                    return list(kept)
            found = [f for f in self._names.get(name.encode(), ()) if not training or f in self._training_files]
            if self._overlays:
                known = {self._resolved(f) for f in found}
                found.extend(p for p in self._overlays if p not in known)
                self._naming_memo[(name, training)] = tuple(found)
        return found

    def training_files(self) -> list[Path]:
        """The project files whose text looks like a training or evaluation loop (see `files_naming`), plus
        editor buffers."""
        self.files_naming("")  # builds the index once
        with self._lock:
            found = sorted(self._training_files)
        known = {self._resolved(f) for f in found}
        found.extend(p for p in self._overlays if p not in known)
        return found

    def _project_files(self) -> list[Path]:
        if self._files is None:
            files: list[Path] = []
            for folder, subfolders, names in os.walk(self.root):
                subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
                files.extend(Path(folder) / n for n in sorted(names) if n.endswith(".py"))
                if len(files) >= MAX_PROJECT_FILES:
                    break
            self._files = files[:MAX_PROJECT_FILES]
        return self._files

    def _files_mentioning(self, name: str) -> list[Path]:
        """The project's Python files whose text has the identifier `name` (callers of a function must name
        it), in the order of the project's files: from the identifier index (`files_naming`), built once with
        one read of each file, rather than a search of every file per name."""
        if not self._overlays:  # a batch run: the index lists them already in the project's order, once each
            return self.files_naming(name)
        with self._lock:
            kept = self._mentioning_memo.get(name)
            if kept is not None:
                return list(kept)
            named = set(self.files_naming(name))
            found = []
            for file in self._project_files():
                overlay = self._overlays.get(self._resolved(file))
                if overlay is not None or file in named:
                    found.append(file)  # (an editor buffer: its module is parsed already)
            self._mentioning_memo[name] = tuple(found)
        return found

    def function(self, path: Path, qualname: str) -> Optional[FunctionSummary]:
        key = (self._resolved(path), qualname)
        _record_summary(key[0], qualname)
        with self._lock:
            if key in self._functions:
                found = self._functions[key]
                for dependency in found.dependencies if found is not None else (key[0],):
                    _record(dependency)
                for path_, name in found.consulted if found is not None else ():
                    _record_summary(path_, name)  # the helpers' summaries it was computed from (cache.py)
                return found
            if key in self._active or len(self._active) > MAX_DEPTH:
                self._cut_short += 1  # the answer depends on where it was asked from (`lookup` keeps none such)
                return None  # recursion: the inner call is unknown
            info = self.module(key[0])
            if info is None:
                return None
            node, cls = _find_function(info, qualname)
            if node is None:
                self._functions[key] = None
                return None
            self._active.add(key)
            try:
                with recording() as used:
                    summary = _Summarizer(self, info, node, qualname, cls).run()
            finally:
                self._active.discard(key)
            summary.dependencies = frozenset(used | {key[0]})
            summary.consulted = frozenset((p, n) for p, names in used.summaries.items() for n in names)
            for dependency in summary.dependencies:
                _record(dependency)
            self._functions[key] = summary
            return summary


def _find_function(info: ModuleInfo, qualname: str):
    owner, _, name = qualname.rpartition(".")
    if not owner:
        return info.functions.get(name), None
    cls = info.classes.get(owner)
    if cls is None:
        outer = info.functions.get(owner)  # a closure a top-level factory returns (`returns_function`)
        return (_nested_function(outer, name) if outer is not None else None), None
    return cls.methods.get(name), cls


def _bool_default(fn: ast.FunctionDef, name: str) -> Optional[bool]:
    """The literal True/False default of parameter `name` of `fn`, else None."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults)) + \
        [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    for arg, default in pairs:
        if arg.arg == name:
            return default.value if isinstance(default, ast.Constant) and isinstance(default.value, bool) else None
    return None


def _nested_function(fn: ast.AST, name: str) -> Optional[ast.FunctionDef]:
    """The function `name` defined by a statement of `fn`'s own body (not in a nested function or class), when
    it is defined once there."""
    found = []
    stack = list(getattr(fn, "body", ()))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == name:
                found.append(stmt)
        elif isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            for part in ("body", "orelse", "finalbody"):
                stack.extend(getattr(stmt, part, ()))
            for handler in getattr(stmt, "handlers", ()):
                stack.extend(handler.body)
    return found[0] if len(found) == 1 else None  # type: ignore[return-value]


class _Summarizer:
    """One pass over a function body, tracking which names hold (a value derived from) each parameter."""

    def __init__(self, project: Project, info: ModuleInfo, fn: ast.FunctionDef, qualname: str,
                 cls: Optional[ClassSummary]) -> None:
        self.project = project
        self.info = info
        self.fn = fn
        self.cls = cls
        args = fn.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        self.summary = FunctionSummary(
            qualname, info.path, fn.lineno, tuple(positional), tuple(a.arg for a in args.kwonlyargs),
            args.vararg.arg if args.vararg else None, args.kwarg.arg if args.kwarg else None)
        # name -> the parameter its value comes from
        self.taint: dict[str, str] = {p: p for p in (*self.summary.params, *self.summary.keyword_only)
                                      if p != "self"}
        for extra in (self.summary.star, self.summary.double_star):
            if extra:
                self.taint[extra] = extra
        self.host_scalars: dict[str, Sink] = {}  # names bound to a host read (`v = x.item()`)
        self.loaders: dict[str, LoaderFact] = {}
        self.loader_lists: dict[str, LoaderFact] = {}  # lists filled with loaders (`loaders.append(loader)`)
        self.unpacked: set[str] = set()  # names unpacked from a call's result (`loader, iters = make(...)`)
        self.loader_places: set = set()  # where in the returned tuples the loader is, per `return`
        self.tensors: dict[str, int] = {}  # names holding a tensor made here: TENSOR, or DEVICE_TENSOR
        self.parameter_views: set[str] = set()  # names iterating a module argument's parameters
        # names holding (a value computed from) what calling a parameter returned (`out = net(img)`): a module
        # handed in runs there, so a read of them is a read of its output (`Sink.through` "output")
        self.output_views: dict[str, str] = {}  # name -> that parameter
        self.classes: dict[str, ClassSummary] = {}  # names bound to an instance of a project class
        self.quiet = 0  # > 0: inside a block whose reads are not the call's (periodic, an option)
        self.hidden = 0  # > 0: inside such a block's body (a loader it returns is not the function's answer)
        self.masks: set[str] = set()  # names bound to a boolean tensor computed from a parameter
        self.computed: set[str] = set()  # names the function assigns itself
        self.host_batches: dict[str, Sink] = {}  # names bound to a tensor built here on the host (`torch.stack`)
        self.host_data_names: dict[str, str] = {}  # names bound to a tensor of host data (`torch.from_numpy`)
        self.other_returns = False  # some `return` hands back a tensor not built on the host here
        self.union: Optional[list] = []  # the classes of every `return` of a value; None once one is not one
        self.on_cuda: set[str] = set()  # names bound to a model moved to a CUDA device
        self.values: dict[str, list] = {}  # name -> the values of its plain assignments
        self.own_returns: Optional[bool] = None  # every `return` so far hands back `cls(...)` (`returns_cls`)
        self.cuda_returns: Optional[bool] = None  # every `return` of a value so far hands back such a model
        self.library: Optional[list] = []  # the library classes of every `return` of a value (None: not all)
        self.closures: Optional[list] = []  # the nested functions every `return` of a value hands back
        self.device_guard: Optional[str] = None  # inside `if <param>.type == "cuda":`: that parameter
        self.tensor_guard: Optional[str] = None  # inside `if torch.is_tensor(<param>):`: that parameter
        self.host_only_reads: set = set()  # ids of `t.numpy()` calls only a host tensor reaches (`_bare_numpy`)
        self.value_guard: tuple = ()  # inside `if <param> == <constant>:`: `Sink.when` of the reads there
        # name -> the parameter whose object it holds (the parameter itself, `model.cuda()`, `DDP(model)`)
        self.held: dict[str, str] = {p: p for p in (*self.summary.params, *self.summary.keyword_only) if p != "self"}
        self.passes: object = None  # what every `return` so far hands back of the parameters (`_passes`)
        self.host_copies: Optional[bool] = None  # every `return` of a value so far is a copy to the host

    def run(self) -> FunctionSummary:
        self._block(self.fn.body, conditional=False)
        self._element_reads()
        self._numpy_params()
        self.summary.returns_union = tuple(self.union or ())
        if not self.summary.returns_union and self.fn.returns is not None:
            self.summary.returns_annotation = self.fn.returns  # resolved on use: Project.returned_classes
        self.summary.returns_on_cuda = bool(self.cuda_returns)
        if not self.summary.returns_on_cuda:
            self.summary.returns_on_device_param = _returns_on_device_param(self.fn)
        self.summary.returns_host_copy = bool(self.host_copies)
        if self.library is not None and len(self.library) == 1:
            self.summary.returns_library = self.library[0]
        self.summary.stub = all(isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and
                                isinstance(stmt.value, ast.Constant) or isinstance(stmt, ast.Return) and (
                                    stmt.value is None or isinstance(stmt.value, ast.Constant) or
                                    isinstance(stmt.value, (ast.Dict, ast.List, ast.Tuple)) and
                                    not getattr(stmt.value, "keys", None) and not getattr(stmt.value, "elts", None))
                                for stmt in self.fn.body)
        if self.closures is not None and len(self.closures) == 1 and "." not in self.summary.qualname:
            self.summary.returns_function = f"{self.summary.qualname}.{self.closures[0]}"
        if isinstance(self.passes, str):
            self.summary.returns_param = self.passes
        elif isinstance(self.passes, tuple) and any(self.passes):
            self.summary.returns_param_elements = self.passes
        if self.summary.returns_loader is None:
            # a generator handing on a loader's batches (`loader = DataLoader(...)`; `while True: yield from
            # loader`) is a loader factory to its callers (analysis/generators.py)
            source = yielded_source_ast(self.fn)
            if isinstance(source, ast.Name) and source.id in (*self.summary.params, *self.summary.keyword_only) \
                    and source.id != "self" and not any(isinstance(n, ast.Name) and n.id == source.id and
                                                        isinstance(n.ctx, ast.Store) for n in ast_walk.walk(self.fn)):
                self.summary.yields_param = source.id
            if source is not None:
                self.summary.returns_loader = self._loader(source) or (
                    self.loaders.get(source.id) if isinstance(source, ast.Name) else None)
        return self.summary

    def _numpy_params(self) -> None:
        """A parameter the body hands to NumPy on every call (`np.histogram(output, ...)`, `np.where(output ==
        target)` in a statement of the body itself that every call reaches, no `return` or `raise` before it, the
        name never rebound through a copy or a move) holds a host array or tensor: NumPy raises on a CUDA tensor,
        so the body's reads of it (`output[mask]`) wait for no GPU (Pointcept's `intersection_and_union`, next to
        its `intersection_and_union_gpu`)."""
        if not self.summary.sink_params:
            return
        stored: dict[str, list[ast.expr]] = {}
        for node in ast_walk.walk(self.fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast_walk.walk(target):
                        if isinstance(name, ast.Name):
                            stored.setdefault(name.id, []).append(node.value)
        args = self.fn.args
        annotated = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                     if a.annotation is not None and _numpy_annotation(a.annotation)}
        for param in list(self.summary.sink_params):
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                   n.func.attr in ("cpu", "numpy", "detach", "to", "cuda", "tolist", "item")
                   for value in stored.get(param, ()) for n in ast_walk.walk(value)):
                continue  # `x = x.cpu().numpy()`: NumPy sees the copy, the reads before it may be the device's
            if param in annotated:
                # `def update(self, gts: np.ndarray, preds: np.ndarray)`: the helper declares host arrays (doctr's
                # `LocalizationConfusion.update`, given the postprocessor's NumPy boxes)
                del self.summary.sink_params[param]
                continue
            if any(isinstance(value, ast.Call) and any(isinstance(a, ast.Name) and a.id == param for a in value.args)
                   for value in stored.get(param, ())):
                continue  # `preds, truths = self.prepare_inputs(preds, truths)`: NumPy sees what the helper made
            for stmt in self.fn.body:
                if self._numpy_reads(stmt, param):
                    del self.summary.sink_params[param]
                    break
                if any(isinstance(n, (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom)) for n in ast_walk.walk(stmt)
                       if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))):
                    break  # `if isinstance(x, torch.Tensor): return x.cpu().numpy()` before `return np.asarray(x)`:
                    # the NumPy call is a fallback for other types, not reached by every call

    def _numpy_reads(self, stmt: ast.stmt, param: str) -> bool:
        """`stmt` (a statement of the body, no branch, loop or nested definition) calls NumPy on `param` itself,
        or on a comparison or arithmetic of it (`np.where(output == target)`)."""
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)) or \
                getattr(stmt, "value", None) is None:
            return False
        for node in ast_walk.walk(stmt.value):  # type: ignore[arg-type]
            if not (isinstance(node, ast.Call) and self._numpy_value(node)):
                continue
            for arg in node.args:
                parts = [arg]
                while parts:
                    part = parts.pop()
                    if isinstance(part, ast.Name) and part.id == param:
                        return True
                    if isinstance(part, ast.Compare):
                        parts.extend([part.left, *part.comparators])
                    elif isinstance(part, ast.BinOp):
                        parts.extend([part.left, part.right])
        return False

    def _element_reads(self) -> None:
        """A parameter whose elements the body reads on the host one by one (`if t[i] != 0` of `t = p[k, :]`, a
        list lookup per element of `p[k, :]`): analysis/element_reads.py."""
        found = element_read(self.fn)
        if found is not None and found[0] not in self.summary.sink_params:
            self.summary.sink_params[found[0]] = Sink(self.info.path, found[1], found[2])

    # -- statements ------------------------------------------------------------------------------------------
    def _block(self, body: list[ast.stmt], conditional: bool) -> None:
        for i, stmt in enumerate(body):
            self._statement(stmt, conditional)
            if isinstance(stmt, ast.If) and i + 1 < len(body) and (skip_guard(stmt) or
                                                                   memo_return(stmt, body[i + 1:], self.fn)):
                # `if step % 100 != 0: return` (or `continue`): what follows runs periodically, its reads are
                # not the call's (analysis/skip_guards.py); `if k in self.cache: return self.cache[k]` before a
                # build kept in `self.cache`: it runs once per key (analysis/memo_guards.py)
                self.quiet += 1
                self._block(body[i + 1:], True)
                self.quiet -= 1
                return

    def _periodic_predicate(self, test: ast.expr) -> bool:
        """`test` calls a function of this module (`self.check_frequency(idx)`, `should_log(step)`) defined
        once, that returns only True and False and returns True only inside an `if` testing a modulo."""
        for node in ast_walk.walk(test):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) and \
                isinstance(func.value, ast.Name) and func.value.id == "self" else None
            if name and name in _periodic_predicates(self.info):
                return True
        return False

    def _statement(self, stmt: ast.stmt, conditional: bool) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # nested definitions run when called, not here
        if isinstance(stmt, ast.If):
            self._expressions(stmt.test, conditional)
            self._branch_read(stmt.test)
            guard = conditional or not _gpu_guard(stmt.test)
            option = _flag(stmt.test) and not _gpu_guard(stmt.test) and not self._computed(stmt.test)
            off_gpu = _off_gpu(stmt.test)
            if _periodic(stmt.test) or self._periodic_predicate(stmt.test) or option or off_gpu:
                # `if self.count % 100 == 0:` logging inside a helper is deliberate; `if self.autobalance:` is an
                # option we cannot see the value of (nor its `else`: `if self.pt: ... else: im.cpu().numpy()`),
                # not assumed either way; `if mps:` is not taken on a CUDA run. Their reads are not the call's;
                # what they bind and return still is (`if update_grad: norm = clip_grad_norm_(...)`).
                self.quiet += 1
                self.hidden += 1
                self._block(stmt.body, True)
                self.hidden -= 1
                if not off_gpu:
                    self._block(stmt.orelse, True)  # an option's `else`: a loader it returns still counts
                self.quiet -= 1
                if off_gpu:
                    self._block(stmt.orelse, conditional)  # the branch a GPU run takes
                elif option and not conditional and not self.quiet and self.summary.always_syncs is None:
                    # `if self.use_fp16: return self._optimize_fp16(opt) else: return self._optimize_normal(opt)`:
                    # whichever the option picks syncs, so the call does
                    both = [self._branch_syncs(stmt.body), self._branch_syncs(stmt.orelse)]
                    if all(both):
                        self._always(both[0])  # type: ignore[arg-type]
                return
            if memo_fill(stmt, self.fn):
                # `if self.grid is None: self.grid = build()`: filled once per key (analysis/memo_guards.py)
                self.quiet += 1
                self._block(stmt.body, True)
                self.quiet -= 1
                return
            device = self._device_tested(stmt.test)
            outer, self.device_guard = self.device_guard, device or self.device_guard
            outer_tensor, self.tensor_guard = self.tensor_guard, self._tensor_tested(stmt.test)
            outer_value, self.value_guard = self.value_guard, self._constant_tested(stmt.test) or \
                self._none_tested(stmt.test, True) or self._given_tested(stmt.test) or self.value_guard
            self._block(stmt.body, guard)
            self.device_guard = outer
            self.tensor_guard = outer_tensor
            # `if size is not None: ... else: size = int(index.max()) + 1`: the `else` runs only when it is None
            self.value_guard = self._none_tested(stmt.test, False) or self._given_tested(stmt.test, False) or \
                outer_value
            self._block(stmt.orelse, True)
            self.value_guard = outer_value
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            # The body runs on every call whenever the loop has iterations (a loop over a model's parameters,
            # over a batch's items): a sync in it is a sync of the call, as one before the loop is.
            self._expressions(stmt.iter, conditional)
            source = self._tainted_by(stmt.iter)
            views = _iterates_parameters(stmt.iter)
            level = self._tensor_level(stmt.iter)
            for name in _target_names(stmt.target):
                if source is not None:
                    self.taint[name] = source
                if source is not None and views:
                    self.parameter_views.add(name)
                called = self._output_of(stmt.iter) if source is not None else None
                if called is not None:
                    self.output_views[name] = called
                if level:
                    self.tensors[name] = level
            self._block(stmt.body, conditional)
            self._block(stmt.orelse, True)
            return
        if isinstance(stmt, ast.While):
            self._expressions(stmt.test, conditional)
            self._branch_read(stmt.test)
            self._block(stmt.body, True)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._expressions(item.context_expr, conditional)
            self._block(stmt.body, conditional)
            return
        if isinstance(stmt, ast.Try):
            self._block(stmt.body, conditional)
            for handler in stmt.handlers:
                self._block(handler.body, True)
            self._block(stmt.orelse, conditional)
            self._block(stmt.finalbody, conditional)
            return
        if isinstance(stmt, ast.Assert):
            # the test runs on every call (only the message is an error path): `assert labels.max() < n` of a
            # tensor computed from a parameter converts it with `bool()`, a read of that parameter
            self._expressions(stmt.test, conditional)
            self._branch_read(stmt.test)
            return
        if isinstance(stmt, ast.Raise):
            return  # error paths run at most once
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self._appends_loader(stmt.value)
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                self._expressions(stmt.value, conditional)
                self._returns(stmt.value)
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = stmt.value
            if value is None:
                return
            self._expressions(value, conditional)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            self._bind(targets, value, augmented=isinstance(stmt, ast.AugAssign))
            return
        for child in ast_walk.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self._expressions(child, conditional)

    def _bind(self, targets: list[ast.expr], value: ast.expr, augmented: bool) -> None:
        sink = self._host_read(value)
        loader = self._loader(value)
        source = None if sink is not None else self._tainted_by(value)
        level = 0 if sink is not None else self._tensor_level(value)
        whole_host = self._host_batch(value)
        views = source is not None and self._through_parameters(value)
        outputs = self._output_of(value) if source is not None else None
        moved = self._moved_to_cuda(value)
        for target in targets:
            if not augmented:
                bind_host_data(self, target, value)
            if isinstance(target, ast.Name):
                self.values.setdefault(target.id, []).append(value)
                if moved or self._passed_on_cuda(value):
                    self.on_cuda.add(target.id)
                elif not augmented and not (isinstance(value, ast.Name) and value.id == target.id):
                    self.on_cuda.discard(target.id)
            classes = self._classes_of(value)
            held = self._held_elements(value, target)
            at = self._unpacked_loader_position(target, value) if loader is not None else None
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Call):
                self.unpacked.update(_target_names(target))
                if at is not None:  # the callee says which element is the loader: that name is known
                    self.unpacked.discard(target.elts[at].id)
            elif isinstance(target, ast.Name) and not augmented:
                self.unpacked.discard(target.id)
            for position, name in enumerate(_target_names(target)):
                if held[position] is not None and not augmented:
                    self.held[name] = held[position]
                elif not augmented:
                    self.held.pop(name, None)
                self.computed.add(name)
                cls = classes[0] if isinstance(target, ast.Name) and len(classes) == 1 else (
                    classes[position] if isinstance(target, ast.Tuple) and position < len(classes) else None)
                if cls is not None:
                    self.classes[name] = cls
                elif not augmented:
                    self.classes.pop(name, None)
                if level:
                    self.tensors[name] = max(level, self.tensors.get(name, 0)) if augmented else level
                elif not augmented and not _is_none(value):  # `else: norm = None`: an optional tensor
                    self.tensors.pop(name, None)
                if self._is_mask(value):
                    self.masks.add(name)
                elif not augmented:
                    self.masks.discard(name)
                if views:
                    self.parameter_views.add(name)
                elif not augmented:
                    self.parameter_views.discard(name)
                if outputs is not None:
                    self.output_views[name] = outputs
                elif not augmented:
                    self.output_views.pop(name, None)
                if sink is not None:
                    self.host_scalars[name] = sink
                    if not augmented and not self.quiet:  # a branch maybe not taken keeps what came before
                        self.taint.pop(name, None)
                elif source is not None:
                    self.taint[name] = source
                elif not augmented:
                    self.taint.pop(name, None)
                    self.host_scalars.pop(name, None)
                wrapped = self._wrapped_loader(value)
                if loader is not None and at is not None and name != target.elts[at].id:
                    self.loaders.pop(name, None)  # another element of the callee's tuple (`data_set, ...`)
                elif loader is not None:
                    self.loaders[name] = loader
                elif isinstance(value, ast.Name) and value.id in self.loaders:
                    self.loaders[name] = self.loaders[value.id]
                elif wrapped is not None:
                    self.loaders[name] = wrapped
                elif not augmented:
                    # rebound to something else (`model, loader = accelerator.prepare(model, loader)`): the
                    # name no longer holds that DataLoader
                    self.loaders.pop(name, None)
                host = whole_host if isinstance(target, ast.Name) else (
                    self._host_batch(value.elts[position]) if isinstance(target, ast.Tuple) and
                    isinstance(value, ast.Tuple) and position < len(value.elts) else
                    whole_host if isinstance(target, ast.Tuple) and isinstance(value, ast.Call) else None)
                if host is not None:
                    self.host_batches[name] = host
                elif not augmented:
                    self.host_batches.pop(name, None)

    def _host_batch(self, value: ast.expr) -> Optional[Sink]:
        """Where `value` was built on the host: a `torch.stack`/`cat`/`tensor`/`as_tensor`/`from_numpy` call
        without `device=`, or a name bound to one, through slices and methods that keep it where it is."""
        while True:
            if isinstance(value, ast.Subscript):
                value = value.value
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                    value.func.attr in _STAYS_ON_HOST:
                value = value.func.value
            else:
                break
        if isinstance(value, ast.Name):
            return self.host_batches.get(value.id)
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self" \
                and self.cls is not None and self.fn.args.args and self.fn.args.args[0].arg == "self":
            return self._host_attribute(value.attr)
        if isinstance(value, ast.Call):
            callee = self._callee(value)
            if callee is not None and callee[0].returns_host_batch is not None:
                return callee[0].returns_host_batch  # `x, y = get_batch(...)` in a helper of the loop
            qualified = self.info.qualify(_dotted(value.func) or "")
            if qualified in _HOST_BATCH_BUILDERS and not any(kw.arg == "device" or kw.arg is None
                                                             for kw in value.keywords):
                return Sink(self.info.path, value.lineno, f"`{qualified}`")
        return None

    def _host_attribute(self, attr: str) -> Optional[Sink]:
        """`self.tokens` of a loader class every method of which stores it as a tensor built on the host: a
        `torch.tensor(...)` / `from_numpy(...)` call without `device=`, or a project function handing one back
        (`self.tokens = load_tokens(shard)` with `return torch.tensor(npt, dtype=torch.long)`). Its slices
        (`buf = self.tokens[pos:pos + B * T + 1]`, `x = buf[:-1].view(B, T)`) are views of pageable memory."""
        assert self.cls is not None
        stores = _self_stores(self.cls).get(attr, ())
        found: Optional[Sink] = None
        for node in stores:
            if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.value, ast.Call):
                return None
            sink = self._host_batch(node.value)
            if sink is None:
                return None
            found = found or sink
        return found

    def _numpy_value(self, value: ast.expr) -> bool:
        """`np.uint8((img * 255.0).round())`, `numpy.stack(rows)`: NumPy builds its result in host memory."""
        return isinstance(value, ast.Call) and (self.info.qualify(_dotted(value.func) or "") or "").startswith("numpy.")

    def _returns(self, value: ast.expr) -> None:
        self.host_copies = (_host_copy(value) or self._numpy_value(value)) and self.host_copies is not False
        sink = self._host_read(value)
        if sink is None and isinstance(value, ast.Name):
            sink = self.host_scalars.get(value.id)
        if sink is None and isinstance(value, ast.BinOp):
            sink = self._host_number(value)  # `return correct / len(y_true)` of `correct = ... .item()`
        if sink is not None and self.summary.returns_host_scalar is None and not self.quiet:
            self.summary.returns_host_scalar = sink
        loader = self._loader(value)
        at = self._loader_position(value) if loader is not None else None
        if loader is None:
            positions = []
            for position, element in enumerate(value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]):
                if element is not value and isinstance(element, ast.Name) and element.id in self.unpacked:
                    positions.append(None)  # `loader, iters = make_loader(...)`; `return model, iters`: not known
                    continue
                found = self._loader(element) or (self.loaders.get(element.id) or (
                    self.loader_lists.get(element.id) if element is value else None)
                    if isinstance(element, ast.Name) else None)
                if found is not None:
                    if loader is not None and (loader.pinned, loader.pin_param) != (found.pinned, found.pin_param):
                        # `return train_loader, test_loader` pinned differently: which one a caller's name
                        # holds is not told here, so whether it pins is not known
                        loader = LoaderFact(loader.path, loader.line, None)
                    loader = loader or found
                    positions.append(position)
            # one loader among other values (`return data_set, data_loader`): its place; several loaders
            # (`return train_loader, valid_loader`) or an element not known: any place
            at = positions[0] if len(positions) == 1 and isinstance(value, ast.Tuple) else None
        if loader is not None and not self.hidden:
            if self.summary.returns_loader is None:
                self.summary.returns_loader = loader
                self.summary.returns_loader_at = at
                self.loader_places = {at}
            else:
                self.loader_places.add(at)  # returns that disagree on the place: any place
                if len(self.loader_places) > 1:
                    self.summary.returns_loader_at = None
        if sink is None and self._tensor_level(value):
            self.summary.returns_tensor = True
        elements = value.elts if isinstance(value, ast.Tuple) else [value]
        # a name bound to a host build is a tensor too (`x = buf[:-1].view(B, T)` of `buf = self.tokens[...]`)
        tensors = [e for e in elements
                   if self._tensor_level(e) or isinstance(e, ast.Name) and e.id in self.host_batches]
        hosts = [self._host_batch(e) for e in tensors]
        if tensors and all(hosts) and not self.other_returns:
            if self.summary.returns_host_batch is None:
                self.summary.returns_host_batch = hosts[0]
        elif tensors:
            self.other_returns = True
            self.summary.returns_host_batch = None
        if isinstance(value, ast.Name) and value.id in self.taint and self.taint[value.id] == value.id:
            self.summary.returns_params = self.summary.returns_params | {value.id}
        classes = self._classes_of(value)
        if any(c is not None for c in classes) and not self.summary.returns_classes:
            self.summary.returns_classes = classes
        if not _is_none(value):
            own = self._own_instance(value)
            self.own_returns = own if self.own_returns is None else (self.own_returns and own)
            self.summary.returns_cls = bool(self.own_returns)
        if not _is_none(value) and self.cuda_returns is not False:
            self.cuda_returns = (isinstance(value, ast.Name) and value.id in self.on_cuda) or \
                self._moved_to_cuda(value)
        if self.closures is not None and not _is_none(value):
            nested = value.id if isinstance(value, ast.Name) and _nested_function(self.fn, value.id) else None
            if nested is None:
                self.closures = None
            elif nested not in self.closures:
                self.closures.append(nested)
        if self.library is not None and not _is_none(value):
            library = self._library_class(value)
            if library is None:
                self.library = None
            elif library not in self.library:
                self.library.append(library)
        if not _is_none(value):
            self._passes_return(value)
        if self.union is not None and not _is_none(value):
            one = classes[0] if len(classes) == 1 and not isinstance(value, ast.Tuple) else None
            if one is None:
                self.union = None
            elif all(c is not one for c in self.union):
                self.union.append(one)

    def _wrapped_loader(self, value: ast.expr) -> Optional[LoaderFact]:
        """`PrefetchLoader(loader, ...)`: a project class that iterates (`__iter__`) the loader it is given first
        hands on that loader's batches, pinned or not (timm's and effdet's prefetchers copy them to the GPU)."""
        if not isinstance(value, ast.Call) or not value.args or not isinstance(value.args[0], ast.Name) or \
                value.args[0].id not in self.loaders:
            return None
        dotted = _dotted(value.func)
        found = self.project.lookup(self.info.path, dotted) if dotted and not dotted.startswith("self.") else None
        if isinstance(found, ClassSummary) and "__iter__" in found.methods:
            return self.loaders[value.args[0].id]
        return None

    def _library_class(self, value: ast.expr, depth: int = 0) -> Optional[str]:
        """The library class of the table (analysis/libraries.py) `value` is built by: `Accelerator(...)`, or a
        name whose every plain assignment here is one."""
        from gpulint.analysis.libraries import canonical, is_library_class

        if isinstance(value, ast.Call):
            qualified = self.info.qualify(_dotted(value.func) or "")
            return canonical(qualified) if qualified and is_library_class(qualified) else None
        if isinstance(value, ast.Name) and depth < 3:
            found = {self._library_class(v, depth + 1) for v in self.values.get(value.id, ())}
            return found.pop() if len(found) == 1 else None
        return None
    def _loader_position(self, value: ast.expr) -> Optional[int]:
        """Where in the tuple a call of a project loader factory returns the loader is (`data_provider(...)`
        returning `data_set, data_loader` gives 1); None for anything else."""
        if not isinstance(value, ast.Call):
            return None
        callee = self._callee(value)
        return callee[0].returns_loader_at if callee is not None and callee[0].returns_loader is not None else None

    def _unpacked_loader_position(self, target: ast.expr, value: ast.expr) -> Optional[int]:
        """`a, b = factory(...)` unpacked into plain names, where the factory says which element is its loader:
        that element's position."""
        if not (isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts)):
            return None
        at = self._loader_position(value)
        return at if at is not None and at < len(target.elts) else None

    def _appends_loader(self, call: ast.Call) -> None:
        """`loaders.append(loader)` (in a loop building one loader per dataset): `return loaders` hands back
        loaders, unpacked by the caller (`train_loader, val_loader = create_loader(...)`) as a tuple of loaders
        is. Loaders that disagree on pinning make it unknown."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "append" and isinstance(func.value, ast.Name)
                and len(call.args) == 1 and not call.keywords):
            return
        element = call.args[0]
        if isinstance(element, ast.Name) and not all(self._loader(v) for v in self.values.get(element.id, [None])):
            return  # `data_loader = HybridDataLoader(...)` on one branch, `DataLoader(...)` on the other
        loader = self._loader(element) or (self.loaders.get(element.id) if isinstance(element, ast.Name) else None)
        if loader is None:
            return
        known = self.loader_lists.get(func.value.id)
        if known is not None and known.pinned != loader.pinned:
            loader = LoaderFact(known.path, known.line, None)
        self.loader_lists[func.value.id] = known if known is not None and known.pinned == loader.pinned else loader

    def _moved_to_cuda(self, value: ast.expr) -> bool:
        """`X(...).to(device)` / `.cuda()` (or a name bound to one moved again) to a device that is CUDA."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
            return False
        if value.func.attr == "cuda":
            return True
        if value.func.attr != "to":
            return False
        device = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "device"), None)
        return device is not None and self._cuda_device(device)

    def _cuda_device(self, expr: ast.expr, depth: int = 0) -> bool:
        """`"cuda"`, `"cuda:0"`, `torch.device("cuda" if ... else "cpu")`, or a name every assignment here of
        which is one (as training.TrainingFacts.cuda_device reads the linted module)."""
        if depth > 4:
            return False
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, str) and expr.value.startswith("cuda")
        if isinstance(expr, ast.IfExp):
            return self._cuda_device(expr.body, depth + 1) or self._cuda_device(expr.orelse, depth + 1)
        if isinstance(expr, ast.Call):
            if self.info.qualify(_dotted(expr.func) or "") == "torch.device" and expr.args:
                return self._cuda_device(expr.args[0], depth + 1)
            return False
        if isinstance(expr, ast.Name) and expr.id in self.values:
            return all(self._cuda_device(v, depth + 1) for v in self.values[expr.id])
        return False

    # -- expressions ------------------------------------------------------------------------------------------
    def _expressions(self, expr: ast.expr, conditional: bool) -> None:
        """Record every sink and sync call inside `expr` (lambdas and comprehensions' own scopes included)."""
        given: dict = {}  # comprehension targets given a parameter's values, restored on the way out
        try:
            self._expression_nodes(expr, conditional, given)
        finally:
            for name, before in given.items():
                if before is None:
                    self.taint.pop(name, None)
                else:
                    self.taint[name] = before

    def _comprehension_targets(self, node: ast.expr, given: dict) -> None:
        """`{k: scalar(v) for k, v in losses._asdict().items()}`, `[f(x) for x in xs]`: a target of a generator
        over a parameter (its items, values, fields) holds the parameter's values, in the comprehension's scope."""
        for generator in node.generators:  # type: ignore[attr-defined]
            source = self._tainted_by(generator.iter)
            if source is None:
                continue
            for name in _target_names(generator.target):
                if name not in given:
                    given[name] = self.taint.get(name)
                self.taint[name] = source

    def _expression_nodes(self, expr: ast.expr, conditional: bool, given: dict) -> None:
        for node in ast_walk.walk(expr):
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                self._comprehension_targets(node, given)
            elif isinstance(node, ast.IfExp):
                for branch in (node.body, node.orelse):
                    if _bare_numpy(branch):
                        # `points.numpy() if is_numpy else points`: a device tensor's `.numpy()` raises, so the
                        # branch is taken for host tensors only (a helper dispatching on the type it was given)
                        self.host_only_reads.add(id(branch))
            if isinstance(node, ast.Call):
                self._call(node, conditional)
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and \
                    not conditional and not self.quiet and self.summary.always_syncs is None:
                found = device_read(self, node)  # `[x.item() for x in sizes]` over device tensors built here
                if found is not None:
                    self._always(Sink(self.info.path, found[0], found[1]))
            elif isinstance(node, ast.Attribute) and self.cls is not None and node.attr in self.cls.properties \
                    and isinstance(node.value, ast.Name) and node.value.id == "self" and \
                    isinstance(node.ctx, ast.Load) and not self.quiet and not conditional and \
                    self.summary.always_syncs is None:
                read = self.project.method(self.cls, node.attr)  # `self.r`: the property runs on every read
                if read is not None and read.always_syncs is not None:
                    self._always(read.always_syncs)
            elif isinstance(node, ast.Subscript) and not self.quiet and not conditional and \
                    self.summary.always_syncs is None and self._device_mask(node.slice) and \
                    not isinstance(node.ctx, ast.Store):
                # `labels[~mask]` with `mask = torch.eye(n, dtype=torch.bool).to(device)`: a mask made on the
                # device here is counted on the host whatever the call is given
                self._always(Sink(self.info.path, node.lineno, "boolean-mask indexing"))
            elif isinstance(node, ast.Subscript) and not self.quiet and self._is_mask(node.slice):
                # `x[x[:, 4] > conf]`: the result's size depends on the data, so the host waits for the mask.
                param = self._tainted_by(node.value)
                if param is not None and param not in self.summary.sink_params:
                    self._put_sink(param, Sink(self.info.path, node.lineno, "boolean-mask indexing"))
            elif isinstance(node, ast.Subscript) and not self.quiet:
                # `x[i, :, start:end]`: each bound is converted with `__index__` whatever is sliced
                for part in (node.slice.elts if isinstance(node.slice, ast.Tuple) else (node.slice,)):
                    if isinstance(part, ast.Slice):
                        for bound in (part.lower, part.upper, part.step):
                            self._bound_read(bound, "slicing with a tensor bound", node.lineno,
                                             conditional)

    def _bound_read(self, bound: Optional[ast.expr], what: str, line: int, conditional: bool) -> None:
        """A slice bound or a size (`x[i, :, start:end]` with `start = starts[i]`, `torch.arange(lengths.max())`):
        a tensor there is converted to a Python int (`__index__`), a host read of the parameter it comes from
        (its call sites decide whether they pass a device tensor); a device tensor made here is read on every
        call. Host reads (`int(n)`, `n.item()`) and metadata (`x.size(1)`, `len(x)`) are no such tensor."""
        if bound is None or self.quiet or isinstance(bound, ast.Constant):
            return
        params = (*self.summary.params, *self.summary.keyword_only)
        if any(isinstance(n, ast.Name) and n.id in params and n.id in self.computed and none_by_default(self, n.id)
               for n in ast_walk.walk(bound)):
            return  # `if max_len is None: max_len = lengths.max()`: a caller passing `max_len` reads nothing
        if self._tensor_level(bound) == DEVICE_TENSOR and not self._host_read(bound):
            if self.summary.always_syncs is None and not conditional:
                self._always(Sink(self.info.path, line, what))
            return
        param = self._value_of_parameter(bound)
        if param is not None and self._sink_open(param):
            self._put_sink(param, Sink(self.info.path, line, what))

    def _value_of_parameter(self, expr: ast.expr, depth: int = 0) -> Optional[str]:
        """The parameter whose values `expr` computes with: an element of it (`starts[i]`), a reduction of it
        (`lengths.max()`), or a name bound to either (`end = starts[i] + size`). Not the parameter as it is (a
        bound or size given as a number, as often as a tensor: `x[:, :n]`, `ref_size = reference` where a tensor
        gives `reference.size(-1)`), nor its metadata (`x.shape`, `len(x)`) or anything computed from that."""
        pending = [expr]
        while pending:
            node = pending.pop()
            if _metadata(node):
                continue
            if isinstance(node, ast.Subscript) and not _metadata(node.value):
                param = self._tainted_by(node.value)
                if param is not None and not any(_metadata(n) for n in ast_walk.walk(node.value)):
                    return param
            if isinstance(node, ast.Call):
                param = self._tensor_of_parameter(node)
                if param is not None:
                    return param
            if isinstance(node, ast.Name) and depth < 2 and node.id not in self.summary.params and \
                    node.id not in self.summary.keyword_only:
                for value in self.values.get(node.id, ()):
                    param = self._value_of_parameter(value, depth + 1)
                    if param is not None:
                        return param
            if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp, ast.Lambda)):
                continue  # what a comprehension makes of a parameter is no element of it
            pending.extend(ast_walk.iter_child_nodes(node))
        return None

    def _branch_read(self, test: ast.expr) -> None:
        """`if torch.min(y) < -1.:`, `while (x > 0).any():`: a branch on the value of a tensor computed from a
        parameter (a reduction or a torch function of it) converts it with `bool()`, a read of that parameter."""
        if self.quiet:
            return
        param = self._value_tested(test)
        if param is not None and param not in self.summary.sink_params:
            self._put_sink(param, Sink(self.info.path, test.lineno, "bool()"))  # what `if` calls

    def _value_tested(self, test: ast.expr) -> Optional[str]:
        if isinstance(test, ast.BoolOp):
            for value in test.values:
                if _flag(value):
                    return None  # `if match_duration and (...).all():`: read only where an option we cannot see is on
                param = self._value_tested(value)
                if param is not None:
                    return param
            return None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._value_tested(test.operand)
        if isinstance(test, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in test.ops):
                return None
            return next((p for p in map(self._tensor_of_parameter, [test.left, *test.comparators])
                         if p is not None), None)
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr in ("any", "all"):
            return self._tensor_of_parameter(test)
        if isinstance(test, ast.Call) and self.info.qualify(_dotted(test.func) or "") in _TESTED_PREDICATES:
            return self._tensor_of_parameter(test)  # `if not torch.isfinite(loss):` converts a 0-dim bool tensor
        return None

    def _tensor_of_parameter(self, expr: ast.expr, depth: int = 0) -> Optional[str]:
        """The parameter `expr` is a tensor computed from: `torch.min(y)`, `y.max()`, `torch.isnan(y).any()`,
        `(y > 0).all()`, or a name every assignment so far binds to one (`num_pos = pos.float().sum()`, then
        `if num_pos == 0:`); not a parameter as it is (a number, as often as a tensor), nor its metadata."""
        if isinstance(expr, ast.Name) and depth < 2:
            values = self.values.get(expr.id, ())
            found = {self._tensor_of_parameter(v, depth + 1) for v in values}
            return found.pop() if len(found) == 1 and None not in found else None
        if not isinstance(expr, ast.Call):
            return None
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _VALUE_REDUCTIONS and not expr.args:
            receiver = func.value
            if isinstance(receiver, ast.Call):
                inner = self._tensor_of_parameter(receiver)
                if inner is not None:
                    return inner
            while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and \
                    receiver.func.attr in _ELEMENTWISE_METHODS:
                receiver = receiver.func.value  # `gt.eq(1).float().sum()`: a tensor of `gt`'s values, reduced
            if isinstance(receiver, ast.Compare) and not any(
                    isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in receiver.ops):
                return self._tainted_by(receiver)  # `(y > 0).all()`: a boolean tensor reduced
            return None if isinstance(receiver, ast.Call) else self._tainted_by(receiver)  # `y.max()`
        qualified = self.info.qualify(_dotted(func) or "")
        if qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in _VALUE_FUNCTIONS and expr.args \
                and not _metadata(expr.args[0]):
            return self._tainted_by(expr.args[0])
        return None

    def _device_mask(self, index: ast.expr, depth: int = 0) -> bool:
        """A boolean tensor this function makes on the device: `torch.eye(n, dtype=torch.bool).to(device)`,
        `.bool()` of a device tensor made here, its negation, or a name every assignment binds to one."""
        if depth > 3:
            return False
        if isinstance(index, ast.Tuple):
            return any(self._device_mask(e, depth + 1) for e in index.elts)
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.Invert):
            return self._device_mask(index.operand, depth + 1)
        if isinstance(index, ast.Name):
            values = self.values.get(index.id, ())
            return bool(values) and index.id in self.tensors and \
                all(self._device_mask(v, depth + 1) for v in values)
        if not isinstance(index, ast.Call) or self._tensor_level(index) != DEVICE_TENSOR:
            return False
        call = index
        while True:
            if any(kw.arg == "dtype" and _dotted(kw.value) in ("torch.bool", "bool") for kw in call.keywords):
                return True
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "bool" and not call.args:
                return True
            if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda") and isinstance(func.value, ast.Call):
                call = func.value  # `torch.eye(n, dtype=torch.bool).to(device)`: the mask, moved
                continue
            return False

    def _is_mask(self, index: ast.expr) -> bool:
        """A boolean tensor computed from a parameter: `x[..., 4] > t`, a name bound to one, `m1 & m2`, `~m`,
        `masks[i]`, or a tuple index holding one (`x[mask, :]`)."""
        if isinstance(index, ast.Tuple):
            return any(self._is_mask(e) for e in index.elts)
        if isinstance(index, ast.Name):
            return index.id in self.masks
        if isinstance(index, ast.Subscript):
            return self._is_mask(index.value)
        if isinstance(index, ast.Compare):
            return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in index.ops) and \
                self._tainted_by(index) is not None
        if isinstance(index, ast.BinOp) and isinstance(index.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return self._is_mask(index.left) or self._is_mask(index.right)
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.Invert):
            return self._is_mask(index.operand)
        if isinstance(index, ast.Call) and isinstance(index.func, ast.Attribute) and \
                not any(kw.arg == "dtype" for kw in index.keywords) and \
                not any((_dotted(a) or "").startswith("torch.") for a in index.args):
            method, receiver = index.func.attr, index.func.value
            if method in _MASK_KEEPING_METHODS or method == "logical_not" and not index.args:
                # `m.triu(diagonal=1)`, `m.view(-1)`, `m.logical_not()`: still the mask
                return self._is_mask(receiver)
            if method in _COMPARING_METHODS:
                # `label.eq(other)`, `x.isnan()`: a comparison written as a method
                return self._tainted_by(receiver) is not None
        return False

    def _call(self, call: ast.Call, conditional: bool) -> None:
        if self.quiet:
            return
        if isinstance(call.func, ast.Name) and self.taint.get(call.func.id) == call.func.id \
                and call.func.id not in self.computed:
            self.summary.calls_params = self.summary.calls_params | {call.func.id}
        qualified = self.info.qualify(_dotted(call.func) or "")
        if qualified in SYNC_CALLS or qualified.endswith(".synchronize") and "cuda" in qualified:
            if not conditional and self.summary.always_syncs is None:
                self._always(Sink(self.info.path, call.lineno, f"{qualified}()"))
            return
        if conditional and self.tensor_guard is not None and not self.quiet:
            self._moves_tested_tensor(call)
        if not conditional:
            self._moves_param(call)
            if self.summary.copies_host is None:
                copied = copy_of_host_data(self, call)
                if copied is not None:
                    self.summary.copies_host = Sink(self.info.path, call.lineno, copied[0], "copy")
                    self.summary.copies_host_device = copied[1]
        if qualified in SIZE_FUNCTIONS or isinstance(call.func, ast.Name) and call.func.id == "range":
            # `torch.arange(lengths.max())`, `range(n)`: a tensor there is read on the host to size the result
            name = qualified.rsplit(".", 1)[-1] if qualified in SIZE_FUNCTIONS else "range"
            for size in _ast_sizes(call, SIZE_FUNCTIONS.get(qualified)):
                self._bound_read(size, f"`{qualified if name != 'range' else name}()` sized by a tensor", call.lineno, conditional)
        read = self._read_of(call)
        if read is not None:
            what, operand = read
            if self._tensor_level(operand) == DEVICE_TENSOR:
                # A device tensor the helper makes itself (`torch.tensor(x).cuda()`, `torch.as_tensor(n,
                # device=out.device)`) read back: whatever it is given, the call waits for the GPU.
                if not conditional and self.summary.always_syncs is None:
                    self._always(Sink(self.info.path, call.lineno, what))
                return
            param = self._tainted_by(operand)
            if param is not None and self._sink_open(param):
                through = "parameters" if self._through_parameters(operand) else \
                    "output" if self._output_of(operand) == param else ""
                self._put_sink(param, Sink(self.info.path, call.lineno, what, through))
            return
        callee = self._callee(call)
        if callee is None:
            library = self._library_sync(call)
            if library is not None and not conditional and self.summary.always_syncs is None:
                self._always(library)
            self._inherited_library_call(call, conditional)
            return
        summary, bound = callee
        if summary.copies_host is not None and not conditional and self.summary.copies_host is None:
            self._copies_through(call, summary, bound)
        if summary.always_syncs is not None and not conditional and self.summary.always_syncs is None:
            device = None
            if summary.syncs_on_device_of is not None:  # `sync(device)` inside `def step(device)`: that parameter
                arg = _argument(call, summary.params.index(summary.syncs_on_device_of) - int(bound)
                                if summary.syncs_on_device_of in summary.params else None,
                                summary.syncs_on_device_of)
                device = self._tainted_by(arg) if isinstance(arg, ast.expr) else None
            self._always(summary.always_syncs, device if device is not None else self.device_guard)
        for position, arg in enumerate(a for a in call.args if not isinstance(a, ast.Starred)):
            param = self._tainted_by(arg)
            if param is not None and self._sink_open(param):
                sink = summary.sink_for_argument(position, None, bound)
                if sink is not None and _ast_call_runs(call, summary, bound, sink, self.fn):
                    self._put_sink(param, self._output_sink(sink, arg, param))
        for kw in call.keywords:
            param = self._tainted_by(kw.value)
            if param is None or not self._sink_open(param):
                continue
            if kw.arg is None:  # f(**kwargs): every value reaches f's **kwargs (or its parameters)
                sink = summary.sink_params.get(summary.double_star or "") or next(iter(summary.sink_params.values()), None)
            else:
                sink = summary.sink_for_argument(None, kw.arg, bound)
            if sink is not None and _ast_call_runs(call, summary, bound, sink, self.fn):
                self._put_sink(param, self._output_sink(sink, kw.value, param))
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                param = self._tainted_by(arg.value)
                if param is not None and param not in self.summary.sink_params and summary.sink_params:
                    self.summary.sink_params[param] = next(iter(summary.sink_params.values()))

    def _sink_open(self, param: str) -> bool:
        """No read is known for `param` yet, or only one under a test of a parameter's value while this one is
        not (`if reduction == "mean": x.item()`, then an unconditional `x.cpu()`)."""
        known = self.summary.sink_params.get(param)
        if known is None or not known.when:
            return known is None
        guard = self.value_guard
        return not guard or guard[0] == known.when[0] and not set(guard[1]) <= set(known.when[1])

    def _put_sink(self, param: str, sink: Sink) -> None:
        """Records the read `param` reaches, under the value test being walked (or none): a read a callee makes
        only for some value of its own parameter was already checked against this call (`_ast_call_runs`).
        Reads under tests of the same parameter add up (`if r == "mean": ... elif r == "sum": ...`)."""
        guard = self.value_guard
        known = self.summary.sink_params.get(param)
        if guard and known is not None and known.when and known.when[0] == guard[0]:
            self.summary.sink_params[param] = replace(known, when=(
                guard[0], tuple(dict.fromkeys((*known.when[1], *guard[1]))), known.when[2] or guard[2]))
            return
        self.summary.sink_params[param] = replace(sink, when=guard) if sink.when != guard else sink

    def _none_tested(self, test: ast.expr, body: bool) -> tuple:
        """`if p is None:` (for its body) / `if p is not None:` (for its `else`) on a parameter the function never
        rebinds: `Sink.when` saying the block runs only when `p` is None, (p, (None,), whether its default is
        None); () for any other test."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) and
                isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
            return ()
        if not isinstance(test.ops[0], ast.Is if body else ast.IsNot):
            return ()
        name = test.left.id
        if self.taint.get(name) != name or name in self.computed or name == "self" or \
                name not in (*self.summary.params, *self.summary.keyword_only):
            return ()
        default = _default_of(self.fn, name)
        return (name, (None,), isinstance(default, ast.Constant) and default.value is None)

    def _given_tested(self, test: ast.expr, body: bool = True) -> tuple:
        """`if p is not None:` / `if p:` (for its body; `if p is None:` / `if not p:` for its `else`), also as one
        operand of an `and` (`if not torch.jit.is_scripting() and p is not None:`), on a parameter the function
        never rebinds: `Sink.when` saying the block runs only when the call gives `p` a value, (p, (NOT_NONE,) or
        (TRUTHY,), whether its default takes the branch). A call leaving an `Optional` parameter at its default
        None (`model(x, edge_index)` of a `forward(..., num_sampled_nodes_per_hop=None)`) skips the reads there."""
        if body and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return next((found for value in test.values if (found := self._given_tested(value))), ())
        if not body and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            return next((found for value in test.values if (found := self._given_tested(value, False))), ())
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        inner = test.operand if negated else test  # type: ignore[attr-defined]
        if isinstance(inner, ast.Name) and negated != body:
            name, tested = inner.id, TRUTHY
        elif not negated and isinstance(test, ast.Compare) and len(test.ops) == 1 and \
                isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant) and \
                test.comparators[0].value is None and isinstance(test.ops[0], ast.IsNot if body else ast.Is):
            name, tested = test.left.id, NOT_NONE
        else:
            return ()
        if self.taint.get(name) != name or name in self.computed or name == "self" or \
                name not in (*self.summary.params, *self.summary.keyword_only):
            return ()
        default = _default_of(self.fn, name)
        if not (isinstance(default, ast.Constant) and default.value is None):
            return ()  # only an `Optional` parameter left at None is known to skip the block
        return (name, (tested,), False)

    def _constant_tested(self, test: ast.expr) -> tuple:
        """`if reduction == "mean":` / `if mode in ("train", "val"):` on a parameter the function never
        rebinds: (its name, the constants, whether its default takes the branch); () for any other test."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.In))):
            return ()
        left, right = test.left, test.comparators[0]
        if isinstance(test.ops[0], ast.Eq) and isinstance(left, ast.Constant):
            left, right = right, left
        if not isinstance(left, ast.Name) or self.taint.get(left.id) != left.id or left.id in self.computed or \
                left.id == "self":
            return ()
        if isinstance(test.ops[0], ast.Eq):
            items = [right]
        elif isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            items = list(right.elts)
        else:
            return ()
        if not items or not all(isinstance(item, ast.Constant) for item in items):
            return ()
        values = tuple(item.value for item in items)  # type: ignore[attr-defined]
        default = _default_of(self.fn, left.id)
        return (left.id, values, not isinstance(default, ast.Constant) or default.value in values)

    def _branch_syncs(self, block: list) -> Optional[Sink]:
        """The sync of a statement of `block` (its own level, not nested blocks) that calls a project function
        syncing on every call (`always_syncs`), else None."""
        for stmt in block:
            if not isinstance(stmt, (ast.Expr, ast.Return, ast.Assign)) or stmt.value is None:
                continue
            for node in ast_walk.walk(stmt.value):
                if isinstance(node, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.DictComp, ast.SetComp)):
                    break
                if isinstance(node, ast.Call):
                    callee = self._callee(node)
                    if callee is not None and callee[0].always_syncs is not None and \
                            callee[0].syncs_on_device_of is None:
                        return callee[0].always_syncs
        return None

    def _always(self, sink: Sink, device: Optional[str] = None) -> None:
        self.summary.always_syncs = sink
        self.summary.syncs_on_device_of = device or self.device_guard

    def _device_tested(self, test: ast.expr) -> Optional[str]:
        """`if device.type == "cuda":` / `if x.device.type == 'cuda':` on a parameter: that parameter."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            return None
        sides = [test.left, test.comparators[0]]
        if not any(isinstance(side, ast.Constant) and side.value == "cuda" for side in sides):
            return None
        for side in sides:
            if isinstance(side, ast.Attribute) and side.attr == "type":
                inner = side.value.value if isinstance(side.value, ast.Attribute) and side.value.attr == "device" \
                    else side.value
                if isinstance(inner, ast.Name) and self.taint.get(inner.id) == inner.id and \
                        inner.id not in self.computed:
                    return inner.id
        return None

    def _inherited_library_call(self, call: ast.Call, conditional: bool) -> None:
        """`self.add_scalar("grad.norm", grad_norm, it)` in a project subclass of a library class of the reviewed
        table (`class Tacotron2Logger(SummaryWriter)`): the library method's effect, on what this function is
        given (a tensor argument it reads) or always."""
        from gpulint.analysis.libraries import Effect, fact_for_method

        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
                and self.cls is not None and self.cls.bases):
            return
        for base in self.cls.bases:
            fact = fact_for_method(self.info.qualify(base), func.attr) if base else None
            if fact is None:
                continue
            what = f"{fact.target.rsplit('.', 2)[-2]}.{func.attr}()"
            if fact.effect is Effect.SYNCS and not conditional and self.summary.always_syncs is None:
                self._always(Sink(self.info.path, call.lineno, what))
            elif fact.effect is Effect.SYNCS_TENSOR_ARGS:
                for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                    param = self._tainted_by(arg.value if isinstance(arg, ast.Starred) else arg)
                    if param is not None and param not in self.summary.sink_params:
                        self.summary.sink_params[param] = Sink(self.info.path, call.lineno, what)
            return
    def _copies_through(self, call: ast.Call, summary: "FunctionSummary", bound: bool) -> None:
        """A callee that copies host data to the GPU on every call (`copies_host`) makes this function copy too,
        unless this call passes the CPU as the device it copies to; where it passes one of this function's
        parameters as that device, that parameter decides for this function's callers."""
        device = None
        wanted = summary.copies_host_device
        if wanted is not None:
            params = summary.params[1:] if bound and summary.params else summary.params
            arg = _argument(call, params.index(wanted) if wanted in params else None, wanted)
            if isinstance(arg, ast.expr):
                if _is_cpu(arg):
                    return
                if isinstance(arg, ast.Name) and self.taint.get(arg.id) == arg.id:
                    if none_by_default(self, arg.id):
                        return  # our caller may leave the device out: `.to(device=None)` copies nothing
                    device = arg.id
            elif arg is None:
                return  # the device left at the callee's default
        self.summary.copies_host = summary.copies_host
        self.summary.copies_host_device = device

    def _tensor_tested(self, test: ast.expr) -> Optional[str]:
        """`torch.is_tensor(p)` / `isinstance(p, torch.Tensor)` of a parameter `p` (unmodified): its name."""
        if not isinstance(test, ast.Call) or not test.args or not isinstance(test.args[0], ast.Name):
            return None
        name = test.args[0].id
        if name not in self.summary.params and name not in self.summary.keyword_only or \
                self.taint.get(name) != name:
            return None
        qualified = self.info.qualify(_dotted(test.func) or "")
        if qualified == "torch.is_tensor" and len(test.args) == 1:
            return name
        if isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2 and \
                self.info.qualify(_dotted(test.args[1]) or "") == "torch.Tensor":
            return name
        return None

    def _moves_tested_tensor(self, call: ast.Call) -> None:
        """`obj.cuda(...)` / `obj.to(<device>)` of the parameter the enclosing `if` tests to be a tensor."""
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("cuda", "to") or \
                not isinstance(func.value, ast.Name) or func.value.id != self.tensor_guard:
            return
        target = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
        if func.attr == "cuda" or target is not None and not _is_cpu(target) and not _is_dtype(target):
            self.summary.moves_tensor_params = self.summary.moves_tensor_params | {self.tensor_guard}

    def _moves_param(self, call: ast.Call) -> None:
        """`x.cuda()` / `x.to(device)` of a value of a parameter (not to the CPU, not a dtype), or a project
        function moving what this call hands it: the parameter reaches the GPU on every call."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("cuda", "to"):
            target = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"),
                                                         None)
            if func.attr == "cuda" or target is not None and not _is_cpu(target) and not _is_dtype(target):
                param = self._tainted_by(func.value)
                if param is not None:
                    self.summary.moves_params = self.summary.moves_params | {param}
                    if not any(k.arg is not None and legacy_syntax.is_non_blocking(k.arg) and not (
                            isinstance(k.value, ast.Constant) and k.value.value is False) for k in call.keywords) and \
                            not (func.attr == "cuda" and len(call.args) > 1):  # `.cuda(dev, True)`: non_blocking
                        self.summary.blocking_moves = (*self.summary.blocking_moves, (param, call.lineno))
            return
        callee = self._callee(call)
        if callee is None or not callee[0].moves_params:
            return
        summary, bound = callee
        params = summary.params[1:] if bound and summary.params else summary.params
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            if position < len(params) and params[position] in summary.moves_params:
                param = self._tainted_by(arg)
                if param is not None:
                    self.summary.moves_params = self.summary.moves_params | {param}
        for kw in call.keywords:
            if kw.arg in summary.moves_params:
                param = self._tainted_by(kw.value)
                if param is not None:
                    self.summary.moves_params = self.summary.moves_params | {param}

    def _library_sync(self, call: ast.Call) -> Optional[Sink]:
        """`self._scaler.step(optimizer)` where the class builds `self._scaler = torch.cuda.amp.GradScaler()`: a
        library method the reviewed table (analysis/libraries.py) says reads device state back on every call."""
        from gpulint.analysis.libraries import Effect, fact_for_method

        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
                and isinstance(func.value.value, ast.Name) and func.value.value.id == "self" and self.cls is not None):
            return None
        built = self._self_attribute_library_class(func.value.attr)
        fact = fact_for_method(built, func.attr)
        if fact is None or fact.effect is not Effect.SYNCS:
            return None
        return Sink(self.info.path, call.lineno, f"{fact.target.rsplit('.', 2)[-2]}.{func.attr}()")

    def _self_attribute_library_class(self, attr: str) -> Optional[str]:
        """The qualified library class every `self.<attr> = Cls(...)` of the class builds, else None."""
        found: set[str] = set()
        for method in self.cls.methods.values():  # type: ignore[union-attr]
            for node in ast_walk.walk(method):
                if not isinstance(node, ast.Assign):
                    continue
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr == attr and \
                            isinstance(target.value, ast.Name) and target.value.id == "self":
                        value = node.value
                        dotted = _dotted(value.func) if isinstance(value, ast.Call) else None
                        if dotted is None:
                            return None
                        found.add(self.info.qualify(dotted))
        return found.pop() if len(found) == 1 else None

    def _read_of(self, call: ast.Call) -> Optional[tuple[str, ast.expr]]:
        if id(call) in self.host_only_reads:
            return None
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in SINK_METHODS and not call.args and (not call.keywords or func.attr == "nonzero"):
                return SINK_METHODS[func.attr], func.value
            if func.attr == "to" and call.args and _is_cpu(call.args[0]) and not _non_blocking(call):
                return '.to("cpu")', func.value
        if isinstance(func, ast.Name) and func.id in SINK_BUILTINS and len(call.args) == 1 and not call.keywords:
            return f"{func.id}()", call.args[0]
        if len(call.args) == 1 and not call.keywords and \
                self.info.qualify(_dotted(func) or "") in SHAPE_READS:
            # `a, p = torch.where(matches)`: its output is sized by a count read on the host
            return SHAPE_READS[self.info.qualify(_dotted(func) or "")], call.args[0]
        if len(call.args) == 1 and not call.keywords and \
                self.info.qualify(_dotted(func) or "") in SINK_MATH:  # `math.isnan(loss)`: float(loss) first
            return f"{self.info.qualify(_dotted(func) or '')}()", call.args[0]
        return None

    def _host_number(self, value: ast.expr) -> Optional[Sink]:
        """`correct / len(y_true) * 100` where `correct = x.sum().item()`: arithmetic of host numbers, one of them
        read from a tensor (that read's sink); the others literal numbers, `len(...)`, or host reads too. A
        tensor or anything unknown among the operands: None (`loss.item() * weight` may be a tensor)."""
        found: list[Sink] = []

        def host(node: ast.expr) -> bool:
            if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
                return host(node.left) and host(node.right)
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
                return host(node.operand)
            if isinstance(node, ast.Constant):
                return type(node.value) in (int, float)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
                return True
            sink = self.host_scalars.get(node.id) if isinstance(node, ast.Name) else self._host_read(node)
            if sink is not None:
                found.append(sink)
            return sink is not None

        return found[0] if host(value) and found else None

    def _host_read(self, value: ast.expr) -> Optional[Sink]:
        if isinstance(value, ast.Call):
            read = self._read_of(value)
            if read is not None and read[0] != ".nonzero()" and read[0] not in SHAPE_READS.values() and \
                    self._maybe_tensor(read[1]):
                return Sink(self.info.path, value.lineno, read[0])
            callee = self._callee(value)
            if callee is not None and callee[0].returns_host_scalar is not None:
                return callee[0].returns_host_scalar
        return None

    def _tensor_level(self, expr: ast.expr, bound: frozenset = frozenset()) -> int:
        """TENSOR when `expr` holds a tensor made in this function (or a dict, tuple or list of them),
        DEVICE_TENSOR when that tensor is on the GPU (`.cuda()`, `.to(device)`, `torch.*(..., device=d)`), else 0.
        Parameters are not tensors here: what they are is only known at each call site (`returns_params`)."""
        if isinstance(expr, ast.Name):
            return TENSOR if expr.id in bound else self.tensors.get(expr.id, 0)
        if isinstance(expr, ast.Call):
            return self._call_level(expr, bound)
        if isinstance(expr, ast.BinOp):
            return max(self._tensor_level(expr.left, bound), self._tensor_level(expr.right, bound))
        if isinstance(expr, ast.UnaryOp) and not isinstance(expr.op, ast.Not):
            return self._tensor_level(expr.operand, bound)
        if isinstance(expr, ast.Subscript):
            return self._tensor_level(expr.value, bound)
        if isinstance(expr, ast.Attribute):
            if self._buffer(expr) or self._held_parameters(expr):
                return DEVICE_TENSOR
            return 0 if expr.attr in TENSOR_ATTRS_OTHER or expr.attr == "device" else \
                self._tensor_level(expr.value, bound)
        if isinstance(expr, ast.IfExp):
            return max(self._tensor_level(expr.body, bound), self._tensor_level(expr.orelse, bound))
        if isinstance(expr, (ast.Tuple, ast.List)):
            return max((self._tensor_level(e, bound) for e in expr.elts), default=0)
        if isinstance(expr, ast.Dict):
            return max((self._tensor_level(v, bound) for v in expr.values), default=0)
        if isinstance(expr, (ast.DictComp, ast.ListComp, ast.GeneratorExp)):
            inner = set(bound)
            for generator in expr.generators:
                if self._tensor_level(generator.iter, frozenset(inner)):
                    inner.update(_target_names(generator.target))
            element = expr.value if isinstance(expr, ast.DictComp) else expr.elt
            return self._tensor_level(element, frozenset(inner))
        return 0

    def _call_level(self, call: ast.Call, bound: frozenset) -> int:
        func = call.func
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
            method = func.attr
            if method in ("items", "values", "__getitem__", "get"):
                return self._tensor_level(func.value, bound)
            if method in SINK_METHODS or method in TENSOR_METHODS_NUMBER or method in TENSOR_METHODS_OTHER:
                return 0
            receiver = self._tensor_level(func.value, bound)
            if receiver:
                moves = method == "cuda" or method == "to" and bool(call.args) and not _is_cpu(call.args[0]) \
                    and not _is_dtype(call.args[0])
                return DEVICE_TENSOR if moves else receiver
        qualified = self.info.qualify(_dotted(func) or "")
        if _makes_tensor(qualified):
            device = next((kw.value for kw in call.keywords if kw.arg == "device"), None)
            if device is not None and not _is_cpu(device):
                return DEVICE_TENSOR
            return max([TENSOR, *(self._tensor_level(a, bound) for a in call.args)])
        if isinstance(func, ast.Name) and func.id in ("sum", "max", "min", "abs", "zip", "reversed", "sorted"):
            return max((self._tensor_level(a, bound) for a in call.args), default=0)
        if _builds_record(self.info, func, qualified):
            # `LossTuple(*losses)`, `Munch(real=loss_real)`, `dict(loss=loss)`: a record of what it is given
            return max([self._tensor_level(a.value if isinstance(a, ast.Starred) else a, bound) for a in call.args]
                       + [self._tensor_level(k.value, bound) for k in call.keywords], default=0)
        callee = self._callee(call)
        return TENSOR if callee is not None and callee[0].returns_tensor else 0

    def _buffer(self, expr: ast.Attribute) -> bool:
        """`self.step` or `self.decoder.r`: a buffer the class (or the project module class it builds in
        `self.decoder`) registers, on the GPU with the model."""
        if self.cls is None:
            return False
        owner = expr.value
        if isinstance(owner, ast.Name) and owner.id == "self":
            return expr.attr in _buffers(self.cls) or expr.attr in _moved_attributes(self.cls)
        if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self":
            held = self._self_attribute_class(owner.attr)
            return held is not None and expr.attr in _buffers(held)
        return False

    def _held_parameters(self, expr: ast.Attribute) -> bool:
        """`self.master_params`: a list of a module's parameters the class keeps (analysis/held_parameters.py)."""
        if self.cls is None or not (isinstance(expr.value, ast.Name) and expr.value.id == "self"):
            return False
        from gpulint.analysis.held_parameters import held_parameter_lists

        return expr.attr in held_parameter_lists(self.cls)

    def _self_attribute_class(self, attr: str) -> Optional[ClassSummary]:
        """The project class every `self.<attr> = Cls(...)` of the class builds, else None."""
        found: Optional[ClassSummary] = None
        for method in self.cls.methods.values():  # type: ignore[union-attr]
            for node in ast_walk.walk(method):
                if isinstance(node, ast.Assign) and any(
                        isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                        and t.value.id == "self" for t in node.targets):
                    dotted = _dotted(node.value.func) if isinstance(node.value, ast.Call) else None
                    cls = self.project.lookup(self.info.path, dotted) if dotted else None
                    if not isinstance(cls, ClassSummary) or found is not None and found is not cls:
                        return None
                    found = cls
        return found

    def _computed(self, test: ast.expr) -> bool:
        """`if nt:` with `nt = targets.shape[0]` earlier in the function: a value computed from the data, not an
        option (a parameter, `self.verbose`, `args.quiet`) whose value the call cannot show."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
        return isinstance(test, ast.Name) and test.id in self.computed

    def _through_parameters(self, expr: ast.expr) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.parameter_views for n in ast_walk.walk(expr))

    def _output_of(self, expr: ast.expr) -> Optional[str]:
        """The parameter whose returned value `expr` computes with: `net(img)` (or `net.forward(img)`) of a
        parameter's object (as given, or `net = net.cuda()`), or a name bound to such a value (`output_views`). A
        module handed in for that parameter runs there on every call, and its output is on the module's device."""
        for node in ast_walk.walk(expr):
            if isinstance(node, ast.Name) and node.id in self.output_views:
                return self.output_views[node.id]
            if not isinstance(node, ast.Call):
                continue
            func = node.func.value if isinstance(node.func, ast.Attribute) and node.func.attr == "forward" \
                else node.func
            if isinstance(func, ast.Name) and func.id in self.held:  # the parameter's object (`net = net.cuda()`)
                return self.held[func.id]
        return None

    def _output_sink(self, sink: Sink, arg: ast.expr, param: str) -> Sink:
        """The callee's read, as this function's: a plain read of the argument is a read of the output of the
        module handed in as `param` when the argument is that output (`predict(net(x))` ... `.cpu()` inside)."""
        return replace(sink, through="output") if not sink.through and self._output_of(arg) == param else sink

    def _classes_of(self, value: ast.expr) -> tuple:
        """The project classes `value` is an instance of: one for `Cls(...)` or a name bound to one, one per
        element of a tuple or of what a project function returns (`model, criterion = build(args)`)."""
        if isinstance(value, ast.Tuple):
            return tuple(self._classes_of(e)[0] if not isinstance(e, ast.Tuple) else None for e in value.elts) \
                if value.elts else ()
        if isinstance(value, ast.Name):
            return (self.classes.get(value.id),)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr in ("to", "cuda") and isinstance(value.func.value, ast.Call):
            return self._classes_of(value.func.value)  # `Darknet(cfg).to(device)`: the same instance, moved
        if isinstance(value, ast.Call):
            passed = self._passed(value)
            if passed is not None:  # `model = apply_gradient_allreduce(model)`: the same model
                whole, elements = passed
                if whole is not None:
                    return self._classes_of(whole) if not isinstance(whole, ast.Tuple) else (None,)
                return tuple(self._classes_of(e)[0] if e is not None and not isinstance(e, ast.Tuple) else None
                             for e in elements)
        if isinstance(value, ast.Call) and self._builds_own_class(value.func):
            return (self.cls,)  # `compute = cls(criterion, ...)` in a classmethod constructor (`from_opts`)
        if isinstance(value, ast.Call):
            dotted = _dotted(value.func)
            found = self.project.lookup(self.info.path, dotted) if dotted and not dotted.startswith("self.") \
                else None
            if isinstance(found, ClassSummary):
                return (found,)
            if isinstance(found, FunctionSummary) and found.returns_classes:
                return found.returns_classes
            picked = self._registry_pick(value.func)
            if picked:
                return picked
        return (None,)

    def _registry_pick(self, func: ast.expr) -> tuple:
        """What a build function picked from a project registry returns, per element: `func` is
        `R.get(name)`, or a name bound once to it (`build_func = MODULE_BUILD_FUNCS.get(args.modelname)`)."""
        from gpulint.analysis.named_classes import registry_returns  # it imports this module

        if isinstance(func, ast.Name):
            bound = self.values.get(func.id, ())
            if len(bound) != 1:
                return ()
            func = bound[0]
        return registry_returns(self.project, self.info.path, func, self.fn) if isinstance(func, ast.Call) else ()

    def _own_instance(self, value: ast.expr) -> bool:
        """`cls(...)`, or a name every plain assignment of which is one (`compute = cls(...)`)."""
        if isinstance(value, ast.Call):
            return self._builds_own_class(value.func)
        if isinstance(value, ast.Name):
            bound = self.values.get(value.id)
            return bool(bound) and all(isinstance(v, ast.Call) and self._builds_own_class(v.func) for v in bound)
        return False

    def _builds_own_class(self, func: ast.expr) -> bool:
        """`cls(...)` in a `@classmethod` of a project class (its first parameter, never rebound): an
        alternative constructor building the class it is called on (`Project.alternative_constructor` names
        the class at the call; here it is the defining class)."""
        if self.cls is None or not isinstance(func, ast.Name):
            return False
        positional = (*self.fn.args.posonlyargs, *self.fn.args.args)
        if not positional or positional[0].arg != func.id:
            return False
        if not any(isinstance(d, ast.Name) and d.id == "classmethod" for d in self.fn.decorator_list):
            return False
        return func.id not in self.values  # a first parameter rebound in the body is something else

    def _passed(self, call: ast.Call) -> Optional[tuple]:
        """What `call` hands back of its arguments (`passed_arguments`), project methods of `self` included."""
        library = library_passed(self.info.qualify(_dotted(call.func) or ""), call)
        if library is not None:
            return library
        callee = self._callee(call)
        if callee is None or isinstance(self.project.lookup(self.info.path, _dotted(call.func) or ""), ClassSummary):
            return None
        return summary_passed(callee[0], call, callee[1])

    def _held(self, value: ast.expr, depth: int = 0) -> Optional[str]:
        """The parameter whose object `value` is: the parameter, a name holding it, `model.cuda()`, `DDP(model)`,
        or a project function handing its argument back (`apply_gradient_allreduce(model)`)."""
        if depth > 4:
            return None
        if isinstance(value, ast.Name):
            return self.held.get(value.id)
        if isinstance(value, ast.Call):
            passed = self._passed(value)
            if passed is not None and passed[0] is not None:
                return self._held(passed[0], depth + 1)
        return None

    def _held_elements(self, value: ast.expr, target: ast.expr) -> list:
        """For each name `target` binds, the parameter whose object it gets (None where none)."""
        names = list(_target_names(target))
        if isinstance(target, ast.Name):
            return [self._held(value)]
        if not isinstance(target, ast.Tuple) or any(not isinstance(e, ast.Name) for e in target.elts):
            return [None] * len(names)
        if isinstance(value, ast.Tuple) and len(value.elts) == len(names):
            return [self._held(e) for e in value.elts]
        if isinstance(value, ast.Call):
            passed = self._passed(value)
            if passed is not None and passed[0] is None and len(passed[1]) == len(names):
                return [self._held(e) if e is not None else None for e in passed[1]]
        return [None] * len(names)

    def _passes_return(self, value: ast.expr) -> None:
        """Fold one `return` into `self.passes`: a parameter's name (every return hands it back), a tuple of
        names or None per element (every return a tuple of that length), or False (neither)."""
        if self.passes is False:
            return
        if isinstance(value, ast.Tuple):
            found: object = tuple(self._held(e) for e in value.elts)
        else:
            found = self._held(value)
            if found is None:
                self.passes = False
                return
        if self.passes is None:
            self.passes = found
        elif isinstance(found, tuple) and isinstance(self.passes, tuple) and len(found) == len(self.passes):
            self.passes = tuple(a if a == b else None for a, b in zip(found, self.passes))
        elif found != self.passes:
            self.passes = False

    def _passed_on_cuda(self, value: ast.expr) -> bool:
        """`model = apply_gradient_allreduce(model)` of a model moved to CUDA: still that model."""
        if not isinstance(value, ast.Call):
            return False
        passed = self._passed(value)
        whole = passed[0] if passed is not None else None
        return isinstance(whole, ast.Name) and whole.id in self.on_cuda

    def _maybe_tensor(self, operand: ast.expr) -> bool:
        # `len(x)` and literals are not tensors; anything else may be.
        return not isinstance(operand, ast.Constant)

    def _loader(self, value: ast.expr) -> Optional[LoaderFact]:
        if isinstance(value, ast.IfExp):
            # `DataLoader(testset, ...) if testset is not None else None`: the loader, where there is one
            sides = [side for side in (value.body, value.orelse) if not _is_none(side)]
            return self._loader(sides[0]) if len(sides) == 1 else None
        if not isinstance(value, ast.Call):
            return None
        qualified = self.info.qualify(_dotted(value.func) or "")
        if qualified in LOADER_CLASSES or qualified.endswith(".DataLoader"):
            pinned: Optional[bool] = False
            param = None
            stars = [kw for kw in value.keywords if kw.arg is None]
            for kw in value.keywords:
                if kw.arg is None:
                    # `**loader_params` of `loader_params = dict(..., pin_memory=True)` in this function, never
                    # updated; anything else cannot be told
                    pinned = self._options_pinning(value, kw.value) if len(stars) == 1 and pinned is not None \
                        else None
                elif kw.arg == "pin_memory":
                    pinned = True if isinstance(kw.value, ast.Constant) and kw.value.value is True else \
                        (False if isinstance(kw.value, ast.Constant) else None)
                    if pinned is None and setting_path(kw.value) is not None and \
                            config_default(self.project, setting_path(kw.value)) is True:
                        pinned = True  # `cfg.DATA_LOADER.PIN_MEMORY`, declared `True` (a setting off stays unknown)
                    if isinstance(kw.value, ast.Name) and self.taint.get(kw.value.id) == kw.value.id and \
                            kw.value.id in (*self.summary.params, *self.summary.keyword_only):
                        param = kw.value.id  # `pin_memory=pin_memory`, a parameter of this factory
            if param is not None and pinned is None and not any(kw.arg is None for kw in value.keywords):
                return LoaderFact(self.info.path, value.lineno, None, param, _bool_default(self.fn, param))
            flag = self._pinned_if(value)
            if flag is not None:  # `**({"pin_memory": True} if cuda else {})`, `cuda` a parameter of this factory
                return LoaderFact(self.info.path, value.lineno, None, flag, _bool_default(self.fn, flag))
            tested = next((self._pin_test(kw.value) for kw in value.keywords if kw.arg == "pin_memory"), None)
            if tested is not None and not any(kw.arg is None for kw in value.keywords):
                param, test = tested  # `pin_memory=(device != "cpu")`, `device` a parameter of this factory
                default = _default_of(self.fn, param)
                pin_default = pin_by_test(test, default.value) if isinstance(default, ast.Constant) and \
                    isinstance(default.value, str) else None
                return LoaderFact(self.info.path, value.lineno, None, param, pin_default, test)
            return LoaderFact(self.info.path, value.lineno, pinned)
        callee = self._callee(value)
        if callee is not None:
            made = callee[0].returns_loader
            if made is not None and made.pin_param is not None:
                return LoaderFact(made.path, made.line, None)  # decided by the inner factory's own argument
            return made
        return None

    def _options_pinning(self, loader: ast.Call, options: ast.expr) -> Optional[bool]:
        """What `**options` of this function's `DataLoader(...)` says of pinning (`_pinned_by_options`, with the
        assignments of the call's scope), False where the options leave `pin_memory` out; None when unknown."""
        if not isinstance(options, ast.Name) or any(kw.arg == "pin_memory" for kw in loader.keywords):
            return None
        name = _dotted(loader.func)
        for call, assigns in self.info.calls_named(name.rsplit(".", 1)[-1] if name else ""):
            if call is loader:
                return _pinned_by_options(self.info, options, assigns, False)
        return None

    def _pinned_if(self, loader: ast.Call) -> Optional[str]:
        """The parameter of this factory that turns pinning on, where the loader's only `**` options are
        `**({..., "pin_memory": True} if flag else {})` (or `dict(..., pin_memory=True)`) and no keyword names
        `pin_memory`: pinned exactly when the call's `flag` argument is true. Else None."""
        stars = [kw.value for kw in loader.keywords if kw.arg is None]
        if len(stars) != 1 or any(kw.arg == "pin_memory" for kw in loader.keywords):
            return None
        test = stars[0]
        if not isinstance(test, ast.IfExp) or not isinstance(test.test, ast.Name):
            return None
        flag = test.test.id
        if self.taint.get(flag) != flag or flag not in (*self.summary.params, *self.summary.keyword_only):
            return None

        def pins(options: ast.expr) -> Optional[bool]:
            if isinstance(options, ast.Dict) and all(isinstance(k, ast.Constant) for k in options.keys):
                pairs = [(k.value, v) for k, v in zip(options.keys, options.values)]  # type: ignore[union-attr]
            elif isinstance(options, ast.Call) and isinstance(options.func, ast.Name) and \
                    options.func.id == "dict" and not options.args and all(kw.arg for kw in options.keywords):
                pairs = [(kw.arg, kw.value) for kw in options.keywords]
            else:
                return None
            for key, item in pairs:
                if key == "pin_memory":
                    return item.value if isinstance(item, ast.Constant) and isinstance(item.value, bool) else None
            return False

        return flag if pins(test.body) is True and pins(test.orelse) is False else None

    def _pin_test(self, value: ast.expr) -> Optional[tuple[str, tuple[str, str]]]:
        """(parameter, ("!=" or "==", string)) for `pin_memory=(device != "cpu")` with `device` a parameter of this
        factory (either side of the comparison), else None."""
        if not isinstance(value, ast.Compare) or len(value.ops) != 1 or \
                not isinstance(value.ops[0], (ast.NotEq, ast.Eq)):
            return None
        sides = (value.left, value.comparators[0])
        name = next((s for s in sides if isinstance(s, ast.Name)), None)
        text = next((s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)), None)
        if name is None or text is None or self.taint.get(name.id) != name.id or \
                name.id not in (*self.summary.params, *self.summary.keyword_only):
            return None
        return name.id, ("!=" if isinstance(value.ops[0], ast.NotEq) else "==", text.value)

    def _callee(self, call: ast.Call) -> Optional[tuple[FunctionSummary, bool]]:
        """The project function a call reaches, and whether it is called through an instance (bound)."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
                and self.cls is not None:
            method = self.project.method(self.cls, func.attr)
            if method is None:
                return self._stored_function(func.attr)
            # an abstract method: its project subclasses' overrides (analysis/candidate_methods.py)
            from gpulint.analysis.candidate_methods import dispatched_method
            own = self.cls.methods.get(func.attr)
            static = isinstance(own, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in own.decorator_list)
            # `self.reshape(x, 2)` of a `@staticmethod`: no `self` is bound, the arguments are its parameters
            return dispatched_method(self.project, self.cls, func.attr, method) or method, not static
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and self.cls is not None \
                and isinstance(func.value.value, ast.Name) and func.value.value.id == "self":
            # `self._impl.update(...)` of an attribute the class declares with project classes
            from gpulint.analysis.candidate_methods import declared_method
            declared = declared_method(self.project, self.cls, func.value.attr, func.attr)
            if declared is not None:
                return declared, True
            if not func.attr.startswith("__"):
                # `self.vocab.label_to_string(t)` of a constructor parameter the class keeps: the classes its
                # constructions pass (analysis/held_objects.py)
                from gpulint.analysis.held_objects import held_method
                held = held_method(self.project, self.cls, func.value.attr, func.attr)
                if held is not None:
                    return held, True
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and self.cls is not None and \
                isinstance(func.value.func, ast.Name) and func.value.func.id == "super" and not func.value.args:
            method = self.project.base_method(self.cls, func.attr)  # `super().training_losses(...)`
            return (method, True) if method is not None else None
        dotted = _dotted(func)
        if dotted is None:
            return None
        found = self.project.lookup(self.info.path, dotted)
        if isinstance(found, FunctionSummary):
            return found, False
        if isinstance(found, ClassSummary):
            init = self.project.method(found, "__init__")
            return (init, True) if init is not None else None
        return None

    def _stored_function(self, attr: str) -> Optional[tuple[FunctionSummary, bool]]:
        """`self.neg_loss(out, target)` where the class's one assignment of the attribute stores a project
        function (`self.neg_loss = _neg_loss` in `__init__`: that function, called unbound) or builds a project
        class (`self.crit = FocalLoss()`: its `__call__`, or an `nn.Module`'s `forward`)."""
        assert self.cls is not None
        values = [node.value for node in _self_stores(self.cls).get(attr, ())
                  if not isinstance(node, ast.AugAssign) and node.value is not None]
        value = values[0] if len(values) == 1 else None
        built = isinstance(value, ast.Call)
        dotted = _dotted(value.func if built else value) if value is not None else None  # type: ignore[union-attr]
        if dotted is None or dotted.startswith("self."):
            return None
        if isinstance(value, ast.Name) and self.project.lookup(self.cls.path, dotted) is None:
            # `self.criterion = criterion` in `__init__`: the instances its constructions pass
            # (analysis/held_objects.py)
            from gpulint.analysis.held_objects import held_call
            held = held_call(self.project, self.cls, attr)
            return (held, True) if held is not None else None
        found = self.project.lookup(self.cls.path, dotted)
        if built and isinstance(found, ClassSummary):
            method = self.project.method(found, "__call__")
            if method is None and self.project.is_module_class(found):
                method = self.project.method(found, "forward")
            return (method, True) if method is not None else None
        return (found, False) if not built and isinstance(found, FunctionSummary) else None

    def _tainted_by(self, expr: ast.expr) -> Optional[str]:
        """The parameter whose value flows into `expr` (through names, attributes, arithmetic, calls); not through
        host metadata of a tensor (`x.shape`, `x.size()`, `len(x)`, `x.device`), which reading costs nothing."""
        pending = [expr]
        while pending:
            node = pending.pop()
            if isinstance(node, ast.Name) and node.id in self.taint:
                return self.taint[node.id]
            if _metadata(node):
                continue
            pending.extend(reversed(list(ast_walk.iter_child_nodes(node))))
        return None


TENSOR, DEVICE_TENSOR = 1, 2
# Module methods that hand back the module itself (`net = net.cuda()`), and `torch.nn` classes that are no module.
_MODULE_SELF_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "bfloat16", "double",
                                  "requires_grad_", "to_empty"})
_NOT_MODULES = frozenset({"Parameter", "ParameterList", "ParameterDict", "UninitializedParameter",
                          "UninitializedBuffer", "Buffer"})


def _ast_sizes(call: ast.Call, count: Optional[int]) -> list:
    """The size arguments of a call of a `SIZE_FUNCTIONS` factory (or `range`): the leading `count` positional
    ones (all when None), each element of a tuple or list given there (`torch.zeros((n, d))`)."""
    found = []
    for arg in call.args[:count] if count is not None else call.args:
        if isinstance(arg, ast.Starred):
            break
        found.extend(arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else (arg,))
    found.extend(kw.value for kw in call.keywords if kw.arg in ("start", "end", "step", "size", "n"))
    return found


def _host_copy(value: ast.expr) -> bool:
    """`loss.detach().cpu()`, `x.cpu().float()`, `t.numpy()`, `t.tolist()`, `t.item()`, `t.to("cpu")`: a value
    in host memory, whatever the tensor it was read from."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        method = value.func.attr
        if method in ("cpu", "numpy", "tolist", "item"):
            return True
        if method == "to":
            first = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "device"),
                                                          None)
            return isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                first.value.split(":")[0] == "cpu"
        if method not in ("detach", "float", "double", "long", "int", "clone", "contiguous", "squeeze", "view",
                          "reshape", "flatten"):
            return False
        value = value.func.value
    return False

# Reductions and element-wise tests whose result is a tensor holding values of the data: branching on one reads it.
# Torch predicates an `if` may test as they are (a 0-dim boolean tensor: `if not torch.isfinite(loss):`).
_TESTED_PREDICATES = frozenset(("torch.isfinite", "torch.isnan", "torch.isinf", "torch.any", "torch.all"))
_VALUE_REDUCTIONS = frozenset(("any", "all", "min", "max", "sum", "mean", "norm", "amax", "amin"))
# Tensor methods whose result holds values computed element by element from the receiver's (a reduction of it
# reads the receiver's data): comparisons, casts, detaching.
# Tensor methods that keep a boolean mask a mask (given no dtype), and comparisons written as methods
_MASK_KEEPING_METHODS = frozenset(("to", "cuda", "squeeze", "unsqueeze", "flatten", "view", "reshape", "repeat",
                                   "expand", "contiguous", "clone", "detach", "t", "permute", "transpose", "view_as",
                                   "reshape_as", "expand_as", "triu", "tril", "flip", "roll"))
_COMPARING_METHODS = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "bool"))
_ELEMENTWISE_METHODS = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "float", "double", "half", "long", "int",
                                  "bool", "detach", "abs", "isnan", "isinf", "isfinite", "logical_not"))
_VALUE_FUNCTIONS = frozenset(("min", "max", "sum", "mean", "any", "all", "norm", "amax", "amin", "isnan", "isinf",
                              "isfinite", "sigmoid", "abs", "equal", "allclose", "count_nonzero"))


# Torch calls that build a new tensor in pageable host memory from host data (a batch assembled on the host).
_HOST_BATCH_BUILDERS = frozenset(("torch.stack", "torch.cat", "torch.tensor", "torch.as_tensor", "torch.from_numpy",
                                  "torch.LongTensor", "torch.FloatTensor"))
# Tensor methods whose result stays where the tensor is (not `.to`, `.cuda`, `.pin_memory`).
_STAYS_ON_HOST = frozenset(("view", "reshape", "long", "float", "int", "double", "half", "contiguous", "clone",
                            "unsqueeze", "squeeze", "flatten", "t", "permute", "transpose", "type"))


# Classes whose instances hold what they are given under names: a dict, an attribute dict, a namespace.
_RECORD_CLASSES = frozenset({"dict", "collections.OrderedDict", "munch.Munch", "munch.DefaultMunch",
                             "easydict.EasyDict", "addict.Dict", "types.SimpleNamespace", "argparse.Namespace"})
_RECORD_NAMES = frozenset({"Munch", "EasyDict", "edict", "AttrDict", "OrderedDict", "SimpleNamespace"})


def _bare_numpy(expr: ast.expr) -> bool:
    """`t.numpy()` (or `t.detach().numpy()`) with no `.cpu()` or `.to(...)` before it: valid on host tensors only."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "numpy"):
        return False
    receiver = expr.func.value
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        if receiver.func.attr in ("cpu", "to"):
            return False
        receiver = receiver.func.value
    return True


def _record_types(tree: ast.Module) -> frozenset:
    """The module's top-level record types: `LossTuple = namedtuple("LossTuple", [...])` (or
    `typing.NamedTuple(...)`) and `class Losses(NamedTuple):`: calling one holds its arguments as fields."""
    found = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
                (_dotted(stmt.value.func) or "").rsplit(".", 1)[-1] in ("namedtuple", "NamedTuple"):
            found.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.ClassDef) and any((_dotted(b) or "").rsplit(".", 1)[-1] == "NamedTuple"
                                                    for b in stmt.bases):
            found.add(stmt.name)
    return frozenset(found)


def _builds_record(info, func: ast.expr, qualified: str) -> bool:
    """`func(...)` builds a record of its arguments: a dict, a `Munch`/`EasyDict`, or a named tuple type of
    the module (`_record_types`)."""
    if qualified in _RECORD_CLASSES or isinstance(func, ast.Name) and func.id in _RECORD_NAMES:
        return True
    return isinstance(func, ast.Name) and func.id in _record_type_names(info)


_RECORD_LINE = re.compile(r"^(?:(\w+)\s*=\s*(?:\w+\.)?(?:namedtuple|NamedTuple)\(|class\s+(\w+)\s*\([^)]*NamedTuple)",
                          re.MULTILINE)


def _record_type_names(info) -> frozenset:
    """`_record_types` of a module, kept on its info: read from the text of a big module (`LazyModuleInfo`, whose
    whole tree is parsed only on demand), from the top-level statements of any other."""
    found = getattr(info, "_record_names", None)
    if found is None:
        text = getattr(info, "_text", None)
        if isinstance(text, str):
            found = frozenset(a or b for a, b in _RECORD_LINE.findall(text))
        else:
            found = _record_types(info.tree)
        info._record_names = found
    return found


def _makes_tensor(qualified: str) -> bool:
    """A torch function that returns a tensor (`torch.stack`, `torch.nn.utils.clip_grad_norm_`), not a module,
    an optimizer or a number."""
    if not qualified.startswith("torch.") or qualified in _TORCH_NON_TENSOR or qualified in _TORCH_NUMBER:
        return False
    if qualified.startswith(_TORCH_NON_TENSOR_PREFIXES) or qualified.startswith("torch.optim."):
        return False
    return not qualified.rsplit(".", 1)[-1][:1].isupper()


_OPTIONAL = ("Optional", "typing.Optional")
_CONTAINERS = ("List", "list", "Sequence", "Iterable", "Iterator", "Tuple", "tuple", "Set", "set",
               "MutableSequence", "Collection", "Deque", "deque")


def annotation_class(project: "Project", path: Path, annotation: Optional[ast.expr],
                     element: bool = False, _depth: int = 0) -> Optional[ClassSummary]:
    """The project class an annotation (on `ast`) names: `Optimizer`, `"Optimizer"`, `Optional[Optimizer]`;
    with `element`, the class of the elements of a container annotation (`List[Evaluator]`,
    `Sequence["Evaluator"]`, `Tuple[Evaluator, ...]`). None for anything else, a library class included."""
    for _ in range(6):
        if annotation is None:
            return None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value.strip(), mode="eval").body
            except SyntaxError:
                return None
            continue
        if isinstance(annotation, ast.Subscript):
            head = (_dotted(annotation.value) or "").rpartition("typing.")[2]
            inner = annotation.slice
            if head in _OPTIONAL:
                annotation = inner
                continue
            if element and head in _CONTAINERS:
                if isinstance(inner, ast.Tuple):  # `Tuple[Evaluator, ...]`: one class, any length
                    if not (len(inner.elts) == 2 and isinstance(inner.elts[1], ast.Constant)
                            and inner.elts[1].value is Ellipsis):
                        return None
                    inner = inner.elts[0]
                annotation, element = inner, False
                continue
            return None
        break
    if element:
        return None
    dotted = _dotted(annotation) if isinstance(annotation, (ast.Name, ast.Attribute)) else None
    found = project.lookup(path, dotted) if dotted else None
    if found is None and dotted and "." not in dotted and _depth < 3:
        bound = _type_var_bound(project, path, dotted)  # `Optional[TImpl]`: the TypeVar's bound class
        if bound is not None:
            return annotation_class(project, bound[0], bound[1], _depth=_depth + 1)
    return found if isinstance(found, ClassSummary) else None


def _type_var_bound(project: "Project", path: Path, name: str) -> Optional[tuple[Path, ast.expr]]:
    """The `bound=` of the module-level `name = TypeVar(..., bound=X)` that `name` means in `path` (defined
    there or imported by `from m import name`), with the module it is written in; None otherwise."""
    info = project.module(path)
    if info is None:
        return None
    bound = getattr(info, "type_vars", {}).get(name)
    if bound is not None:
        return info.path, bound
    imported = info.imports.get(name)
    if imported is None or imported[1] is None:
        return None
    target = project.resolver.resolve(imported[0], info.path, imported[2]) if imported[0] or imported[2] else None
    other = project.module(target) if target is not None and target != info.path else None
    bound = getattr(other, "type_vars", {}).get(imported[1]) if other is not None else None
    return (other.path, bound) if bound is not None else None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_dtype(node: ast.expr) -> bool:
    dotted = _dotted(node) or ""
    return dotted.startswith("torch.") and any(w in dotted for w in ("float", "int", "half", "bool", "double"))


def _iterates_parameters(iterable: ast.expr) -> bool:
    """`model.parameters()`, `model.named_parameters()`, `m.buffers()`: the tensors a module holds."""
    for node in ast_walk.walk(iterable):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "parameters", "named_parameters", "buffers", "named_buffers"):
            return True
    return False


# `torch.nn.Module` and library base classes that are modules (calling an instance of a subclass runs its
# `forward`): PyTorch Geometric's message-passing layers.
def _self_stores(cls: ClassSummary) -> dict:
    """Attribute -> the assignments (`Assign`, `AnnAssign`, `AugAssign` nodes) of `self.<attribute>` in `cls`'s
    methods, in walk order (methods in order, each walked as `ast_walk.walk` does), from one walk of the class
    kept on the summary: `_stored_function` and `_moved_attributes` read it (each walked the class before)."""
    if cls.self_stores is None:
        stores: dict = {}
        for fn in cls.methods.values():
            for node in ast_walk.walk(fn):
                if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    continue
                seen: set = set()
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" \
                            and t.attr not in seen:
                        seen.add(t.attr)
                        stores.setdefault(t.attr, []).append(node)
        cls.self_stores = stores
    return cls.self_stores


_LIBRARY_MODULES = frozenset({
    "torch.nn.Module", "torch.nn.modules.module.Module", "torch_geometric.nn.MessagePassing",
    "torch_geometric.nn.conv.MessagePassing", "torch_geometric.nn.conv.message_passing.MessagePassing"})
# Calls that hand back (a wrapper running) the module they are given as first argument.
MODEL_WRAPPERS = frozenset({
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.compile",
    "torch.distributed.fsdp.FullyShardedDataParallel", "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    "torch.nn.parallel.DistributedDataParallelCPU"})
# The library functions of `libraries.HANDS_BACK`: one set lookup before the table is asked.
HANDS_BACK_FUNCTIONS = frozenset(entry.target for entry in HANDS_BACK)
# `nn.Module` methods that return the module itself.
MODULE_SELF_METHODS = frozenset({"to", "cuda", "train", "eval", "half", "float", "bfloat16", "double",
                                 "requires_grad_"})


def library_passed(qualified: str, call: ast.Call) -> Optional[tuple]:
    """What a known library call hands back of its arguments, as `Project.passed_arguments`: a model wrapper
    its model; apex's `amp.initialize(model, optimizer, ...)` the pair `(model, optimizer)`, or the model alone
    when no optimizer is passed (apex documents: "If optimizers args were passed, returns (models,
    optimizers)"); `module.to(...)`/`.cuda()`/`.train()` the module."""
    if qualified in MODEL_WRAPPERS:
        first = _argument(call, 0, "module")
        return (first, ()) if isinstance(first, ast.expr) else None
    if qualified in ("apex.amp.initialize", "amp.initialize"):  # `from apex import amp` inside a function
        model, optimizer = _argument(call, 0, "models"), _argument(call, 1, "optimizers")
        if not isinstance(model, ast.expr) or optimizer is _UNKNOWN:
            return None
        return (model, ()) if optimizer is None else (None, (model, optimizer))
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in MODULE_SELF_METHODS and \
            not (isinstance(func.value, ast.Name) and func.value.id == "self"):
        return func.value, ()  # `model.cuda()`, `Net().cuda()`
    return _hands_back_passed(qualified, call) if qualified in HANDS_BACK_FUNCTIONS else None


def _hands_back_passed(qualified: str, call: ast.Call) -> Optional[tuple]:
    """`engine, optimizer, _, _ = deepspeed.initialize(model=net, ...)`: per element of what a library function of
    the table (`libraries.HANDS_BACK`) returns, the argument it wraps, as `library_passed`."""
    def passed(spec: Optional[tuple]) -> Optional[ast.expr]:
        found = _argument(call, spec[0], spec[1]) if spec is not None else None
        return found if isinstance(found, ast.expr) else None

    elements = tuple(passed(spec) for spec in hands_back_elements(qualified))
    return (None, elements) if any(e is not None for e in elements) else None


def summary_passed(summary: FunctionSummary, call: ast.Call, bound: bool) -> Optional[tuple]:
    """The arguments of `call` that the function of `summary` hands back (`returns_param`,
    `returns_param_elements`), as `Project.passed_arguments`."""
    params = summary.params[1:] if bound and summary.params else summary.params

    def passed(name: Optional[str]):
        if name is None:
            return None
        found = _argument(call, params.index(name) if name in params else None, name)
        return found if isinstance(found, ast.expr) else None

    if summary.returns_param is not None:
        whole = passed(summary.returns_param)
        return (whole, ()) if whole is not None else None
    if summary.returns_param_elements:
        elements = tuple(passed(name) for name in summary.returns_param_elements)
        return (None, elements) if any(e is not None for e in elements) else None
    return None


def _argument(call: ast.Call, position: Optional[int], keyword: str):
    """The expression a call passes for a parameter; None when it is left out, _UNKNOWN when `*args` or
    `**kwargs` may hold it."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if position is not None:
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                return _UNKNOWN
            if index == position:
                return arg
    if any(kw.arg is None and not _options(kw.value) for kw in call.keywords):
        return _UNKNOWN
    return None


def _options(value: ast.expr) -> bool:
    """`run(**vars(opt))`: the values of parsed command-line options, never instances of project classes."""
    return isinstance(value, ast.Call) and _dotted(value.func) == "vars"


def _scopes(tree: ast.Module) -> Iterator[tuple[list[ast.Call], dict]]:
    """For the module and each function in it: the calls made in that scope and the names it assigns
    (name -> [(value, element index or None)])."""
    pending: list[ast.AST] = [tree]
    while pending:
        scope = pending.pop()
        calls: list[ast.Call] = []
        assigns: dict[str, list] = {}
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # `def train_loop(trainer: Trainer, ...)`: the parameter holds what its annotation builds
            for arg in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs):
                dotted = _dotted(arg.annotation) if arg.annotation is not None else None
                if dotted is not None:
                    built = ast.Call(func=arg.annotation, args=[], keywords=[])
                    built.lineno = arg.lineno
                    built.annotation_only = True  # type: ignore[attr-defined]
                    assigns.setdefault(arg.arg, []).append((built, None))
        stack = list(ast_walk.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                pending.append(node)
                continue
            if isinstance(node, ast.Call):
                calls.append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(target, ast.Name):
                        assigns.setdefault(target.id, []).append((node.value, None))
                    elif isinstance(target, ast.Tuple):
                        for index, element in enumerate(target.elts):
                            if isinstance(element, ast.Name):
                                assigns.setdefault(element.id, []).append((node.value, index))
            stack.extend(ast_walk.iter_child_nodes(node))
        yield calls, assigns


def _is_property(fn: ast.FunctionDef) -> bool:
    """`@property` (not `functools.cached_property`, computed once)."""
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def _accessor(fn: ast.FunctionDef) -> bool:
    """`@r.setter` / `@r.deleter`."""
    return any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in fn.decorator_list)


def _buffers(cls: ClassSummary) -> frozenset:
    """The names a module class registers as buffers (`self.register_buffer("step", torch.zeros(1))`) or
    parameters (`self.step = nn.Parameter(...)`): tensors that move with the module, so on the GPU of a model
    moved there."""
    if cls.buffers is not None:
        return cls.buffers
    names = set()
    for method in cls.methods.values():
        for node in ast_walk.walk(method):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "register_buffer" and isinstance(node.func.value, ast.Name) and \
                    node.func.value.id == "self" and node.args and isinstance(node.args[0], ast.Constant) and \
                    isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    (_dotted(node.value.func) or "").rsplit(".", 1)[-1] == "Parameter":
                names.update(t.attr for t in node.targets if isinstance(t, ast.Attribute) and
                             isinstance(t.value, ast.Name) and t.value.id == "self")  # `self.step = nn.Parameter(..)`
    cls.buffers = frozenset(names)
    return cls.buffers


def _moved_attributes(cls: ClassSummary) -> frozenset:
    """Attributes every assignment of which, in the class's methods, copies a value to a device
    (`self.lq = data['lq'].to(self.device)`, `self.x = x.cuda()`): device tensors wherever a method reads them."""
    if cls.moved is not None:
        return cls.moved
    moved: set = set()
    other: set = set()
    for attr, nodes in _self_stores(cls).items():
        for node in nodes:
            value = node.value
            copies = isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and (
                value.func.attr == "cuda" or value.func.attr == "to" and bool(value.args) and
                not _is_cpu(value.args[0]) and not _is_dtype(value.args[0]))
            (moved if copies and not isinstance(node, ast.AugAssign) else other).add(attr)
    cls.moved = frozenset(moved - other)
    return cls.moved


def pin_by_test(test: tuple[str, str], value: str) -> bool:
    """`pin_memory=(device != "cpu")` (`LoaderFact.pin_test`) evaluated for a device string."""
    op, text = test
    return (value != text) if op == "!=" else (value == text)


def _default_of(fn: ast.AST, name: str) -> Optional[ast.expr]:
    """The default value of parameter `name` of `fn`, or None where it has none."""
    args = fn.args  # type: ignore[attr-defined]
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if name in positional:
        index = positional.index(name) - (len(positional) - len(args.defaults))
        return args.defaults[index] if index >= 0 else None
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if arg.arg == name:
            return default
    return None


def _ast_call_runs(call: ast.Call, summary: FunctionSummary, bound: bool, sink: Sink,
                   fn: Optional[ast.AST] = None) -> bool:
    """Whether a read the callee makes only for some values of a parameter (`Sink.when`) runs at `call`, as far
    as the call's arguments show (`compute_top_k(x, y, reduction="none")` skips `if reduction == "mean":`).
    A parameter of the calling function `fn` passed on for a parameter tested against None may be None itself
    (`scatter_sum(src, index, dim, out, dim_size)` inside `def scatter_mean(..., dim_size=None)`)."""
    if not sink.when:
        return True
    name = sink.when[0]

    def value(arg: ast.expr) -> object:
        if isinstance(arg, ast.Constant):
            return arg.value
        if sink.when[1] == (None,) and isinstance(arg, ast.Name) and fn is not None and _may_be_none(fn, arg.id):
            return None
        return _UNKNOWN

    for kw in call.keywords:
        if kw.arg is None:
            return True  # `f(**options)`: cannot tell
        if kw.arg == name:
            return sink.runs_with(value(kw.value), True)
    params = summary.params[1:] if bound and summary.params else summary.params
    if name in params:
        position = params.index(name)
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                return True
            if index == position:
                return sink.runs_with(value(arg), True)
    return sink.runs_with(_UNKNOWN, False)


def _may_be_none(fn: ast.AST, name: str) -> bool:
    """`name` is a parameter of `fn` that may hold None: its default is None, or it has no annotation saying
    otherwise (`indices_tuple` handed down from a `forward(..., indices_tuple=None)`); not `num_graphs: int`."""
    args = fn.args  # type: ignore[attr-defined]
    param = next((a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg == name), None)
    if param is None:
        return False
    default = _default_of(fn, name)
    if isinstance(default, ast.Constant) and default.value is None:
        return True
    return param.annotation is None or _optional_annotation(ast.unparse(param.annotation))


def _optional_annotation(text: str) -> bool:
    return "Optional" in text or "None" in text or "Any" in text


def _periodic(test: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast_walk.walk(test))


def _functions_by_name(tree: ast.Module) -> dict:
    """Every function and method of a module by name (ModuleInfo.indexed)."""
    found: dict = {}
    for node in ast_walk.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(node.name, []).append(node)
    return found


def _periodic_predicates(info) -> frozenset:
    """The names of the functions and methods `info`'s module defines once that return True only under a modulo
    test (`_true_only_under_modulo`), found once per module and kept as names only: a big module
    (lazy_module.py) keeps no index of its tree, and asking `indexed` per `if` parsed it again each time."""
    names = getattr(info, "_periodic_predicate_names", None)
    if names is None:
        # a big module: its functions' nodes are read once here, not kept among its few cached indexes
        by_name = _functions_by_name(info.tree) if hasattr(info, "class_node") else info.indexed(_functions_by_name)
        names = frozenset(name for name, defs in by_name.items() if len(defs) == 1 and _true_only_under_modulo(defs[0]))
        info._periodic_predicate_names = names
    return names


def _true_only_under_modulo(fn: ast.FunctionDef) -> bool:
    """`fn` returns only the literals True and False, and each `return True` is in the body of an `if` whose
    test holds a modulo (`def check_frequency(self, idx): if idx % self.batch_freq == 0 ...: return True`;
    `LoopAnalysis._true_only_periodically` is the fuller test on LibCST trees)."""
    trues = 0

    def visit(body: list, periodic: bool) -> bool:
        nonlocal trues
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(stmt, ast.Return):
                if not (isinstance(stmt.value, ast.Constant) and stmt.value.value in (True, False)
                        and type(stmt.value.value) is bool):
                    return False
                if stmt.value.value is True:
                    if not periodic:
                        return False
                    trues += 1
                continue
            if isinstance(stmt, ast.If):
                if not visit(stmt.body, periodic or _periodic(stmt.test)) or not visit(stmt.orelse, periodic):
                    return False
                continue
            blocks = [getattr(stmt, f, None) for f in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(stmt, "handlers", ())]
            if not all(visit(b, periodic) for b in blocks if isinstance(b, list)):
                return False
        return True

    return visit(fn.body, False) and trues > 0


def _flag(test: ast.expr) -> bool:
    """A bare option test: `if verbose:`, `if self.autobalance:`, `if not args.quiet:`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return isinstance(test, (ast.Name, ast.Attribute))


def _metadata(node: ast.AST) -> bool:
    """`x.shape`, `x.dtype`, `x.device`, `x.size()`, `x.dim()`, `len(x)`: known on the host without a sync."""
    if isinstance(node, ast.Attribute):
        return node.attr in TENSOR_ATTRS_OTHER or node.attr == "device"
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr in ("size", "dim", "ndimension", "numel", "nelement", "element_size", "stride",
                                 "is_contiguous", "get_device")
        return isinstance(func, ast.Name) and func.id in ("len", "isinstance", "type", "id")
    return False


_OTHER_BACKENDS = {"mps", "cpu", "xla", "tpu", "neuron", "xpu", "npu", "hpu", "mlu", "musa", "meta"}


def _off_gpu(test: ast.expr) -> bool:
    """`if mps:`, `if device.type == "cpu":`: a branch for another backend, not taken on a CUDA run."""
    if any(isinstance(n, ast.Compare) and any(isinstance(op, (ast.NotEq, ast.IsNot, ast.NotIn)) for op in n.ops)
           for n in ast_walk.walk(test)):
        return False  # `if x.device.type != "cpu":` is the GPU branch
    words = set(re.findall(r"[a-z]+", ast.unparse(test).lower()))
    return bool(words & _OTHER_BACKENDS) and "not" not in words


def _gpu_guard(test: ast.expr) -> bool:
    """`if self.cuda:`, `if torch.cuda.is_available():`, `if x.device.type == "cuda":` hold on a GPU."""
    text = ast.unparse(test).lower()
    return any(word in text for word in _GPU_GUARDS) and "not " not in text and "cpu" not in text


def _is_cpu(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == "cpu"
    if isinstance(node, ast.Call) and _dotted(node.func) in ("torch.device", "device") and node.args:
        return _is_cpu(node.args[0])
    return False


def _non_blocking(call: ast.Call) -> bool:
    return any(kw.arg is not None and legacy_syntax.is_non_blocking(kw.arg) and
               not (isinstance(kw.value, ast.Constant) and not kw.value.value) for kw in call.keywords)


def _sys_path_entries(body: list) -> tuple:
    """The folders a module's top-level code puts on `sys.path` (`sys.path.append('core')`,
    `sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))`), also under a top-level `if`, `try` or
    `with`: `("file", rel)` relative to the module's folder, `("cwd", rel)` relative to the working directory.
    Only what can be read without running anything; an absolute path or an unknown value is left out."""
    names: dict[str, ast.expr] = {}
    found: list[tuple[str, str]] = []
    adders = _path_adders(body)  # `def add_path(path): sys.path.insert(0, path)`: its one parameter

    def walk(statements: list) -> None:
        for stmt in statements:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                names[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                dotted = _dotted(call.func)
                arg = call.args[0] if dotted == "sys.path.append" and len(call.args) == 1 else \
                    call.args[1] if dotted == "sys.path.insert" and len(call.args) == 2 else \
                    call.args[0] if dotted in adders and len(call.args) == 1 else None
                entry = _path_value(arg, names, 0) if arg is not None else None
                if entry is not None and entry[1] != "@":
                    found.append(entry)
            elif isinstance(stmt, ast.If):
                walk(stmt.body)
                walk(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                walk(stmt.body)
            elif isinstance(stmt, ast.With):
                walk(stmt.body)

    walk(body)
    return tuple(found)


def _path_adders(body: list) -> frozenset:
    """Top-level functions of one parameter that put it on `sys.path` (`sys.path.insert(0, path)` or
    `append(path)`, also under `if path not in sys.path:`)."""
    found = set()
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef) and len(stmt.args.args) == 1:
            param = stmt.args.args[0].arg
            for node in ast_walk.walk(stmt):
                if isinstance(node, ast.Call) and node.args and isinstance(node.args[-1], ast.Name) and \
                        node.args[-1].id == param and (
                        _dotted(node.func) == "sys.path.append" and len(node.args) == 1 or
                        _dotted(node.func) == "sys.path.insert" and len(node.args) == 2):
                    found.add(stmt.name)
    return frozenset(found)


_SAME_PATH = {"abspath", "realpath", "normpath", "str", "Path", "PurePath", "resolve", "absolute", "fspath"}


def _path_value(e: Optional[ast.expr], names: dict, depth: int) -> Optional[tuple[str, str]]:
    """`(anchor, rel)` for a path expression of `_sys_path_entries`; rel "@" is the module file itself."""
    if e is None or depth > 8:
        return None
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return None if os.path.isabs(e.value) or not e.value.strip() and e.value != "" else ("cwd", e.value or ".")
    if isinstance(e, ast.Name):
        if e.id == "__file__":
            return ("file", "@")
        return _path_value(names.get(e.id), names, depth + 1) if e.id in names else None
    if isinstance(e, ast.Subscript) and _dotted(e.value) == "sys.path" and \
            isinstance(e.slice, ast.Constant) and e.slice.value == 0:
        return ("file", ".")  # the running script's folder
    if isinstance(e, ast.Attribute) and e.attr == "parent":
        return _parent(_path_value(e.value, names, depth + 1))
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and e.value.attr == "parents" and \
            isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, int):
        found = _path_value(e.value.value, names, depth + 1)
        for _ in range(e.slice.value + 1):
            found = _parent(found)
        return found
    if isinstance(e, ast.BinOp) and isinstance(e.right, ast.Constant) and isinstance(e.right.value, str):
        base = _path_value(e.left, names, depth + 1)
        if base is None or base[1] == "@":
            return None
        if isinstance(e.op, ast.Add):  # `dirname(__file__) + '/../'`
            return (base[0], os.path.normpath(base[1] + e.right.value)) if e.right.value.startswith("/") else None
        if isinstance(e.op, ast.Div):  # `Path(__file__).parent / "lib"`
            return (base[0], os.path.normpath(os.path.join(base[1], e.right.value)))
        return None
    if not isinstance(e, ast.Call):
        return None
    dotted = _dotted(e.func) or (e.func.attr if isinstance(e.func, ast.Attribute) else "")
    last = dotted.rsplit(".", 1)[-1]
    if dotted in ("os.getcwd", "getcwd"):
        return ("cwd", ".")
    if last in _SAME_PATH and isinstance(e.func, ast.Attribute) and not e.args and \
            last in ("resolve", "absolute"):
        return _path_value(e.func.value, names, depth + 1)
    if not e.args or e.keywords:
        return None
    if last == "dirname" and len(e.args) == 1:
        return _parent(_path_value(e.args[0], names, depth + 1))
    if last in _SAME_PATH and len(e.args) == 1:
        return _path_value(e.args[0], names, depth + 1)
    if last == "join" and (dotted.endswith("path.join") or dotted in ("join", "osp.join")):  # `import os.path as osp`
        base = _path_value(e.args[0], names, depth + 1)
        rest = e.args[1:]
        if base is None or base[1] == "@" or not all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) and not os.path.isabs(a.value) for a in rest):
            return None
        return (base[0], os.path.normpath(os.path.join(base[1], *(a.value for a in rest))))  # type: ignore
    return None


def _parent(found: Optional[tuple[str, str]]) -> Optional[tuple[str, str]]:
    if found is None:
        return None
    anchor, rel = found
    return (anchor, ".") if rel == "@" else (anchor, os.path.normpath(os.path.join(rel, "..")))


def _dotted(node: ast.expr) -> Optional[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _branch_aliases(stmt: ast.If) -> dict[str, tuple[str, ...]]:
    """The names every branch of the top-level `if` (its `elif`s and `else` included) binds exactly once, each to
    a dotted name, and binds in no other way: `Detector = MODEL.BoxNet` / `Detector = MODEL.VoteNet`."""
    branches: list[list[ast.stmt]] = []
    node: ast.stmt = stmt
    while True:
        branches.append(node.body)  # type: ignore[attr-defined]
        orelse = node.orelse  # type: ignore[attr-defined]
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):
            node = orelse[0]
            continue
        if not orelse:
            return {}  # no `else`: the name may stay unbound (or keep an earlier value)
        branches.append(orelse)
        break
    per_branch: list[dict[str, Optional[str]]] = []
    for body in branches:
        bound: dict[str, Optional[str]] = {}
        for inner in body:
            for node in ast.walk(inner):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    bound[node.id] = None if node.id in bound else "?"
            if isinstance(inner, ast.Assign) and len(inner.targets) == 1 and isinstance(inner.targets[0], ast.Name) \
                    and isinstance(inner.value, ast.Attribute) and bound.get(inner.targets[0].id) == "?":
                bound[inner.targets[0].id] = _dotted(inner.value)
        per_branch.append(bound)
    names = set.intersection(*(set(b) for b in per_branch))
    found: dict[str, tuple[str, ...]] = {}
    for name in names:
        dotted = [b[name] for b in per_branch]
        if all(d and d != "?" for d in dotted):
            found[name] = tuple(dotted)  # type: ignore[arg-type]
    return found


def _nested_statements(stmt: ast.stmt) -> Iterator[ast.stmt]:
    for name in ("body", "orelse", "finalbody"):
        for inner in getattr(stmt, name, []) or []:
            yield inner
    for handler in getattr(stmt, "handlers", []) or []:
        yield from handler.body


_RECORDING = threading.local()


class Consulted(set):
    """The project modules consulted while linting a file. `text` holds those whose *text* the result depends
    on (call sites read in them: a parameter's class, a model's per-step caller); for the others only their
    summaries were used (what `summary_digest` covers), so an edit that keeps every summary keeps the result."""

    def __init__(self) -> None:
        super().__init__()
        self.text: set[Path] = set()
        self.summaries: dict[Path, set[str]] = {}  # module -> the functions whose summaries were used


@contextmanager
def recording():
    """Collect the project modules consulted inside the block (a linted file's cache entry depends on them)."""
    outer = getattr(_RECORDING, "paths", None)
    paths = Consulted()
    _RECORDING.paths = paths
    try:
        yield paths
    finally:
        _RECORDING.paths = outer
        if outer is not None:
            outer.update(paths)
            outer.text.update(paths.text)
            for path, names in paths.summaries.items():
                outer.summaries.setdefault(path, set()).update(names)


class text_dependency:  # noqa: N801 (used as a context manager, like `recording`)
    """Modules consulted inside the `with` block count with their whole text (see `Consulted`)."""

    def __enter__(self) -> None:
        self._outer = getattr(_RECORDING, "text_mode", False)
        _RECORDING.text_mode = True

    def __exit__(self, *_exc) -> None:
        _RECORDING.text_mode = self._outer


_SEEN = object()  # `Project.lookup`: a question asked once, not kept yet


def _replay(used: Consulted) -> None:
    """Record what a kept computation consulted (`used`) as `recording` records an inner block's on its exit."""
    outer = getattr(_RECORDING, "paths", None)
    if outer is not None:
        outer.update(used)
        outer.text.update(used.text)
        for path, names in used.summaries.items():
            outer.summaries.setdefault(path, set()).update(names)


def _record_summary(path: Path, qualname: str) -> None:
    paths = getattr(_RECORDING, "paths", None)
    if paths is not None:
        paths.summaries.setdefault(path, set()).add(qualname)


def _record(path: Path) -> None:
    paths = getattr(_RECORDING, "paths", None)
    if paths is not None:
        paths.add(path)
        if getattr(_RECORDING, "text_mode", False):
            paths.text.add(path)


def _record_all(used) -> None:
    """`_record` of every path of `used` in its order, in one set update (a kept per-step answer replays its
    dependencies for every asker: over a million `_record` calls in a cold lint of fairseq)."""
    paths = getattr(_RECORDING, "paths", None)
    if paths is not None and used:
        paths.update(used)
        if getattr(_RECORDING, "text_mode", False):
            paths.text.update(used)


_PROJECTS: dict[Path, Project] = {}
_PROJECTS_LOCK = threading.Lock()


def held_python_tree(path: Path, source: str) -> Optional[ast.Module]:
    """The `ast` tree of `source` that a project model of this batch run already holds for the file `path`: the
    model parsed the same bytes (its digest) while answering another file's questions, before the file's own
    lint came to it (a cold lint of fairseq parsed 717 of its 868 parsed files twice). Never creates a project,
    parses, or records a dependency (only the tree is taken, no summary); None in an editor (its buffers' trees
    are joined from kept pieces), for bytes CPython would decode otherwise (a BOM or a coding cookie:
    `incremental.plain_utf8`), for a big module (the model keeps no whole tree) and for one not held."""
    if not _PROJECTS or not runtime.batch_mode():
        return None
    digest = None
    for project in list(_PROJECTS.values()):
        entry = project._modules.get(project._resolved(path))
        info = entry[1] if entry is not None else None
        if type(info) is not ModuleInfo or not isinstance(info.tree, ast.Module):
            continue
        if digest is None:
            try:
                raw = source.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: no file on disk has this text
                return None
            if not incremental.plain_utf8(raw):
                return None
            digest = hashlib.sha256(raw).hexdigest()
        if info.digest == digest:
            return None if legacy_syntax.is_shimmed(info.tree) else info.tree
    return None


def drop_text(path: Path) -> None:
    """`Project.set_text(path, None)` for the project of `path`, when one exists and holds a text for it."""
    root = find_root(path)
    with _PROJECTS_LOCK:
        project = _PROJECTS.get(root)
    if project is not None and project.text_of(path) is not None:
        project.set_text(path, None)


def project_for(path: Path) -> Project:
    """The (process-wide, cached) project that `path` belongs to."""
    root = find_root(path)
    with _PROJECTS_LOCK:
        project = _PROJECTS.get(root)
        if project is None:
            project = _PROJECTS[root] = Project(root)
        return project


def _numpy_annotation(annotation: ast.expr) -> bool:
    """`np.ndarray`, `numpy.ndarray`, `NDArray[np.float32]`, `npt.NDArray`, `"np.ndarray"`: a NumPy array, and
    nothing else (no `Union`, no `Optional` of a tensor)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    if isinstance(annotation, ast.Attribute):
        return annotation.attr in ("ndarray", "NDArray") and isinstance(annotation.value, ast.Name) and \
            annotation.value.id in ("np", "numpy", "npt")
    return isinstance(annotation, ast.Name) and annotation.id in ("ndarray", "NDArray")



_SAME_MODEL_WRAPPERS = frozenset({"compile", "DataParallel", "DistributedDataParallel", "convert_sync_batchnorm"})


def _returns_on_device_param(fn) -> Optional[str]:
    """The parameter `p` every model `fn` returns is moved to: each element of each `return` (a name, or a tuple
    of names, `None` left out) has a move to `p` (`g = g.to(p)`, `g.to(p)`, `ema = AveragedModel(g, device=p)`),
    and every assignment of it after its first unconditional move (anything but `None`) is another move or a
    wrapper of the model itself (`g = torch.compile(g)`, `nn.DataParallel(g)`). `p` is never reassigned."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)} - {"self", "cls"}
    if not params:
        return None
    own: list = []  # the function's own nodes, nested functions and classes left out
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        own.append(node)
        stack.extend(ast_walk.iter_child_nodes(node))
    assigned: dict[str, list] = {}
    for node in own:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, []).append(node)
                elif isinstance(t, (ast.Tuple, ast.List)):
                    for e in t.elts:  # an unpacked name: not a move this reading can tell
                        if isinstance(e, ast.Name):
                            assigned.setdefault(e.id, []).append(None)
        else:  # other ways of binding a name (`+=`, annotated, walrus, a loop or `with` target): not read
            targets = [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For)) \
                else [i.optional_vars for i in node.items] if isinstance(node, ast.With) else []
            for t in targets:
                for e in ast_walk.walk(t) if t is not None else ():
                    if isinstance(e, ast.Name):
                        assigned.setdefault(e.id, []).append(None)
    returns = [n for n in own if isinstance(n, ast.Return) and n.value is not None]
    if not returns or any(p in assigned for p in params):
        return None

    def move(value, name: str) -> Optional[str]:
        """The parameter `value` moves `name`'s model to, if it does."""
        if not isinstance(value, ast.Call):
            return None
        device = None
        if isinstance(value.func, ast.Attribute) and value.func.attr == "to" and \
                isinstance(value.func.value, ast.Name) and value.func.value.id == name:
            device = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "device"),
                                                           None)
        elif any(k.arg == "device" for k in value.keywords):
            device = next(k.value for k in value.keywords if k.arg == "device")
        return device.id if isinstance(device, ast.Name) and device.id in params else None

    def wraps(value, name: str) -> bool:
        """`torch.compile(g)`, `nn.DataParallel(g)`: the same model's parameters, where they were."""
        return isinstance(value, ast.Call) and bool(value.args) and isinstance(value.args[0], ast.Name) and \
            value.args[0].id == name and (_dotted(value.func) or "").rsplit(".", 1)[-1] in _SAME_MODEL_WRAPPERS

    found: set = set()
    for ret in returns:
        elements = ret.value.elts if isinstance(ret.value, ast.Tuple) else [ret.value]
        for element in elements:
            if _is_none(element):
                continue
            if not isinstance(element, ast.Name) or None in assigned.get(element.id, [None]):
                return None
            name = element.id
            moves = [(s, move(s.value, name)) for s in assigned[name]]
            in_place = [n for n in own if isinstance(n, ast.Expr) and move(n.value, name)]
            targets = {p for _, p in moves if p} | {move(n.value, name) for n in in_place}
            if len(targets) != 1:
                return None
            firsts = [s.lineno for s, p in moves if p and s in fn.body] + [n.lineno for n in in_place if n in fn.body]
            start = min(firsts) if firsts else 0
            for s, p in moves:
                if s.lineno >= start and not p and not _is_none(s.value) and not wraps(s.value, name):
                    return None
            found |= targets
    return found.pop() if len(found) == 1 else None
