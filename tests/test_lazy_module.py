"""The project model of a big module keeps no whole `ast` tree (issue 13, gpulint/analysis/lazy_module.py): its
definitions are parsed from their lines when asked for, and everything the analyses read of it is what the whole
tree gives. The threshold and the pieces are lowered here, so that every fixture is read the lazy way."""

from __future__ import annotations

import ast
import tracemalloc
from pathlib import Path

import pytest

from gpulint import bigfile, chunked
from gpulint.analysis import lazy_module
from gpulint.analysis.project import ModuleInfo, Project
from gpulint.rule import all_rules
from gpulint.runner import lint_source
from test_chunked import _found
from test_faults import _generated

REPO = Path(__file__).resolve().parent.parent
ALL_CODES = frozenset(all_rules())


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(bigfile, "PIECE", 300)
    monkeypatch.setattr(lazy_module, "CACHED_UNITS", 3)  # definitions parsed again and again


@pytest.fixture
def whole_parses(monkeypatch) -> list:
    """One entry per parse of a big module's whole text (`LazyModuleInfo.tree`, not kept: each access parses all
    of it again), appended while the test runs."""
    wholes: list = []
    tree = lazy_module.LazyModuleInfo.tree
    monkeypatch.setattr(lazy_module.LazyModuleInfo, "tree", property(lambda self: wholes.append(1) or tree.fget(self)))
    return wholes


def _eager(path: Path, raw: bytes) -> ModuleInfo:
    return ModuleInfo(path, ast.parse(raw, str(path)), "x")


def _lazy(path: Path, raw: bytes):
    old = lazy_module.THRESHOLD
    lazy_module.THRESHOLD = 0
    try:
        return lazy_module.lazy_info(path, raw, "x")
    finally:
        lazy_module.THRESHOLD = old


def _dump(node) -> str:
    return ast.dump(node, include_attributes=True)


def _calls(info, name: str) -> list:
    """The calls `calls_named` gives, and which of them share a scope (the assignments' dict, or its tag)."""
    scopes: list = []
    shape = []
    for call, assigns in info.calls_named(name):
        at = next((i for i, s in enumerate(scopes) if lazy_module.same_scope(s, assigns)), None)
        if at is None:
            scopes.append(assigns)
            at = len(scopes) - 1
        shape.append((_dump(call), at))
    values = [{k: [(_dump(v), i) for v, i in vs] for k, vs in s.items() if not k.startswith("__")} for s in scopes]
    return [shape, values]


def _model(info) -> list:
    return [
        sorted(info.imports.items()), info.star_imports, sorted((r.name, r.values) for r in info.registries.values()),
        info.sys_path,
        [(n, _dump(f)) for n, f in info.functions.items()],
        [(c.name, c.line, c.bases, c.properties, [(m, _dump(f)) for m, f in c.methods.items()])
         for c in info.classes.values()],
    ]


def _python_files() -> list[Path]:
    return sorted(REPO.glob("fixtures/**/*.py"))


def test_every_fixture_reads_the_same_from_its_lines_as_from_its_whole_tree(small_pieces):
    """Imports, registries, `sys.path` entries, every function and method node (lines and columns included),
    and every name's calls with their scopes' assignments, in the same order and grouped the same."""
    lazy_count = 0
    for path in _python_files():
        raw = path.read_bytes()
        lazy = _lazy(path, raw)
        if lazy is None:
            continue
        lazy_count += 1
        eager = _eager(path, raw)
        assert isinstance(lazy, ModuleInfo)
        assert _model(lazy) == _model(eager), path
        names = {n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id
                 for n in ast.walk(eager.tree) if isinstance(n, ast.Call) and
                 isinstance(n.func, (ast.Name, ast.Attribute))}
        for name in sorted(names):
            assert _calls(lazy, name) == _calls(eager, name), (path, name)
        assert [_dump(s) for s in lazy.statements()] == [_dump(s) for s in eager.tree.body], path
    assert lazy_count > 100


