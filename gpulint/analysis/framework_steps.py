"""Methods a training framework calls once per step, as data (issue 11, "known-library facts as data").

Many projects never write `for batch in loader:`. A framework owns the loop and calls methods of the project's
classes every step: Lightning calls `training_step` for every batch, the Hugging Face `Trainer` calls
`compute_loss` through `training_step` for every micro-batch, mmengine's train loop calls every hook's
`after_train_iter`, tianshou's `Algorithm.update` hands every sampled batch to `_update_with_batch`:

    class LitModel(L.LightningModule):             # no loop anywhere in the project
        def training_step(self, batch, batch_idx):
            loss = self.loss(self(batch))
            self.history.append(loss.item())       # a device read every step
            return loss

`framework_site` answers, for a method that a top-level class of the linted module defines, whether a base
class of it (direct or not; a library class named through the module's imports, or a project class, named by
its module's dotted path from the project root) is one of the table's classes and the method one of those the
framework calls every step (or every evaluation batch). The method is then per-step code
(`forward.per_step_caller`), and what it reaches through `self` and the module's functions with it. The related
location is the class's own line, and the message names the framework's caller.

Precision first: only hooks a framework calls once per batch are listed; once-per-epoch and once-per-run hooks
(`on_train_epoch_end`, `configure_optimizers`, `before_train_epoch`, `after_run`, SB3's `_on_rollout_end`) are
not. Each entry carries a one-line reason and the source it was read from. A framework's accelerator placement
is its own business (Lightning, the HF Trainer and mmengine move the model and the batches to the accelerator;
tianshou's algorithms run on their networks' device): a module whose class is such a subclass is treated as GPU
code (`steps_a_framework`), as a module whose model a GPU loop runs is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from gpulint.analysis.hierarchy import defining_class, project_bases
from gpulint.analysis.project import ClassSummary, Project

_MAX_DEPTH = 6  # base classes followed up the hierarchy


@dataclass(frozen=True)
class FrameworkStep:
    """`bases`: qualified names of the framework class (its definition and the re-exports users import);
    `methods`: those the framework calls once per step or per evaluation batch; `caller`: the framework's call,
    as the message names it."""

    bases: frozenset
    methods: frozenset
    caller: str
    reason: str
    source: str


def _names(*names: str) -> frozenset:
    return frozenset(names)


_LIGHTNING_MODULE = _names(
    "lightning.pytorch.LightningModule", "lightning.LightningModule", "lightning.pytorch.core.LightningModule",
    "lightning.pytorch.core.module.LightningModule", "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.LightningModule", "pytorch_lightning.core.module.LightningModule",
    "pytorch_lightning.core.lightning.LightningModule")
_LIGHTNING_CALLBACK = _names(
    "lightning.pytorch.Callback", "lightning.Callback", "lightning.pytorch.callbacks.Callback",
    "lightning.pytorch.callbacks.callback.Callback", "pytorch_lightning.Callback",
    "pytorch_lightning.callbacks.Callback", "pytorch_lightning.callbacks.base.Callback",
    "pytorch_lightning.callbacks.callback.Callback")
_BATCH_HOOKS = ("on_train_batch_start", "on_train_batch_end", "on_before_backward", "on_after_backward",
                "on_before_optimizer_step", "on_before_zero_grad", "on_validation_batch_start",
                "on_validation_batch_end", "on_test_batch_start", "on_test_batch_end")
_HF_TRAINER = _names(
    "transformers.Trainer", "transformers.trainer.Trainer", "transformers.Seq2SeqTrainer",
    "transformers.trainer_seq2seq.Seq2SeqTrainer", "trl.SFTTrainer", "trl.trainer.SFTTrainer",
    "trl.trainer.sft_trainer.SFTTrainer")
_HF_CALLBACK = _names("transformers.TrainerCallback", "transformers.trainer_callback.TrainerCallback")
_MMENGINE_HOOK = _names("mmengine.hooks.Hook", "mmengine.hooks.hook.Hook", "mmengine.Hook")
_MMENGINE_MODEL = _names("mmengine.model.BaseModel", "mmengine.model.base_model.BaseModel",
                         "mmengine.model.base_model.base_model.BaseModel")
_TIANSHOU_ALGORITHM = _names(
    "tianshou.algorithm.Algorithm", "tianshou.algorithm.algorithm_base.Algorithm",
    "tianshou.algorithm.OnPolicyAlgorithm", "tianshou.algorithm.algorithm_base.OnPolicyAlgorithm",
    "tianshou.algorithm.OffPolicyAlgorithm", "tianshou.algorithm.algorithm_base.OffPolicyAlgorithm",
    "tianshou.algorithm.OfflineAlgorithm", "tianshou.algorithm.algorithm_base.OfflineAlgorithm")
_TIANSHOU_POLICY = _names("tianshou.algorithm.Policy", "tianshou.algorithm.algorithm_base.Policy")
_TIANSHOU_BASE_POLICY = _names("tianshou.policy.BasePolicy", "tianshou.policy.base.BasePolicy")
_SB3_CALLBACK = _names("stable_baselines3.common.callbacks.BaseCallback")
_SPEECHBRAIN_BRAIN = _names("speechbrain.Brain", "speechbrain.core.Brain")
# BasicSR's model classes (Real-ESRGAN, GFPGAN and other restoration projects subclass them and leave the loop to
# `basicsr.train.train_pipeline`); each as defined in `basicsr/models/<module>.py`
_BASICSR_MODEL = _names(*(f"basicsr.models.{module}.{name}" for module, name in (
    ("base_model", "BaseModel"), ("sr_model", "SRModel"), ("srgan_model", "SRGANModel"),
    ("esrgan_model", "ESRGANModel"), ("video_base_model", "VideoBaseModel"), ("video_gan_model", "VideoGANModel"),
    ("video_recurrent_model", "VideoRecurrentModel"), ("edvr_model", "EDVRModel"), ("swinir_model", "SwinIRModel"),
    ("hifacegan_model", "HiFaceGANModel"), ("stylegan2_model", "StyleGAN2Model"))))

FRAMEWORK_STEPS: tuple[FrameworkStep, ...] = (
    FrameworkStep(
        _LIGHTNING_MODULE, _names("training_step"), "Lightning's fit loop",
        "the training epoch loop calls `training_step` once per batch (inside the optimizer closure with "
        "automatic optimization, directly with manual optimization)",
        "lightning/pytorch/loops/training_epoch_loop.py (advance), loops/optimization/automatic.py "
        "(_training_step), manual.py; LightningModule hooks documentation (fit loop pseudo-code)"),
    FrameworkStep(
        _LIGHTNING_MODULE, _names("validation_step", "test_step", "predict_step"), "Lightning's evaluation loop",
        "the evaluation and prediction loops call these once per batch of the validation/test/predict loaders",
        "lightning/pytorch/loops/evaluation_loop.py (_evaluation_step), prediction_loop.py (_predict_step)"),
    FrameworkStep(
        _LIGHTNING_MODULE | _LIGHTNING_CALLBACK, _names(*_BATCH_HOOKS), "Lightning's fit loop",
        "per-batch hooks: called on the module and on every callback once per training (or evaluation) batch, "
        "around the backward pass and the optimizer step",
        "lightning/pytorch/loops/training_epoch_loop.py, loops/optimization/automatic.py, "
        "core/hooks.py (ModelHooks), callbacks/callback.py; documentation 'Hooks' pseudo-code"),
    FrameworkStep(
        _HF_TRAINER, _names("training_step", "compute_loss"), "the Trainer's training loop",
        "`_inner_training_loop` calls `self.training_step(model, inputs)` for every micro-batch, and "
        "`training_step` calls `self.compute_loss(model, inputs)`",
        "transformers/trainer.py (Trainer._inner_training_loop, Trainer.training_step); documentation "
        "'Trainer' (subclass and override compute_loss / training_step)"),
    FrameworkStep(
        _HF_TRAINER, _names("prediction_step"), "the Trainer's evaluation loop",
        "`evaluation_loop` calls `self.prediction_step(model, inputs, ...)` once per evaluation batch",
        "transformers/trainer.py (Trainer.evaluation_loop, Trainer.prediction_step)"),
    FrameworkStep(
        _HF_CALLBACK, _names("on_step_begin", "on_step_end", "on_substep_end", "on_pre_optimizer_step",
                             "on_optimizer_step"), "the Trainer's training loop",
        "the callback handler calls these events once per optimizer step (on_substep_end per accumulation "
        "micro-batch); `on_log`/`on_evaluate`/`on_epoch_*` are periodic and not listed",
        "transformers/trainer.py (_inner_training_loop: callback_handler.on_step_begin/on_step_end/...), "
        "transformers/trainer_callback.py (TrainerCallback)"),
    FrameworkStep(
        _MMENGINE_HOOK, _names("before_train_iter", "after_train_iter", "before_val_iter", "after_val_iter",
                               "before_test_iter", "after_test_iter"), "mmengine's runner loop",
        "the train/val/test loops' `run_iter` call `runner.call_hook('before_*_iter')` and `'after_*_iter'` "
        "on every registered hook once per iteration; `*_epoch`/`*_run` hooks are not listed",
        "mmengine/runner/loops.py (EpochBasedTrainLoop.run_iter, IterBasedTrainLoop.run_iter, ValLoop.run_iter, "
        "TestLoop.run_iter), mmengine/hooks/hook.py (Hook)"),
    FrameworkStep(
        _MMENGINE_MODEL, _names("train_step", "val_step", "test_step", "forward", "parse_losses"),
        "mmengine's runner loop",
        "`run_iter` calls `runner.model.train_step(data_batch, optim_wrapper)` (val_step/test_step in the "
        "evaluation loops) once per iteration; BaseModel.train_step runs `forward` (mode='loss') and "
        "`parse_losses` each time",
        "mmengine/runner/loops.py (run_iter), mmengine/model/base_model/base_model.py (BaseModel.train_step, "
        "_run_forward, parse_losses)"),
    FrameworkStep(
        _TIANSHOU_ALGORITHM, _names("_update_with_batch", "_preprocess_batch", "_postprocess_batch"),
        "tianshou's Algorithm.update",
        "`Algorithm._update` samples a batch from the buffer and runs `_preprocess_batch`, "
        "`_update_with_batch` and `_postprocess_batch` once per update; the off-policy trainer calls `update` "
        "once per gradient step, the on-policy trainer once per collect cycle",
        "tianshou/algorithm/algorithm_base.py (Algorithm._update, OnPolicyAlgorithm.update, "
        "OffPolicyAlgorithm.update), tianshou/trainer.py (OffPolicyTrainer._sample_and_update, "
        "OnPolicyTrainer._update_step), thu-ml/tianshou f240205"),
    FrameworkStep(
        _TIANSHOU_POLICY, _names("forward"), "tianshou's collector and algorithms",
        "the collector calls the policy on every environment step (`_compute_action_policy_hidden`) and the "
        "algorithms call it in every update",
        "tianshou/data/collector.py (Collector._compute_action_policy_hidden), tianshou/algorithm/modelfree/"
        "dqn.py (_update_with_batch: self.policy(batch)), thu-ml/tianshou f240205"),
    FrameworkStep(
        _TIANSHOU_BASE_POLICY, _names("learn", "process_fn", "post_process_fn", "forward"),
        "tianshou's BasePolicy.update",
        "(tianshou <= 1.x) `BasePolicy.update` samples a batch and runs `process_fn`, `learn` and "
        "`post_process_fn` once per gradient step (off-policy) or collect cycle (on-policy); the collector "
        "calls `forward` on every environment step",
        "tianshou/policy/base.py (BasePolicy.update), tianshou/data/collector.py (Collector.collect), "
        "tianshou 1.x"),
    FrameworkStep(
        _SB3_CALLBACK, _names("_on_step"), "SB3's rollout collection",
        "`collect_rollouts` calls `callback.on_step()` once per environment step, which calls `_on_step()`",
        "stable_baselines3/common/callbacks.py (BaseCallback.on_step), common/on_policy_algorithm.py and "
        "off_policy_algorithm.py (collect_rollouts)"),
    FrameworkStep(
        _SPEECHBRAIN_BRAIN, _names("compute_forward", "compute_objectives", "fit_batch", "evaluate_batch"),
        "SpeechBrain's Brain.fit",
        "`_fit_train` calls `fit_batch` once per batch, which calls `compute_forward` and "
        "`compute_objectives`; `_fit_valid`/`evaluate` call `evaluate_batch` once per batch",
        "speechbrain/core.py (Brain.fit, _fit_train, fit_batch, evaluate_batch)"),
    FrameworkStep(
        _BASICSR_MODEL, _names("feed_data", "optimize_parameters"), "BasicSR's training loop",
        "`train_pipeline` runs `model.feed_data(train_data)` and `model.optimize_parameters(current_iter)` once per "
        "iteration of its prefetcher loop; `validation`, `save` and `get_current_log` run every N iterations "
        "and are not listed",
        "basicsr/train.py (main / train_pipeline: `while train_data is not None:` loop), XPixelGroup/BasicSR"),
)

_ALL_METHODS = frozenset().union(*(s.methods for s in FRAMEWORK_STEPS))
# Table classes that count only as a library's: a project that vendors BasicSR (NAFNet's `basicsr/`) runs its own
# `train.py`, whose loop the analyses see (and may have edited: what it calls is decided there).
_LIBRARY_ONLY = _BASICSR_MODEL
_SHORT_NAMES = sorted({base.rsplit(".", 1)[-1] for step in FRAMEWORK_STEPS for base in step.bases})
_BY_BASE: dict[str, list[FrameworkStep]] = {}
for _step in FRAMEWORK_STEPS:
    for _base in _step.bases:
        _BY_BASE.setdefault(_base, []).append(_step)


def framework_step(base: str, member: str) -> Optional[FrameworkStep]:
    """The table's entry saying the framework class `base` (qualified) calls `member` every step, else None."""
    return next((s for s in _BY_BASE.get(base, ()) if member in s.methods), None)


