"""What well-known libraries do with the tensors a training loop hands them: one reviewed table, as data.

Rules consult this table instead of special-casing library calls in visitors. Each entry says what a call does
to the host-device timeline, why, and where that was read (the library's documentation or source). A call that
is not in the table is unknown, never assumed to sync.

Effects:
- SYNCS: the call reads a device tensor back to the host (an implicit `.item()` / `.cpu()`), every time it runs.
- SYNCS_TENSOR_ARGS: only tensors passed as arguments are read back (numbers cost nothing).
- DEVICE_BATCHES: the object it returns yields batches already on the device (so `.to(device)` of its batches is a
  no-op and pinning/non_blocking advice does not apply).
- NO_HOST_SYNC: looks like a sync but is not one by itself (queued on a CUDA stream; the host does not wait).
- PER_PARAMETER_LOOP: no host sync, but a Python loop over the model's tensors, a few kernels per tensor, every
  call (GPU411 reports it where it runs every step).
- RETURNS_TENSOR_ARGS: no host sync by itself, and hands back the tensors it is given (gathered, still on the
  device): what it returns is as much a device tensor as its first argument.

`RETURNS` names the library class a factory function returns (`evaluate.load(...)` builds an
`EvaluationModule`), so `metric = evaluate.load("glue")` then `metric.add_batch(...)` finds the method's fact.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional


class Effect(enum.Enum):
    SYNCS = "syncs"
    SYNCS_TENSOR_ARGS = "syncs-tensor-args"
    DEVICE_BATCHES = "device-batches"
    NO_HOST_SYNC = "no-host-sync"
    RETURNS_TENSOR_ARGS = "returns-tensor-args"
    PER_PARAMETER_LOOP = "per-parameter-loop"


@dataclass(frozen=True)
class LibraryFact:
    """`target`: a qualified function (`torch.distributed.all_reduce`) or `Class.method` of a library class,
    matched by the method name on a receiver built from (or named like) that class."""

    target: str
    effect: Effect
    reason: str
    source: str
    # A case the effect does not hold in, as the consumer checks it: "fused-optimizer" (the first argument is
    # an optimizer built with `fused=True`, whose step takes the scale and found_inf on the device);
    # "nan-check-disabled" (`nan_strategy="disable"`); "nonfinite-check-off" (`error_if_nonfinite=False`, or no
    # `max_norm`: clipping by value computes no norm); "validate-args-off" (`validate_args=False`, or the module
    # calls `Distribution.set_default_validate_args(False)`); "averaged-on-host" (every `AveragedModel(...)` the
    # receiver is built from passes no `device=`, or a CPU one, and is not moved: its step counter stays on the host).
    unless: str = ""


FACTS: tuple[LibraryFact, ...] = (
    LibraryFact("torch.amp.GradScaler.get_scale", Effect.SYNCS,
                "the scale lives in a device tensor; get_scale() returns it as a Python float with .item()",
                "torch/amp/grad_scaler.py (GradScaler.get_scale)"),
    LibraryFact("torch.amp.GradScaler.state_dict", Effect.SYNCS,
                "state_dict() stores get_scale() under 'scale', reading the device scale back",
                "torch/amp/grad_scaler.py (GradScaler.state_dict)"),
    LibraryFact("torch.amp.GradScaler.step", Effect.SYNCS,
                "with scaling enabled, step() tests found_inf with `.item()` (_maybe_opt_step) before "
                "optimizer.step(), once per call; a fused optimizer (_step_supports_amp_scaling) skips the read",
                "torch/amp/grad_scaler.py (GradScaler.step, GradScaler._maybe_opt_step), read in torch 2.13",
                unless="fused-optimizer"),
    LibraryFact("timm.utils.NativeScaler.__call__", Effect.SYNCS,
                "`loss_scaler(loss, optimizer, ...)` runs backward through its GradScaler and then, with "
                "need_update=True (the default), `self._scaler.step(optimizer)`, which tests found_inf with "
                "`.item()` once per call; a fused optimizer skips the read",
                "timm/utils/cuda.py (NativeScaler.__call__), pytorch-image-models aa4b5850; "
                "torch/amp/grad_scaler.py (GradScaler._maybe_opt_step)",
                unless="fused-optimizer"),
    LibraryFact("timm.utils.ApexScaler.__call__", Effect.SYNCS,
                "`loss_scaler(loss, optimizer, ...)` runs backward inside apex's `amp.scale_loss(loss, optimizer)`, "
                "whose exit unscales the gradients with dynamic loss scaling and tests the overflow buffer on the "
                "host (one device-to-host read per call), then steps the optimizer",
                "timm/utils/cuda.py (ApexScaler.__call__), pytorch-image-models aa4b5850; apex/amp/handle.py "
                "(scale_loss), apex/amp/scaler.py (LossScaler: the overflow buffer read back, 'one D2H memcopy "
                "and sync')"),
    LibraryFact("timm.utils.ModelEma.update", Effect.PER_PARAMETER_LOOP,
                "update() loops over the EMA's state_dict in Python and runs `ema_v.copy_(ema_v * decay + "
                "(1 - decay) * model_v)` for each tensor: three kernels per tensor, every call",
                "timm/utils/model_ema.py (ModelEma.update), pytorch-image-models aa4b5850"),
    LibraryFact("timm.utils.ModelEmaV2.update", Effect.PER_PARAMETER_LOOP,
                "_update() zips the two state_dicts in Python and runs `ema_v.copy_(update_fn(ema_v, model_v))` for "
                "each tensor, every call (ModelEmaV3 with foreach=True, its default, uses torch._foreach_lerp_)",
                "timm/utils/model_ema.py (ModelEmaV2._update, ModelEmaV3.update), pytorch-image-models aa4b5850"),
    LibraryFact("torch_ema.ExponentialMovingAverage.update", Effect.PER_PARAMETER_LOOP,
                "update() zips its shadow parameters with the model's in a Python `for` and runs an in-place "
                "`s_param.sub_(one_minus_decay * (s_param - param))` (two to three kernels) for each parameter, "
                "every call",
                "https://github.com/fadel/pytorch_ema/blob/master/torch_ema/ema.py (ExponentialMovingAverage.update)"),
    LibraryFact("torch.amp.GradScaler.update", Effect.NO_HOST_SYNC,
                "found_inf tensors are moved with non_blocking=True and the scale is updated on the device by "
                "torch._amp_update_scale_: no host read",
                "torch/amp/grad_scaler.py (GradScaler.update), read in torch 2.13"),
    LibraryFact("torch.utils.tensorboard.SummaryWriter.add_scalar", Effect.SYNCS_TENSOR_ARGS,
                "a tensor value goes through make_np, which calls .detach().cpu().numpy()",
                "torch/utils/tensorboard/_utils.py (make_np, _prepare_pytorch); summary.scalar"),
    LibraryFact("torch.utils.tensorboard.SummaryWriter.add_scalars", Effect.SYNCS_TENSOR_ARGS,
                "each value of the dict goes through make_np (.cpu().numpy())",
                "torch/utils/tensorboard/writer.py (add_scalars)"),
    LibraryFact("torch.utils.tensorboard.SummaryWriter.add_histogram", Effect.SYNCS_TENSOR_ARGS,
                "the values are converted with make_np (.cpu().numpy()) when the call is made",
                "torch/utils/tensorboard/summary.py (histogram)"),
    LibraryFact("tensorboardX.SummaryWriter.add_scalar", Effect.SYNCS_TENSOR_ARGS,
                "tensorboardX's writer turns the value into an array with make_np, which copies a torch tensor "
                "to the host with .cpu().numpy() at the call",
                "tensorboardX/writer.py (SummaryWriter.add_scalar -> summary.scalar), tensorboardX/x2num.py "
                "(make_np, prepare_pytorch)"),
    LibraryFact("tensorboardX.SummaryWriter.add_scalars", Effect.SYNCS_TENSOR_ARGS,
                "each value of the dict goes through tensorboardX's make_np (.cpu().numpy())",
                "tensorboardX/writer.py (SummaryWriter.add_scalars), tensorboardX/x2num.py (make_np)"),
    LibraryFact("tensorboardX.SummaryWriter.add_histogram", Effect.SYNCS_TENSOR_ARGS,
                "the values are converted with tensorboardX's make_np (.cpu().numpy()) when the call is made",
                "tensorboardX/writer.py (SummaryWriter.add_histogram), tensorboardX/x2num.py (make_np)"),
    LibraryFact("wandb.log", Effect.SYNCS_TENSOR_ARGS,
                "logged values are made JSON-friendly in the calling process; torch tensors are copied to the "
                "host (.cpu()/.item()) at the call",
                "wandb/sdk/data_types/utils.py (val_to_json) and wandb/util.py (json_friendly)"),
    LibraryFact("tqdm.tqdm.set_postfix", Effect.SYNCS_TENSOR_ARGS,
                "non-number values are turned into text with str(), and str(tensor) copies it to the host",
                "tqdm/std.py (tqdm.set_postfix)"),
    LibraryFact("lightning.pytorch.LightningModule.log", Effect.NO_HOST_SYNC,
                "the tensor is stored as is; Lightning converts logged values when a logger writes them "
                "(every log_every_n_steps), not at the call; sync_dist adds an all-reduce, not a host read",
                "Lightning docs: 'Logging' (log_every_n_steps, sync_dist); lightning/pytorch/core/module.py"),
    LibraryFact("accelerate.Accelerator.prepare", Effect.DEVICE_BATCHES,
                "prepared DataLoaders are DataLoaderShard objects that move each batch to the accelerator's "
                "device (send_to_device) before yielding it",
                "Accelerate docs: Accelerator.prepare; accelerate/data_loader.py (DataLoaderShard.__iter__)"),
    LibraryFact("lightning.fabric.Fabric.setup_dataloaders", Effect.DEVICE_BATCHES,
                "each loader is wrapped in a _FabricDataLoader whose __iter__ yields "
                "move_data_to_device(batch, fabric.device) (move_to_device=True by default)",
                "src/lightning/fabric/fabric.py:412 (Fabric.setup_dataloaders, _setup_dataloader); "
                "src/lightning/fabric/wrappers.py:316-327 (_FabricDataLoader.__iter__), Lightning 7f0c343"),
    LibraryFact("lightning.fabric.Fabric.clip_gradients", Effect.SYNCS,
                "with max_norm, error_if_nonfinite=True by default is passed to torch.nn.utils.clip_grad_norm_, "
                "which tests the total norm for NaN/inf in a Python `if` (a host read) on every call",
                "src/lightning/fabric/fabric.py:527-579 (Fabric.clip_gradients, error_if_nonfinite: bool = True); "
                "src/lightning/fabric/strategies/strategy.py:375-387 (clip_gradients_norm), Lightning 7f0c343; "
                "torch/nn/utils/clip_grad.py (clip_grad_norm_)",
                unless="nonfinite-check-off"),
    LibraryFact("ultralytics.utils.ops.Profile.__enter__", Effect.SYNCS,
                "the timer calls torch.cuda.synchronize() when its device is CUDA, on entry and on exit",
                "ultralytics/utils/ops.py (Profile.__enter__, Profile.__exit__, Profile.time)"),
    LibraryFact("ultralytics.utils.ops.Profile.__exit__", Effect.SYNCS,
                "the timer calls torch.cuda.synchronize() when its device is CUDA, on entry and on exit",
                "ultralytics/utils/ops.py (Profile.__enter__, Profile.__exit__, Profile.time)"),
    LibraryFact("accelerate.Accelerator.check_trigger", Effect.SYNCS,
                "reduces the trigger flag tensor across processes and tests flag_tensor.item() >= 1 on every "
                "call",
                "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py "
                "(Accelerator.check_trigger)"),
    LibraryFact("accelerate.Accelerator.wait_for_everyone", Effect.SYNCS,
                "in a multi-process run it calls torch.distributed.barrier() (PartialState.wait_for_everyone); with "
                "NCCL the barrier is an all-reduce the host waits for, so it blocks until the device work queued "
                "before it is done, on every call (a single process: a no-op)",
                "https://github.com/huggingface/accelerate/blob/main/src/accelerate/state.py "
                "(PartialState.wait_for_everyone); PyTorch docs: torch.distributed.barrier"),
    LibraryFact("torch.distributed.barrier", Effect.SYNCS,
                "blocks the calling process until the whole group enters it; with NCCL it runs an all-reduce and "
                "waits for it on the host (WorkNCCL::synchronize of the barrier's tensor), so the host also waits "
                "for the device work queued before it",
                "PyTorch docs: torch.distributed.barrier; torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (barrier)"),
    LibraryFact("torch.optim.swa_utils.AveragedModel.update_parameters", Effect.SYNCS,
                "update_parameters() tests its step counter, the `n_averaged` buffer, in Python twice per call "
                "(`copy_param = bool(self.n_averaged == 0)`, then `if self.n_averaged > 0:`); the buffer is made on "
                "the `device=` the averaged copy is built for, so on a GPU each test reads the device back",
                "torch/optim/swa_utils.py (AveragedModel.__init__: register_buffer('n_averaged', torch.tensor(0, "
                "..., device=device)); AveragedModel.update_parameters), read in torch 2.13",
                unless="averaged-on-host"),
    LibraryFact("ema_pytorch.EMA.update", Effect.SYNCS,
                "update() starts with `step = self.step.item()` on the EMA's step buffer (a device tensor once the "
                "EMA is moved to the GPU), before its update_every test, and reads `self.initted.item()`",
                "https://github.com/lucidrains/ema-pytorch/blob/main/ema_pytorch/ema_pytorch.py (EMA.update)"),
    LibraryFact("accelerate.Accelerator.gather_for_metrics", Effect.RETURNS_TENSOR_ARGS,
                "tensors go through gather (all_gather queued on the device) and are sliced by the dataloader "
                "remainder, a Python int: no host read; only non-tensor objects take gather_object (pickling)",
                "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py "
                "(Accelerator.gather_for_metrics)"),
    LibraryFact("evaluate.EvaluationModule.add_batch", Effect.SYNCS_TENSOR_ARGS,
                "the batch is encoded with Features.encode_batch, which casts torch tensors with "
                ".detach().cpu().numpy() before writing them to Arrow",
                "https://github.com/huggingface/evaluate/blob/main/src/evaluate/module.py (add_batch); "
                "datasets/features/features.py (_cast_to_python_objects)"),
    LibraryFact("evaluate.EvaluationModule.add", Effect.SYNCS_TENSOR_ARGS,
                "one example is encoded with Features.encode_example: torch tensors become numpy via "
                ".detach().cpu().numpy()",
                "https://github.com/huggingface/evaluate/blob/main/src/evaluate/module.py (add); "
                "datasets/features/features.py (_cast_to_python_objects)"),
    *(LibraryFact(f"torchmetrics.{metric}.update", Effect.SYNCS_TENSOR_ARGS,
                  "update() passes each value through BaseAggregator._cast_and_nan_check_input, which tests "
                  "`torch.isnan(x).any()` in a Python `if` (a host read of a device flag) on every call, whatever "
                  "the nan_strategy, unless it is 'disable'" + (
                      "; RunningMean/RunningSum update their base MeanMetric/SumMetric the same way"
                      if metric.startswith("Running") else ""),
                  "torchmetrics/aggregation.py (BaseAggregator._cast_and_nan_check_input, "
                  f"{metric}.update); torchmetrics/wrappers/running.py (Running.update)",
                  unless="nan-check-disabled")
      for metric in ("MeanMetric", "SumMetric", "MaxMetric", "MinMetric", "CatMetric", "RunningMean",
                     "RunningSum")),
    *(LibraryFact(f"torchnet.meter.{meter}.add", Effect.SYNCS_TENSOR_ARGS,
                  "add() turns tensor arguments into numpy arrays at once (`output.cpu().squeeze().numpy()`, the "
                  "target likewise) before counting: a device-to-host copy of the batch's outputs every call",
                  f"torchnet/meter/{meter.lower()}.py ({meter}.add)")
      for meter in ("ClassErrorMeter", "ConfusionMeter", "APMeter", "mAPMeter", "AUCMeter")),
    LibraryFact("transformers.PreTrainedTokenizerBase.decode", Effect.SYNCS_TENSOR_ARGS,
                "the token ids go through to_py_obj, which turns a torch tensor into a list with "
                ".detach().cpu().tolist(), at every call",
                "transformers/tokenization_utils_base.py (PreTrainedTokenizerBase.decode); "
                "transformers/utils/generic.py (to_py_obj)"),
    LibraryFact("transformers.PreTrainedTokenizerBase.batch_decode", Effect.SYNCS_TENSOR_ARGS,
                "decodes each sequence with decode(), whose to_py_obj copies a torch tensor to the host "
                "(.detach().cpu().tolist())",
                "transformers/tokenization_utils_base.py (PreTrainedTokenizerBase.batch_decode, decode); "
                "transformers/utils/generic.py (to_py_obj)"),
    LibraryFact("torchvision.ops.nms", Effect.SYNCS_TENSOR_ARGS,
                "the CUDA kernel computes the suppression mask on the device, then copies it to the host "
                "(`mask.to(at::kCPU)`) and picks the kept boxes in a CPU loop, on every call",
                "torchvision/csrc/ops/cuda/nms_kernel.cu (nms_kernel)"),
    LibraryFact("torchvision.ops.batched_nms", Effect.SYNCS_TENSOR_ARGS,
                "runs torchvision.ops.nms (once on offset boxes, or once per class for many boxes): the same "
                "host copy of the suppression mask",
                "torchvision/ops/boxes.py (batched_nms, _batched_nms_coordinate_trick, _batched_nms_vanilla)"),
    LibraryFact("torch.distributed.all_reduce", Effect.NO_HOST_SYNC,
                "with NCCL the collective is queued on a CUDA stream; the host continues unless the result is "
                "read back",
                "PyTorch docs: torch.distributed, 'Synchronous and asynchronous collective operations'"),
    LibraryFact("torch.distributed.all_gather", Effect.NO_HOST_SYNC,
                "as all_reduce: queued on the device stream for CUDA tensors",
                "PyTorch docs: torch.distributed, 'Synchronous and asynchronous collective operations'"),
    LibraryFact("torch.distributed.reduce", Effect.NO_HOST_SYNC,
                "as all_reduce: queued on the device stream for CUDA tensors",
                "PyTorch docs: torch.distributed, 'Synchronous and asynchronous collective operations'"),
    LibraryFact("torch.distributed.broadcast", Effect.NO_HOST_SYNC,
                "as all_reduce: queued on the device stream for CUDA tensors",
                "PyTorch docs: torch.distributed, 'Synchronous and asynchronous collective operations'"),
    LibraryFact("torch.distributions.Categorical", Effect.SYNCS_TENSOR_ARGS,
                "argument validation is on by default (Distribution._validate_args = __debug__): __init__ checks "
                "the probs/logits constraint and raises unless every element holds, a host test of a device "
                "bool; validate_args=False (or Distribution.set_default_validate_args(False)) skips it",
                "torch/distributions/distribution.py (Distribution.__init__), categorical.py",
                unless="validate-args-off"),
    LibraryFact("torch.distributions.OneHotCategorical", Effect.SYNCS_TENSOR_ARGS,
                "builds a Categorical and validates its arguments as it does (on by default)",
                "torch/distributions/one_hot_categorical.py, distribution.py (Distribution.__init__)",
                unless="validate-args-off"),
)

# Older import paths of the same classes.
ALIASES = {
    "torch.cuda.amp.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "pytorch_lightning.LightningModule": "lightning.pytorch.LightningModule",
    "lightning.LightningModule": "lightning.pytorch.LightningModule",
    "torch.utils.tensorboard.writer.SummaryWriter": "torch.utils.tensorboard.SummaryWriter",
    "tensorboardX.writer.SummaryWriter": "tensorboardX.SummaryWriter",
    "tqdm.auto.tqdm": "tqdm.tqdm",
    "tqdm.notebook.tqdm": "tqdm.tqdm",
    "accelerate.accelerator.Accelerator": "accelerate.Accelerator",
    "lightning.Fabric": "lightning.fabric.Fabric",
    "lightning.fabric.fabric.Fabric": "lightning.fabric.Fabric",
    "lightning_fabric.Fabric": "lightning.fabric.Fabric",
    "lightning_fabric.fabric.Fabric": "lightning.fabric.Fabric",
    "ema_pytorch.ema_pytorch.EMA": "ema_pytorch.EMA",
    "torch_ema.ema.ExponentialMovingAverage": "torch_ema.ExponentialMovingAverage",
    "torchmetrics.aggregation": "torchmetrics",
    "torchvision.ops.boxes": "torchvision.ops",
    "timm.utils.cuda.NativeScaler": "timm.utils.NativeScaler",
    "timm.utils.cuda.ApexScaler": "timm.utils.ApexScaler",
    "timm.utils.model_ema": "timm.utils",
    "torch.optim.swa_utils.swa_utils": "torch.optim.swa_utils",
    **{f"torchnet.meter.{m.lower()}.{m}": f"torchnet.meter.{m}"
       for m in ("ClassErrorMeter", "ConfusionMeter", "APMeter", "mAPMeter", "AUCMeter")},
    "torch.distributions.categorical": "torch.distributions",
    "torch.distributions.one_hot_categorical": "torch.distributions",
}

# Library functions that build an instance of a class of the table: (function, the class, source).
RETURNS = {
    "evaluate.load": ("evaluate.EvaluationModule",
                      "https://huggingface.co/docs/evaluate/package_reference/loading_methods (evaluate.load "
                      "returns an EvaluationModule)"),
    **{f"transformers.{tokenizer}.from_pretrained": (
        "transformers.PreTrainedTokenizerBase",
        "transformers/tokenization_utils_base.py: every tokenizer class derives from PreTrainedTokenizerBase")
       for tokenizer in ("AutoTokenizer", "PreTrainedTokenizerFast", "BertTokenizer", "BertTokenizerFast",
                         "GPT2Tokenizer", "GPT2TokenizerFast", "T5Tokenizer", "T5TokenizerFast", "LlamaTokenizer",
                         "LlamaTokenizerFast", "CLIPTokenizer", "CLIPTokenizerFast", "RobertaTokenizer",
                         "RobertaTokenizerFast", "BartTokenizer", "BartTokenizerFast")},
}

@dataclass(frozen=True)
class HandsBack:
    """A library function that returns the model it is given, wrapped, so that calling what it returns runs the
    model's `forward`: `elements` says, per element of the returned tuple, which argument it wraps, as (position,
    keyword), or None for an element that is something new. (Model wrappers that take the model as their first
    argument, `DDP(model)`, are `project.MODEL_WRAPPERS`; Fabric's `setup` and Accelerate's `prepare` hand their
    arguments back under the names they had, which the class of a rebound name already follows.)"""

    target: str
    elements: tuple
    reason: str
    source: str


HANDS_BACK: tuple[HandsBack, ...] = (
    HandsBack("deepspeed.initialize", ((1, "model"),),
              "returns (engine, optimizer, training_dataloader, lr_scheduler); the engine is a DeepSpeedEngine "
              "built around `model`, and calling it runs `self.module(*inputs, **kwargs)`, the model's forward",
              "deepspeed/__init__.py (initialize: `return tuple(return_items)`, the engine first); "
              "deepspeed/runtime/engine.py (DeepSpeedEngine.forward)"),
)
_HANDS_BACK = {entry.target: entry for entry in HANDS_BACK}


def hands_back_elements(qualified: Optional[str]) -> tuple:
    """Per element of what the library function `qualified` returns, the (position, keyword) of the argument it
    wraps, or None for something new; () when the function is not one of the table's."""
    entry = _HANDS_BACK.get(canonical(qualified)) if qualified else None
    return entry.elements if entry is not None else ()


