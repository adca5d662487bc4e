"""Walks a cold lint repeated for every question about the same class or module (issue 11, speed16): counted,
not timed. Each test fails on the code before the change; the findings asserted are the ones it gave.

- `unset_options` walked a class three times for every option asked about (`_no_dynamic_assignment`: its loops,
  its `setattr` calls, then its names); now once per class and lint, for all its options.
"""

from __future__ import annotations

import ast
from pathlib import Path

from projects import write_project

from gpulint import ast_walk, runtime
from gpulint.rule import all_rules
from gpulint.runner import lint_source


def _codes() -> frozenset:
    return frozenset(code for code, rule in all_rules().items() if not rule.preview)


def _lint(root: Path, name: str) -> list[tuple[int, str]]:
    path = (root / name).resolve()
    with runtime.batch():
        result = lint_source(path.read_text(), name, _codes(), path=path)
    return sorted((d.location.row, d.code) for d in result.diagnostics)


_OPTIONS = ("autobalance", "debug", "verbose", "track")

LOSS = '''import torch
import torch.nn as nn


class ComputeLoss:
    def __init__(self, model, ''' + ", ".join(f"{o}=False" for o in _OPTIONS) + '''):
        super(ComputeLoss, self).__init__()
        self.balance = [4.0, 1.0, 0.4]
        self.BCEobj = nn.BCEWithLogitsLoss()
''' + "".join(f"        self.{o} = {o}\n" for o in _OPTIONS) + '''        for k in ("gain", "hyp"):
            setattr(self, k, 1.0)

    def __call__(self, p, targets):
        lobj = torch.zeros(1, device=targets.device)
        for i, pi in enumerate(p):
            obji = self.BCEobj(pi, targets)
            lobj += obji * self.balance[i]
''' + "".join(f"            if self.{o}:\n                print(obji.detach().item())\n" for o in _OPTIONS) + '''        return lobj
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


def test_a_class_is_walked_once_for_all_the_options_asked_about(tmp_path: Path, monkeypatch) -> None:
    root = write_project(tmp_path / "p", {"loss.py": LOSS, "train.py": TRAIN})
    from gpulint.analysis import unset_options

    asked = []
    compute = unset_options.UnsetOptions._compute
    monkeypatch.setattr(unset_options.UnsetOptions, "_compute",
                        lambda self, cls, attr: asked.append(attr) or compute(self, cls, attr))
    walks = []
    original = ast_walk.walk

    def counting(node):
        if isinstance(node, ast.ClassDef):
            walks.append(node.name)
        return original(node)

    monkeypatch.setattr(unset_options.ast_walk, "walk", counting)
    found = _lint(root, "loss.py")
    assert sorted(set(asked)) == sorted(_OPTIONS)  # every option was looked at
    assert [code for _, code in found if code == "GPU101"] == []  # and each block is quiet: none is turned on
    # one walk of the class for the four options (was three per option)
    assert walks.count("ComputeLoss") == 1, walks


SETATTR = '''import torch


class Head:
    def __init__(self, debug=False, names=()):
        self.debug = debug
        for k in names:
            setattr(self, k, True)

    def __call__(self, x):
        if self.debug:
            print(x.sum().item())
        return x


def train(loader, optimizer):
    head = Head()
    for x in loader:
        x = x.cuda(non_blocking=True)
        loss = head(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def test_a_setattr_of_a_name_it_cannot_tell_keeps_every_option_reported(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"train.py": SETATTR})
    assert (12, "GPU101") in _lint(root, "train.py")  # `setattr(self, k, ...)` may turn `debug` on
    quiet = SETATTR.replace("for k in names:", "for k in ('a', 'b'):")
    root = write_project(tmp_path / "q", {"train.py": quiet})
    assert (12, "GPU101") not in _lint(root, "train.py")  # only `a` and `b`: `debug` stays off


# -- `Project.lookup`: a batch run's repeated look-ups are answered from a memo ------------------------------------
HELPERS = '''import torch


def sync(x):
    return x.item()


def fine(x):
    return x * 2
'''