def framework_site(project: Project, path: Path, owner: str, member: str):
    """A `CallSite` naming the framework that calls `owner.member` every step, when the top-level class `owner`
    of `path` defines `member` and derives from a table class listing it; else None."""
    from gpulint.analysis.forward import _remembered, _resolved

    if member not in _ALL_METHODS or not _frameworks_named(project):
        return None  # the common case: no framework calls that name, or the project names no table class
    path = _resolved(project, path)
    return _remembered(project, ("framework", path, owner, member),
                       lambda: _find_framework_site(project, path, owner, member))


def _frameworks_named(project: Project) -> bool:
    """Some project file names one of the table's classes (`LightningModule`, `Hook`, `Algorithm`, ...): a class
    can derive from one only then (the project's name index, one lookup per class name, answered once)."""
    from gpulint.analysis.forward import _remembered

    return _remembered(project, ("framework names",),
                       lambda: any(project.files_naming(short) for short in _SHORT_NAMES))


def _find_framework_site(project: Project, path: Path, owner: str, member: str):
    from gpulint.analysis.forward import CallSite

    cls = defining_class(project, path, owner, member)
    if cls is None or not cls.bases:
        return None
    for qualified in _cached_bases(project, cls):
        step = framework_step(qualified, member)
        if step is not None:
            return CallSite(path, cls.line, step.caller, f"{owner}.{member}")
    return None


