"""Method calls whose receiver's exact class is not known (branch recall63, analysis/candidate_methods.py).

A generic base declares `_impl: Optional[TImpl]` (a `TypeVar` bound to a project base class) and a factory builds
one of several implementations later; the base's `update` calls `self._impl.update(...)`, whose template method
calls an abstract `self.inner_update(...)` that each implementation overrides. A loop calling the algorithm's
`update` every step pays what every implementation pays (GPU112 at the call); one implementation that does not
pay, a stub, a name only a library object has (a dict's `update`), or an attribute declared with a library type
keeps the call silent.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

BASE = textwrap.dedent("""\
    from abc import ABCMeta, abstractmethod
    from typing import Generic, Optional, TypeVar

    import torch

    TImpl = TypeVar("TImpl", bound="ImplBase")


    class ImplBase(metaclass=ABCMeta):
        def save(self, path):
            pass


    class LearnerBase(Generic[TImpl]):
        _impl: Optional[TImpl]
        meters: dict
        optimizer: "torch.optim.Optimizer"

        def __init__(self, impl: Optional[TImpl] = None):
            self._impl = impl
            self.meters = {}

        def update(self, batch):
            return self._impl.update(batch)

        def record(self, values):
            self.meters.update(values)

        def apply(self):
            self.optimizer.step()
""")

IMPLS = textwrap.dedent("""\
    from abc import abstractmethod

    import torch

    from base import ImplBase


    class Meter:
        def update(self, values):
            return torch.zeros(1, device="cuda").item()

        def step(self):
            return torch.zeros(1, device="cuda").item()


    class StepImplBase(ImplBase):
        def update(self, batch):
            return self.inner_update(batch)

        @abstractmethod
        def inner_update(self, batch):
            pass
""")

IMPL_A = textwrap.dedent("""\
    import torch

    from impls import StepImplBase


    class SyncingImpl(StepImplBase):
        def __init__(self):
            self.net = torch.nn.Linear(2, 1).cuda()

        def inner_update(self, batch):
            loss = torch.ones(1, device="cuda").sum()
            return {{"loss": {read}}}
""")

IMPL_B = textwrap.dedent("""\
    import torch

    from impls import StepImplBase


    class OtherImpl(StepImplBase):
        def inner_update(self, batch):
            value = torch.zeros(1, device="cuda").sum()
            return {{"value": {read}}}
""")

TRAIN = textwrap.dedent("""\
    import torch

    from base import LearnerBase
    from impl_a import SyncingImpl

    algo = LearnerBase(SyncingImpl())
    model = torch.nn.Linear(2, 1).cuda()
    loader = torch.utils.data.DataLoader(torch.randn(8, 2), pin_memory=True)
    for step, batch in enumerate(loader):
        loss = model(batch.cuda(non_blocking=True)).sum()
        loss.backward()
        out = algo.update(batch)
        algo.record(out)
        algo.apply()
""")

STEP, RECORD, APPLY = 12, 13, 14


def _lint(tmp_path: Path, a: str = "loss.item()", b: str = "value.item()") -> set:
    root = write_project(tmp_path / "p", {
        "base.py": BASE, "impls.py": IMPLS, "impl_a.py": IMPL_A.format(read=a), "impl_b.py": IMPL_B.format(read=b),
        "train.py": TRAIN,
    })
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU112", "train.py")
    return {(row, code) for _, row, code in found(items)}, items


def test_every_implementation_syncs_reported_at_the_step_call(tmp_path: Path) -> None:
    keys, items = _lint(tmp_path)
    assert (STEP, "GPU112") in keys
    message = next(d["message"] for d in items if d["location"]["row"] == STEP)
    assert "SyncingImpl.inner_update" in message  # the candidate that pays is named


def test_one_implementation_without_the_sync_keeps_it_silent(tmp_path: Path) -> None:
    keys, _ = _lint(tmp_path, b="0.0")
    assert (STEP, "GPU112") not in keys


def test_library_receivers_are_not_resolved_by_name(tmp_path: Path) -> None:
    # `self.meters.update(values)` (`meters: dict`) and `self.optimizer.step()` (`torch.optim.Optimizer`) name no
    # project class: the project's `Meter.update`/`Meter.step`, which sync, are not candidates
    keys, _ = _lint(tmp_path)
    assert (STEP, "GPU112") in keys
    assert (RECORD, "GPU112") not in keys
    assert (APPLY, "GPU112") not in keys


def test_type_var_bound_is_the_declared_class(tmp_path: Path) -> None:
    # `Optional[TImpl]` with `TImpl = TypeVar("TImpl", bound="ImplBase")`, written here or imported
    import ast

    from gpulint.analysis.project import Project, annotation_class

    root = write_project(tmp_path / "q", {
        "base.py": BASE, "user.py": "from base import TImpl\nT2 = 1\n",
    })
    project = Project(root)
    found_here = annotation_class(project, root / "base.py", ast.parse("Optional[TImpl]", mode="eval").body)
    found_there = annotation_class(project, root / "user.py", ast.parse("TImpl", mode="eval").body)
    assert found_here is not None and found_here.name == "ImplBase"
    assert found_there is not None and found_there.name == "ImplBase"
    assert annotation_class(project, root / "user.py", ast.parse("T2", mode="eval").body) is None


FACTORY_TRAIN = textwrap.dedent("""\
    import torch

    from impls import StepImplBase


    def make() -> StepImplBase:
        return None


    impl = make()
    model = torch.nn.Linear(2, 1).cuda()
    loader = torch.utils.data.DataLoader(torch.randn(8, 2), pin_memory=True)
    for step, batch in enumerate(loader):
        loss = model(batch.cuda(non_blocking=True)).sum()
        loss.backward()
        out = impl.inner_update(batch)
""")


def test_abstract_method_of_a_factory_result_runs_the_overrides(tmp_path: Path) -> None:
    # `make() -> StepImplBase`: the loop's `impl.inner_update(batch)` is abstract there; every override reads
    for b, reported in (("value.item()", True), ("0.0", False)):
        root = write_project(tmp_path / b.replace("(", "").replace(")", "").replace(".", "_"), {
            "base.py": BASE, "impls.py": IMPLS, "impl_a.py": IMPL_A.format(read="loss.item()"),
            "impl_b.py": IMPL_B.format(read=b), "train.py": FACTORY_TRAIN,
        })
        keys = {(row, code) for _, row, code in found(check(root, "--no-cache", "--exit-zero", "--select",
                                                                 "GPU112", "train.py"))}
        assert ((16, "GPU112") in keys) is reported
