"""Hooks a trainer holds in a list and calls by the method's own name (branch recall61,
`analysis/event_hooks.listed_site`).

A trainer's per-step method runs `for h in self.hooks: h.after_step()`; the hooks are built from the
configuration (a registry), so no call names their classes. A hook class of another module whose base the
trainer's module imports defines `after_step`: that method runs every step, and its `.cpu()` copies are
reported (at the hook, with the trainer's loop call as the related location). Not: a hook method run from the
list only once per epoch (`after_epoch`), a hook whose per-step body is periodic, a hook list iterated only
outside the step loop, a class the trainer's module does not see, or a call on something that is no loop
variable of a collection.
"""

from __future__ import annotations

from projects import check, found, write_project

HOOKS = """\
import torch


class HookBase:
    trainer = None

    def after_step(self):
        pass

    def after_epoch(self):
        pass


class PredictionRecorder(HookBase):
    def __init__(self):
        self.preds = []

    def after_step(self):
        self.preds.append(self.trainer.pred.detach().cpu())

    def after_epoch(self):
        self.preds.append(self.trainer.pred.detach().cpu())
        torch.cuda.empty_cache()


class PeriodicRecorder(HookBase):
    def __init__(self, every=100):
        self.every = every
        self.preds = []

    def after_step(self):
        if self.trainer.iter % self.every == 0:
            self.preds.append(self.trainer.pred.detach().cpu())


HOOKS = {"PredictionRecorder": PredictionRecorder, "PeriodicRecorder": PeriodicRecorder}


def build_hooks(cfg):
    return [HOOKS[c["type"]]() for c in cfg]
"""

TRAINER = """\
import torch

from hooks import HookBase, build_hooks


class Trainer:
    def __init__(self, model, loader, cfg):
        self.model = model
        self.loader = loader
        self.hooks = []
        for h in build_hooks(cfg):
            assert isinstance(h, HookBase)
            h.trainer = self
            self.hooks.append(h)
        self.device = torch.device("cuda")
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.iter = 0

    def fit(self, epochs):
        for epoch in range(epochs):
            for xb, yb in self.loader:
                self.run_step(xb.to(self.device), yb.to(self.device))
                self.after_step()
            self.after_epoch()

    def run_step(self, xb, yb):
        self.pred = self.model(xb)
        loss = torch.nn.functional.mse_loss(self.pred, yb)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        self.iter += 1

    def after_step(self):
        for h in self.hooks:
            h.after_step()

    def after_epoch(self):
        for h in self.hooks:
            h.after_epoch()
"""

RUN = """\
import torch

from trainer import Trainer

model = torch.nn.Linear(4, 1).cuda()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1)),
                                     batch_size=8, pin_memory=True)
Trainer(model, loader, [{"type": "PredictionRecorder"}, {"type": "PeriodicRecorder"}]).fit(3)
"""


def _lint(root, modules) -> set:
    items = check(write_project(root, modules), "--no-cache", "--exit-zero", ".")
    return {key for key in found(items) if key[0] == "hooks.py"}


def test_a_hook_run_from_the_trainers_list_every_step(tmp_path):
    modules = {"hooks.py": HOOKS, "trainer.py": TRAINER, "run.py": RUN}
    # not `after_epoch` (line 22), not the periodic hook (line 33)
    assert _lint(tmp_path, modules) == {("hooks.py", 19, "GPU104")}


def test_the_related_location_is_the_trainers_call(tmp_path):
    modules = {"hooks.py": HOOKS, "trainer.py": TRAINER, "run.py": RUN}
    items = check(write_project(tmp_path, modules), "--no-cache", "--exit-zero", ".")
    hit = next(i for i in items if i["filename"].endswith("hooks.py") and i["code"] == "GPU104")
    assert "`PredictionRecorder.after_step`, which `h.after_step(...)` runs every step" in hit["message"]
    assert [(r["filename"], r["location"]["row"]) for r in hit["related"]] == [("trainer.py", 36)]


def test_a_list_iterated_in_a_direct_loop_of_the_step(tmp_path):
    trainer = TRAINER.replace("                self.after_step()\n",
                              "                for hook in self.hooks:\n                    hook.after_step()\n")
    modules = {"hooks.py": HOOKS, "trainer.py": trainer, "run.py": RUN}
    assert _lint(tmp_path, modules) == {("hooks.py", 19, "GPU104")}


def test_a_hook_list_iterated_only_once_per_epoch(tmp_path):
    trainer = TRAINER.replace("                self.after_step()\n", "").replace(
        "            self.after_epoch()\n", "            self.after_epoch()\n            self.after_step()\n")
    modules = {"hooks.py": HOOKS, "trainer.py": trainer, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()


def test_a_hook_class_the_trainer_does_not_see(tmp_path):
    trainer = TRAINER.replace("from hooks import HookBase, build_hooks\n", "from registry import build_hooks\n") \
        .replace("            assert isinstance(h, HookBase)\n", "")
    registry = "from hooks import build_hooks\n"
    modules = {"hooks.py": HOOKS, "trainer.py": trainer, "registry.py": registry, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()


def test_a_call_on_no_loop_variable(tmp_path):
    trainer = TRAINER.replace("        for h in self.hooks:\n            h.after_step()\n",
                              "        h = self.hooks[0]\n        h.after_step()\n", 1)
    modules = {"hooks.py": HOOKS, "trainer.py": trainer, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()


def test_a_loop_over_the_list_that_is_itself_the_hot_loop(tmp_path):
    # `for i, model in enumerate(self._models): model.save_checkpoint(...)` (accelerate's `save_state`): a loop
    # judged hot for what its body runs, called once; its elements' methods are not run every training step
    trainer = TRAINER.replace("                self.after_step()\n", "").replace(
        "            self.after_epoch()\n", "            self.after_epoch()\n        self.after_step()\n").replace(
        "        for h in self.hooks:\n            h.after_step()\n",
        "        for h in self.hooks:\n            h.after_step()\n            self.run_step(self.xb, self.yb)\n", 1)
    modules = {"hooks.py": HOOKS, "trainer.py": trainer, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()
