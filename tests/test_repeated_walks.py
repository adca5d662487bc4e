"""Work a cold lint did again for every question about the same class, module or importer (issue 11, speed15):
counted, not timed. Each test fails on the code before the change; the findings asserted are the ones it gave.

- `unset_options` read the module's code through a LibCST codegen pass of the whole module per lint (on fairseq,
  36 passes and a sixth of that fact's cost); in a batch run it reads the text the module was parsed from.
- `self_lists` walked a whole class once per attribute asked about; now once per class.
- `ImportResolver.resolve` built a new `importer.parent` Path (hashed afresh) at every question; a monorepo asks
  over a million.
- the hierarchy and project searches walked CPython trees with `ast.walk` (two generators per node); they use
  `gpulint.ast_walk.walk`, the same nodes in the same order (tests/test_ast_walk.py).
"""

from __future__ import annotations

import ast
import pathlib
import sys
from pathlib import Path

import libcst as cst

from projects import write_project

from gpulint import runtime
from gpulint.analysis import self_lists
from gpulint.analysis.project import ImportResolver
from gpulint.rule import all_rules
from gpulint.runner import lint_source

LOSS = '''import torch
import torch.nn as nn


class ComputeLoss:
    def __init__(self, model, autobalance=False):
        super(ComputeLoss, self).__init__()
        self.balance = [4.0, 1.0, 0.4]
        self.BCEobj, self.autobalance = nn.BCEWithLogitsLoss(), autobalance

    def __call__(self, p, targets):
        lobj = torch.zeros(1, device=targets.device)
        for i, pi in enumerate(p):
            obji = self.BCEobj(pi, targets)
            lobj += obji * self.balance[i]
            if self.autobalance:
                self.balance[i] = self.balance[i] * 0.9999 + 0.0001 / obji.detach().item()
        return lobj
'''

TRAIN = '''import torch
from loss import ComputeLoss


def train(model, loader, optimizer):
    device = torch.device("cuda")
    compute_loss = ComputeLoss(model)
    for imgs, targets in loader:
        imgs = imgs.to(device, non_blocking=True)
        pred = model(imgs)
        loss = compute_loss(pred, targets.to(device, non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def _codes() -> frozenset:
    return frozenset(code for code, rule in all_rules().items() if not rule.preview)


def _lint(root: Path, name: str) -> list[tuple[int, str]]:
    path = (root / name).resolve()
    with runtime.batch():
        result = lint_source(path.read_text(), name, _codes(), path=path)
    return sorted((d.location.row, d.code) for d in result.diagnostics)


def test_an_unset_option_is_read_from_the_parsed_text_in_a_batch_run(tmp_path: Path, monkeypatch) -> None:
    root = write_project(tmp_path / "p", {"loss.py": LOSS, "train.py": TRAIN})
    generated = []
    original = cst.Module.code

    def counting(self):
        if len(self.body) > 1:  # a whole module, not a statement's code
            generated.append(1)
        return original.fget(self)

    monkeypatch.setattr(cst.Module, "code", property(counting))
    from gpulint.analysis import unset_options

    asked = []
    compute = unset_options.UnsetOptions._compute
    monkeypatch.setattr(unset_options.UnsetOptions, "_compute",
                        lambda self, cls, attr: asked.append(attr) or compute(self, cls, attr))
    found = _lint(root, "loss.py")
    assert "autobalance" in asked  # the option was looked at
    assert (17, "GPU101") not in found  # and its block is quiet: no construction turns it on
    assert generated == []  # no codegen of the module for it


CLASS = '''import torch
import torch.nn as nn


class Sampler(nn.Module):
    def __init__(self, steps):
        super().__init__()
        self.net = nn.Linear(4, 4)
''' + "".join(f"        self.map{i} = []\n        for k in range(steps):\n            self.map{i}.append(k)\n"
              for i in range(6)) + '''
    def forward(self, x):
''' + "".join(f"        x = x + torch.tensor(self.map{i}, device=x.device).sum()\n" for i in range(6)) + '''        return self.net(x)