def test_a_module_that_cannot_be_read_in_pieces_is_read_whole(tmp_path):
    assert _lazy(tmp_path / "a.py", b"x = 1\r\ny = 2\r\n" * 10) is None  # \r line ends
    assert _lazy(tmp_path / "a.py", b"# -*- coding: latin-1 -*-\nx = '\xe9'\n") is None
    assert _lazy(tmp_path / "a.py", b"def f(:\n    pass\n") is None  # a syntax error: the whole parse says so


def test_a_big_module_linted_in_chunks_holds_no_whole_tree_and_finds_the_same(tmp_path, monkeypatch):
    """The benchmark's module, linted in chunks with its project model read the lazy way: the same findings as
    with the whole tree, at a fraction of the traced peak."""
    path = tmp_path / "big.py"
    path.write_text(_generated(200), encoding="utf-8")
    text = path.read_text(encoding="utf-8")
    monkeypatch.setattr(chunked, "THRESHOLD", 0)
    monkeypatch.setattr(chunked, "CHUNK", 20_000)
    monkeypatch.setattr(bigfile, "PIECE", 20_000)
    results, peaks = [], []
    for threshold in (10 ** 12, 0):
        monkeypatch.setattr(lazy_module, "THRESHOLD", threshold)

        _forget_projects()
        tracemalloc.start()
        try:
            results.append(lint_source(text, str(path), ALL_CODES, path=path))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        info = Project(tmp_path).module(path)
        assert isinstance(info, lazy_module.LazyModuleInfo) == (threshold == 0)
    whole, lazy = results
    assert len(whole.diagnostics) > 500 and _found(lazy) == _found(whole) and lazy.errors == whole.errors
    assert peaks[1] < 0.8 * peaks[0], peaks


def test_every_fixture_lints_the_same_with_a_lazy_project_model(monkeypatch):
    """Every fixture (and the example projects' modules they import) linted with each module of the project
    model read the lazy way: the same findings and errors. (The lint's own parse stays whole: a module the
    lint reads in pieces gets no tree from the project model's parse, lazy or not.)"""
    monkeypatch.setattr(lazy_module, "CACHED_UNITS", 3)
    for path in _python_files():
        text = path.read_text(encoding="utf-8")
        found = []
        for threshold in (10 ** 12, 0):
            monkeypatch.setattr(lazy_module, "THRESHOLD", threshold)
            _forget_projects()
            result = lint_source(text, str(path), ALL_CODES, path=path)
            found.append((_found(result), result.errors))
        assert found[1] == found[0], path


def _forget_projects() -> None:
    from gpulint.analysis import project as project_module

    for name in ("_PROJECTS", "_projects"):
        cache = getattr(project_module, name, None)
        if isinstance(cache, dict):
            cache.clear()


def test_a_big_text_handed_to_the_project_is_read_lazily_and_once(tmp_path, monkeypatch):
    """A module whose linted text is not the file on disk (over `Project._parse`'s size limit, stdin, each chunk
    of a big module handing the whole text over: calls.project_calls) became an overlay with its whole `ast`
    tree, parsed again for every chunk: 890 MB per process on the benchmark's 5 MB module."""
    monkeypatch.setattr(lazy_module, "THRESHOLD", 1_000)
    path = tmp_path / "big.py"
    text = _generated(40)
    project = Project(tmp_path)
    made = []
    real = lazy_module.lazy_info
    monkeypatch.setattr(lazy_module, "lazy_info", lambda *a: made.append(1) or real(*a))
    project.set_text(path, text)
    first = project.module(path)
    assert isinstance(first, lazy_module.LazyModuleInfo) and "train_3" in first.functions
    project.set_text(path, text)
    assert project.module(path) is first and len(made) == 1
    project.set_text(path, text + "\nx = 1\n")
    assert project.module(path) is not first and len(made) == 2


