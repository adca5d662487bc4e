"""GPU203 `host-tensor-moved-each-step`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT, Kind
from gpulint.rule import Rule, Example, Family, FixAvailability, FixSafety, Related, Safety
from gpulint.rules._examples import CPU_ONLY_SCRIPTS, DATASET_HEAD, TRAIN_STEP
from gpulint.analysis.data_facts import ACCELERATOR, append_keyword, data_facts, has_star_args, keyword
from gpulint.syntax import positional, statement_of
from gpulint.analysis.data import _FACTORIES, _RANDOM, _SAME_ON_DEVICE, _WINDOWS
from gpulint.analysis.data_facts import _walk
from gpulint.analysis.tree import descendants
from gpulint.analysis.data_path import data_path_facts
from gpulint.analysis.default_device import cuda_default
from gpulint.analysis.loader_params import cuda_type_copy
from gpulint.analysis.graph_fields import moved_graph_field
from gpulint.analysis.host_attributes import captured_host_tensor, host_attribute, object_host_attribute
from gpulint.analysis.host_returns import host_factory_return
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.isinstance_narrowing import narrowed_from_tensors
from gpulint.syntax import argument
from gpulint.analysis.project import display_path
from gpulint.analysis.tensor_uses import given_tensor, names_an_accelerator, read_as_tensor
from gpulint.analysis.test_code import is_test_path
from gpulint.analysis.tokenizers import tokenized_on_host
from gpulint.rules.transfers._built_then_moved import (
    _VARIABLE, _numpy_constant, built_this_step, exact_on_device, copy_above, copy_device, defined_before,
    host_table, moved_table,
    same_device, scaled_factory, single_assignment, strip_same_on_device, to_a_device_tensor, under_cuda_test, uses_of,
    without_copy)


# The examples' dataset head with numpy imported too.
_NUMPY_HEAD = DATASET_HEAD.replace("import torch\n", "import numpy as np\nimport torch\n", 1)


class HostTensorMovedEachStep(Rule):
    """A tensor built on the host and copied to the GPU every iteration.

    ## What it does
    Flags `torch.zeros(...).to(device)`, `torch.tensor(x).cuda()`, `torch.arange(n).to(x.device)` and other
    torch factories followed by a copy to an accelerator, where this runs every iteration of a training loop.
    Also flags `torch.tensor(values, device=device)` and `torch.as_tensor(values, device=device)` of Python
    numbers, lists or numpy arrays every iteration: `device=` does not move where the values are. Sizes read from a
    shape (`torch.tensor(targets.shape[1], device=targets.device)`) are Python integers whatever holds the shape,
    and a value an `isinstance` test says is no tensor (`if not isinstance(bound, torch.Tensor): bound =
    torch.tensor(bound, device=device)`) is a host value too. The legacy
    constructors (`torch.Tensor(obs).to(device)`, `torch.FloatTensor(x).cuda()`) are the same host build and
    copy: they accept only host data (an environment's numpy observation, a list). The CUDA ones given host data
    (`torch.cuda.FloatTensor(np.random.normal(0, 1, shape))`, often through the GAN scripts' alias
    `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`) build the values on the host and copy them
    the same way; given sizes (`Tensor(n, 1).fill_(1.0)`) they allocate and fill on the device, which is fine.
    The output of a tokenizer or processor called with `return_tensors="pt"` (`self.tokenizer(captions,
    return_tensors="pt").to(image.device)`, its `.input_ids`, a name bound to it in the step) is the same: the
    tokens are built as CPU tensors in pageable memory, and copied to the GPU every step.
    So is `target.new_tensor([n], dtype=torch.long)` of Python numbers on a device tensor (a count made a tensor
    for `all_reduce`): built on the host from the values, then copied to `target`'s device.
    In a program that sets a CUDA default tensor type or device (`torch.set_default_tensor_type(
    'torch.cuda.FloatTensor')`, `torch.set_default_device("cuda")`, in the module or in a project script that
    imports it), `torch.Tensor([1e10])`, `torch.Tensor(numpy_array)` and `torch.tensor(host_list)` build CUDA
    tensors from host data: a pageable copy every call (`torch.rand`, `torch.ones`, `torch.linspace` are made on
    the device and are fine).
    So is indexing a tensor on the device with a numpy array of indices, a list of int literals or a Python
    `range` every step (`b_obs[mb_inds]` for `mb_inds = b_inds[start:end]` of `b_inds = np.arange(n)`,
    `scores[:, [0, 2]]`, `t[range(n), cls] = 1`), or with an index tensor built on the host: a torch factory
    without `device=` (`li = torch.tensor([...])`, `torch.arange(n)`, `torch.tril_indices(...)`, or a view of
    one: `torch.arange(B)[:, None, None]`, `torch.arange(L).unsqueeze(1)`) or a batch of a
    `DataLoader` over a Python `range` (`for index in DataLoader(range(n), batch_size=b)`), and writing a tensor built on the host from host values into
    a device tensor (`gain[2:6] = torch.tensor(p.shape)[[3, 2, 3, 2]]`):
    PyTorch turns the index into a host tensor and copies it to the device, a pageable blocking copy.

    A causal mask built through `torch.tril(torch.ones(n, n)).type(torch.ByteTensor).to(self.device)` in a
    `forward` is host arithmetic over a factory too (no fix: the cast to a CPU tensor type would bring a device
    tensor back). A buffer the legacy constructor allocates in the step (`conf_t = torch.LongTensor(num, n)`),
    filled on the host and then copied (`conf_t = conf_t.cuda()`), is reported once, at its first copy. A host
    factory handed to a project helper that copies its argument whenever it is a tensor (`scores =
    async_copy_to(torch.zeros(...), gpu)` with `if torch.is_tensor(obj): return obj.cuda(dev, non_blocking=True)`)
    is reported at the helper's call. A tensor a project function builds on the host and returns in a tuple
    (a data loader's `return adj, torch.FloatTensor(features), torch.LongTensor(labels), adj_list`, a model
    helper's `return torch.from_numpy(mask).unsqueeze(0), ...`), unpacked by the caller and copied every step
    (`labels[idx_train].to(device)`, `adj_list[i].cuda()`, `mask.type_as(query)`), also through a parameter of the
    step function that every call in the module passes it to, is the same host data crossing again at every step.

    The factory and the copy need not be one expression: `t = torch.randint(0, T, (B,))` early in the step and
    `model(x, t.to(device))` later in the same iteration is the same host build and copy (reported at the copy),
    when every use of `t` is a copy to the accelerator or an index into a table whose rows go there; so is the
    draw rebound to its own copy (`t = torch.rand((B,))`, then `t = t.to(device)`: the fix drops that statement),
    scaled on the host first (`th.rand((B,)) * (t1 - t0) + t0`) or copied to the device of a tensor it is used
    with (`t = t.to(x1)`, a flow-matching sampler's timesteps: no fix for either). The same holds
    inside a function that runs every step (a helper the loop calls, a model's `forward` or what it calls): `I =
    torch.eye(d)[None]` then `if x.is_cuda: I = I.cuda()`, or an identity from `torch.from_numpy(np.eye(k))`
    copied with `.cuda()`; a use on the path taken without a GPU (`if y.is_cuda: return t.cuda()` then
    `return t`) keeps the finding, without a fix (`device=` there would break the CPU path). A host table
    defined before the loop and indexed by such a tensor, its rows copied each step
    (`alphas_cumprod[t].view(-1, 1, 1, 1).to(device)`), is reported too: the gather runs on the CPU and the
    rows cross PCIe every step. So is arithmetic run on the host over such a factory and copied afterwards:
    `torch.exp(-math.log(10000) * torch.arange(half) / half).to(t.device)`, the frequencies of a timestep or
    position embedding rebuilt in every forward; a join of such tensors
    (`torch.cat([torch.ones(b), torch.zeros(2 * b)]).to(x.device)`, the labels of a matching loss); the same
    arithmetic over names bound earlier in the function (`pos = torch.arange(n).unsqueeze(1)` ...
    `torch.sin(pos * div).to(device)`); the arithmetic cast with `.type_as(x)` (`(torch.ones(n, n) / n).type_as(x)`);
    and a tensor built this step, filled on the host with such constants and copied whole or through a view
    (`pe = torch.zeros(n, d)`, `pe[:, 0::2] = torch.sin(pos * div)`, `return pe[None, :].to(device)`). Data
    written into it (a batch, `torch.tensor(values)`) makes it a host buffer the data needs: quiet.

    A project function that builds the tensor it returns on the host with torch factories is the same copy, paid
    at its caller: `coords_grid(b, h, w).to(flow.device)` in per-step model code, where `coords_grid` returns
    `torch.stack(torch.meshgrid(torch.arange(h), torch.arange(w)))` repeated over the batch (moved inside only
    under `if device is not None:`, and the call passes no `device`), or `x[cycle_index(n, 1)]` indexing a device
    tensor with a helper's `torch.arange(n) + shift` (analysis/host_returns.py; every `return` must hand back
    such a tensor; no fix, the helper decides where it builds).

    Labels rebuilt from numpy on every call of per-step code are the same copy: `y = torch.from_numpy(np.repeat(
    range(self.n_way), self.n_query))` then `y.cuda()` (or `Variable(y.cuda())`, or in one expression) in a
    few-shot method's `set_forward_loss`, where the numpy array is computed from Python sizes alone (`np.repeat`,
    `np.tile`, `np.arange`, `np.zeros`... of `range(...)`, integers, `len(...)` and attributes holding no array):
    reported at the copy, naming the per-step caller, with the advice to build it once and keep it on the device
    (no fix: `torch.from_numpy` takes no `device=`). So is a project helper's host-built result bound in the step and
    copied later (`y_oh = one_hot(y, n)` then `y_oh.cuda()`, `one_hot` returning `torch.zeros(...).scatter_(...)`).
    A Hann window built on the host in a helper run every step (`torch.hann_window(n_fft).to(y.device)` in an STFT
    function a trainer keeps as `self.torch_stft = partial(stft, ...)`) is the same on every call: build it once.

    A sampler that keeps its trajectory on the host and copies the last step back (`xt = xs[-1].to(device)` ...
    `xs.append(xt_next.to("cpu"))` in the same loop, every appended value a host copy) moves each step's result to
    the host and back, a blocking copy each way (reported at the copy back, no fix).

    A numpy array a class keeps in an attribute is host data too (`self.obses = np.empty((capacity, *shape))`
    in a replay buffer's `__init__`, filled in place): `torch.as_tensor(self.obses[idxs], device=self.device)`
    in the `sample()` an update calls every step gathers the rows on the host and copies them from pageable
    memory (only when every assignment of the attribute in the class is a numpy call).

    A plain tensor attribute of a model that holds a host tensor is the same copy: `self.pos_embed =
    sinusoid_table(n, d)` (a helper returning `torch.tensor(numpy_table)`) or `self.scale = torch.ones(...)` in
    `__init__`, then `self.pos_embed.type_as(x).to(x.device)` in `forward`. It is neither a parameter nor a buffer,
    so `model.to(device)` leaves it on the host, and every forward copies it (analysis/host_attributes.py: only
    when every assignment of the attribute in the class is such a host tensor, or an `nn.Parameter` in the branch
    of an `__init__` flag that is off by default). Code run every step includes the `__init__` of a plain helper
    class built there: `mask = ProbMask(L, device=x.device)` in `forward` runs `torch.ones(L, L).to(device)` in
    `ProbMask.__init__` on every step.

    The same copy made by a cast: `torch.zeros(1, n).fill_(stride).type_as(x)` of a device tensor `x`, or
    `.type(torch.cuda.FloatTensor)` (a detector head's per-level strides, built on the host in every forward), or
    `.to(x)` of a tensor `x` (`torch.hann_window(n).to(x)` in a spectrogram helper: `x`'s device and dtype), where
    `x` is a tensor by its kind or by how its function reads it (`x.shape`, `x.reshape(...)`, `torch.isfinite(x)`).
    So is a legacy constructor of data cast the same way (`torch.Tensor(gt_loc).type_as(rpn_locs)` of a target
    array a helper computed on the host: a Faster R-CNN trainer's per-image targets).
    Code run every step includes a generator of the module drawn with `next(...)` in the loop (`train_dl =
    cycle(n)` ... `next(train_dl)`): each `next` runs its body up to the next `yield`, so `torch.randint(...).cuda()`
    there is built on the host every step. And a map-style dataset whose `__getitem__` returns its sample copied to
    the GPU (`return full_seq.cuda()`), drawn by a `DataLoader` in a training loop of the module: one small
    pageable copy per sample, every step (a batch of 32 is 32 blocking copies), and the loader can use no worker
    processes (CUDA cannot be used in a forked worker).

    ## Why it is slow
    The tensor is allocated and filled by the CPU, then crosses PCIe with a blocking copy from pageable memory,
    every step: PyTorch copies from pageable memory synchronously, so the CPU also waits for the GPU work queued
    before the copy. Created on the device, `zeros`/`ones`/`arange`/... cost one kernel launch and no copy.
    `torch.tensor(values, device=device)` is no way out: the values are Python objects on the host, so PyTorch
    builds the tensor on the host and copies it, the same blocking copy (only an intermediate call is saved).
    On an H100, `torch.tensor((w, h, w, h), device="cuda")` took 0.02 ms with the GPU idle and 21.4 ms with
    21 ms of GPU work queued: it waits for all of it, like `.item()` (`benchmarks/host_copies.py`).

    ## Example
    ```python
    for x, y in loader:
        mask = torch.ones(x.shape[0]).to(device)
        pos = torch.arange(x.shape[1]).to(x.device, torch.float32)
    ```
    Use instead:
    ```python
        mask = torch.ones(x.shape[0], device=device)
        pos = torch.arange(x.shape[1], device=x.device).to(torch.float32)
    ```

    A diffusion step, drawn on the host and copied twice per step:
    ```python
    alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
    for (x0,) in loader:
        t = torch.randint(0, T, (x0.shape[0],))
        a = alphas_cumprod[t].view(-1, 1, 1, 1).to(device)
        pred = model(a.sqrt() * x0, t.to(device))
    ```
    Use instead (the table moved once; the timesteps drawn on the device):
    ```python
    alphas_cumprod = torch.cumprod(1.0 - betas, dim=0).to(device)
    for (x0,) in loader:
        t = torch.randint(0, T, (x0.shape[0],), device=device)
        a = alphas_cumprod[t].view(-1, 1, 1, 1)
        pred = model(a.sqrt() * x0, t)
    ```

    For values known only on the host (`torch.tensor((w, h, w, h), device=device)` from a batch's shape), build
    the tensor once before the loop when the values do not change, or use the Python numbers directly
    (`boxes[:, 0::2] *= w`): a Python scalar is passed to the kernel as an argument, with no copy.

    ## Fix
    Moves the target device into the factory as `device=`; a dtype given to `.to()` stays, as `.to(dtype)`
    on the device (so values are cast exactly as before); `non_blocking` is dropped (nothing is copied).
    No fix for `torch.tensor(values)` of Python numbers, lists or numpy arrays (with `device=` or followed by
    `.to(device)`): moving `device=` into it would copy the same host values; what replaces it depends on
    where the values come from. No fix for host arithmetic that reaches its factories through names bound earlier,
    nor for a tensor filled on the host (`device=` on it would leave the written values computed on the host and
    copied). No fix for a copy made only under `if x.is_cuda:` (or beside a CPU path), nor
    for `torch.from_numpy` of a numpy constant. No fix for the legacy constructors either (`torch.Tensor(...)` takes no
    `device=`), nor for a host index (where the indices come from decides what replaces them: a device
    `torch.randperm`, or a device tensor built once before the loop), nor for a cast (`.type_as(x)`,
    `.type(torch.cuda.FloatTensor)`: it also picks the dtype), nor for a copy in `__getitem__` (the batch has to be
    moved in the loop instead: return host tensors, then `pin_memory=True` on the loader and
    `.to(device, non_blocking=True)` of the batch).

    For a tensor bound in the step and copied later, `device=` goes into the factory and every copy of it is
    dropped (`t.to(device)` becomes `t`); it is offered only when all its copies go to the same device, spelt as
    a name bound before the loop (or a literal), and, when it also indexes a host table, together with that
    table's fix. A host table moves once where it is defined (`table = <value>.to(device)`) and its copied
    rows lose their `.to(device)`: only when every use of the table is such a row copy to that device.

    ## Fix safety
    Safe for deterministic factories (`zeros`, `ones`, `full`, `arange`, `tensor`, ...). Unsafe for random
    ones (`rand`, `randn`, `randint`, `randperm`, ...): the device's generator draws different numbers than the
    CPU's, so seeded runs are no longer reproducible against earlier ones. Unsafe for window functions
    (`hann_window`, `hamming_window`, ...): the device computes their cosines, which may differ in the last bits. No fix when the factory already has
    `device=`, `requires_grad=` (the result would become a leaf tensor), `out=`, `pin_memory=` or `generator=`
    (a CPU generator cannot drive a CUDA factory), or when the copy's target is another tensor (`.to(other)`
    also changes the dtype). For a tensor bound in the step, safe only for constants (`zeros`, `ones`, `full`,
    `eye`, their `_like` forms, and `arange` of integer literals), whose values are the same bit for bit on any
    device; `arange`/`linspace` of other arguments may round differently in a device kernel, so they are
    unsafe, as are random factories (`torch.randint` on CUDA draws other timesteps than on the CPU for the same
    seed: training is equivalent, not reproducible against earlier runs). Moving a host table is unsafe: its
    values stay the same, but it now lives in GPU memory for the whole run, and code gpulint cannot see (another
    module importing it, a checkpoint saving it) gets a CUDA tensor.

    ## When it is fine
    `torch.zeros_like(x).to(device)` of an `x` not known to be on the host: a `_like` factory builds where `x`
    lives, so the copy moves nothing.
    A buffer (`self.register_buffer("pos_embed", table, persistent=False)`) or an attribute kept as its moved copy
    (`self.t = self.t.to(dev)`): `.to(x.device)` of it copies nothing. A helper class built once, in `__init__`.
    A tensor bound in the step that is also used on the host (`history.append(t.tolist())`, `host_table[t]`
    read on the CPU): it belongs there, and its copy is the one the data needs. A table indexed by the batch's
    own labels (that is data). Constants built once before the loop, `torch.from_numpy(batch).to(device)` (real data has to cross; GPU410
    is about how it crosses), `torch.as_tensor(t, device=device)` of a tensor, and copies outside training
    loops. `.type_as(x)` of a host tensor `x` (no copy), `.to(x)` of an `x` nothing reads as a tensor (a dtype
    copies nothing), and `torch.zeros_like(x).to(x)` (built where `x` lives). A generator drawn once before the loop. A dataset that
    no training loop of its module draws from through a `DataLoader`, or that is built from device data
    (`Dataset(data.cuda())`, or `self.data` moved in `__init__`): its `.to(device)` copies nothing.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text, or a cast to
    # where a device tensor lives (`.type_as(query)` in model code that names no device).
    needs_text = re.compile(GPU_HINT.pattern + r"|\.type_as\(", GPU_HINT.flags)
    code = "GPU203"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "host-tensor-moved-each-step"
    message = "`torch.{factory}` builds a tensor on the host and copies it to the GPU every step; create it on " \
              "the device with `device=`"
    from_values = "`torch.{factory}` of host values builds the tensor on the host and copies it from pageable " \
                  "memory every step, waiting for the GPU (`device=` does not change that); build it once " \
                  "before the loop, or keep the values as Python scalars"
    from_array = "`torch.{factory}` of rows of the numpy array `{array}` gathers them on the host and copies " \
                 "them from pageable memory every step, waiting for the GPU; keep the buffer as a tensor on the " \
                 "device, or as a pinned CPU tensor copied with `non_blocking=True`"
    later = "`{name}` is built on the host by `torch.{factory}` each step and copied to the GPU later in the " \
            "step; create it on the device with `device=`"
    from_sizes = "{what} is built on the host from a numpy array of sizes (`{numpy}`) on every call and copied " \
                 "to the GPU: a blocking copy from pageable memory, every step; build it once and keep it on the " \
                 "device (the sizes rarely change), or build it there (`torch.arange(n, device=...)`)"
    table_rows = "`{table}` lives on the host: indexing it with `{index}` (built this step) and copying the rows " \
                 "to the GPU costs a copy every step; move `{table}` to the device once, where it is defined"
    new_tensor_values = "`{tensor}.new_tensor(...)` of Python numbers builds the tensor on the host and copies it to " \
                        "the GPU from pageable memory every step, waiting for the GPU; keep the count on the host, " \
                        "or build it once before the loop"
    legacy = "`torch.{factory}(...)` (the legacy constructor) builds the tensor on the host (from host data or sizes) and " \
             "copies it from pageable memory every step, waiting for the GPU; build it once before the loop, or " \
             "keep the data on the device"
    legacy_later = "`{name}` is built on the host by the legacy constructor `torch.{factory}(...)` each step and " \
                   "copied to the GPU later in the step, a blocking copy from pageable memory; allocate it on the " \
                   "device (`torch.zeros(..., dtype=..., device=...)`) and fill it there"
    legacy_data_later = "`{name}` is built on the host from host data by the legacy constructor `torch.{factory}(...)` " \
                        "each step and copied to the GPU later in the step, a blocking copy from pageable memory; " \
                        "build it with `torch.from_numpy(...)` / `torch.as_tensor(...)`, pin it and copy with " \
                        "`non_blocking=True` (or keep the data on the device)"
    helper_copied = "{what} is built on the host by `torch.{factory}` each step and `{call}(...)` copies it to " \
                    "the GPU: an allocation and a copy every step; create it on the device with `device=`"
    default_type = "`torch.{factory}(...)` of host data builds a CUDA tensor under the CUDA default tensor type " \
                   "(set {where}): the data is copied from pageable memory every step, waiting for the GPU; " \
                   "build it once before the loop, or keep the values as Python scalars"
    cuda_legacy = "`{call}(...)` ({spelt}) of host data builds the tensor from a numpy array or a list on the host " \
                  "and copies it from pageable memory every step, waiting for the GPU; draw or build it on the " \
                  "device (`torch.randn(..., device=...)`, `torch.ones(..., device=...)`) or once before the loop"
    distribution = "`{code}(...)` draws from a distribution built from host values: the sample is made on the " \
                   "host and copied to the GPU from pageable memory every step, waiting for it; build the " \
                   "distribution from device tensors (`torch.tensor([...], device=...)`) once"
    host_index = "`{index}` (a numpy array or a list) indexes the device tensor `{tensor}`: the index is built on " \
                 "the host and copied to the GPU every step, waiting for it; keep the indices on the device " \
                 "(`torch.randperm(n, device=...)`, `torch.arange(..., device=...)`)"
    host_tensor_index = "`{index}` (an index tensor on the host: a torch factory without `device=`, or a batch " \
                        "of a loader over a range) indexes the device tensor `{tensor}`: the index is copied to the " \
                        "GPU every step, waiting for it; build the indices on the device (`device=`) or once " \
                        "before the loop"
    written = "`torch.{factory}(...)` builds a host tensor that is written into the device tensor `{tensor}`: a " \
              "pageable copy to the GPU every step, waiting for it; compute it on the device or keep the values " \
              "as Python scalars"
    host_range = "`{index}` (a Python range) indexes the device tensor `{tensor}`: the index is built on the host " \
                 "and copied to the GPU every step, waiting for it; keep the indices on the device " \
                 "(`torch.arange(n, device=...)`)"
    computed = "`torch.{factory}` builds a tensor on the host, the arithmetic on it runs on the host, and the " \
               "result is copied to the GPU every step; create it on the device with `device=` and compute there"
    tokenized = "`{call}(..., return_tensors=\"pt\")` builds its tensors on the host (pageable memory) and they are " \
                "copied to the GPU every step, waiting for it; tokenize in the DataLoader's workers (`collate_fn`, " \
                "with `pin_memory=True` and `non_blocking=True`), or once before the loop when the text does not change"
    host_attribute_message = "`self.{name}` is a plain tensor attribute built on the host (not a parameter or a " \
                             "buffer, so moving the model leaves it there): it is copied to the GPU from pageable " \
                             "memory every step, waiting for it; register it with `self.register_buffer(\"{name}\", " \
                             "..., persistent=False)` so it moves with the model"
    object_attribute_message = "`{name}` is a tensor its class builds on the host (a plain attribute, such as a " \
                               "schedule made with `torch.linspace` in `__init__`): it is copied to the GPU from " \
                               "pageable memory every step, waiting for it; build it on the device once (or keep " \
                               "a device copy on the object) and index that"
    captured_message = "`{name}` is a host tensor the enclosing factory built once (the closure keeps it): it " \
                       "is copied to the GPU from pageable memory on every call, waiting for it; build it on the " \
                       "device in the factory (or move it there once before defining the closure)"
    helper_built = "`{call}(...)` builds the tensor it returns on the host (`{factory}` without `device=`), and " \
                   "it is copied to the GPU every step, waiting for it; have the helper build it on the device " \
                   "(pass the device, or `device=` in its factories)"
    helper_values = "`{call}(...)` builds the tensor it returns from host values (`{factory}`), and it is copied " \
                    "to the GPU from pageable memory every step, waiting for it; build it once before the loop " \
                    "where the values do not change, or pin it and copy with `non_blocking=True`"
    returned_host = "`{name}` is a host tensor that `{call}(...)` builds and returns, and it (or a part of it) is " \
                    "copied to the GPU every step, a blocking copy from pageable memory; move it to the device " \
                    "once where it is made (a buffer, for a model's constant), or pin it and copy with " \
                    "`non_blocking=True`"
    host_trajectory = "`{name}[-1]` is the host copy this loop appended the iteration before: it goes to the host " \
                      "and back to the GPU every step, a blocking copy each way; keep the running value on the " \
                      "device and copy to the host only what is kept"
    from_numpy_cast = "`torch.from_numpy({numpy})` is a host tensor made up on every call, and `.{cast}(...)` " \
                      "copies it to the GPU: a blocking copy from pageable memory, every step; draw or build it on " \
                      "the device (`torch.randperm(n, device=...)`, `torch.arange(n, device=...)`)"
    cast = "`torch.{factory}` builds a tensor on the host and `.{cast}(...)` copies it to the GPU every step, " \
           "waiting for it; create it on the device ({hint})"
    sample = "`{cls}.__getitem__` copies every sample to the GPU (`{code}`): a small blocking copy from pageable " \
             "memory per sample, every step, and the DataLoader can use no worker processes; return host tensors " \
             "and move the whole batch in the loop (`pin_memory=True`, `.to(device, non_blocking=True)`)"
    family = Family.TRANSFERS
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(
        Safety.SAFE, "deterministic factories compute the same values on the device (random ones are offered as "
                     "unsafe fixes)")
    _WINDOWS = ("from torch.utils.data import Dataset\n\n\nclass Windows(Dataset):\n"
                "    def __init__(self, data):\n        self.data = data\n\n    def __len__(self):\n"
                "        return len(self.data) - 8\n\n    def __getitem__(self, i):\n"
                "        return self.data[i:i + 8].to(device)\n\n\n"
                "for x in DataLoader(Windows({}), batch_size=4):\n    model(x).sum().backward()\n")
    VALID = [TRAIN_STEP + "noise = torch.zeros(2).cuda()\n", *CPU_ONLY_SCRIPTS,
             # a numpy scalar index (`inds[0]`) and a host tensor indexed by a numpy array copy no index
             _NUMPY_HEAD +
             "table = torch.randn(64, 8).to(device)\nhost = torch.randn(64, 8)\ninds = np.arange(64)\n"
             "for step in range(100):\n    x = table[inds[0]] + host[inds[:8]].sum().to(device)\n"
             "    model(x).sum().backward()\n",
             # a CUDA legacy constructor given sizes allocates on the device (filled there): no host data
             DATASET_HEAD + "Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor\n"
             "for step in range(100):\n    valid = Tensor(8, 1).fill_(1.0)\n    model(valid).sum().backward()\n",
             # also used on the host (kept for a log): the host tensor is the one the program needs
             DATASET_HEAD + "loader = DataLoader(dataset, batch_size=4)\nseen = []\nfor x, y in loader:\n"
             "    t = torch.randint(0, 8, (4,))\n    seen.append(t.tolist())\n"
             "    model(x.to(device) * t.to(device)[:, None]).sum().backward()\n",
             # a CPU-only script: the same shape, moved to the CPU device, costs nothing
             "import torch\nfrom torch.utils.data import DataLoader\ndev = \"cpu\"\nmodel = torch.nn.Linear(8, 2)\n"
             "loader = DataLoader(torch.randn(16, 8), batch_size=4)\nfor x in loader:\n"
             "    t = torch.randint(0, 8, (4,))\n    model(x.to(dev) * t.to(dev)[:, None]).sum().backward()\n",
             # a dataset built from device data: its `__getitem__`'s `.to(device)` copies nothing
             DATASET_HEAD + _WINDOWS.format("torch.randn(64, 8, device=device)"),
             # arithmetic with a batch tensor: computed on the device after the copy, nothing built on the host
             DATASET_HEAD + "loader = DataLoader(dataset, pin_memory=True)\nfor x, y in loader:\n"
             "    x = x.to(device, non_blocking=True)\n"
             "    model(torch.exp(x * torch.arange(8, device=device)).to(device)).sum().backward()\n"]
    _CAST = ("loader = DataLoader(dataset, pin_memory=True)\nfor x, y in loader:\n    t = {}\n"
             "    model(x.to(device, non_blocking=True) * t[0]).sum().backward()\n")
    _LATER = "loader = DataLoader(dataset, batch_size=4)\nfor x, y in loader:\n    {}\n" \
             "    model(x.to(device) * {}).sum().backward()\n"
    INVALID = [
        Example(TRAIN_STEP + "    noise = torch.zeros(2).cuda()\n",
                message="`torch.zeros` builds a tensor on the host and copies it to t",
                fixed=TRAIN_STEP + '    noise = torch.zeros(2, device="cuda")\n'),
        # the dtype conversion stays a cast after creation: full(..., dtype=float64) would not round via float32
        Example(DATASET_HEAD + _CAST.format("torch.full((2,), 0.1).to(device, torch.float64, non_blocking=True)"),
                fixed=DATASET_HEAD + _CAST.format("torch.full((2,), 0.1, device=device).to(torch.float64)")),
        # values that live on the host are copied whichever way the tensor is spelt: reported, no fix
        Example(DATASET_HEAD + _CAST.format("torch.tensor([0.1, 0.2]).to(device, non_blocking=True)"),
                message="of host values builds the tensor on the host"),
        Example(DATASET_HEAD + _CAST.format("torch.tensor([0.1, 0.2], device=device)"),
                message="`device=` does not change that"),
        # a device tensor indexed with a numpy array every step: the index is copied each time
        Example(_NUMPY_HEAD +
                "table = torch.randn(64, 8).to(device)\ninds = np.arange(64)\n"
                "for step in range(100):\n    np.random.shuffle(inds)\n    mb = inds[:8]\n"
                "    model(table[mb]).sum().backward()\n",
                message="`mb` (a numpy array or a list) indexes the device tensor `table`"),
        # a device tensor indexed by index batches of a loader over a range: each batch is a host tensor
        Example(DATASET_HEAD +
                "edges = torch.randint(0, 9, (2, 64)).to(device)\n"
                "for index in DataLoader(range(64), batch_size=8, shuffle=True):\n"
                "    model(edges[:, index].float()).sum().backward()\n",
                message="`index` (an index tensor on the host"),
        # a host tensor written into a slice of a device tensor: copied every step (a grid's size into a gain)
        Example(_NUMPY_HEAD +
                "for step in range(100):\n    gain = torch.ones(6, device=device)\n"
                "    feats = model(torch.randn(8, 4, device=device))\n"
                "    gain[2:6] = torch.tensor(feats.shape)[[1, 0, 1, 0]]\n    (feats * gain[2]).sum().backward()\n",
                message="`torch.tensor(...)` builds a host tensor that is written into the device tensor `gain`"),
        # a one-hot target written through a Python range each step (a detector's class targets)
        Example(_NUMPY_HEAD +
                "for step in range(100):\n    onehot = torch.zeros(8, 4, device=device)\n"
                "    onehot[range(8), step % 4] = 1.0\n    model(onehot).sum().backward()\n",
                message="`range(8)` (a Python range) indexes the device tensor `onehot`"),
        # the legacy constructor: a host build from host data, and it takes no `device=`: reported, no fix
        Example(DATASET_HEAD + _CAST.format("torch.Tensor([0.1, 0.2]).to(device, non_blocking=True)"),
                message="(the legacy constructor) builds the tensor on the host"),
        # sizes, filled on the host, then copied (deep-text-recognition-benchmark's decoder inputs per batch)
        Example(DATASET_HEAD + _CAST.format("torch.LongTensor(8, 26).fill_(0).to(device)"),
                message="`torch.LongTensor(...)` (the legacy constructor) builds the tensor on the host"),
        # a CUDA legacy constructor of numpy data, through the GAN scripts' alias: drawn on the host, copied
        Example(_NUMPY_HEAD +
                "Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor\n"
                "for step in range(100):\n    z = Tensor(np.random.normal(0, 1, (8, 4)))\n"
                "    model(z).sum().backward()\n",
                message="`Tensor(...)` (torch.cuda.FloatTensor) of host data"),
        # host arithmetic over a factory, then copied (a sinusoidal embedding's frequencies); `scale` may not be a
        # Python number, so no fix (tests/test_transfers.py has the fixed form, an unsafe fix)
        Example(DATASET_HEAD + "scale = get_scale()\n" + _CAST.format(
                    "torch.exp(-scale * torch.arange(0, 8, dtype=torch.float32) / 8).to(device)"),
                message="the arithmetic on it runs on the host"),
        # a dataset's `__getitem__` copies each sample to the GPU: a copy per sample, every step; no fix
        Example(DATASET_HEAD + _WINDOWS.format("torch.randn(64, 8)"),
                message="`Windows.__getitem__` copies every sample to the GPU"),
        # bound early in the step, copied later: a constant, so the fix is safe
        Example(DATASET_HEAD + _LATER.format("mask = torch.ones(8)", "mask.to(device)"),
                message="`mask` is built on the host by `torch.ones` each step",
                fixed=DATASET_HEAD + _LATER.format("mask = torch.ones(8, device=device)", "mask")),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if data_facts(self.analysis).copy_target(node) != ACCELERATOR:
            if to_a_device_tensor(self.analysis, node) and \
                    type(strip_same_on_device(self, node.func.value)) is cst.Name:  # type: ignore[union-attr]
                self._built_then_moved(node)  # `t = th.rand((B,))`, then `t = t.to(x1)`: no fix
                return
            if not self._cuda_legacy(node) and not self._cast_to_device(node) and not self._helper_copy(node) and \
                    not self._new_tensor_of_host_values(node):
                self._from_host_values(node)
            return
        if self._sample_copy(node):
            return
        factory, chain = self._factory(node.func.value)  # type: ignore[union-attr]
        legacy = self._legacy_constructor(node.func.value) if factory is None else None  # type: ignore[union-attr]
        if legacy is not None:
            where = self.where(node)
            if where:  # `device=` is not an argument of the legacy constructor: reported, no fix
                self.report(node, self.legacy.format(factory=self.analysis.qualified(legacy.func).split(".")[1]),
                            where=where)
            return
        numpy_built = self._from_numpy_sizes(node.func.value) if factory is None else None  # type: ignore[union-attr]
        if numpy_built is not None:  # no `device=` to add: built once, or on the device by torch factories
            where = self.where(node)
            if where:
                self.report(node, self.from_sizes.format(what="`torch.from_numpy(...)`", numpy=_short(
                    self.analysis.code(numpy_built.args[0].value))), where=where)
            return
        if factory is None:
            if not self._tokenized(node) and not self._computed_on_host(node) and not self._host_attribute(node) \
                    and not self._last_host_element(node) and not self._helper_built(node) and \
                    not self._host_distribution_sample(node) and not self._returned_host(node, node.func.value):
                self._built_then_moved(node)
            return
        name = self.analysis.qualified(factory.func).split(".")[-1]  # type: ignore[union-attr]
        if keyword(factory, "device") is not None:
            return  # built on a device on purpose (often "cpu", then moved): not a host-built tensor by accident
        if name.endswith("_like") and not self._like_of_host(factory):
            return  # `torch.zeros_like(student)` is built where `student` lives: the copy moves nothing
        where = self.where(node)
        if where and self._of_host_values(factory):
            # `device=` would copy the same host values: no fix that removes the copy
            self.report(node, self.from_values.format(factory=name), where=where)
        elif where:
            message = self.message.format(factory=name)
            if name in _WINDOWS:  # the same window every call: no need to compute it again, even on the device
                message += "; the window is the same on every call: build it once and keep it on the device " \
                           "(a buffer, or a cache by size)"
            self.report(node, message, where=where, fix=self._fix(node, factory, name))

    # -- a host tensor written into a device tensor: the values cross every step ---------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        """`gain[2:6] = torch.tensor(p.shape)[[3, 2, 3, 2]]` with `gain` on the device: the right side is built
        on the host (from host values, without `device=`) and copied into the device tensor, every step."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Subscript):
            return
        target = node.targets[0].target
        value = node.value
        while isinstance(value, cst.Subscript) or (
                isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and
                value.func.attr.value in _SAME_ON_DEVICE):
            value = value.value if isinstance(value, cst.Subscript) else value.func.value  # type: ignore
        if not isinstance(value, cst.Call) or keyword(value, "device") is not None or has_star_args(value):
            return
        q = self.analysis.qualified(value.func) or ""
        data = positional(value)
        if q in ("torch.tensor", "torch.as_tensor") and data:
            first = data[0]
            host = self.analysis.kind(first) in (Kind.NUMBER, Kind.OTHER, Kind.NUMPY) or (
                isinstance(first, cst.Attribute) and first.attr.value == "shape")
        else:
            host = q == "torch.from_numpy"
        if not host or not self._certainly_on_device(target.value):
            return
        where = self.where(node)
        if where:
            self.report(node, self.written.format(factory=q.split(".")[-1],
                                                  tensor=self.analysis.code(target.value)), where=where)

    # -- a device tensor indexed by a numpy array or a list of ints: the index crosses every step ---------------
    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self._certainly_on_device(node.value):
            return
        for element in node.slice:
            index = element.slice.value if isinstance(element.slice, cst.Index) else None
            if index is None or not self._host_index(index):
                continue
            where = self.where(node)
            if where:
                message = self.host_range if isinstance(index, cst.Call) and isinstance(index.func, cst.Name) \
                    and index.func.value == "range" else self.host_tensor_index \
                    if self.analysis.kind(index) is Kind.TENSOR or _host_returned(self.analysis, index) is not None \
                    else self.host_index
                self.report(node, message.format(index=self.analysis.code(index),
                                                 tensor=self.analysis.code(node.value)), where=where)
            return

    def _moved_before_the_loop(self, read: cst.Name, bindings, on_device: list) -> bool:
        """`features = torch.FloatTensor(x)`, then `if torch.cuda.is_available(): features = features.cuda()`,
        then a loop reading `features`: the name is moved onto the accelerator in place (`x = x.cuda()`), and every
        binding that leaves it on the host is set up outside the loops around the read (a run on a GPU reads the
        moved tensor at every step)."""
        moves = [b for b, d in zip(bindings, on_device) if d and isinstance(b.value, cst.Call) and
                 isinstance(b.value.func, cst.Attribute) and isinstance(b.value.func.value, cst.Name) and
                 b.value.func.value.value == read.value]
        if not moves:
            return False
        index = self.analysis.index
        loops = [a for a in index.ancestors(read) if isinstance(a, (cst.For, cst.While))]
        read_at = index.order(read)
        moved_at = [index.order(b.source) for b in moves]
        if not loops or read_at is None or None in moved_at or max(moved_at) > read_at:  # type: ignore[operator]
            return False
        last_move = max(moved_at)  # type: ignore[type-var]
        for b, d in zip(bindings, on_device):
            if d:
                continue
            at = index.order(b.source) if b.source is not None else None
            # a host binding set up before the last move, outside the loops around the read
            if at is None or at >= last_move or any(index.is_ancestor_or_self(loop, b.source) for loop in loops):
                return False
        return True

    def _host_index(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """`expr` is certainly a numpy array of indices or a list of int literals (not a numpy scalar, not a
        tensor): `np.arange(n)`, a slice of one (`b_inds[start:end]`), `[0, 2]`, a name bound only to these."""
        if depth > 4:
            return False
        if isinstance(expr, cst.List):
            return bool(expr.elements) and all(
                isinstance(e, cst.Element) and isinstance(e.value, cst.Integer) for e in expr.elements)
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Name) and expr.func.value == "range" and expr.args and \
                    not self.analysis.index.visible_bindings(expr.func):
                return True  # `t[range(n), cls] = 1`: the range becomes an index tensor on the host, then is copied
            q = self.analysis.qualified(expr.func) or ""
            if type(expr.func) is cst.Attribute and expr.func.attr.value in _INDEX_VIEWS and \
                    not has_star_args(expr) and type(expr.func.value) in (cst.Call, cst.Subscript, cst.Name):
                # `torch.arange(L).unsqueeze(1)`: a host index tensor reshaped, still on the host
                return self._host_index(expr.func.value, depth + 1)
            return q in _NUMPY_INDEX_ARRAYS or self._host_index_tensor(expr, q) or \
                _host_returned(self.analysis, expr) is not None  # `cycle_index(n, 1)`: a helper's host arange
        if isinstance(expr, cst.Subscript):  # a slice of an index array is one
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
                return self._host_index(expr.value, depth + 1)
            # `torch.arange(B)[:, None, None]`: new axes of a host index tensor (broadcast indexing)
            return _view(expr) and self._host_index(expr.value, depth + 1)
        if isinstance(expr, cst.Name):
            bindings = data_facts(self.analysis).bindings(expr)
            if len(bindings) == 1 and bindings[0].kind == "for" and bindings[0].index is None:
                return self._range_batches(bindings[0].value)  # `for index in DataLoader(range(n), ...)`
            return bool(bindings) and all(
                b.kind == "assign" and b.index is None and b.value is not None and
                self._host_index(b.value, depth + 1) for b in bindings)
        return False

    def _host_index_tensor(self, call: cst.Call, qualified: str) -> bool:
        """`torch.tensor([...])`, `torch.arange(n)`, `torch.randperm(n)`, `torch.tril_indices(...)` without
        `device=` (and no CUDA default device): an index tensor built on the host."""
        return qualified in _TORCH_INDEX_FACTORIES and keyword(call, "device") is None and \
            not has_star_args(call) and self.analysis.fact(cuda_default) is None

    def _range_batches(self, iterable: Optional[cst.BaseExpression]) -> bool:
        """A loop over a `DataLoader` of a Python range (directly, or through `tqdm`/`enumerate`-free wrappers):
        each batch is a host index tensor the loader collated."""
        if iterable is None or self.analysis.fact(cuda_default) is not None:
            return False
        loaders = data_facts(self.analysis).loaders(iterable)
        if not loaders or type(iterable) is cst.Call and dotted_name(iterable.func) == "enumerate":
            return False
        for loader in loaders:
            dataset = argument(loader, "dataset", 0)
            if dataset is None or not isinstance(dataset.value, cst.Call) or \
                    not isinstance(dataset.value.func, cst.Name) or dataset.value.func.value != "range" or \
                    self.analysis.index.visible_bindings(dataset.value.func):
                return False
        return True

    def _certainly_on_device(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """`expr` is certainly a tensor on an accelerator: a copy there (`.to(device)`, `.cuda()`), a torch
        factory with an accelerator `device=`, a view or cast of such a tensor, or a name bound only to these."""
        if depth > 8:
            return False
        facts = data_facts(self.analysis)
        if isinstance(expr, cst.Call):
            if facts.copy_target(expr) == ACCELERATOR:
                return True
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _SAME_DEVICE_METHODS and \
                    self.analysis.is_tensor(func.value):
                return self._certainly_on_device(func.value, depth + 1)
            q = self.analysis.qualified(func) or ""
            device = keyword(expr, "device")
            return q.startswith("torch.") and q.count(".") == 1 and q.split(".")[1] in _FACTORIES and \
                device is not None and facts.device_of(device.value) == ACCELERATOR
        if isinstance(expr, cst.BinaryOperation):  # `advantages + values`; `2 * t`
            sides = (expr.left, expr.right)
            on_device = [self._certainly_on_device(side, depth + 1) for side in sides]
            return all(d or isinstance(side, (cst.Integer, cst.Float)) for d, side in zip(on_device, sides)) \
                and any(on_device)
        if isinstance(expr, cst.Name):
            bindings = facts.bindings(expr)
            if not bindings:
                return False
            on_device = [b.kind == "assign" and b.index is None and b.value is not None and
                         self._certainly_on_device(b.value, depth + 1) for b in bindings]
            return all(on_device) or self._moved_before_the_loop(expr, bindings, on_device)
        if isinstance(expr, cst.Subscript):  # `edges[:, keep]`: indexing keeps the tensor where it is
            return self._certainly_on_device(expr.value, depth + 1)
        if isinstance(expr, cst.Attribute):  # `data.edge_index` of `data = graph.to(device)` (a PyG graph)
            return moved_graph_field(self.analysis.kinds, expr)
        return False

    def _legacy_constructor(self, expr: cst.BaseExpression) -> Optional[cst.Call]:
        """`torch.Tensor(values)` (or `torch.FloatTensor(...)`, ...) under methods that compute the same values
        on either device: the legacy constructor builds on the CPU from host data (it refuses a CUDA tensor)."""
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                (expr.func.attr.value in _SAME_ON_DEVICE or expr.func.attr.value in _FILLS_IN_PLACE) and \
                self.analysis.is_tensor(expr.func.value):
            expr = expr.func.value  # `torch.LongTensor(b, n).fill_(0)`: filled on the host, then copied
        if isinstance(expr, cst.Call) and self.analysis.qualified(expr.func) in _LEGACY_CONSTRUCTORS and \
                expr.args and not any(a.star for a in expr.args):
            if len(expr.args) == 1 and type(expr.args[0].value) in (cst.List, cst.Tuple) and \
                    not expr.args[0].value.elements:  # type: ignore[attr-defined]
                return None  # `torch.Tensor([])`: no values, the copy moves nothing
            return expr
        return None

    def _of_host_values(self, factory: cst.Call) -> bool:
        """`torch.tensor(values)`/`torch.as_tensor(values)` of Python numbers, lists or numpy arrays."""
        q = self.analysis.qualified(factory.func)
        data = positional(factory)
        if data and type(data[0]) in (cst.List, cst.Tuple) and not data[0].elements:
            return False  # `torch.tensor([], device=...)`: no values, PyTorch copies nothing
        return q in ("torch.tensor", "torch.as_tensor") and bool(data) and (
            self.analysis.kind(data[0]) in (Kind.NUMBER, Kind.OTHER, Kind.NUMPY) or _shape_read(data[0]) or
            narrowed_from_tensors(self.analysis, data[0]))

    def _new_tensor_of_host_values(self, node: cst.Call) -> bool:
        """`target.new_tensor([n], dtype=torch.long)` of a device tensor `target`, given Python numbers (a list of
        them, or a name of one): built on the host from the values and copied to `target`'s device, a pageable
        copy every step (semseg's per-step count for `all_reduce`). Reported, no fix (`torch.tensor(..., device=)`
        copies the same values). True when it is that call."""
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value != "new_tensor" or has_star_args(node) or \
                keyword(node, "device") is not None or not (self.analysis.is_device_tensor(func.value) or
                                                            data_facts(self.analysis).on_device(func.value)):
            return False
        data = positional(node)
        if not data:
            return False
        values = data[0]
        elements = [e.value for e in values.elements] if type(values) in (cst.List, cst.Tuple) else [values]
        if not elements or any(isinstance(e, cst.StarredElement) for e in getattr(values, "elements", ())) or \
                not all(self._python_number(e) for e in elements):
            return False
        where = self.where(node)
        if where:
            self.report(node, self.new_tensor_values.format(tensor=_short(self.analysis.code(func.value))),
                        where=where)
        return True

    def _python_number(self, expr: cst.BaseExpression) -> bool:
        """A Python number: a literal, a value of kind NUMBER, a size read (`x.size(0)`, `x.shape[0]`, `len(x)`),
        or a name every assignment of which is one of these or a `.item()` read."""
        if type(expr) in (cst.Integer, cst.Float) or self.analysis.kind(expr) is Kind.NUMBER or _shape_read(expr):
            return True
        if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "len":
            return True
        if type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in ("size", "item",
                                                                                                    "numel", "dim"):
            return True
        if type(expr) is cst.Name:
            bindings = data_facts(self.analysis).bindings(expr)
            return bool(bindings) and all(b.kind == "assign" and b.index is None and b.value is not None and
                                          type(b.value) is not cst.Name and self._python_number(b.value)
                                          for b in bindings)
        return False

    def _from_host_values(self, node: cst.Call) -> None:
        """`torch.tensor((w, h), device=device)`: the values are on the host, so the tensor is built there and
        copied, although the call names the device."""
        device = keyword(node, "device")
        if device is None:
            self._on_cuda_default(node)
            return
        if not self._of_host_values(node) or \
                data_facts(self.analysis).device_of(device.value) != ACCELERATOR:
            return  # a tensor, or unknown data, may already be on the device
        where = self.where(node)
        if where:
            name = self.analysis.qualified(node.func).split(".")[1]  # type: ignore[union-attr]
            array = _numpy_attribute_rows(self.analysis, positional(node)[0])
            message = self.from_values.format(factory=name) if array is None else \
                self.from_array.format(factory=name, array=array)
            self.report(node, message, where=where)

    def _on_cuda_default(self, node: cst.Call) -> None:
        """`torch.Tensor([1e10])`, `torch.Tensor(numpy_image)`, `torch.tensor(host_list)` in a program that set a
        CUDA default tensor type or device (analysis/default_device.py): built on the GPU from host data, a
        pageable copy on every call. Factories that generate their values (`torch.rand`, `torch.ones`,
        `torch.linspace`) are made on the device and are fine; so is `torch.Tensor(3, 4)` (sizes, no data) and
        `torch.Tensor(t)` of a tensor. A copy right after it (`.to(device)`) is reported at the copy."""
        q = self.analysis.qualified(node.func)
        if q not in ("torch.Tensor", "torch.tensor", "torch.as_tensor") or has_star_args(node) or \
                len(positional(node)) != 1 or (q == "torch.Tensor" and any(a.keyword is not None for a in node.args)):
            return
        data = positional(node)[0]
        kind = self.analysis.kind(data)
        host = type(data) in (cst.List, cst.Tuple) or kind is Kind.NUMPY or \
            (q != "torch.Tensor" and kind in (Kind.NUMBER, Kind.OTHER))
        if not host or self._copied_right_after(node):
            return
        found = self.analysis.fact(cuda_default)
        if found is None:
            return
        where = self.where(node)
        if where:
            place = "in this module" if found.path is None else f"at {display_path(found.path)}:{found.line}"
            self.report(node, self.default_type.format(factory=q.split(".")[1], where=place), where=where)

    # -- `torch.cuda.FloatTensor(np.random.normal(...))`, often through `Tensor = torch.cuda.FloatTensor if cuda else
    # torch.FloatTensor`: a CUDA tensor built from host data, a pageable copy on every call ---------------------
    def _cuda_legacy(self, node: cst.Call) -> bool:
        """Report a CUDA legacy constructor called with host data (a numpy array, a list or tuple literal); True
        when the call is one (reported or not). Sizes (`Tensor(n, 1).fill_(1.0)`) allocate on the device: fine."""
        spelt = self._cuda_legacy_type(node.func)
        if spelt is None:
            return False
        args = positional(node)
        if len(args) != 1 or len(node.args) != 1 or has_star_args(node):
            return True
        data = args[0]
        if not (type(data) in (cst.List, cst.Tuple) or self.analysis.kind(data) is Kind.NUMPY):
            return True
        where = self.where(node)
        if where:
            self.report(node, self.cuda_legacy.format(call=self.analysis.code(node.func), spelt=spelt), where=where)
        return True

    def _cuda_legacy_type(self, func: cst.BaseExpression) -> Optional[str]:
        """`torch.cuda.FloatTensor`, or a name bound only to it or to a choice between it and the CPU one
        (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`: where a GPU runs, the CUDA one)."""
        q = self.analysis.qualified(func) or ""
        if q in _CUDA_LEGACY_CONSTRUCTORS:
            return q
        if type(func) is not cst.Name:
            return None
        bindings = data_facts(self.analysis).bindings(func)
        if not bindings or not all(b.kind == "assign" and b.index is None and b.value is not None for b in bindings):
            return None
        found = set()
        for b in bindings:
            branches = [b.value.body, b.value.orelse] if type(b.value) is cst.IfExp else [b.value]
            spelt = [self.analysis.qualified(x) or "" for x in branches]
            if not all(x in _CUDA_LEGACY_CONSTRUCTORS or x in _LEGACY_CONSTRUCTORS for x in spelt):
                return None
            found.update(x for x in spelt if x in _CUDA_LEGACY_CONSTRUCTORS)
        return min(found) if found else None

    def _tokenized(self, copy: cst.Call) -> bool:
        """Report a copy of what `tokenizer(..., return_tensors="pt")` returned (the call itself, a field of its
        result, a name bound to either); True when the copied value is such a host result."""
        source = tokenized_on_host(self.analysis, copy.func.value)  # type: ignore[union-attr]
        if source is None:
            return False
        where = self.where(copy)
        if where and not is_test_path(Path(self.analysis.path) if self.analysis.path else None):
            # (a tokenizer test's loop over tokenizer classes moves one encoding per class: not a step)
            self.report(copy, self.tokenized.format(call=_callee_text(source)), where=where)
        return True

    def _copied_right_after(self, node: cst.Call) -> bool:
        attribute = self.analysis.index.parent.get(node)
        return isinstance(attribute, cst.Attribute) and attribute.value is node and \
            attribute.attr.value in ("to", "cuda", "cpu", "pin_memory")

    def _factory(self, expr: cst.BaseExpression):
        chain = []
        while type(expr) is cst.Call and type(expr.func) is cst.Attribute and (
                expr.func.attr.value in _SAME_ON_DEVICE and self.analysis.is_tensor(expr.func.value) or
                self._dtype_cast(expr)):
            chain.append(expr)
            expr = expr.func.value
        if type(expr) is cst.Call and not chain and len(expr.args) == 1 and expr.args[0].keyword is None and \
                not expr.args[0].star and self.analysis.qualified(expr.func) in _VARIABLE:
            return self._factory(expr.args[0].value)  # `Variable(torch.zeros(n)).cuda()`: the same tensor
        if type(expr) is cst.Call:
            q = self.analysis.qualified(expr.func)
            if q is not None and q.startswith("torch.") and q.count(".") == 1 and q.split(".")[1] in _FACTORIES:
                return expr, chain
        return None, chain

    def _dtype_cast(self, call: cst.Call) -> bool:
        """`t.to(dtype)` with one positional argument that is a dtype: `torch.float32`, `x.dtype`, or a name bound
        only to one (`dtype = classifications.dtype`): the cast keeps the tensor where it is."""
        if call.func.attr.value != "to" or len(call.args) != 1 or call.args[0].keyword is not None or \
                call.args[0].star:  # type: ignore[union-attr]
            return False
        return self._is_dtype(call.args[0].value, 0)

    def _is_dtype(self, expr: cst.BaseExpression, depth: int) -> bool:
        if type(expr) is cst.Attribute and expr.attr.value == "dtype":
            return True
        q = self.analysis.qualified(expr) if type(expr) in (cst.Attribute, cst.Name) else None
        if q is not None and q.startswith("torch.") and q.count(".") == 1 and q.split(".")[1] in _DTYPES:
            return True
        if type(expr) is not cst.Name or depth > 2:
            return False
        bindings = data_facts(self.analysis).bindings(expr)
        return bool(bindings) and all(b.kind == "assign" and b.index is None and b.value is not None and
                                      self._is_dtype(b.value, depth + 1) for b in bindings)

    def _host_distribution_sample(self, node: cst.Call) -> bool:
        """`self.dist.rsample((bs, 1)).view(-1, 1, 1, 1).cuda()` where every assignment of `self.dist` in the class
        builds a `torch.distributions` object from host values (`Beta(torch.tensor([1.2]), torch.tensor([1.2]))`):
        the sample is drawn on the host and copied to the GPU on every call. True when reported."""
        expr = node.func.value  # type: ignore[union-attr]
        while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _SAME_ON_DEVICE:
            expr = expr.func.value  # `.view(-1, 1, 1, 1)` of the sample: still on the host
        if type(expr) is not cst.Call or type(expr.func) is not cst.Attribute or \
                expr.func.attr.value not in ("sample", "rsample", "sample_n"):
            return False
        holder = expr.func.value
        if type(holder) is not cst.Attribute or type(holder.value) is not cst.Name or holder.value.value != "self":
            return False
        cls = self.analysis.index.enclosing_class(node)
        if cls is None:
            return False
        built = []
        for sub in descendants(cls):
            if type(sub) is cst.Assign:
                for target in sub.targets:
                    t = target.target
                    if type(t) is cst.Attribute and t.attr.value == holder.attr.value and \
                            type(t.value) is cst.Name and t.value.value == "self":
                        built.append(sub.value)
        if not built or not all(self._host_distribution(v) for v in built):
            return False
        where = self.where(node)
        if where:
            self.report(node, self.distribution.format(code=_short(self.analysis.code(expr.func))), where=where)
        return True

    def _host_distribution(self, value: cst.BaseExpression) -> bool:
        """`torch.distributions.beta.Beta(torch.tensor([a]), torch.tensor([a]))`, `Normal(0.0, 1.0)`: parameters
        that are Python numbers or tensors built without `device=`."""
        if type(value) is not cst.Call or has_star_args(value):
            return False
        q = self.analysis.qualified(value.func) or ""
        if not q.startswith("torch.distributions."):
            return False
        for arg in value.args:
            v = arg.value
            if type(v) in (cst.Integer, cst.Float) or type(v) is cst.UnaryOperation and \
                    type(v.expression) in (cst.Integer, cst.Float):
                continue
            if type(v) is cst.Call and self.analysis.qualified(v.func) in ("torch.tensor", "torch.as_tensor") and \
                    keyword(v, "device") is None and v.args and \
                    self.analysis.kind(v.args[0].value) in (Kind.NUMBER, Kind.OTHER):
                continue
            return False
        return bool(value.args)

    def _from_numpy_sizes(self, expr: cst.BaseExpression) -> Optional[cst.Call]:
        """`torch.from_numpy(<numpy constant or array of sizes>)` (`np.repeat(range(n_way), n_query)`), through
        same-on-device methods and `Variable(...)`: a host tensor of constants that `device=` cannot move."""
        expr = strip_same_on_device(self, expr)
        if type(expr) is cst.Call and len(expr.args) == 1 and expr.args[0].keyword is None and \
                not expr.args[0].star and self.analysis.qualified(expr.func) == "torch.from_numpy" and \
                _numpy_constant(self, expr.args[0].value):
            return expr
        return None

    def _like_of_host(self, factory: cst.Call) -> bool:
        """`torch.zeros_like(x)` (any `*_like`) of an `x` known to be in host memory: the factory builds where its
        input lives, so only then is the result a host tensor the copy moves."""
        first = next((a.value for a in factory.args if a.keyword is None and not a.star), None)
        return first is not None and self.analysis.kinds.on_host(first)

    # -- `torch.zeros(n).fill_(s).type_as(x)`, `.type(torch.cuda.FloatTensor)`: casts that copy --------------------
    def _cast_to_device(self, node: cst.Call) -> bool:
        """A tensor built on the host by a torch factory (through in-place fills and same-on-device methods) and
        cast with `.type_as(x)` or `.to(x)` of a tensor not known to be on the host, or with `.type(<CUDA tensor
        type>)`: the cast copies it to where `x` lives, the GPU on the runs gpulint is for. Reported, no fix (the
        cast also picks the dtype, which `device=` alone does not). `.to(x)` counts only where `x` is a tensor: its
        kind says so, or its function reads it as one (`x.shape`, `torch.isfinite(x)`: analysis/tensor_uses.py)."""
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value not in ("type_as", "type", "to") or \
                has_star_args(node) or len(node.args) != 1 or node.args[0].keyword is not None:
            return False
        if func.attr.value == "type":
            if not cuda_type_copy(self.analysis, node):
                return False
        elif not self.analysis.targets_gpu or self._host_built(node.args[0].value) or \
                (func.attr.value == "to" and not self._cast_to_tensor(node.args[0].value)):
            return False  # `.to(other)` of a tensor casts like `.type_as(other)`; `.to(dtype)` copies nothing
        receiver = func.value
        while type(receiver) is cst.Call and type(receiver.func) is cst.Attribute and \
                receiver.func.attr.value in _FILLS_IN_PLACE and self.analysis.is_tensor(receiver.func.value):
            receiver = receiver.func.value  # `torch.zeros(1, n).fill_(stride)`: filled on the host
        factory, _ = self._factory(receiver)
        if factory is None and func.attr.value == "type_as" and self._returned_host(node, receiver):
            return True  # `mask, start = causal_mask(n)` then `mask.type_as(query)`: the helper's host tensor
        if factory is None and func.attr.value in ("type_as", "to"):
            drawn = self._from_numpy_drawn(receiver)
            if drawn is not None:
                # `torch.from_numpy(np.random.permutation(n)).type_as(gt_boxes)`: a host array of sizes or of
                # random draws, cast to where a device tensor lives every step
                where = self.where(node)
                if where:
                    self.report(node, self.from_numpy_cast.format(numpy=_short(self.analysis.code(drawn)),
                                                                  cast=func.attr.value), where=where)
                return True
        if factory is None and func.attr.value in ("type_as", "to"):
            legacy = self._legacy_of_data(receiver)
            if legacy is not None:
                # `torch.Tensor(gt_roi_loc).type_as(rpn_locs)`: a helper's numpy result wrapped by the legacy
                # constructor on the host, cast to where the network's output lives (Faster R-CNN's targets)
                where = self.where(node)
                if where:
                    self.report(node, self.legacy.format(factory=legacy), where=where)
                return True
        if factory is None:  # `(torch.ones(n, n) / n).type_as(x)`: host arithmetic over factories, then the cast
            computed = _HostMath(self.analysis).factories(receiver)
            factory = computed.factories[0] if computed is not None else None
        if factory is None or keyword(factory, "device") is not None:
            return False
        name = self.analysis.qualified(factory.func).split(".")[-1]  # type: ignore[union-attr]
        if name.endswith("_like") and not self._like_of_host(factory):
            return False  # `torch.zeros_like(x).type_as(x)`: built where `x` lives, the cast moves nothing
        where = self.where(node)
        if where and func.attr.value == "to" and self._of_host_values(factory):
            self.report(node, self.from_values.format(factory=name), where=where)  # `device=` would not help
        elif where:
            if func.attr.value in ("type_as", "to"):
                other = self.analysis.code(node.args[0].value)
                hint = f"`device={other}.device, dtype={other}.dtype`" if len(other) <= 40 else \
                    "`device=` and `dtype=` of the tensor it is cast to"
            else:
                hint = "`device=` a CUDA device and the `dtype=` of the tensor type"
            self.report(node, self.cast.format(factory=name, cast=func.attr.value, hint=hint), where=where)
        return True

    def _legacy_of_data(self, expr: cst.BaseExpression) -> Optional[str]:
        """`torch.Tensor(array)`, `torch.LongTensor(labels)` (through same-on-device methods): a legacy CPU
        constructor given one value that is not a size (a literal number, or a number by its kind), in a program
        with no CUDA default tensor type: its name, else None. Its value is on the host whatever it is (the
        constructor refuses a CUDA tensor), so the cast copies it."""
        expr = strip_same_on_device(self, expr)
        if type(expr) is not cst.Call or len(expr.args) != 1 or expr.args[0].keyword is not None or \
                expr.args[0].star:
            return None
        q = self.analysis.qualified(expr.func)
        data = expr.args[0].value
        if q not in _LEGACY_CONSTRUCTORS or type(data) in (cst.Integer, cst.Float) or \
                self.analysis.kind(data) is Kind.NUMBER or data_facts(self.analysis).on_device(data) or \
                self.analysis.fact(cuda_default) is not None:
            return None
        return q.split(".")[-1]

    def _from_numpy_drawn(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The numpy array of `torch.from_numpy(<array>)` (through same-on-device methods and `Variable(...)`)
        where the array is built from sizes or constants (`_numpy_constant`) or drawn by `np.random.*`
        (`np.random.permutation(n)`, `np.random.choice(n, k)`): values the host makes up each step, not data."""
        expr = strip_same_on_device(self, expr)
        if type(expr) is not cst.Call or len(expr.args) != 1 or expr.args[0].keyword is not None or \
                expr.args[0].star or self.analysis.qualified(expr.func) != "torch.from_numpy":
            return None
        array = expr.args[0].value
        if _numpy_constant(self, array):
            return array
        if type(array) is cst.Call and type(array.func) in (cst.Name, cst.Attribute) and \
                (self.analysis.qualified(array.func) or "").startswith("numpy.random."):
            return array
        return None

    def _cast_to_tensor(self, other: cst.BaseExpression) -> bool:
        """`.to(other)` casts to a tensor's device and dtype, where `other` is on the device: bound from a copy to
        an accelerator, or a tensor (by its kind, or by how its function reads it) that the function is given as
        a parameter (maybe rebound from itself, `x = x.reshape(...)`), in a module that names an accelerator by
        more than `.to(` calls. A loader's batch that is never moved stays on the host, and so does the cast."""
        if not names_an_accelerator(self.analysis):
            return False
        if data_facts(self.analysis).on_device(other):
            return True
        return (self.analysis.is_tensor(other) or read_as_tensor(self.analysis, other)) and \
            given_tensor(self.analysis, other)

    def _host_built(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """`expr` is a tensor in host memory (`.cpu()`, `torch.from_numpy`, ...), a torch factory without
        `device=`, or a name bound only to these: `.type_as(expr)` keeps a host tensor on the host."""
        if depth > 4:
            return True  # unsure: as good as host (no finding)
        if self.analysis.kinds.on_host(expr):
            return True
        if type(expr) is cst.Call:
            factory, _ = self._factory(expr)
            return (factory is not None and keyword(factory, "device") is None) or \
                self._legacy_constructor(expr) is not None
        if type(expr) is cst.Name:
            bindings = data_facts(self.analysis).bindings(expr)
            return any(b.kind in ("assign", "walrus") and b.value is not None and
                       self._host_built(b.value, depth + 1) for b in bindings)
        return False

    # -- `return sample.cuda()` in a dataset's `__getitem__`: a copy per sample ----------------------------------
    def _sample_copy(self, node: cst.Call) -> bool:
        """A copy to the GPU in what a map-style dataset class's `__getitem__` returns (`return seq.cuda()`,
        `return x.to(device), y`), where a hot loop of the module draws batches of a `DataLoader` over an instance
        of the class (analysis/data_path.py `sample_draws`): one small pageable copy per sample, every step, and
        the loader can use no worker processes. Reported where the copy is, no fix (the batch has to be moved
        in the loop instead)."""
        index = self.analysis.index
        function = next((a for a in index.ancestors(node) if type(a) in (cst.FunctionDef, cst.Lambda)), None)
        if type(function) is not cst.FunctionDef or function.name.value != "__getitem__":
            return False
        block = self.analysis.parent(function)
        cls = self.analysis.parent(block) if type(block) is cst.IndentedBlock else None
        if type(cls) is not cst.ClassDef or not self._returned(node, function):
            return False
        paths = data_path_facts(self.analysis)
        if not paths.device_items(cls) or self._moved_already(node) or \
                self._device_attribute(node.func.value):  # type: ignore[union-attr]
            return False
        where = next((w for w in map(self.where, paths.sample_draws(cls)) if w), None)
        if where:
            self.report(node, self.sample.format(cls=cls.name.value, code=self.analysis.code(node)), where=where)
        return True

    def _moved_already(self, copy: cst.Call) -> bool:
        """What `copy` copies is on the device already (built from device tensors), not counting the binding
        `copy` itself makes (`seq = seq.to(device)`)."""
        facts = data_facts(self.analysis)
        receiver = copy.func.value  # type: ignore[union-attr]
        if type(receiver) is not cst.Name:
            return facts.on_device(receiver)
        index = self.analysis.index
        return any(facts.on_device(b.value) for b in facts.bindings(receiver)
                   if b.kind in ("assign", "walrus") and b.value is not None and
                   not index.is_ancestor_or_self(b.value, copy))

    def _returned(self, node: cst.Call, function: cst.FunctionDef) -> bool:
        """`node` is (part of) what `function` returns: inside a `return`, or bound to a name a `return` hands back
        (`x = x.cuda()` ... `return x`)."""
        index = self.analysis.index
        for parent in index.ancestors(node):
            if type(parent) is cst.Return:
                return True
            if parent is function:
                break
        statement = self.analysis.parent(node)
        if type(statement) is cst.Assign and len(statement.targets) == 1 and statement.value is node and \
                type(statement.targets[0].target) is cst.Name:
            name = statement.targets[0].target.value
            return any(type(n) is cst.Return and n.value is not None and any(
                type(m) is cst.Name and m.value == name for m in _walk(n.value)) for n in _walk(function.body))
        return False

    def _device_attribute(self, receiver: cst.BaseExpression) -> bool:
        """`self.x[i]` (or `self.x`) where some assignment of `self.x` in the module is a device tensor: the
        dataset holds its data on the GPU, so the copy copies nothing."""
        while type(receiver) in (cst.Subscript, cst.Call):
            receiver = receiver.value if type(receiver) is cst.Subscript else \
                receiver.func.value if type(receiver.func) is cst.Attribute else receiver.func  # type: ignore
        if type(receiver) is not cst.Attribute or type(receiver.value) is not cst.Name or \
                receiver.value.value != "self":
            return False
        facts = data_facts(self.analysis)
        return any(facts.on_device(v) for v in facts.self_attributes().get(receiver.attr.value, ()))

    def _host_attribute(self, node: cst.Call) -> bool:
        """`self.pos_embed.type_as(x).to(x.device)` of a plain attribute holding a host tensor
        (analysis/host_attributes.py): `model.to(device)` does not move it, so it is copied every step. Reported,
        no fix (`register_buffer` changes the state dict)."""
        name = host_attribute(self.analysis, node.func.value)  # type: ignore[union-attr]
        if name is None:
            held = object_host_attribute(self.analysis, node.func.value)  # type: ignore[union-attr]
            message = self.object_attribute_message
            if held is None:  # `smld_sigma_array.to(batch.device)` in a closure, built on the host by its factory
                held, message = captured_host_tensor(self.analysis, node.func.value), self.captured_message
            if held is None:
                return False
            where = self.where(node)
            if where:
                self.report(node, message.format(name=held), where=where)
            return True
        where = self.where(node)
        if where:
            self.report(node, self.host_attribute_message.format(name=name), where=where)
        return True

    def _fix(self, copy: cst.Call, factory: cst.Call, name: str):
        unfixable = ("requires_grad", "out", "pin_memory", "generator")
        if has_star_args(factory) or any(keyword(factory, k) for k in unfixable):
            return None
        device = copy_device(copy)
        if device is None:
            return None
        built = append_keyword(factory, "device", device.deep_clone())
        replacement = without_copy(copy.deep_replace(factory, built))  # type: ignore[arg-type]
        if replacement is None:
            return None
        random = name in _RANDOM
        note = " (random numbers come from the device's generator)" if random else \
            " (the device computes the window's cosines, maybe different in the last bits)" if name in _WINDOWS else ""
        return self.fix(f"Create the tensor on the device with `device=`{note}", {copy: replacement},
                        safe=not random and name not in _WINDOWS)

    # -- computed on the host from factories, then copied: `torch.exp(-c * torch.arange(n) / n).to(device)` -----
    def _computed_on_host(self, copy: cst.Call) -> bool:
        """Report a copy of host arithmetic over torch factories (a sinusoidal embedding's frequencies built
        every forward); True when reported. Fixed (unsafe: the device's `exp`/`sin` may differ in the last bits)
        by building each factory on the device, where every other operand is a Python number."""
        base = strip_same_on_device(self, copy.func.value)  # type: ignore[union-attr]
        found = _HostMath(self.analysis, names=True).factories(base)
        if not found or (len(found.factories) == 1 and base is found.factories[0]) or \
                type(base) is cst.Name:  # a name bound to host arithmetic and copied: `_moved_later`'s shape
            return False
        where = self.where(copy)
        if where is None:
            return False
        first = self.analysis.qualified(found.factories[0].func).split(".")[1]  # type: ignore[union-attr]
        device = copy_device(copy)
        fix = None
        if found.numbers_only and not found.through_names and not found.retyped and device is not None and not any(
                has_star_args(f) or any(keyword(f, k) for k in _UNFIXABLE) for f in found.factories):
            built = copy.func.value  # type: ignore[union-attr]
            for f in found.factories:
                built = built.deep_replace(f, append_keyword(f, "device", device.deep_clone()))
            replacement = without_copy(copy.with_changes(func=copy.func.with_changes(value=built)))
            if replacement is not None:
                fix = self.fix("Create the tensors on the device with `device=` and compute there", {copy: replacement},
                               safe=False)
        self.report(copy, self.computed.format(factory=first), where=where, fix=fix)
        return True

    # -- a project helper that builds its result on the host: `coords_grid(b, h, w).to(flow.device)` -----------
    def _helper_built(self, copy: cst.Call) -> bool:
        """Report a copy of what a project function returns when it builds that tensor on the host with torch
        factories (analysis/host_returns.py); True when reported. No fix (the helper decides where it builds)."""
        base = strip_same_on_device(self, copy.func.value)  # type: ignore[union-attr]
        found = _host_returned(self.analysis, base)
        if found is None:
            return False
        where = self.where(copy)
        if where is None:
            return False
        helper, (path, line, factory) = found
        message = self.helper_values if factory in ("torch.tensor", "torch.as_tensor") else self.helper_built
        self.report(copy, message.format(call=helper, factory=factory), where=where,
                    related=(Related(display_path(path), line, f"`{factory}` without `device=`"),))
        return True

    def _legacy_bound(self, copy: cst.Call, name: cst.Name, where) -> bool:
        """`conf_t = torch.LongTensor(num, num_priors)`, filled on the host (by a helper, row by row), then
        `conf_t = conf_t.cuda()` in the same step: the legacy constructor allocates pageable host memory each step
        and the copy blocks. Reported at the first copy of the name, no fix (the fill may need the host); True when
        the name is bound to such a constructor in the step (reported or not)."""
        binding = self._reaching_assignment(name)
        if binding is None:
            return False
        legacy = self._legacy_constructor(strip_same_on_device(self, binding.value))
        if legacy is None:
            return False
        index = self.analysis.index
        fn = index.enclosing_function(copy)
        if index.order(binding.source) > index.order(copy) or \
                index.enclosing_function(binding.source) is not fn or (
                where.loop is not None and not index.is_ancestor_or_self(where.loop.body, binding.source) and
                (fn is None or index.is_ancestor_or_self(fn, where.loop))):
            return True  # bound outside the step (before the loop): built once (a script's top level too)
        built = self.where(binding.source)
        if built is None or not built.every_iteration:
            return True
        copies = uses_of(self, binding).copies
        if copies and min(copies, key=index.order) is not copy:
            return True  # reported once, at the first copy
        factory = self.analysis.qualified(legacy.func).split(".")[1]  # type: ignore[union-attr]
        # `torch.LongTensor(num, num_priors)` allocates by sizes; `torch.Tensor(_data)` converts host values
        sizes = len(legacy.args) > 1 or type(legacy.args[0].value) is cst.Integer or \
            self.analysis.kind(legacy.args[0].value) is Kind.NUMBER
        message = self.legacy_later if sizes else self.legacy_data_later
        self.report(copy, message.format(name=name.value, factory=factory), where=where)
        return True

    # -- a host tensor a project function returns in a tuple: `adj, feats, labels = load_data()` ... ----------
    def _returned_host(self, copy: cst.Call, receiver: cst.BaseExpression) -> bool:
        """`labels[idx_train].to(device)` (or `.cuda()`, `.type_as(query)`) every step, `labels` unpacked from what
        a project function returns, where that element is a tensor (or a list of tensors) the function builds on
        the host (analysis/host_tuple_returns.py), bound that way only. Reported at the copy, naming the function;
        no fix (the move belongs where the data is loaded). True when reported."""
        base = strip_same_on_device(self, receiver)
        subscripted = False
        while type(base) is cst.Subscript:
            base = strip_same_on_device(self, base.value)
            subscripted = True
        if type(base) is not cst.Name:
            return False
        found = _returned_host_name(self, base, 0)
        if found is None or found[0] == "list" and not subscripted:
            return False
        where = self.where(copy)
        if where is None:
            return False
        _, helper, path, line = found
        self.report(copy, self.returned_host.format(name=base.value, call=helper), where=where,
                    related=(Related(display_path(path), line, f"`{helper}` builds it on the host"),))
        return True

    # -- a host factory handed to a project helper that copies it: `scores = async_copy_to(torch.zeros(...), gpu)` --
    def _helper_copy(self, node: cst.Call) -> bool:
        """`scores = torch.zeros(1, c, h, w)` then `scores = async_copy_to(scores, gpu)` (or the factory written in
        the call) in the same step, the callee a project function that copies that parameter to the GPU on every
        call (`FunctionSummary.moves_params`: `obj.cuda(dev, non_blocking=True)`): the tensor is allocated and
        filled on the host, then copied, every step. Reported at the helper's call; True when reported."""
        if type(node.func) not in (cst.Name, cst.Attribute) or not node.args or \
                is_test_path(Path(self.analysis.path) if self.analysis.path else None):
            return False  # (a test's loop over dtypes or cases is no training step)
        candidates = []
        for arg in node.args:
            if arg.star:
                break
            value = arg.value
            if type(value) is cst.Name:
                binding = self._reaching_assignment(value)
                if binding is None:
                    continue
                value = binding.value
            else:
                binding = None
            factory, _ = self._factory(value)
            if factory is not None:
                candidates.append((arg.value, factory, binding))
        if not candidates:
            return False
        where = self.where(node)
        if where is None or not where.every_iteration:
            return False
        moved = data_facts(self.analysis).helper_moved_args(node, tensors=True)
        index = self.analysis.index
        fn = index.enclosing_function(node)
        for value, factory, binding in candidates:
            if not any(m is value for m in moved):
                continue
            name = self.analysis.qualified(factory.func).split(".")[-1]  # type: ignore[union-attr]
            if keyword(factory, "device") is not None or name in ("tensor", "as_tensor") or \
                    (name.endswith("_like") and not self._like_of_host(factory)):
                continue  # built on a device on purpose, or from values a helper may hand in (GPU410's)
            if binding is not None and (index.order(binding.source) > index.order(node) or
                                        index.enclosing_function(binding.source) is not fn or (
                    where.loop is not None and not index.is_ancestor_or_self(where.loop.body, binding.source) and
                    fn is not None and index.is_ancestor_or_self(fn, where.loop))):
                continue  # bound outside the step (before the loop): built once
            what = f"`{value.value}`" if type(value) is cst.Name else "the tensor"  # type: ignore[union-attr]
            self.report(node, self.helper_copied.format(what=what, factory=name, call=_callee_text(node)),
                        where=where)
            return True
        return False

    def _reaching_assignment(self, name: cst.Name):
        """The one plain `name = value` assignment that reaches this read (flow-sensitive: `conf_t = conf_t.cuda()`
        and a later `conf_t = Variable(conf_t)` do not hide `conf_t = torch.LongTensor(n, m)` above), or None."""
        bindings = single_assignment(self, name)
        if bindings is not None:
            return bindings
        index = self.analysis.index
        # `scores = helper(scores, gpu)`: the statement holding the read binds after it
        reaching = [b for b in self.analysis.kinds.reaching_bindings(name)
                    if b.source is None or not index.is_ancestor_or_self(b.source, name)]
        if len(reaching) != 1 or reaching[0].kind != "assign" or reaching[0].index is not None or \
                reaching[0].value is None or not isinstance(reaching[0].source, cst.Assign) or \
                len(reaching[0].source.targets) != 1:
            return None
        return reaching[0]

    def _helper_bound(self, copy: cst.Call, name: cst.Name, where) -> None:
        """`y_oh = one_hot(y, n)` then `y_oh.cuda()` in the same step (the loop's body or one per-step function):
        the name is bound once to what a project helper builds on the host (analysis/host_returns.py), and every
        use of it is a copy to the accelerator. Reported at the copy, naming the helper; no fix."""
        binding = single_assignment(self, name)
        if binding is None:
            return
        value = strip_same_on_device(self, binding.value)
        found = _host_returned(self.analysis, value)
        if found is None:
            return
        index = self.analysis.index
        if index.order(binding.source) > index.order(copy):
            return
        fn = index.enclosing_function(copy)
        if index.enclosing_function(binding.source) is not fn or (
                where.loop is not None and not index.is_ancestor_or_self(where.loop.body, binding.source) and
                (fn is None or index.is_ancestor_or_self(fn, where.loop))):
            return  # bound outside the step (before the loop): built once (a script's top level too)
        uses = uses_of(self, binding)
        if uses.host or uses.tables or uses.rows or uses.writes or not uses.copies:
            return
        helper, (path, line, factory) = found
        message = self.helper_values if factory in ("torch.tensor", "torch.as_tensor") else self.helper_built
        self.report(copy, message.format(call=helper, factory=factory), where=where,
                    related=(Related(display_path(path), line, f"`{factory}` without `device=`"),))

    # -- a trajectory kept on the host, its last step copied back: `xs[-1].to(device)` ... `xs.append(x.cpu())` ----
    def _last_host_element(self, copy: cst.Call) -> bool:
        """`xs[-1].to(device)` in a hot loop whose body appends to `xs` only host copies (`xs.append(x.to('cpu'))`):
        from the second iteration on, the step copies back what the step before moved to the host, a blocking copy
        each way. True when reported; no fix (what the list keeps, and where, is the author's choice)."""
        base = strip_same_on_device(self, copy.func.value)  # type: ignore[union-attr]
        if type(base) is not cst.Subscript or type(base.value) is not cst.Name or len(base.slice) != 1 or \
                not isinstance(base.slice[0].slice, cst.Index) or not _minus_one(base.slice[0].slice.value):
            return False
        where = self.where(copy)
        if where is None or where.loop is None or not self.analysis.index.is_ancestor_or_self(where.loop.body, copy):
            return False
        name = base.value.value
        appended = []
        for node in _walk(where.loop.body):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "append" and \
                    type(node.func.value) is cst.Name and node.func.value.value == name:
                appended.extend(a.value for a in node.args)
            elif type(node) in (cst.AssignTarget, cst.AugAssign) and type(node.target) is cst.Name and \
                    node.target.value == name:
                return False  # rebound in the loop: the list is not the one the loop keeps
        if not appended or not all(self.analysis.kinds.on_host(v) for v in appended):
            return False
        self.report(copy, self.host_trajectory.format(name=name), where=where)
        return True

    # -- built on the host earlier in the step, copied later: `t = torch.randint(...)` ... `t.to(device)` --------
    def _built_then_moved(self, copy: cst.Call) -> None:
        base = strip_same_on_device(self, copy.func.value)  # type: ignore[union-attr]
        if type(base) is cst.Name:
            self._moved_later(copy, base)
        elif type(base) is cst.Subscript and type(base.value) is cst.Name and _view(base):
            self._moved_later(copy, base.value, view=True)  # `pe[None, :].to(device)`: the tensor, viewed
        elif type(base) is cst.Subscript and type(base.value) is cst.Name and len(base.slice) == 1 and \
                isinstance(base.slice[0].slice, cst.Index) and isinstance(base.slice[0].slice.value, cst.Name):
            self._table_rows(copy, base, base.slice[0].slice.value)

    def _moved_later(self, copy: cst.Call, name: cst.Name, view: bool = False) -> None:
        found = built_this_step(self, name, copy)
        where = self.where(copy)
        if found is None and where is not None and not view:
            if not self._legacy_bound(copy, name, where):
                self._helper_bound(copy, name, where)
            return
        if found is None or where is None:
            return
        binding, factory = found
        uses = uses_of(self, binding)
        tables = [(t, single_assignment(self, t.value)) for t in uses.tables]
        copies = uses.copies + [copy_above(self, rows) for rows in uses.rows]  # `t[:, None].to(device)` too
        if uses.host or not copies or None in copies or any(b is None or not data_facts(self.analysis).on_device(b.value) and
                            copy_above(self, t) is None for t, b in tables):
            return  # also read on the host (or indexes a host table whose rows stay there): it belongs there
        order = self.analysis.index.order
        if view and (uses.copies or any(order(c) < order(copy) for c in copies)):
            return  # reported once, at the name's own copy or at its first copied view
        factory_name = self.analysis.qualified(factory.func).split(".")[1]  # type: ignore[union-attr]
        if self._of_host_values(factory):
            self.report(copy, self.from_values.format(factory=factory_name), where=where)
            return
        if factory_name == "from_numpy":  # a numpy constant or an array of sizes: no `device=` to add
            self.report(copy, self.from_sizes.format(what=f"`{name.value}`", numpy=_short(self.analysis.code(
                factory.args[0].value))), where=where)
            return
        conditional = uses.cpu_path or any(under_cuda_test(self, c) or self._branch_between(binding, c)
                                           for c in copies) or \
            factory_name == "from_numpy" or uses.writes  # (values written on the host would still be copied)
        self.report(copy, self.later.format(factory=factory_name, name=name.value), where=where,
                    fix=None if conditional else self._fix_later(binding, factory, factory_name, copies, tables))

    def _branch_between(self, binding, copy: cst.Call) -> bool:
        """The copy runs under an `if` that the binding does not (`noise = torch.randn(...)`, then `if use_cuda:
        noise = noise.cuda()`): building the tensor on the device would skip that test."""
        index = self.analysis.index
        for ancestor in index.ancestors(copy):
            if index.is_ancestor_or_self(ancestor, binding.source):
                return False
            if type(ancestor) in (cst.If, cst.IfExp):
                return True
        return False

    def _constant_fill(self, value: cst.BaseExpression) -> bool:
        """A value written into a tensor built this step that is a constant: numbers, or host arithmetic over
        torch factories (`pe[0::2] = torch.sin(pos * div)`); data written there makes it a host buffer instead."""
        return _HostMath(self.analysis, names=True).constant_fill(value)

    def _fix_later(self, binding, factory: cst.Call, name: str, copies: list, tables: list):
        device = copy_device(copies[0])
        unfixable = ("requires_grad", "out", "pin_memory", "generator")
        if device is None or any(to_a_device_tensor(self.analysis, c) for c in copies) or \
                scaled_factory(self, binding) or \
                has_star_args(factory) or any(keyword(factory, k) for k in unfixable) or \
                not same_device(self, copies, device) or \
                not defined_before(self, device, statement_of(binding.source, self.analysis.parent)):
            return None
        changes = {factory: append_keyword(factory, "device", device.deep_clone())}
        for copy in copies:
            line = self._rebinding_line(copy, binding.name)
            if line is not None:  # `t = t.to(device)`: with the copy gone the statement is `t = t`; drop it
                changes[line] = cst.RemoveFromParent()
            else:
                changes[copy] = without_copy(copy)
        safe = exact_on_device(self, factory)
        for subscript, table in tables:
            if data_facts(self.analysis).on_device(table.value):
                continue
            moved = moved_table(self, table, device)
            if moved is None:
                return None  # a host table indexed by a device tensor would raise
            changes.update(moved)
            safe = False
        if any(v is None for v in changes.values()):
            return None
        notes = [" (random numbers come from the device's generator)"] if name in _RANDOM else []
        notes += [f" and move `{t.value.value}` to the device once" for t, b in tables
                  if not data_facts(self.analysis).on_device(b.value)][:1]
        return self.fix(f"Create `{binding.name}` on the device with `device=` and drop its copies{''.join(notes)}",
                        changes, safe=safe)

    def _rebinding_line(self, copy: cst.Call, name: str) -> Optional[cst.SimpleStatementLine]:
        """The statement line `name = name.to(device)` that is nothing but this copy rebinding the name."""
        parent = self.analysis.parent
        assign = parent(copy)
        line = parent(assign) if type(assign) is cst.Assign else None
        if type(line) is not cst.SimpleStatementLine or len(line.body) != 1 or len(assign.targets) != 1:
            return None
        target = assign.targets[0].target
        receiver = copy.func.value  # type: ignore[union-attr]
        if type(target) is cst.Name and target.value == name and type(receiver) is cst.Name and \
                receiver.value == name:
            return line
        return None

    def _table_rows(self, copy: cst.Call, subscript: cst.Subscript, index: cst.Name) -> None:
        where = self.where(copy)
        table = host_table(self, subscript, copy)
        if where is None or table is None or built_this_step(self, index, copy) is None:
            return
        moved = moved_table(self, table, copy_device(copy)) if copy_device(copy) is not None else None
        fix = None if moved is None else self.fix(
            f"Move `{table.name}` to the device once where it is defined, and index it there", moved, safe=False)
        self.report(copy, self.table_rows.format(table=table.name, index=index.value), where=where, fix=fix)


_DTYPES = frozenset(("float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8",
                     "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128"))
_UNFIXABLE = ("requires_grad", "out", "pin_memory", "generator")
# numpy calls that return an array of indices (never a scalar).
_TORCH_INDEX_FACTORIES = frozenset(f"torch.{f}" for f in (
    "tensor", "as_tensor", "arange", "randperm", "tril_indices", "triu_indices", "LongTensor", "IntTensor"))
_NUMPY_INDEX_ARRAYS = frozenset(f"numpy.{f}" for f in (
    "arange", "array", "argsort", "flatnonzero", "concatenate", "random.permutation"))
# Reshaping methods of an index tensor: the result is the same indices, where the receiver is.
_INDEX_VIEWS = frozenset({"unsqueeze", "view", "reshape", "expand", "long", "int", "flatten", "squeeze", "t"})
# Tensor methods whose result lives on the device of their receiver.
_SAME_DEVICE_METHODS = _SAME_ON_DEVICE | {"detach", "permute", "transpose", "narrow", "select", "unflatten"}
# In-place initialisers of a freshly built tensor: they run where the tensor is (the host, for a legacy constructor).
_FILLS_IN_PLACE = frozenset({"fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_"})
# The legacy typed constructors: CPU tensors from host data (or sizes); they take no `device=`.
_LEGACY_CONSTRUCTORS = frozenset(f"torch.{t}" for t in (
    "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"))
# The CUDA legacy typed constructors: from host data they build on the host and copy (sizes allocate on the GPU).
_CUDA_LEGACY_CONSTRUCTORS = frozenset(f"torch.cuda.{t}" for t in (
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
    "CharTensor", "ByteTensor", "BoolTensor"))
# torch functions that join tensors (on the device of their inputs).
_JOINS = frozenset(("cat", "concat", "concatenate", "stack", "hstack", "vstack"))
# torch functions and tensor methods that compute elementwise (or along one axis) on the device of their inputs.
_ELEMENTWISE = frozenset(("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh",
                          "cosh", "tanh", "sigmoid", "sqrt", "rsqrt", "pow", "abs", "neg", "reciprocal", "floor",
                          "ceil", "round", "clamp", "outer", "cumsum", "cumprod", "mul", "div", "add", "sub",
                          # a causal mask's lower (or upper) triangle: `torch.tril(torch.ones(n, n))`
                          "tril", "triu"))


class _Found:
    def __init__(self) -> None:
        self.factories: list = []
        self.numbers_only = True  # every operand that is not a factory's result is a Python number
        self.through_names = False  # some factory was reached through a name bound earlier (no one-place fix)
        self.retyped = False  # cast to a CPU tensor type on the way (`.type(torch.ByteTensor)`): no `device=` fix


class _HostMath:
    """The torch factories (without `device=`) an expression computes from on the host, with Python numbers as
    the only other operands (or unknown names, which then rule out a fix); None for anything else."""

    def __init__(self, analysis, names: bool = False) -> None:
        self.analysis = analysis
        self.names = names  # follow a name bound once, in the same function, to host arithmetic
        self.depth = 0

    def factories(self, expr: cst.BaseExpression) -> Optional[_Found]:
        found = _Found()
        return found if self._tensor(expr, found) else None

    def _tensor(self, expr, found: _Found) -> bool:
        """`expr` is a host tensor computed from factories."""
        if type(expr) is cst.Name and self.names:
            return self._bound(expr, found)
        if type(expr) is cst.Call:
            q = self.analysis.qualified(expr.func)
            name = q.split(".")[1] if q is not None and q.startswith("torch.") and q.count(".") == 1 else None
            if name in _FACTORIES and name not in ("tensor", "as_tensor") and not name.endswith("_like"):
                if keyword(expr, "device") is not None or any(a.star for a in expr.args):
                    return False
                found.factories.append(expr)
                return True
            if name in _ELEMENTWISE:
                return self._operands([a.value for a in expr.args if a.keyword is None], found)
            if name in _JOINS:
                return self._joined(expr, found)
            if type(expr.func) is cst.Attribute and expr.func.attr.value == "type" and len(expr.args) == 1 and \
                    expr.args[0].keyword is None and \
                    self.analysis.qualified(expr.args[0].value) in _LEGACY_CONSTRUCTORS:
                # `.type(torch.ByteTensor)`: a cast to a CPU tensor type, on the host (it would bring a device
                # tensor back, so building the factories on the device is no fix)
                found.retyped = True
                return self._tensor(expr.func.value, found)
            if type(expr.func) is cst.Attribute and (expr.func.attr.value in _ELEMENTWISE or
                                                        expr.func.attr.value in _SAME_DEVICE_METHODS):
                return self._tensor(expr.func.value, found) and all(
                    self._number(a.value, found) for a in expr.args if a.keyword is None)
            return False
        if type(expr) is cst.BinaryOperation:
            return self._operands([expr.left, expr.right], found)
        if type(expr) is cst.UnaryOperation and type(expr.operator) in (cst.Minus, cst.Plus):
            return self._tensor(expr.expression, found)
        return False

    def _bound(self, name: cst.Name, found: _Found) -> bool:
        """`pos = torch.arange(0.0, n).unsqueeze(1)` earlier in the same function, bound once and not in a loop
        of its own: `pos` is that host tensor."""
        index = self.analysis.index
        bindings = data_facts(self.analysis).bindings(name)
        if self.depth > 4 or len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None \
                or bindings[0].value is None or type(bindings[0].source) is not cst.Assign or \
                len(bindings[0].source.targets) != 1 or index.order(bindings[0].source) > index.order(name):
            return False
        function = next((a for a in index.ancestors(name) if type(a) is cst.FunctionDef), None)
        if function is None or next((a for a in index.ancestors(bindings[0].source)
                                     if type(a) in (cst.FunctionDef, cst.For, cst.While)), None) is not function:
            return False
        self.depth += 1
        try:
            if not self._tensor(bindings[0].value, found):
                return False
        finally:
            self.depth -= 1
        found.through_names = True
        return True

    def constant_fill(self, value: cst.BaseExpression) -> bool:
        """`value` written into a host tensor (`pe[0::2] = torch.sin(pos * div)`) is computed from torch factories
        and numbers only, or is a number literal: no data, so the tensor is a constant built on the host."""
        if type(value) in (cst.Integer, cst.Float) or (type(value) is cst.UnaryOperation and
                                                        type(value.expression) in (cst.Integer, cst.Float)):
            return True
        return self.factories(value) is not None

    def _joined(self, call: cst.Call, found: _Found) -> bool:
        """`torch.cat([torch.ones(b), torch.zeros(2 * b)])`, `torch.stack((a, b))`, `torch.cat([torch.arange(n) for
        _ in range(k)])`: every joined tensor is itself host arithmetic over factories (a list or tuple literal, or a
        comprehension's element), so the join runs on the host too."""
        if has_star_args(call):
            return False
        given = argument(call, "tensors", 0)
        data = given.value if given is not None else None
        if type(data) in (cst.List, cst.Tuple):
            elements = data.elements  # type: ignore[union-attr]
            return bool(elements) and all(type(e) is cst.Element and self._tensor(e.value, found) for e in elements)
        if type(data) in (cst.ListComp, cst.GeneratorExp):
            return self._tensor(data.elt, found)  # type: ignore[union-attr]
        return False

    def _operands(self, operands: list, found: _Found) -> bool:
        tensors = [o for o in operands if self._tensor(o, found)]
        return bool(tensors) and all(o in tensors or self._number(o, found) for o in operands)

    def _number(self, expr, found: _Found) -> bool:
        """A Python number (or, where unknown, a value that is not known to be a tensor: no fix then)."""
        if type(expr) in (cst.Integer, cst.Float):
            return True
        if type(expr) is cst.UnaryOperation:
            return self._number(expr.expression, found)
        if type(expr) is cst.BinaryOperation:
            return self._number(expr.left, found) and self._number(expr.right, found)
        if type(expr) is cst.Call and (self.analysis.qualified(expr.func) or "").startswith("math."):
            return all(self._number(a.value, found) for a in expr.args)
        kind = self.analysis.kind(expr)
        if kind == Kind.NUMBER:
            return True
        if kind in (Kind.TENSOR, Kind.NUMPY):
            return False
        found.numbers_only = False
        return True


def _view(subscript: cst.Subscript) -> bool:
    """`t[None, :]`, `t[:, None, None]`: only slices and new axes, every element of `t` kept."""
    return all(type(e.slice) is cst.Slice or (type(e.slice) is cst.Index and type(e.slice.value) is cst.Name and
                                              e.slice.value.value == "None") or
               (type(e.slice) is cst.Index and type(e.slice.value) is cst.Ellipsis) for e in subscript.slice)


def _minus_one(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus and \
        type(expr.expression) is cst.Integer and expr.expression.value == "1"


def _shape_read(expr: cst.BaseExpression) -> bool:
    """`x.shape`, `x.shape[1]`, or a tuple or list of such reads and integers (`(h.shape[0], w)` is not one): sizes,
    Python integers on the host whatever `x` is."""
    if type(expr) in (cst.Tuple, cst.List):
        return bool(expr.elements) and all(type(e) is cst.Element and (
            type(e.value) is cst.Integer or _shape_read(e.value)) for e in expr.elements) and \
            any(type(e.value) is not cst.Integer for e in expr.elements)
    if type(expr) is cst.Subscript:
        expr = expr.value
    return type(expr) is cst.Attribute and expr.attr.value == "shape"


def _callee_text(call: cst.Call) -> str:
    """`self.tokenizer` for `self.tokenizer(...)`, `tokenizer` for a plain name; `tokenizer` otherwise."""
    parts = []
    func = call.func
    while type(func) is cst.Attribute:
        parts.append(func.attr.value)
        func = func.value
    if type(func) is not cst.Name:
        return "tokenizer"
    parts.append(func.value)
    return ".".join(reversed(parts))


def _numpy_attribute_rows(analysis, data: cst.BaseExpression) -> Optional[str]:
    """`self.obses` for `self.obses[idxs]` (or `self.obses` itself), a numpy array the class keeps
    (analysis/self_lists.py): the text of the attribute; else None."""
    from gpulint.analysis.self_lists import numpy_attribute

    while type(data) is cst.Subscript:
        data = data.value
    if type(data) is cst.Attribute and numpy_attribute(analysis, data):
        return analysis.code(data)
    return None


def _host_returned(analysis, expr: cst.BaseExpression):
    """(the helper's name as called, (path, line, factory)) when `expr` is a call of a top-level project function
    that returns a tensor it builds on the host with torch factories, for the arguments this call passes."""
    from gpulint.analysis.calls import project_calls

    if type(expr) is not cst.Call or type(expr.func) not in (cst.Name, cst.Attribute):
        return None
    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    found = calls.callee(expr, own_module=True)
    if found is None:
        return None
    _, summary, bound = found
    if bound or has_star_args(expr):
        return None
    params = list(summary.params)
    positional_count = len([a for a in expr.args if a.keyword is None])
    passed = set(params[:positional_count]) | {a.keyword.value for a in expr.args if a.keyword is not None}
    answer = host_factory_return(calls.project, summary.path, summary.qualname, passed)
    return (analysis.code(expr.func), answer) if answer is not None else None


def _returned_host_name(rule, name: cst.Name, depth: int):
    """("tensor" | "list", the function's name as called, path, line) when every binding of `name` visible here
    unpacks an element of what a top-level project function returns that it builds on the host; a parameter
    counts when every call of its function in this module passes such a name. Else None."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.host_tuple_returns import returned_host_elements

    from gpulint.rules.transfers._built_then_moved import _rebinds_itself

    if depth > 2:
        return None
    analysis = rule.analysis
    facts = data_facts(analysis)
    bindings = facts.bindings(name)
    if len(bindings) > 1:  # `mask = mask.type_as(query)`: the statement holding the read binds after it
        bindings = [b for b in bindings if not _rebinds_itself(rule, b, name)]
    if not bindings:
        return None
    calls = analysis.fact(project_calls)
    if calls is None:
        return None
    answer = None
    for binding in bindings:
        if binding.kind == "param":
            passed = list(facts.arguments_for(binding))
            if not passed or any(type(a) is not cst.Name for a in passed):
                return None
            for arg in passed:
                one = _returned_host_name(rule, arg, depth + 1)
                if one is None or answer is not None and one[0] != answer[0]:
                    return None
                answer = answer or one
            continue
        if binding.kind != "assign" or binding.index is None or type(binding.value) is not cst.Call or \
                not isinstance(binding.source, cst.Assign) or len(binding.source.targets) != 1:
            return None
        target = binding.source.targets[0].target
        if type(target) not in (cst.Tuple, cst.List) or \
                any(type(e) is not cst.Element or type(e.value) is not cst.Name for e in target.elements):
            return None  # a starred or nested unpacking: positions are not the returned elements'
        call = binding.value
        if has_star_args(call) or type(call.func) not in (cst.Name, cst.Attribute):
            return None
        found = calls.callee(call, own_module=True)
        if found is None or found[2]:
            return None
        summary = found[1]
        shape = returned_host_elements(calls.project, summary.path, summary.qualname)
        if shape is None or len(shape) != len(target.elements) or shape[binding.index] is None:
            return None
        one = (shape[binding.index], analysis.code(call.func), summary.path, summary.line)
        if answer is not None and one[0] != answer[0]:
            return None
        answer = answer or one
    return answer


def _short(code: str, limit: int = 60) -> str:
    """`code` on one line, cut at `limit` characters."""
    flat = " ".join(code.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."
