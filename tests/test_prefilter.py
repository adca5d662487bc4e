"""The `ast` prefilter (gpulint/prefilter.py): files no enabled rule can report in are never parsed with LibCST.

A rule author cannot break it silently: every INVALID example of every rule must pass the prefilter of that rule
alone, and on every fixture the findings with and without the prefilter are the same.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from gpulint import prefilter
from gpulint.rule import all_rules
from gpulint.runner import could_have_findings, lint_source

ROOT = Path(__file__).resolve().parent.parent
# Every rule that declares a condition (a rule that declares none turns the shortcut off for every file).
ALL = frozenset(code for code, cls in all_rules().items()
                if cls.needs_text is not None or cls.reports_in is not None)
DEFAULT = frozenset(code for code, cls in all_rules().items() if not cls.preview)


def _passes(source: str, codes: frozenset[str]) -> bool:
    return could_have_findings(source, codes, ast.parse(source))


def _invalid_examples():
    for code, cls in all_rules().items():
        for i, example in enumerate(cls.INVALID):
            yield pytest.param(code, example.code, id=f"{code}-{i}")


@pytest.mark.parametrize("code, source", list(_invalid_examples()))
def test_every_invalid_example_passes_its_rules_prefilter(code: str, source: str):
    assert _passes(source, frozenset({code})), f"{code} reports in code its `reports_in`/`needs_text` would skip"


def test_rules_declare_known_conditions_and_none_is_inherited():
    for code, cls in all_rules().items():
        assert cls.reports_in is None or set(cls.reports_in) <= set(prefilter.CONDITIONS), code
    # GPU412 subclasses GPU203's rule but reports outside loops: it must not inherit GPU203's condition.
    assert all_rules()["GPU203"].reports_in == (prefilter.HOT_LOOP,)
    assert all_rules()["GPU412"].reports_in is None


MODEL_FILE = '''import torch
import torch.nn as nn
from .layers import Block


class Net(nn.Module):
    def __init__(self, depth, device=None):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(depth)])
        for i in range(depth):
            self.blocks[i].init(device=device)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        if x.sum() > 0:
            x = x.cpu()
        return x
'''


def test_a_model_definition_with_loops_is_skipped():
    # Loops over blocks and setup code are not training loops: no rule of the default set can report here.
    assert not _passes(MODEL_FILE, DEFAULT)
    assert lint_source(MODEL_FILE, "net.py", DEFAULT, prefilter=False).diagnostics == []


STAGED_MODEL = '''
import torch
from torch import nn

default_cfgs = {"vit": {"url": "https://dl.fbaipublicfiles.com/vit.pth"}}  # not a loader, a download site
device = None  # set by the caller


class Stage(nn.Module):
    pass


class Net(nn.Module):
    """Loads with the checkpoint loader."""

    def __init__(self, depths):
        super().__init__()
        self.stages = nn.ModuleList()
        for d in depths:
            stage = Stage()
            self.stages.append(stage)

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        if x.sum() > 0:
            x = x.cpu()
        return x
'''


def test_loop_variables_and_urls_do_not_make_a_training_loop():
    # `stage` is a model in `__init__`, but in `forward` only the loop binds it; "dl." in a URL and "loader" in a
    # docstring name no loader. Before, each of the two made the file pass.
    assert not _passes(STAGED_MODEL, DEFAULT)
    # The same name bound to a model in the loop's own function: it may be a forward pass of a model.
    rebound = STAGED_MODEL.replace("        for stage in self.stages:\n",
                                   "        stage = Stage()\n        for _ in self.stages:\n")
    assert _passes(rebound, DEFAULT)
    # A loader named in code (not in a string) still may be iterated.
    assert _passes(STAGED_MODEL + "\ntrain_loader = None\n", DEFAULT)


@pytest.mark.parametrize("loop", [
    "for x, y in train_loader:\n    print(x.cpu())\n",  # iterates a loader
    "for x in data:\n    loss = model(x)\n",  # runs a model
    "for x in data:\n    out = net_a(x)\n",  # a value assigned from a module of torch.nn
    "for x in data:\n    step(x)\n",  # calls a function of the module that trains
    "def outer(x):\n    step(x)\n\nfor x in data:\n    outer(x)\n",  # trains through a helper's helper
    "for x in data:\n    opt.step()\n",  # steps an optimizer
    "for i in range(n):\n    x = x @ w\n",  # tensor math, many iterations
    "while err > tol:\n    x = x - g(x)\n",
])
def test_what_may_be_a_training_loop_is_parsed(loop: str):
    head = "import torch\ndevice = 'cpu'\nnet_a = torch.nn.Linear(2, 2)\nw = torch.eye(4)\nx = torch.ones(4)\n" \
           "def step(x):\n    x.backward()\n\n"
    assert _passes(head + loop, DEFAULT)


@pytest.mark.parametrize("loop", [
    "for i in range(3):\n    x = x @ w\n",  # a handful of literal iterations
    "while True:\n    x = x @ w\n",  # a serving loop
    "for x in items:\n    out.append(helper(x))\n",  # no model, no loader, no training helper
    "def __init__(self, n):\n    for i in range(n):\n        self.x = self.x @ w\n",  # setup code
])
def test_what_cannot_be_a_training_loop_is_skipped(loop: str):
    source = "import torch\ndevice = 'cpu'\ndef helper(x):\n    return x\n\n" + loop
    assert not _passes(source, DEFAULT)


def _fixture_files():
    return sorted(p for p in (ROOT / "fixtures").rglob("*.py"))


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_prefilter_changes_no_finding_on_fixtures(path: Path):
    source = path.read_text(encoding="utf-8")
    filtered = lint_source(source, str(path), ALL, path=path)
    unfiltered = lint_source(source, str(path), ALL, path=path, prefilter=False)
    assert [(d.code, d.location, d.message) for d in filtered.diagnostics] == \
        [(d.code, d.location, d.message) for d in unfiltered.diagnostics]


def _all_sources():
    for path in _fixture_files():
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for code, cls in all_rules().items():
        for i, example in enumerate([*cls.VALID, *cls.INVALID]):
            yield f"{code}-example-{i}", example if isinstance(example, str) else example.code
    yield "model", MODEL_FILE
    yield "staged model", STAGED_MODEL


def test_hot_loop_condition_agrees_with_the_loop_analysis():
    # HOT_LOOP must over-approximate LoopAnalysis: where it says "no hot loop", the analysis finds none. A change
    # to analysis/loops.py or kinds.py that makes more loops hot must be mirrored in gpulint/prefilter.py.
    import libcst as cst

    from gpulint.analysis import LoopRole, ModuleAnalysis

    skipped = []
    for name, source in _all_sources():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # GPU001's fixtures: never analysed
        if prefilter.FileFacts(source, tree).holds(prefilter.HOT_LOOP):
            continue
        skipped.append(name)
        analysis = ModuleAnalysis(cst.parse_module(source), source)
        hot = [n for n in analysis.index.nodes if isinstance(n, (cst.For, cst.While))
               and analysis.loops.role(n) is not LoopRole.COLD]
        assert hot == [], f"{name}: a loop the prefilter rules out is {analysis.loops.role(hot[0])}"
    assert "model" in skipped  # the check is not vacuous


def test_the_default_rules_keep_the_prefilter_on():
    """A default rule that declares neither `needs_text` nor `reports_in` makes every file go through LibCST
    (GPU411 did, the moment it left preview): the cold run would be several times slower."""
    from gpulint.runner import _prefilters

    defaults = frozenset(code for code, rule in all_rules().items() if not rule.preview)
    assert _prefilters(defaults) is not None


# A model library's helpers: `range` loops that build configurations and layers, no tensor computed in them
# (timm has dozens of these). The loop analysis finds no hot loop here; the prefilter must not parse the file.
CONFIG_LOOPS = '''import torch
import torch.nn as nn


def stage_configs(depth, every, widths, **kwargs):
    blocks = []
    for i in range(depth):
        block_type = "bottle" if i in every else "basic"
        blocks += [dict(type=block_type, width=int(widths[i] * 1.5), **kwargs)]
    return tuple(blocks)


def dilations(num_stages, output_stride):
    net_stride, dilation, out = 2, 1, []
    for _ in range(num_stages):
        if net_stride >= output_stride:
            dilation *= 2
        out.append((net_stride, dilation))
    return out


class Net(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(depth)])

    def forward(self, x: torch.Tensor, device=None) -> torch.Tensor:
        x = x.to(device)
        for layer in self.layers:
            x = layer(x)
        return x
'''


def test_loops_that_compute_no_tensor_are_skipped():
    assert not _passes(CONFIG_LOOPS, DEFAULT)
    # not for want of a GPU in the text: one `range` loop over a tensor makes it pass
    assert _passes(CONFIG_LOOPS.replace("out.append((net_stride, dilation))", "out.append(torch.ones(2) * 2)"),
                   DEFAULT)


@pytest.mark.parametrize("body", [
    "        x = x * widths[i]\n",  # an operator on a tensor (the annotated parameter)
    "        x = torch.relu(x)\n",  # a torch function
    "        out.append((x @ x.T).sum().item())\n",  # a value read back from a computed tensor
    "        y = x.flip(0)\n",  # a method of a tensor
])
def test_loops_that_may_compute_a_tensor_are_parsed(body: str):
    # `step(x, widths, n)` iterates `range(n)` at the top of a function: tensor math there is a hot loop.
    source = CONFIG_LOOPS + "\n\ndef step(x: torch.Tensor, widths, n):\n    out = []\n    for i in range(n):\n" + body \
        + "    return out\n"
    import libcst as cst

    from gpulint.analysis import LoopRole, ModuleAnalysis

    assert _passes(source, DEFAULT)
    analysis = ModuleAnalysis(cst.parse_module(source), source)  # and the loop analysis agrees
    assert LoopRole.HOT in {analysis.loops.role(n) for n in analysis.index.nodes if isinstance(n, cst.For)}



def _corpus_modules():
    """(path, source, ast tree) of every parseable `.py` file under the GPULINT_PREFILTER_CORPORA folders."""
    for root in os.environ["GPULINT_PREFILTER_CORPORA"].split(os.pathsep):
        for path in sorted(Path(root).rglob("*.py")):
            try:
                source = path.read_text(encoding="utf-8")
                tree = ast.parse(source)
            except (SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
                continue
            yield path, source, tree


@pytest.mark.skipif(not os.environ.get("GPULINT_PREFILTER_CORPORA"),
                    reason="set GPULINT_PREFILTER_CORPORA=dir1:dir2 to check real repositories (minutes)")
def test_hot_loop_condition_agrees_with_the_loop_analysis_on_corpora():
    """The same check as above over every Python file of the given checkouts (e.g. /work/trials/* and
    /work/labelrepos/*): where the prefilter finds no possible hot loop, LibCST's loop analysis finds none."""
    import libcst as cst

    from gpulint.analysis import LoopRole, ModuleAnalysis

    disagree = []
    for path, source, tree in _corpus_modules():
        if prefilter.FileFacts(source, tree).holds(prefilter.HOT_LOOP) or not any(
                isinstance(n, (ast.For, ast.AsyncFor, ast.While)) for n in ast.walk(tree)):
            continue
        try:
            analysis = ModuleAnalysis(cst.parse_module(source), source)
        except Exception:  # LibCST cannot parse it: never analysed either
            continue
        if any(isinstance(n, (cst.For, cst.While)) and analysis.loops.role(n) is not LoopRole.COLD
               for n in analysis.index.nodes):
            disagree.append(str(path))
    assert disagree == []


def test_every_expression_the_kind_inference_calls_a_tensor_may_be_one():
    """The tensor-aware prefilter (gpulint/prefilter_tensors.py) over-approximates kinds.py: every name, call,
    operator, attribute or subscript of the fixtures and rule examples that `KindInference` calls TENSOR is
    "may be a tensor" there too (the same expression found by its position in CPython's tree)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from gpulint.analysis import Kind, ModuleAnalysis

    pairs = ((cst.Name, ast.Name), (cst.Call, ast.Call), (cst.BinaryOperation, ast.BinOp),
             (cst.Attribute, ast.Attribute), (cst.Subscript, ast.Subscript))
    checked = 0
    for name, source in _all_sources():
        if not source.isascii():
            continue  # columns: characters in LibCST, bytes in CPython's tree
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        where = {}
        for node in ast.walk(tree):
            if isinstance(node, tuple(a for _, a in pairs)):
                where.setdefault((type(node), node.lineno, node.col_offset, node.end_lineno, node.end_col_offset),
                                 node)
        tensors = prefilter.FileFacts(source, tree)._tensors()
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
        analysis = ModuleAnalysis(wrapper.module, source)
        for node in analysis.index.nodes:
            kind = next((a for c, a in pairs if type(node) is c), None)
            if kind is None or analysis.kinds.of(node) is not Kind.TENSOR or getattr(node, "lpar", ()):
                continue
            span = positions[node]
            mirror = where.get((kind, span.start.line, span.start.column, span.end.line, span.end.column))
            if mirror is None:
                continue
            checked += 1
            assert tensors.may_be_tensor(mirror), f"{name}:{span.start.line}: {ast.unparse(mirror)}"
    assert checked > 1000  # not vacuous


# -- GPU406 and GPU407: the class names a finding needs, not names that merely contain them --------------------
# timm's model files name `BatchNorm` through their own layer helpers and never call `nn.Conv2d` themselves;
# FSDP/DDP scripts name `FullyShardedDataParallel`/`DistributedDataParallel`. Before, both kinds were parsed
# with LibCST for GPU406's and GPU407's sake alone (47 of timm's 315 files, 4 of pytorch/examples' 93).
HELPER_LAYERS = '''import torch.nn as nn
from .layers import create_conv2d, get_norm_layer


class Block(nn.Module):
    def __init__(self, c, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.conv = create_conv2d(c, c, 3)
        self.bn = norm_layer(c)

    def forward(self, x):
        return self.bn(self.conv(x))
'''

SHARDED = '''import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


def wrap(model, sharded):
    return FSDP(model) if sharded else DDP(model)
'''


SEPARATED = '''import torch.nn as nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3)
        self.act = nn.ReLU()
        self.bn = nn.BatchNorm2d(c)
        self.head = nn.Sequential(nn.Conv2d(c, c, 1), nn.ReLU(), nn.BatchNorm2d(c))

    def forward(self, x):
        return self.head(self.bn(self.act(self.conv(x))))
'''


@pytest.mark.parametrize("source", [HELPER_LAYERS, SHARDED, SEPARATED],
                         ids=["batchnorm-without-conv-call", "sharded", "conv-and-batchnorm-not-adjacent"])
def test_files_that_only_mention_the_classes_are_skipped(source: str):
    assert not _passes(source, DEFAULT)
    # and linting them in full finds nothing: skipping them hides no finding
    assert lint_source(source, "m.py", DEFAULT, prefilter=False).diagnostics == []


ALIASED_CONV = '''from torch.nn import BatchNorm2d as BN, Conv2d as C, Sequential


block = Sequential(C(3, 8, 3), BN(8))
'''

SELF_LAYERS = '''import torch.nn as nn


class Stem(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return self.bn(self.conv(x))
'''

LOCAL_IMPORTS = '''def build():
    import torch.nn.modules.conv as convs
    from torch.nn import SyncBatchNorm as Norm
    import torch.nn as nn
    return nn.Sequential(convs.Conv3d(3, 8, 3), Norm(8))
'''


@pytest.mark.parametrize("source", [ALIASED_CONV, SELF_LAYERS, LOCAL_IMPORTS],
                         ids=["aliased-imports", "self-layers", "imports-in-a-function"])
def test_every_spelling_of_a_conv_before_batchnorm_is_parsed_and_reported(source: str):
    assert _passes(source, frozenset({"GPU406"}))
    assert [d.code for d in lint_source(source, "m.py", frozenset({"GPU406"})).diagnostics] == ["GPU406"]


DATA_PARALLEL_SPELLINGS = [
    "model = torch.nn.DataParallel(Net()).cuda()",
    "from torch.nn import DataParallel as DP\nmodel = DP(Net()).cuda()",
    "from torch.nn import DataParallel\nmodel = DataParallel(Net()).cuda()",
]


@pytest.mark.parametrize("spelling", DATA_PARALLEL_SPELLINGS)
def test_every_spelling_of_data_parallel_in_a_training_script_is_reported(spelling: str):
    source = ("import torch\n" + spelling + "\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n")
    assert _passes(source, frozenset({"GPU407"}))
    assert "GPU407" in [d.code for d in lint_source(source, "train.py", frozenset({"GPU407"})).diagnostics]


def test_data_parallel_without_a_training_loop_is_skipped():
    source = "import torch\nmodel = torch.nn.DataParallel(Net()).cuda()\nprint(model(torch.ones(2)))\n"
    assert not _passes(source, frozenset({"GPU407"}))
    assert lint_source(source, "m.py", frozenset({"GPU407"}), prefilter=False).diagnostics == []


@pytest.mark.skipif(not os.environ.get("GPULINT_PREFILTER_CORPORA"),
                    reason="set GPULINT_PREFILTER_CORPORA=dir1:dir2 to check real repositories (minutes)")
def test_conv_and_batchnorm_condition_hides_no_gpu406_finding_on_corpora():
    """Where CONV_AND_BATCHNORM_CALLS does not hold in a file that names BatchNorm, GPU406 finds nothing there."""
    hidden = []
    for path, source, tree in _corpus_modules():
        if "BatchNorm" not in source or \
                prefilter.FileFacts(source, tree).holds(prefilter.CONV_AND_BATCHNORM_CALLS):
            continue
        found = lint_source(source, str(path), frozenset({"GPU406"}), path=path, prefilter=False)
        hidden += [f"{path}:{d.location.row}" for d in found.diagnostics]
    assert hidden == []
