"""Per-step code one call away in another module: a method or function that a training loop elsewhere calls on
every step (not only a model's `forward`), and loaders handed on by generators.

fixtures/projects/samplers: train.py's `Trainer.step` (run every batch) calls `self.sampler.sample(...)` (an
instance of `UniformSampler`, the `or` fallback of a parameter nobody passes, inheriting `sample` from
`TimestepSampler`), the schedule's `loss` through `functools.partial`, and `log_losses(...)`; `report` is only
called every 100 steps and `describe` never.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from projects import check, found

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "samplers"
EXPECTED = {
    ("diffusion/timesteps.py", 13, "GPU410"),  # from_numpy(...).to(device) in the inherited `sample`
    ("diffusion/timesteps.py", 30, "GPU101"),  # .item() in log_losses, called every step
    ("train.py", 30, "GPU112"),  # the call that pays it: `loss` is back-propagated, so `loss.detach()` is a tensor
    ("train.py", 20, "GPU112"),  # `self.step(batch)` in the loop: the method syncs on every call (via log_losses)
    ("train.py", 26, "GPU112"),  # `self.sampler.sample(...)`: a pageable copy of host indices on every call
    ("diffusion/noise.py", 7, "GPU410"),  # the table copied in `gather`, reached from `loss` via partial()
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "samplers"
    shutil.copytree(FIXTURE, root)
    return root


def test_methods_and_functions_called_every_step_elsewhere_are_per_step_code(project: Path):
    """Not reported: `report` (called under `if step % 100 == 0:`) and `describe` (never called)."""
    assert found(check(project, "--no-cache", ".")) == EXPECTED


def test_a_helper_module_named_alone_reads_its_callers(project: Path):
    items = check(project, "--no-cache", "diffusion/timesteps.py")
    assert found(items) == {e for e in EXPECTED if e[0] == "diffusion/timesteps.py"}
    sample = next(d for d in items if d["location"]["row"] == 13)
    assert "`TimestepSampler.sample`, which `self.sampler.sample(...)` runs every step" in sample["message"]
    assert sample["related"][0]["filename"] == "train.py" and sample["related"][0]["location"]["row"] == 26


def test_the_sampler_called_only_periodically_is_quiet(project: Path):
    train = project / "train.py"
    train.write_text(train.read_text().replace(
        "        t, w = self.sampler.sample(x.shape[0], x.device)\n",
        "        t, w = x, x\n        if self.count % 100 == 0:\n"
        "            t, w = self.sampler.sample(x.shape[0], x.device)\n"))
    assert ("diffusion/timesteps.py", 13, "GPU410") not in found(check(project, "--no-cache", "."))


def test_a_subclass_that_overrides_without_super_does_not_run_the_base_method(project: Path):
    (project / "diffusion" / "__init__.py").write_text(
        "from diffusion.noise import NoiseSchedule\n\n\nclass Fixed(NoiseSchedule):\n"
        "    def loss(self, model, x, t):\n        return ((model(x, t) - x) ** 2).mean()\n\n\n"
        "def create_schedule(steps):\n    return Fixed(steps)\n")
    assert ("diffusion/noise.py", 7, "GPU410") not in found(check(project, "--no-cache", "."))


def test_a_subclass_calling_super_runs_the_base_method(project: Path):
    (project / "diffusion" / "__init__.py").write_text(
        "from diffusion.noise import ShiftedSchedule\n\n\ndef create_schedule(steps):\n"
        "    return ShiftedSchedule(steps)\n")
    assert ("diffusion/noise.py", 7, "GPU410") in found(check(project, "--no-cache", "."))


def test_the_helper_edited_to_stop_syncing_is_quiet_on_the_next_cached_run(project: Path):
    assert ("diffusion/timesteps.py", 30, "GPU101") in found(check(project, "diffusion/timesteps.py"))
    train = project / "train.py"
    train.write_text(train.read_text().replace('        log_losses({"loss": loss.detach()})\n', ""))
    assert ("diffusion/timesteps.py", 30, "GPU101") not in found(check(project, "diffusion/timesteps.py"))


GENERATOR_LOOP = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def cycle(iterable):
        while True:
            for batch in iterable:
                yield batch


    def main(model, dataset, opt, device):
        train = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4{pin})
        batches = cycle(train)
        for step in range(100000):
            x, y = next(batches)
            x, y = x.to(device{nb}), y.to(device{nb})
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
""")