def _cached_bases(project: Project, cls: ClassSummary) -> list[str]:
    """`framework_bases`, once per class (not once per method asked about)."""
    from gpulint.analysis.forward import _remembered, _resolved

    return _remembered(project, ("framework bases", _resolved(project, cls.path), cls.name),
                       lambda: framework_bases(project, cls))


def framework_bases(project: Project, cls: ClassSummary) -> list[str]:
    """The qualified names of the table classes among `cls`'s bases, direct or not (breadth first): the project
    bases of `hierarchy.project_bases`, `_MAX_DEPTH` levels up, and at every level the bases that are no project
    class (a library's `Algorithm`, where the project walk ends: what the table names)."""
    found: list[str] = []
    # the classes whose bases are read: `cls` and its project bases below the last level (whose names are read
    # as bases of the level under them)
    for current in (cls, *project_bases(project, cls, depth=_MAX_DEPTH - 1)):
        for base in current.bases:
            if not base:
                continue
            summary = project.lookup(current.path, base)
            if isinstance(summary, ClassSummary):
                if summary is cls:
                    continue  # a cycle back (a shadowed name): not a base
                qualified = _project_name(project, summary)
                if qualified in _LIBRARY_ONLY:
                    continue  # a vendored copy (NAFNet's `basicsr/`): the project's own loop is in view
            else:
                qualified = project.external_name(current.path, base)
            if qualified is not None and qualified in _BY_BASE and qualified not in found:
                found.append(qualified)
    return found