def train(loader, opt):
    model = Sampler(10).cuda()
    for x in loader:
        x = x.cuda(non_blocking=True)
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
'''


def test_a_class_is_walked_once_for_all_the_list_attributes_asked_about(tmp_path: Path, monkeypatch) -> None:
    root = write_project(tmp_path / "p", {"train.py": CLASS})
    walks = []
    original = self_lists.descendants

    def counting(node):
        if type(node) is cst.ClassDef:
            walks.append(node.name.value)
        return original(node)

    monkeypatch.setattr(self_lists, "descendants", counting)
    found = _lint(root, "train.py")
    rows = [row for row, code in found if code == "GPU203"]
    assert rows == [29, 30, 31, 32, 33, 34], found  # each attribute's tensor built from a host list, every call
    # one walk of the class per analysis of the module (its own lint's, and the one read as a loop's caller) for
    # the six attributes; was one per attribute and analysis
    assert set(walks) == {"Sampler"} and len(walks) <= 2, walks


def test_an_importer_folder_is_built_once_for_its_questions(tmp_path: Path, monkeypatch) -> None:
    root = write_project(tmp_path / "p", {"pkg/__init__.py": "", "pkg/utils.py": "def f():\n    pass\n",
                                          "train.py": "from pkg.utils import f\n"})
    resolver = ImportResolver(root)
    importer = (root / "train.py").resolve()
    assert resolver.resolve("pkg.utils", importer) == (root / "pkg" / "utils.py").resolve()
    built = []
    original = pathlib.PurePath.parent

    def counting(self):
        built.append(1)
        return original.fget(self)

    monkeypatch.setattr(pathlib.PurePath, "parent", property(counting))
    answers = {resolver.resolve("pkg.utils", importer) for _ in range(200)}
    assert answers == {(root / "pkg" / "utils.py").resolve()}
    assert built == [], len(built)  # the answer for this importer is kept; was a new folder Path per question
    resolver.add_paths(importer, ())  # a module's `sys.path` folders noted: answers are worked out again
    assert resolver.resolve("pkg.utils", importer) == (root / "pkg" / "utils.py").resolve()


_FAST_WALKERS = ("unset_options.py", "tensor_params.py", "helper_sites.py", "inherited_calls.py",
                 "dispatched_calls.py", "held_parameters.py", "module_attrs.py", "default_device.py", "project.py",
                 "forward.py")


def test_the_project_searches_walk_trees_without_the_standard_library_walk(tmp_path: Path, monkeypatch) -> None:
    root = write_project(tmp_path / "p", {"loss.py": LOSS, "train.py": TRAIN, "model.py": CLASS})
    callers = []
    original = ast.walk

    def counting(node):
        callers.append(Path(sys._getframe(1).f_code.co_filename).name)
        return original(node)

    monkeypatch.setattr(ast, "walk", counting)
    for name in ("loss.py", "train.py", "model.py"):
        _lint(root, name)
    assert not [c for c in callers if c in _FAST_WALKERS], sorted(set(callers))


LOADER = '''import torch
from torch.utils.data import Dataset, DataLoader


class Pairs(Dataset):
    def __init__(self, items, device="cpu"):
        self.items = items
        self.device = device

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        x, y = self.items[i]
        return torch.as_tensor(x), torch.as_tensor(y)


def evaluate(model, loader):
    with torch.no_grad():
        for x, y in loader:
            out = model(x.cuda())
            print(out.argmax(1).eq(y.cuda()).sum().item())
'''


def test_no_analysis_walks_a_python_tree_with_the_standard_library_generators(tmp_path: Path, monkeypatch) -> None:
    """speed17: the analysis modules that still walked CPython trees with `ast.walk` / `ast.iter_child_nodes`
    (about 1.9M generator steps on a cold fairseq lint: trained modules, loader classes, uncalled names, the
    option searches, ...) walk with `gpulint.ast_walk`, whose walk of a module, class or function is kept. Before,
    this lint called the standard library's walk from several of them."""
    root = write_project(tmp_path / "p", {"loss.py": LOSS, "train.py": TRAIN, "model.py": CLASS, "data.py": LOADER})
    callers: list[str] = []
    walk, children = ast.walk, ast.iter_child_nodes

    def counting(original):
        def counted(node):
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_name in ("<genexpr>", "<listcomp>", "<setcomp>",
                                                                 "<dictcomp>"):
                frame = frame.f_back
            path = Path(frame.f_code.co_filename)
            if path.parent.name == "analysis" and path.parent.parent.name == "gpulint":
                callers.append(path.name)
            return original(node)
        return counted

    monkeypatch.setattr(ast, "walk", counting(walk))
    monkeypatch.setattr(ast, "iter_child_nodes", counting(children))
    found = []
    for name in ("loss.py", "train.py", "model.py", "data.py"):
        found.append(_lint(root, name))
    assert callers == [], sorted(set(callers))
    assert found[1] == [(10, "GPU403")] and found[3] == [(22, "GPU101")]  # the findings, unchanged