def test_summaries_of_a_big_module_parse_its_whole_text_once_for_periodic_predicates(tmp_path, monkeypatch,
                                                                                     whole_parses):
    """Every `if` whose test calls a function asks whether it is a periodic predicate (`if check_frequency(i):`,
    project.py `_periodic_predicates`). A big module keeps no index of its tree, so asking its `indexed` per `if`
    parsed the whole text again for each one (a clean-clone CI spent most of an hour in it); the names are now
    found once per module."""
    monkeypatch.setattr(lazy_module, "THRESHOLD", 1_000)
    path = tmp_path / "big.py"
    helpers = "".join(f"def ready_{i}(x):\n    if isinstance(x, int):\n        return True\n    return False\n\n\n"
                      for i in range(30))
    path.write_text(helpers + "def should_log(step):\n    if step % 10 == 0:\n        return True\n    return False\n",
                    encoding="utf-8")
    project = Project(tmp_path)
    info = project.module(path)
    assert isinstance(info, lazy_module.LazyModuleInfo)
    wholes = whole_parses
    for i in range(30):
        project.function(path, f"ready_{i}")
    assert len(wholes) <= 1
    from gpulint.analysis.project import _periodic_predicates
    assert _periodic_predicates(info) == frozenset({"should_log"})


def test_a_big_modules_methods_are_read_without_parsing_its_whole_text(tmp_path, monkeypatch, whole_parses):
    """Whether a method of a big module runs `.backward()` one or more `self.m(...)` calls away
    (`analysis._steps_backward`, asked for every project method a loop calls) and what a top-level helper of it
    returns (`host_returns.host_factory_return`) are read from the definitions the lazy model parses on demand,
    never from its whole tree (`LazyModuleInfo.tree` parses all of the text again on every access)."""
    from gpulint.analysis import _steps_backward
    from gpulint.analysis.host_returns import host_factory_return

    monkeypatch.setattr(lazy_module, "THRESHOLD", 1_000)
    path = tmp_path / "agent.py"
    filler = "".join(f"def pad_{i}(x):\n    return x + {i}\n\n\n" for i in range(60))
    path.write_text(filler + "import torch\n\n\ndef grid(n):\n    return torch.arange(n)\n\n\n"
                    "class Agent:\n    def learn(self, loss):\n        self._apply(loss)\n\n"
                    "    def _apply(self, loss):\n        loss.backward()\n", encoding="utf-8")
    project = Project(tmp_path)
    info = project.module(path)
    assert isinstance(info, lazy_module.LazyModuleInfo)
    wholes = whole_parses
    cls = info.classes["Agent"]
    assert _steps_backward(project, cls, "learn")
    assert host_factory_return(project, path, "grid", set()) is not None
    assert wholes == []


_HELPERS_HEAD = ("import dataclasses\nimport torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n\n"
                 "MODELS = {}\n\n\ndef register(cls):\n    MODELS[cls.__name__] = cls\n    return cls\n")
# One helper of each kind a training loop calls in another module (a meter, a hook list, a periodic predicate, a
# loader factory, a registered network with its config, a reducer, a trainer-like object): the questions the
# project-wide analyses ask about them are asked once per helper.
_HELPERS = """

class Meter{i}:
    def __init__(self):
        self.total = 0.0
        self.hooks = []

    def update(self, value):
        if isinstance(value, torch.Tensor):
            value = value.item()
        self.total += value
        for hook in self.hooks:
            hook.after_step()

    def after_step(self):
        if should_log{i}(self.total):
            print(self.total)


def should_log{i}(step):
    if step % 10 == 0:
        return True
    return False


def build_loader{i}(cfg, dataset):
    kw = {{"num_workers": cfg.workers}}
    if cfg.pin:
        kw["pin_memory"] = True
    return DataLoader(dataset, batch_size=cfg.batch_size, **kw)


@register
class Net{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            x = self.body(x)
        return torch.zeros(3).cuda() + x


@dataclasses.dataclass
class Config{i}:
    net: Net{i} = dataclasses.field(default_factory=Net{i})
    workers: int = 2


class Trainer{i}:
    def __init__(self, cfg):
        self.cfg = cfg
        self.net = MODELS[cfg.name]()
        self.meter = Meter{i}()

    def train_step(self, batch):
        loss = self.net(batch).sum()
        loss.backward()
        self.meter.update(loss)
        return reduce{i}(loss)


def reduce{i}(x):
    y = x.detach().clone()
    return y.mean().item()
"""
_TRAIN = """import torch
from helpers import Config0, Meter0, Net0, Trainer0, build_loader0, reduce0


def main(cfg, dataset):
    model = Net0().cuda()
    optimizer = torch.optim.Adam(model.parameters())
    meter = Meter0()
    trainer = Trainer0(Config0())
    for step, (x, y) in enumerate(build_loader0(cfg, dataset)):
        x = x.cuda()
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        meter.update(loss)
        trainer.train_step(x)
        print(reduce0(loss))
"""