def _project_name(project: Project, cls: ClassSummary) -> Optional[str]:
    """`tianshou.algorithm.algorithm_base.Algorithm` for the class `Algorithm` of
    `<root>/tianshou/algorithm/algorithm_base.py` (a `src/` layout's `src.` left out)."""
    try:
        relative = cls.path.resolve().relative_to(project.root)
    except ValueError:
        return None
    parts = list(relative.with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([*parts, cls.name]) if parts else None


def steps_a_framework(project: Project, path: Path, classes: list[tuple[str, list[str]]]) -> bool:
    """Some top-level class of the module (name, methods it defines) has a method a table framework calls
    every step: the framework runs it on the accelerator it places the model on."""
    return any(framework_site(project, path, owner, member) is not None
               for owner, methods in classes for member in methods)


def framework_step_call(project: Project, info, name: str, called_in):
    """A call `name(...)` (found by `called_in(method, name)`) in a method of a class of the module `info` that a
    framework calls every step (`framework_site`): a helper the module imports runs every step through it
    (`helper_sites.imported_helper_site`: tianshou's `to_torch_as(...)` in `DQN._update_with_batch`)."""
    for cls in info.classes.values():
        if not cls.bases:
            continue
        for member in cls.methods:
            if member not in _ALL_METHODS:
                continue
            call = called_in(cls.methods[member], name)
            if call is not None and framework_site(project, cls.path, cls.name, member) is not None:
                return call
    return None