def test_a_loader_cycled_through_a_generator_is_still_the_loader(tmp_path: Path):
    (tmp_path / "train.py").write_text(GENERATOR_LOOP.format(pin="", nb=""))
    codes = [(d["location"]["row"], d["code"]) for d in check(tmp_path, "--no-cache", "train.py")]
    assert (12, "GPU201") in codes and codes.count((16, "GPU202")) == 2
    (tmp_path / "train.py").write_text(GENERATOR_LOOP.format(pin=", pin_memory=True", nb=", non_blocking=True"))
    assert check(tmp_path, "--no-cache", "train.py") == []


def test_a_generator_factory_in_another_module_is_a_loader_factory(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "data.py").write_text(textwrap.dedent("""\
        from torch.utils.data import DataLoader


        def load_data(dataset, batch_size):
            loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=1, drop_last=True)
            while True:
                yield from loader


        def load_prepared(accelerator, dataset):
            loader = DataLoader(dataset, batch_size=8)
            model, loader = accelerator.prepare(None, loader)
            return loader
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch
        from data import load_data, load_prepared


        def main(model, dataset, opt, accelerator):
            data = load_data(dataset, 32)
            for step in range(1000):
                batch = next(data).cuda(non_blocking=True)
                loss = model(batch).mean()
                loss.backward()
                opt.step()
            for batch in load_prepared(accelerator, dataset):
                model(batch.cuda(non_blocking=True)).mean().backward()
    """))
    items = check(tmp_path, "--no-cache", "--select", "GPU201,GPU202", "train.py")
    assert [(d["location"]["row"], d["code"]) for d in items] == [(6, "GPU201")]
    assert "`load_data(...)` returns a `DataLoader` without `pin_memory=True`" in items[0]["message"]


def test_a_parameter_annotated_with_a_project_class_runs_its_methods(tmp_path: Path):
    """`def train(trainer: Trainer, ...)`: the trainer is built elsewhere (a CLI entry point), the annotation
    says what it is; its `train_step`, called for every batch, is per-step code."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "trainer.py").write_text(textwrap.dedent("""\
        import torch


        class Trainer:
            def __init__(self, model, optimizer):
                self.model = model.cuda()
                self.optimizer = optimizer

            def train_step(self, sample):
                loss = self.model(sample.cuda(non_blocking=True)).mean()
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                return {"loss": loss.item()}
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        from torch.utils.data import DataLoader

        from trainer import Trainer


        def train(trainer: {annotation}, dataset):
            loader = DataLoader(dataset, batch_size=32, pin_memory=True, num_workers=4)
            for sample in loader:
                log = trainer.train_step(sample)
    """).replace("{annotation}", '"Trainer"'))
    items = check(tmp_path, "--no-cache", "--select", "GPU1", ".")
    assert [(d["filename"], d["location"]["row"]) for d in items] == [("trainer.py", 14)]
    train = tmp_path / "train.py"
    train.write_text(train.read_text().replace('trainer: "Trainer"', "trainer"))
    # unannotated, the receiver is unknown: the method is still reached because it trains (driver_loops) ...
    assert [(d["filename"], d["location"]["row"]) for d in
            check(tmp_path, "--no-cache", "--select", "GPU1", ".")] == [("trainer.py", 14)]
    # ... and a method of that name that does no training work is not
    module = tmp_path / "trainer.py"
    text = module.read_text()
    for line in ("loss.backward()", "self.optimizer.step()", "self.optimizer.zero_grad(set_to_none=True)"):
        text = text.replace(line, "pass")
    module.write_text(text.replace("self.model(sample.cuda(non_blocking=True))", "sample.cuda()"))
    assert check(tmp_path, "--no-cache", "--select", "GPU1", ".") == []
    assert [d["filename"] for d in check(tmp_path, "--no-cache", "--select", "GPU0,GPU1", ".")] == []  # parses
    train.write_text(train.read_text().replace("def train(trainer,", 'def train(trainer: "Trainer",'))
    assert [(d["filename"], d["location"]["row"]) for d in
            check(tmp_path, "--no-cache", "--select", "GPU1", ".")] == [("trainer.py", 14)]  # annotated, in a
    # loop over a loader: per-step whatever the method does