_CALLED = """import torch
from torch.utils.data import DataLoader


def evaluate(model, loader, device):
    total = 0.0
    for x, y in loader:
        x = x.to(device)
        total += (model(x).argmax(1) == y.to(device)).sum().item()
    return total


def make_loader(dataset, workers=2):
    return DataLoader(dataset, batch_size=32, num_workers=workers, pin_memory=True)


class Averager:
    def __init__(self):
        self.v = 0.0

    def add(self, x):
        self.v += float(x)


def instantiate(cfg):
    return cfg
""" + "".join(f"\n\ndef pad_{j}(x):\n    return x + {j}\n" for j in range(60))
# A big training module: many loops, each handing its loaders, meters and configs to the helpers above.
_CALLER_HEAD = "import torch\nfrom torch.utils.data import DataLoader\nfrom helpers import Averager, evaluate, instantiate, make_loader\n"
_CALLER = """

def run_{i}(cfg, dataset, model, optimizer, device):
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2)
    val = make_loader(dataset)
    meter = Averager()
    net = instantiate(cfg.model)
    for epoch in range(cfg.epochs):
        for step, (x, y) in enumerate(loader):
            x = x.to(device)
            loss = model(x).mean()
            loss.backward()
            optimizer.step()
            meter.add(loss)
            if step % 100 == 0:
                print(loss.item())
        print(evaluate(net, val, device))
"""


def _big_helpers(items: int) -> dict:
    return {"helpers.py": _HELPERS_HEAD + "".join(_HELPERS.format(i=i) for i in range(items)), "train.py": _TRAIN}


def _big_caller(items: int) -> dict:
    return {"helpers.py": _CALLED, "train.py": _CALLER_HEAD + "".join(_CALLER.format(i=i) for i in range(items))}


@pytest.mark.parametrize("project", [_big_helpers, _big_caller])
def test_a_big_modules_whole_text_is_parsed_a_fixed_number_of_times_whatever_it_holds(tmp_path, monkeypatch,
                                                                                    whole_parses, project):
    """A big module keeps no whole tree (`LazyModuleInfo.tree` parses all of its text on each access). An analysis
    that asks for it once per class, function, call or `if` of the module costs a parse of the whole module per
    item: quadratic in its size (the twenty-second landing's clean-clone CI found two such terms, each only after
    it had run for most of an hour). Linting a training script and a big helper module it imports (or a big
    training module and the helpers it calls) must parse the big module's whole text the same number of times
    whether it holds 3 or 12 items of each kind."""
    monkeypatch.setattr(lazy_module, "THRESHOLD", 1_000)
    counts = []
    for items in (3, 12):
        root = tmp_path / f"p{items}"
        root.mkdir()
        (root / "pyproject.toml").write_text("", encoding="utf-8")
        for name, text in project(items).items():
            (root / name).write_text(text, encoding="utf-8")
        _forget_projects()
        del whole_parses[:]
        found = []
        for name in ("train.py", "helpers.py"):
            path = root / name
            result = lint_source(path.read_text(encoding="utf-8"), str(path), ALL_CODES, path=path)
            found.append(_found(result))
        assert any(isinstance(Project(root).module(root / name), lazy_module.LazyModuleInfo)
                   for name in ("train.py", "helpers.py"))
        assert found[0], "the fixture must exercise the project-wide analyses"
        counts.append(len(whole_parses))
    assert counts[1] == counts[0], counts
