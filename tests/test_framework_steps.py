"""Methods a training framework calls every step (gpulint/analysis/framework_steps.py; issue 11, heldout10's
tianshou, heldout9's sentence-transformers trainer, heldout2's mmengine hooks).

No file of these projects holds a step loop: the framework does (Lightning's fit loop, the Hugging Face
Trainer, mmengine's runner, tianshou's `Algorithm.update`), and calls the project's `training_step`,
`compute_loss`, `after_train_iter` or `_update_with_batch` once per batch. Their host reads are per-step costs,
reported with the class as related location and the framework named in the message. Hooks a framework calls
once per epoch or once per run stay quiet, and so does a periodic read inside a per-step method. The modules
name no device: the framework places the model on the accelerator.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

from gpulint.analysis.framework_steps import FRAMEWORK_STEPS, framework_step

LIGHTNING = textwrap.dedent("""\
    import lightning as L
    import torch


    class Classifier(L.LightningModule):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.history = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.net(x), y)
            self.history.append(loss.item())
            if batch_idx % 100 == 0:
                print(loss.item())
            return loss

        def on_train_epoch_end(self):
            total = torch.stack(self.outputs).mean()
            print(total.item())

        def summarize(self, loss):
            return loss.item()
""")


def _lint(tmp_path, modules: dict[str, str]) -> set:
    return found(check(write_project(tmp_path / "p", modules)))


def test_lightning_training_step_is_per_step_code(tmp_path):
    findings = _lint(tmp_path, {"model.py": LIGHTNING})
    assert ("model.py", 14, "GPU101") in findings  # every batch
    assert ("model.py", 16, "GPU101") not in findings  # under `if batch_idx % 100 == 0:`
    assert ("model.py", 21, "GPU101") not in findings  # once per epoch
    assert ("model.py", 24, "GPU101") not in findings  # a method no framework calls


def test_message_names_the_framework(tmp_path):
    items = check(write_project(tmp_path / "p", {"model.py": LIGHTNING}))
    item = next(d for d in items if d["location"]["row"] == 14 and d["code"] == "GPU101")
    assert "Classifier.training_step" in item["message"] and "Lightning" in item["message"]


def test_same_method_name_on_an_unrelated_base_is_not_per_step(tmp_path):
    other = LIGHTNING.replace("import lightning as L", "import mylib as L")
    assert ("model.py", 14, "GPU101") not in _lint(tmp_path, {"model.py": other})


def test_pytorch_lightning_alias_and_callback_hook(tmp_path):
    module = textwrap.dedent("""\
        import pytorch_lightning as pl
        import torch


        class GradNorm(pl.Callback):
            def on_after_backward(self, trainer, pl_module):
                norm = torch.stack([p.grad.norm() for p in pl_module.parameters()]).sum()
                self.last = norm.item()

            def on_fit_end(self, trainer, pl_module):
                norm = torch.stack([p.norm() for p in pl_module.parameters()]).sum()
                self.final = norm.item()
    """)
    findings = _lint(tmp_path, {"callbacks.py": module})
    assert ("callbacks.py", 8, "GPU101") in findings
    assert ("callbacks.py", 12, "GPU101") not in findings


def test_hf_trainer_compute_loss_override(tmp_path):
    module = textwrap.dedent("""\
        import torch
        from transformers import Trainer


        class WeightedTrainer(Trainer):
            def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                outputs = model(**inputs)
                loss = outputs.loss
                if torch.isnan(loss):
                    print("nan")
                return loss
    """)
    assert ("trainer.py", 9, "GPU108") in _lint(tmp_path, {"trainer.py": module})


def test_mmengine_hook_after_train_iter_but_not_after_train_epoch(tmp_path):
    module = textwrap.dedent("""\
        import torch
        from mmengine.hooks import Hook


        class LossWatch(Hook):
            def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
                loss = torch.stack(list(outputs.values())).sum()
                self.values.append(loss.item())

            def after_train_epoch(self, runner):
                loss = torch.stack(self.values_t).mean()
                print(loss.item())
    """)
    findings = _lint(tmp_path, {"hooks.py": module})
    assert ("hooks.py", 8, "GPU101") in findings
    assert ("hooks.py", 12, "GPU101") not in findings


# A library that is itself the project (tianshou's own algorithms): the framework class is a project class,
# named by its module's path from the root; the subclasses use generic bases (`OffPolicyAlgorithm[TPolicy]`).
BASE = textwrap.dedent("""\
    from typing import Generic, TypeVar

    import torch

    TPolicy = TypeVar("TPolicy")


    class Algorithm(torch.nn.Module, Generic[TPolicy]):
        def update(self, buffer, sample_size):
            batch, indices = buffer.sample(sample_size)
            return self._update_with_batch(batch)

        def _update_with_batch(self, batch):
            raise NotImplementedError


    class OffPolicyAlgorithm(Algorithm[TPolicy]):
        pass