LOOP = '''import torch
from helpers import sync, fine


def train(model, loader, optimizer):
    for x in loader:
        x = x.cuda(non_blocking=True)
        loss = model(x).sum()
        a = sync(loss)
        b = sync(loss)
        c = fine(loss)
        d = sync(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def test_a_repeated_look_up_is_computed_at_most_twice_in_a_batch_run(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis.project import Project, recording

    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": LOOP})
    computed = []
    original = Project._lookup

    def counting(self, importer, dotted, depth=0):
        computed.append((Path(importer).name, dotted))
        return original(self, importer, dotted, depth)

    monkeypatch.setattr(Project, "_lookup", counting)
    project = Project(root)
    train = (root / "train.py").resolve()
    with runtime.batch():
        answers = []
        consulted = []
        for _ in range(20):
            with recording() as used:
                answers.append(project.lookup(train, "sync"))
            consulted.append((frozenset(used), frozenset(used.summaries)))
    assert answers[0] is not None and all(a is answers[0] for a in answers)  # the same summary every time
    assert len(set(consulted)) == 1, consulted  # each answer records the modules and summaries it consulted
    assert (root / "helpers.py").resolve() in consulted[0][0]
    # each look-up (`sync` in train.py, then in helpers.py, where it is defined) computed twice, then kept: was 20
    assert sorted(c for c in computed if c[1] == "sync") == [("helpers.py", "sync")] * 2 + [("train.py", "sync")] * 2
    project.forget((root / "helpers.py").resolve())  # a module changed: every kept look-up is dropped
    with runtime.batch():
        assert project.lookup(train, "sync") is not None
    assert computed.count(("train.py", "sync")) == 3
    # outside a batch run (an editor) nothing is kept
    computed.clear()
    for _ in range(3):
        project.lookup(train, "fine")
    assert computed.count(("train.py", "fine")) == 3


def test_findings_through_looked_up_helpers_are_unchanged(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": LOOP})
    found = _lint(root, "train.py")
    assert [row for row, code in found if code == "GPU112"] == [9, 10, 12], found  # `sync`, not `fine`


def test_a_look_up_cut_short_by_a_recursion_is_not_kept(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis.project import Project

    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": LOOP})
    project = Project(root)
    train = (root / "train.py").resolve()
    helpers = (root / "helpers.py").resolve()
    with runtime.batch():
        project._active.add((helpers, "sync"))  # asked while `sync`'s own summary is being computed
        assert project.lookup(train, "sync") is None
        assert project.lookup(train, "sync") is None
        project._active.clear()
        assert project.lookup(train, "sync") is not None  # not the answer met inside the recursion


# -- a module's calls of instances, and its dict literals naming classes: one walk per module -------------------
INSTANCES = '''import torch
from nets import A, B, C


class Trainer:
    def __init__(self):
        self.loss_a = A()
        self.loss_b = nets.B()

    def step(self, x):
        a = A()
        c = C(1)
        y = a(x) + self.loss_a(x) + self.loss_b(x) + c(x)
        return self.loss_a.inner(x) + other.loss_b(y)


registry = {"a": A, "b": nets.B, "f": make().A}
builders = {"c": C}
'''


def _walked_modules(monkeypatch, module) -> list:
    walks = []
    original = ast_walk.walk

    def counting(node):
        if isinstance(node, ast.Module):
            walks.append(node)
        return original(node)

    monkeypatch.setattr(module.ast_walk, "walk", counting)
    return walks


def _instance_calls_walked(tree: ast.Module, cls: str) -> list:
    """The calls `_instance_calls` finds, as the two walks per class before the index found them."""
    names, attrs = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if last == cls:
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
                attrs.update(t.attr for t in node.targets if isinstance(t, ast.Attribute))
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        isinstance(node.func, ast.Name) and node.func.id in names or
        isinstance(node.func, ast.Attribute) and node.func.attr in attrs and isinstance(node.func.value, ast.Name))]


def test_the_calls_of_a_module_s_instances_are_indexed_once(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis import tensor_params
    from gpulint.analysis.project import Project

    root = write_project(tmp_path / "p", {"train.py": INSTANCES})
    info = Project(root).module((root / "train.py").resolve())
    walks = _walked_modules(monkeypatch, tensor_params)
    found = {cls: tensor_params._instance_calls(info, cls) for cls in "ABCD"}
    assert len(walks) == 1, walks  # one walk of the module for the four classes (was two per class)
    code = {cls: sorted(ast.unparse(call) for call in calls) for cls, calls in found.items()}
    # `self.loss_a.inner(x)` is no such call; `other.loss_b(y)` is (an attribute of a name, as it was read)
    assert code == {"A": ["a(x)", "self.loss_a(x)"], "B": ["other.loss_b(y)", "self.loss_b(x)"], "C": ["c(x)"],
                    "D": []}, code
    for cls, calls in found.items():  # the same nodes in the same order as the walks found them
        assert [id(c) for c in calls] == [id(c) for c in _instance_calls_walked(info.tree, cls)]


def test_the_dict_literals_of_a_module_are_indexed_once(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis import forward
    from gpulint.analysis.project import Project

    root = write_project(tmp_path / "p", {"train.py": INSTANCES + "\nloss.backward()\nfor x in loader:\n    pass\n"})
    project = Project(root)
    walks = _walked_modules(monkeypatch, forward)
    answers = {cls: forward._dicts_holding(project, cls) for cls in "ABCD"}
    assert answers == {"A": ["registry"], "B": ["registry"], "C": ["builders"], "D": []}, answers
    assert len(walks) == 1, walks  # one walk of the module for the four classes (was one per class)