def hands_back(qualified: Optional[str], index: Optional[int]) -> Optional[tuple]:
    """(position, keyword) of the argument that element `index` of what the library function `qualified`
    returns wraps; None when it is not one of the table's, the result is not unpacked (`index` None), or that
    element is something new."""
    elements = hands_back_elements(qualified)
    return elements[index] if index is not None and index < len(elements) else None


_BY_TARGET = {fact.target: fact for fact in FACTS}
# The methods whose fact may say DEVICE_BATCHES (`prepare`): a call by any other name is not looked up.
DEVICE_BATCH_METHODS = frozenset(f.target.rsplit(".", 1)[-1] for f in FACTS if f.effect is Effect.DEVICE_BATCHES)


def canonical(qualified: str) -> str:
    if qualified in RETURNS:
        return RETURNS[qualified][0]
    for old, new in ALIASES.items():
        if qualified == old or qualified.startswith(old + "."):
            return new + qualified[len(old):]
    return qualified


def fact_for_function(qualified: Optional[str]) -> Optional[LibraryFact]:
    """The fact for a call of a qualified function (`wandb.log`)."""
    return _BY_TARGET.get(canonical(qualified)) if qualified else None


def fact_for_method(class_qualified: Optional[str], method: str) -> Optional[LibraryFact]:
    """The fact for `instance.method(...)` where the instance was built from `class_qualified`."""
    if not class_qualified:
        return None
    return _BY_TARGET.get(f"{canonical(class_qualified)}.{method}")


_CLASSES = frozenset(f.target.rsplit(".", 1)[0] for f in FACTS)


def is_library_class(qualified: str) -> bool:
    """A class some fact of the table is a method of (`lightning.Fabric` through its alias)."""
    return canonical(qualified) in _CLASSES