""")

ALGORITHM = textwrap.dedent("""\
    import torch

    from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm


    class QLearning(OffPolicyAlgorithm[object]):
        def _update_with_batch(self, batch):
            q = self.policy(batch)
            loss = (q - torch.as_tensor(batch.returns)).pow(2).mean()
            self.optim.step(loss)
            return {"loss": loss.item()}

        def describe(self, loss):
            return loss.item()
""")


def test_project_framework_class_through_a_generic_base(tmp_path):
    findings = _lint(tmp_path, {"tianshou/__init__.py": "", "tianshou/algorithm/__init__.py": "",
                                "tianshou/algorithm/algorithm_base.py": BASE,
                                "tianshou/algorithm/dqn.py": ALGORITHM})
    assert ("tianshou/algorithm/dqn.py", 11, "GPU101") in findings
    assert ("tianshou/algorithm/dqn.py", 14, "GPU101") not in findings


def test_same_shapes_in_a_package_of_another_name_stay_quiet(tmp_path):
    findings = _lint(tmp_path, {"rl/__init__.py": "", "rl/algorithm/__init__.py": "",
                                "rl/algorithm/algorithm_base.py": BASE,
                                "rl/algorithm/dqn.py": ALGORITHM.replace("from tianshou.", "from rl.")})
    assert ("rl/algorithm/dqn.py", 11, "GPU101") not in findings


def test_table_entries_are_reviewed_data():
    per_epoch = {"on_train_epoch_end", "on_validation_epoch_end", "configure_optimizers", "after_train_epoch",
                 "before_train_epoch", "after_run", "before_run", "on_epoch_end", "on_log", "on_evaluate",
                 "_on_rollout_end", "on_fit_start", "on_fit_end"}
    for step in FRAMEWORK_STEPS:
        assert step.reason and step.source and step.caller and step.bases and step.methods
        assert not step.methods & per_epoch
    assert framework_step("lightning.pytorch.LightningModule", "training_step") is not None
    assert framework_step("lightning.pytorch.LightningModule", "on_train_epoch_end") is None
    assert framework_step("torch.nn.Module", "forward") is None


# A base-class helper a subclass's per-step method calls through `self` (analysis/inherited_calls.py).
HELPERS = textwrap.dedent("""\
    import torch

    from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm


    class ReturnsMixin(OffPolicyAlgorithm[object]):
        def n_step_target(self, batch):
            target = torch.amax(self.critic(batch.obs_next.to(self.device)), dim=1)
            return target.cpu().numpy()

        def describe(self, batch):
            return torch.amax(self.critic(batch.obs.to(self.device)), dim=1).cpu().numpy()

        def reset(self, buffers):
            for buffer in buffers:  # a module with a loop of its own: parsed (a loop-free one is not looked at)
                buffer.clear()
""")

LEARNER = textwrap.dedent("""\
    from tianshou.algorithm.helpers import ReturnsMixin


    class Learner(ReturnsMixin):
        def _update_with_batch(self, batch):
            target = self.n_step_target(batch)
            return target
""")


def test_base_method_called_through_self_by_a_per_step_override(tmp_path):
    findings = _lint(tmp_path, {"tianshou/__init__.py": "", "tianshou/algorithm/__init__.py": "",
                                "tianshou/algorithm/algorithm_base.py": BASE,
                                "tianshou/algorithm/helpers.py": HELPERS,
                                "tianshou/algorithm/learner.py": LEARNER})
    assert ("tianshou/algorithm/helpers.py", 9, "GPU104") in findings
    assert ("tianshou/algorithm/helpers.py", 12, "GPU104") not in findings  # no per-step method calls it


def _chain(levels: int) -> dict[str, str]:
    """`model.py`'s Classifier `levels` project classes below `L.LightningModule` (one module each)."""
    modules = {"model.py": LIGHTNING.replace("class Classifier(L.LightningModule):",
                                             "from base1 import Base1\n\n\nclass Classifier(Base1):")}
    for n in range(1, levels + 1):
        parent = "L.LightningModule" if n == levels else f"Base{n + 1}"
        head = "import lightning as L\n" if n == levels else f"from base{n + 1} import Base{n + 1}\n"
        modules[f"base{n}.py"] = f"{head}\n\nclass Base{n}({parent}):\n    pass\n"
    return modules


def test_framework_base_read_five_project_classes_up(tmp_path):
    # the framework's walk reads bases further up than the other project-class searches (hierarchy.DEPTH): a
    # Lightning module under five levels of project classes is still per-step code; six is beyond the bound
    findings = _lint(tmp_path / "five", _chain(5))
    assert ("model.py", 17, "GPU101") in findings
    assert ("model.py", 17, "GPU101") not in _lint(tmp_path / "six", _chain(6))
