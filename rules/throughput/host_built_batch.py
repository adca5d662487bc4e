"""GPU410 `host-built-batch`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data_facts import ACCELERATOR, data_facts, keyword
from gpulint.analysis.data import _SAME_ON_DEVICE
from gpulint.analysis.calls import project_calls
from gpulint.analysis.data_path import data_path_facts
from gpulint.analysis.host_copies import host_copy
from gpulint.analysis.loaded_items import loaded_on_host
from gpulint.analysis.project import display_path
from gpulint.fixes import fresh_name
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Related, Rule, Safety
from gpulint.syntax import is_true, positional

def _passed_at(call: cst.Call, summary, name: str) -> bool:
    """The call passes the callee's parameter `name` by position (`self` skipped for a method)."""
    params = list(summary.params)
    if params and params[0] in ("self", "cls") and type(call.func) is cst.Attribute:
        params = params[1:]
    positional = [a for a in call.args if a.keyword is None]
    return any(a.star for a in call.args) or (name in params and params.index(name) < len(positional))


# Calls that assemble a batch in host memory from numpy arrays or Python lists.
_HOST_BUILDERS = {"torch.stack", "torch.cat", "torch.from_numpy", "torch.tensor", "torch.as_tensor"}

_GET_BATCH = """import numpy as np
import torch

data = np.arange(10_000, dtype=np.int64)
device = "cuda" if torch.cuda.is_available() else "cpu"


def get_batch():
    ix = torch.randint(len(data) - 8, (4,))
    x = torch.stack([torch.from_numpy(data[i:i + 8]) for i in ix])
    {copy}
    return x


for step in range(100):
    loss = model(get_batch())
    loss.backward()
"""


# -- the device-resident form (an unsafe fix, with the pinned copy as its safe fallback) -----------------------
_ARRAY_READS = {"shape", "dtype", "size", "nbytes", "ndim"}  # attributes of the array that read nothing else


def _terms(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The terms of a sum (`i + 1 + block_size` -> i, 1, block_size)."""
    if type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Add:
        return _terms(expr.left) + _terms(expr.right)
    return [expr]


def _mentions(node: cst.CSTNode, name: str) -> bool:
    found = []

    class Find(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                found.append(n)

    node.visit(Find())
    return bool(found)


class _Window:
    """`torch.from_numpy(DATA[i + a:i + b].astype(DT))` over `for i in IX`: the parts the device form needs."""

    def __init__(self, data: str, dtype: cst.BaseExpression, start: list, stop: list) -> None:
        self.data, self.dtype, self.start, self.stop = data, dtype, start, stop


def _window(comp: cst.BaseExpression, ix: str, qualified) -> Optional[_Window]:
    if type(comp) is not cst.ListComp or type(comp.for_in.target) is not cst.Name:
        return None
    loop = comp.for_in
    if loop.ifs or loop.inner_for_in is not None or loop.asynchronous is not None or \
            not (type(loop.iter) is cst.Name and loop.iter.value == ix):
        return None
    i = loop.target.value
    elt = comp.elt
    if not (type(elt) is cst.Call and qualified(elt.func) == "torch.from_numpy" and len(elt.args) == 1
            and elt.args[0].keyword is None and elt.args[0].star == ""):
        return None
    astype = elt.args[0].value
    if not (type(astype) is cst.Call and type(astype.func) is cst.Attribute
            and astype.func.attr.value == "astype" and len(astype.args) == 1 and astype.args[0].keyword is None
            and astype.args[0].star == "" and not _mentions(astype.args[0].value, i)):
        return None
    sub = astype.func.value
    if not (type(sub) is cst.Subscript and type(sub.value) is cst.Name and len(sub.slice) == 1
            and isinstance(sub.slice[0].slice, cst.Slice)):
        return None
    window = sub.slice[0].slice
    if window.lower is None or window.upper is None or window.step is not None:
        return None
    offsets = []
    for bound in (window.lower, window.upper):
        terms = _terms(bound)
        own = [t for t in terms if type(t) is cst.Name and t.value == i and not t.lpar]
        rest = [t for t in terms if not (type(t) is cst.Name and t.value == i and not t.lpar)]
        if len(own) != 1 or any(_mentions(t, i) for t in rest):
            return None
        offsets.append(rest)
    return _Window(sub.value.value, astype.args[0].value, offsets[0], offsets[1])


def _linear(terms: list, code) -> tuple[tuple, int]:
    """A sum as (its non-literal terms' code, sorted; the sum of its integer literals)."""
    const = sum(int(t.value, 0) for t in terms if type(t) is cst.Integer)
    return tuple(sorted(code(t) for t in terms if type(t) is not cst.Integer)), const


def _copy_of(expr: cst.BaseExpression, code) -> Optional[tuple[str, str]]:
    """`x.to(device)` -> ("x", "device"); `x.cuda()` -> ("x", '"cuda"'); else None."""
    if not (type(expr) is cst.Call and type(expr.func) is cst.Attribute
            and type(expr.func.value) is cst.Name):
        return None
    method = expr.func.attr.value
    if method == "cuda" and not expr.args:
        return expr.func.value.value, '"cuda"'
    if method == "to" and len(expr.args) == 1 and expr.args[0].keyword is None and expr.args[0].star == "":
        return expr.func.value.value, code(expr.args[0].value)
    return None


def _is_len(call: cst.Call) -> bool:
    return type(call.func) is cst.Name and call.func.value == "len" and len(call.args) == 1

# nanoGPT's `get_batch` over a token file mapped once at module level: the device-resident form (unsafe)
_WINDOWS = """import numpy as np
import torch

tokens = np.memmap("train.bin", dtype=np.uint16, mode="r")
device = "cuda" if torch.cuda.is_available() else "cpu"
block = 8


def get_batch():
    ix = torch.randint(len(tokens) - block, (4,))
    x = torch.stack([torch.from_numpy(tokens[i:i + block].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(tokens[i + 1:i + 1 + block].astype(np.int64)) for i in ix])
    return x.to(device), y.to(device)


for step in range(100):
    x, y = get_batch()
    loss = model(x, y)
    loss.backward()
"""
_WINDOWS_FIXED = _WINDOWS.replace("""

def get_batch():
    ix = torch.randint(len(tokens) - block, (4,))
    x = torch.stack([torch.from_numpy(tokens[i:i + block].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(tokens[i + 1:i + 1 + block].astype(np.int64)) for i in ix])
    return x.to(device), y.to(device)
""", """

tokens_device = torch.from_numpy(tokens.astype(np.int64)).to(device)


def get_batch():
    ix = torch.randint(len(tokens) - block, (4,), device=device)
    x = tokens_device[ix[:, None] + torch.arange(block, device=device)]
    y = tokens_device[ix[:, None] + torch.arange(1, 1 + block, device=device)]
    return x, y
""")


class HostBuiltBatch(Rule):
    """A batch assembled on the host every step and copied to the GPU from pageable memory.

    ## What it does
    Flags `x.to(device)` / `x.cuda()` where `x` was just built on the host with `torch.stack`, `torch.cat`,
    `torch.from_numpy`, `torch.tensor` or `torch.as_tensor` (typically a `get_batch()` helper slicing a numpy
    array), and this runs every iteration of a training loop, directly or in a helper the loop calls. The
    build may also sit in a project function or method whose every `return` hands back tensors it built on the
    host (`x, y = train_loader.next_batch()` then `x.to(device)` in the loop), or views of a tensor its class
    keeps on `self` and stores only as a host build (`self.tokens = load_tokens(shard)`, a function returning
    `torch.tensor(np.load(f))`, then `buf = self.tokens[pos:pos + B * T + 1]; x = buf[:-1].view(B, T)`): the
    copy is reported in the loop, naming the helper, with the line that builds the batch as related location. Also
    flags `torch.from_numpy(frame).to(device)` written in one expression (an inference loop over frames), and
    `torch.cat(crops).cuda(non_blocking=True)`: the pieces may be pinned, but what `torch.cat`/`torch.stack`
    return is a new tensor in pageable memory, and from pageable memory `non_blocking=True` still waits (on an
    H100: 21.4 ms behind 21 ms of queued GPU work, where a pinned tensor's copy returned in 0.07 ms).
    Also flags the per-step call of a helper in another project module that copies the host (numpy) array it
    is given to the device on every call (`to_torch_as(batch.returns, q)` ending in `torch.from_numpy(x)` ...
    `x.to(device)`; `obs_as_tensor(obs, device)` doing `torch.as_tensor(obs, device=device)` of an
    `np.ndarray` parameter), with the copy as related location; not where the call leaves the helper's
    device at a `"cpu"` default.

    The build may be unpacked and converted before the copy (`gt, seq_len = torch.from_numpy(_gt).to(dtype=
    torch.long), torch.tensor(_seq_len)` then `gt.to(x.device)`: targets a model's `forward` encodes on the host
    every step), and the copy may be a cast to a tensor the network computed on the device
    (`torch.from_numpy(reward).to(sample_logprobs)`, reported without a fix).

    Also flags an input a loop (or a top-level function a loop calls every iteration) loads on the host itself,
    one item at a time, and copies to the GPU: an item of a map-style dataset indexed directly (`image1, image2,
    flow = val_dataset[i]` then `image1[None].cuda()`; a project `Dataset` whose `__getitem__` moves nothing, or
    a `torchvision.datasets` class), the output of torchvision's `ToTensor()` or of a `Compose` pipeline ending in
    it, a file read by `torchaudio.load` or `torchvision.io.read_image`, and `torch.from_numpy` followed through
    the names the step rebinds (`x = torch.from_numpy(x).permute(2, 0, 1)`, `x = Variable(x.unsqueeze(0))`,
    `x = x.cuda()`). Only the binding the copy reads in that step counts, and only when it runs on every path (not
    under an `if`, `try` or `with` of the step); methods of classes are left to GPU203 (a model's constant built
    from numpy in `forward`). Reported without a fix: a `DataLoader` with `pin_memory=True` and workers is the
    way out (analysis/loaded_items.py).

    ## Why it is slow
    A copy from pageable memory is staged through a driver bounce buffer and blocks the Python thread until it
    has finished, so the CPU cannot queue the next kernels while the batch crosses PCIe. nanoGPT pins the batch
    and copies it asynchronously for exactly this reason (`x.pin_memory().to(device, non_blocking=True)`).
    On an H100 a nanoGPT-shaped 6-layer GPT fed this way ran 26.2 ms a step; with the data on the device and
    batches indexed there, 17.9 ms (with the other fixes of the hand-optimised twin; /work/shared/facts.md).

    ## Example
    ```python
    def get_batch():
        ix = torch.randint(len(data) - block, (batch,))
        x = torch.stack([torch.from_numpy(data[i:i + block]) for i in ix])
        return x.to(device)
    ```
    Use instead:
    ```python
        return (x.pin_memory() if torch.cuda.is_available() else x).to(device, non_blocking=True)
    ```
    Faster still when the corpus fits in GPU memory: move it once (`data = torch.from_numpy(data).to(device)`)
    and build the batch there (`ix = torch.randint(..., device=device)`, `x = data[ix[:, None] +
    torch.arange(block, device=device)]`): nothing crosses PCIe per step.

    For a small tensor (one 640x640 image) the copy itself is not faster pinned: on an H100 with the GPU idle,
    `torch.from_numpy(img).to(device)` took 0.125 ms and `.pin_memory().to(device, non_blocking=True)` 0.100 ms.
    The difference is the wait: with 21 ms of GPU work queued, the pageable copy returned after 21.4 ms (it
    waits for that work) and the pinned one after 0.5 ms (`benchmarks/host_copies.py`,
    `benchmarks/results/host_copies_h100.txt`). A loop that reads results back every iteration anyway (an
    inference loop that draws each frame's boxes) gains little until those reads go too.

    ## Fix
    Pins the batch and copies it with `non_blocking=True`: `x.cuda()` becomes
    `x.pin_memory().cuda(non_blocking=True)`; `x.to(device)` becomes `(x.pin_memory() if
    torch.cuda.is_available() else x).to(device, non_blocking=True)` (pinning raises on a machine without an
    accelerator). No fix for `.to()` with other arguments, when the module does not `import torch`, or for
    `torch.from_numpy(...).to(device)` in one expression (report only: whether pinning pays depends on what
    else the loop waits for, see above), nor for `torch.cat(...).cuda(non_blocking=True)` (pinning raises if
    the pieces are on the device after all).

    With `--unsafe-fixes`, a helper of exactly nanoGPT's shape gets the device-resident form instead: a
    top-level function whose body is only `ix = torch.randint(len(data) - E, (B,))`, one or more
    `x = torch.stack([torch.from_numpy(data[i + a:i + b].astype(dtype)) for i in ix])`, the copies of those
    stacks to one device (`x.to(device)`, `x.cuda()`, in assignments or in the `return`) and the `return`,
    where `data` is one array bound once by a top-level statement before the function (`np.memmap`,
    `np.fromfile`, `np.load`, any numpy expression) and read elsewhere only through `len()` or its shape, the
    device is a literal or a name bound only at the top level before the function, and every window stays
    inside the array as the host slices did (`a` a literal >= 0, `b` at most `E + 1`). It becomes:
    ```python
    data_device = torch.from_numpy(data.astype(np.int64)).to(device)


    def get_batch():
        ix = torch.randint(len(data) - block, (batch,), device=device)
        x = data_device[ix[:, None] + torch.arange(block, device=device)]
        y = data_device[ix[:, None] + torch.arange(1, 1 + block, device=device)]
        return x, y
    ```
    Values, dtypes and shapes are those of the host batches: the same `.astype(...)` conversion, applied to
    the whole array once. Anything else (the array loaded inside the helper, as nanoGPT's `np.memmap` per
    call; passed in as an argument; changed after its definition; a window without `.astype`, whose dtype
    such as `uint16` not every device indexes) keeps the pinned copy.

    ## Fix safety
    The pinned copy is safe: the batch holds the same values. The pinned host tensor is freshly built each call
    and PyTorch's pinned-memory allocator keeps it alive until the asynchronous copy has finished; kernels that
    use the batch run on the same stream, after the copy.

    The device-resident form is unsafe. Memory: the whole array is converted on the host (a full copy in the
    window's dtype) and then held on the device, `len(data) * 8` bytes for `int64` tokens, which gpulint cannot
    know fits: OpenWebText's 9 billion tokens would need 72 GB on the device (and the host); Shakespeare's
    300,000 need 2.4 MB. Randomness: the offsets come from the device's generator, so on a GPU the sequence of
    batches differs from the original's for the same seed (on CPU it is the same generator and the batches are
    identical). Start-up: a memory-mapped file is read whole when the module runs.

    ## When it is fine
    Batches already pinned (`.pin_memory()`), batches from a `DataLoader` (GPU201/GPU202 cover those), tensors
    built once before the loop, and CPU-only modules.
    """

    needs_text = GPU_HINT
    code = "GPU410"
    # a per-step call GPU112 reports as a helper copying host data (analysis/host_copies.py); a numpy constant or
    # array of sizes GPU203 reports as a constant to build once (`torch.from_numpy(np.arange(n)).cuda()`)
    defers_to = ("GPU112", "GPU203")
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "host-built-batch"
    message = "batch built on the host every step and copied from pageable memory: the copy blocks; pin it and " \
              "copy with `non_blocking=True` (or keep the data on the device)"
    fresh = "`{builder}` makes a new tensor in pageable memory, so `non_blocking=True` does not apply: the copy " \
            "still waits for the GPU every step; pin it (`.pin_memory()`) or build it on the device"
    returned = "`{helper}` returns a batch it built on the host, and it is copied here from pageable memory " \
               "every step: the copy blocks; pin it and copy with `non_blocking=True` (or build it on the device)"
    helper_copy = "`{call}(...)` copies a host array to the device every step (`{helper}` does the copy from " \
                  "pageable memory): the copy blocks; keep the data on the device, or pin it and copy with " \
                  "`non_blocking=True`"
    loaded = "{source} makes this input on the host every iteration, and it is copied to the GPU from pageable " \
             "memory: the copy blocks, waiting for the GPU; load the items with a `DataLoader` (`pin_memory=True`, " \
             "worker processes) and copy with `non_blocking=True`, or keep the data on the device"
    cast_copy = "`torch.from_numpy(...)` is on the host and `.{cast}({other})` copies it to the GPU from pageable " \
                "memory every step: the copy blocks, waiting for the GPU; compute it on the device, or pin it and " \
                "copy with `non_blocking=True`"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.SAFE, "the batch holds the same values; the copy runs on the stream that uses it "
                                        "(the device-resident form is unsafe: the array must fit on the device)")
    added_in = "0.2.0"
    VALID = (
        _GET_BATCH.format(copy="x = x.pin_memory().to(device, non_blocking=True)"),
        _GET_BATCH.format(copy="pass").replace("for step in range(100):\n    loss = model(get_batch())\n"
                                               "    loss.backward()\n", "x = get_batch().to(device)\n"),
    )
    INVALID = (
        Example(_GET_BATCH.format(copy="x = x.to(device)"), message="pageable",
                fixed=_GET_BATCH.format(copy="x = (x.pin_memory() if torch.cuda.is_available() else x)"
                                             ".to(device, non_blocking=True)")),
        Example(_WINDOWS, message="pageable", count=2, fixed=_WINDOWS_FIXED),
    )

    def visit_Call(self, node: cst.Call) -> None:
        facts = data_facts(self.analysis)
        if facts.copy_target(node) != ACCELERATOR:
            if not self._cast_of_host_array(node):
                self._copying_helper(node)
            return
        receiver = node.func.value  # type: ignore[union-attr]
        built = self._built_inline(receiver)
        if built == "torch.from_numpy" or (built and is_true(getattr(keyword(node, "non_blocking"), "value", None))):
            # `torch.from_numpy(frame).float().to(device)`, `torch.cat(crops).cuda(non_blocking=True)`: report
            # only (a fix would pin, which raises if the pieces were on the device after all)
            where = self.where(node)
            if where:
                self.report(node, None if built == "torch.from_numpy" else self.fresh.format(builder=built),
                            where=where)
            return
        if facts.batch_loop(receiver) is not None:
            return  # loader batches are GPU201/GPU202's
        if type(receiver) is not cst.Name:
            self._loaded_item(node, receiver)
            return  # direct factories are GPU203's
        builder = self._host_builder(receiver, node)
        if builder is None:
            returned = self._returned_by_helper(receiver, node)
            if returned is None:
                self._loaded_item(node, receiver)
                return
            where = self.where(node)
            if where:
                helper, sink = returned
                self.report(node, self.returned.format(helper=helper), where=where,
                            fix=self._fix(node, receiver),
                            related=(Related(display_path(sink.path), sink.line,
                                             f"{sink.what} builds it on the host"),))
            return
        where = self.where(node)
        if where:
            pinned, resident = self._fix(node, receiver), self._device_fix(node)
            fix = dataclasses.replace(resident, fallback=pinned) if resident is not None else pinned
            self.report(node, where=where, fix=fix)

    def _cast_of_host_array(self, node: cst.Call) -> bool:
        """`torch.from_numpy(reward).to(sample_logprobs)` (or `.type_as(...)`) of a tensor the model computed on
        the device: the cast copies the host array to the GPU from pageable memory. Reported without a fix (the
        cast also picks the dtype); True when reported."""
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value not in ("to", "type_as") or len(node.args) != 1 or \
                node.args[0].keyword is not None or node.args[0].star or \
                self._built_inline(func.value) != "torch.from_numpy":
            return False
        if not self.analysis.targets_gpu or not _device_output(self.analysis, node.args[0].value):
            return False
        where = self.where(node)
        if where is None:
            return False
        self.report(node, self.cast_copy.format(cast=func.attr.value, other=self.analysis.code(node.args[0].value)),
                    where=where)
        return True

    def _loaded_item(self, node: cst.Call, receiver: cst.BaseExpression) -> None:
        """`image1[None].cuda()` of `image1, image2, flow = dataset[i]`, `img.to(device)` of
        `img = transforms.ToTensor()(pil_image)`, `x.cuda()` of `x = torch.from_numpy(x).permute(2, 0, 1)`: an
        input the step loads on the host itself, copied from pageable memory (analysis/loaded_items.py).
        Reported without a fix (what replaces it is a `DataLoader` that pins, or data kept on the device)."""
        where = self.where(node)
        if where is None or not where.every_iteration:
            return
        index = self.analysis.index
        if where.loop is not None and index.is_ancestor_or_self(where.loop.body, node):
            boundary = where.loop.body
        else:
            func = index.enclosing_function(node)
            if func is None:
                return
            boundary = func.body
        if any(type(n) is cst.ClassDef for n in index.ancestors(node)):
            return  # a method (a model's `forward` building a constant): GPU203's host-built tensors, not inputs
        source = loaded_on_host(self.analysis, receiver, node, boundary)
        if source is not None:
            self.report(node, self.loaded.format(source=source), where=where)

    def _copying_helper(self, node: cst.Call) -> None:
        """`to_torch_as(batch.returns, q)` every step, where the project helper copies the host (numpy) array it
        is given to the device on every call (analysis/host_copies.py, `host_copy`): reported at the call, with the copy as
        related location."""
        if type(node.func) not in (cst.Name, cst.Attribute) or not node.args:
            return
        calls = self.analysis.fact(project_calls)
        if calls is None or calls.project.is_test(Path(self.analysis.path)):
            return
        where = self.where(node)
        if where is None or not where.every_iteration:
            return
        found = calls.callee(node)  # a helper of this module: its own copy is reported where it is written
        if found is None:
            return
        _, summary, _ = found
        if summary.qualname.rsplit(".", 1)[-1] in ("forward", "__call__"):
            return  # a network run on its input (`model(im)`): model code, reported inside it when per-step
        copy = host_copy(calls.project, summary.path, summary.qualname)
        if copy is None:
            return
        path, line, copier, needed = copy
        if type(node.func) is cst.Attribute and _built_for_the_cpu(self.analysis, node.func.value):
            return  # `rb = ReplayBuffer(..., device="cpu")`: its copies stay in host memory
        if needed is not None and not any(
                a.keyword is not None and a.keyword.value == needed for a in node.args) and not _passed_at(
                node, summary, needed):
            return
        self.report(node, self.helper_copy.format(call=self.analysis.code(node.func), helper=copier), where=where,
                    related=(Related(display_path(path), line, f"`{copier}` copies the host array to the device"),))

    def _returned_by_helper(self, name: cst.Name, copy: cst.Call):
        """(helper, where it builds) when every binding of `name` takes what a project function or method
        returns, and every tensor that returns is built on the host there (`x, y = loader.next_batch()`)."""
        calls = self.analysis.fact(project_calls)
        where = self.where(copy)
        if calls is None or where is None or not where.every_iteration or where.loop is None:
            return None
        index = self.analysis.index
        before = [b for b in data_facts(self.analysis).bindings(name)
                  if index.is_ancestor_or_self(where.loop.body, b.source) and index.order(b.source) < index.order(copy)
                  and not index.is_ancestor_or_self(b.source, copy)]
        if not before:
            return None
        last = max(before, key=lambda b: index.order(b.source))  # the binding this step's copy reads
        node = self.analysis.parent(last.source)
        while node is not None and node is not where.loop.body:
            if type(node) in (cst.If, cst.Try, cst.For, cst.While, cst.With):
                return None  # bound only on some iterations (or several times): not told here
            node = self.analysis.parent(node)
        if last.kind != "assign" or type(last.value) is not cst.Call:
            return None
        target = calls.callee(last.value, own_module=True)
        if target is None or target[1].returns_host_batch is None:
            return None
        return target[0], target[1].returns_host_batch

    def _built_inline(self, expr: cst.BaseExpression) -> Optional[str]:
        """`torch.from_numpy(a)` (host memory the numpy array owns), `torch.cat(...)` or `torch.stack(...)` (a
        new tensor), possibly converted on the way (`.float()`, `.unsqueeze(0)`, `.to(dtype=torch.long)`, ...):
        which one, else None."""
        expr = self._converted(expr)
        q = self.analysis.qualified(expr.func) if type(expr) is cst.Call else None
        return q if q in ("torch.from_numpy", "torch.cat", "torch.stack") else None

    def _converted(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """`expr` without conversions that keep it where it is: `.float()`, `.unsqueeze(0)`, ... and `.to(dtype)`
        / `.to(dtype=...)` given a dtype alone."""
        while type(expr) is cst.Call and type(expr.func) is cst.Attribute and (
                expr.func.attr.value in _SAME_ON_DEVICE or expr.func.attr.value == "to" and _dtype_only(
                    self.analysis, expr)):
            expr = expr.func.value
        return expr

    def _host_builder(self, name: cst.Name, copy: cst.Call) -> Optional[str]:
        bindings = data_facts(self.analysis).bindings(name)
        # `gt, seq_len = torch.from_numpy(_gt).to(dtype=torch.long), torch.tensor(_seq_len)`: the element bound
        values = [_element(b) if b.kind == "assign" else None for b in bindings]
        values = [v for v in values if v is not copy]
        if not values or any(v is None for v in values):
            return None
        values = [self._converted(v) for v in values]
        found = [self.analysis.qualified(v.func) for v in values if type(v) is cst.Call]
        if len(found) == len(values) and all(q in _HOST_BUILDERS for q in found):
            return found[0]
        return None

    def _fix(self, copy: cst.Call, receiver: cst.Name):
        method = copy.func.attr.value  # type: ignore[union-attr]
        if not data_path_facts(self.analysis).imports("torch"):
            return None
        args = positional(copy)
        if len(args) != len(copy.args) or len(args) != (0 if method == "cuda" else 1):
            return None
        pinned = f"{receiver.value}.pin_memory()"
        if method == "cuda":
            text = f"{pinned}.cuda(non_blocking=True)"
        else:
            text = f"({pinned} if torch.cuda.is_available() else {receiver.value})" \
                   f".to({self.analysis.code(args[0])}, non_blocking=True)"
        replacement = cst.parse_expression(text).with_changes(lpar=copy.lpar, rpar=copy.rpar)
        return self.fix("Pin the batch and copy it with `non_blocking=True`", {copy: replacement}, safe=True)

    def _device_fix(self, copy: cst.Call):
        """The device-resident form of a `get_batch`-style helper that slices windows of one module-level numpy
        array at random offsets and copies their stack to the device (see the docstring's Fix), else None."""
        a = self.analysis
        func = next((n for n in a.index.ancestors(copy) if type(n) is cst.FunctionDef), None)
        if func is None or a.parent(func) is not a.module or func.decorators or \
                type(func.body) is not cst.IndentedBlock or not data_path_facts(a).imports("torch"):
            return None
        lines = list(func.body.body)
        docstring = []
        if lines and isinstance(lines[0], cst.SimpleStatementLine) and len(lines[0].body) == 1 and \
                isinstance(lines[0].body[0], cst.Expr) and isinstance(lines[0].body[0].value, cst.SimpleString):
            docstring = [lines.pop(0)]
        if any(type(s) is not cst.SimpleStatementLine or len(s.body) != 1 for s in lines) or len(lines) < 3:
            return None
        small = [s.body[0] for s in lines]
        # ix = torch.randint([low,] len(DATA) - E, (B,))
        first = small[0]
        if not (type(first) is cst.Assign and len(first.targets) == 1 and isinstance(first.targets[0].target,
                cst.Name) and type(first.value) is cst.Call and a.qualified(first.value.func) == "torch.randint"):
            return None
        ix, draw = first.targets[0].target.value, first.value
        if len(draw.args) not in (2, 3) or any(arg.keyword is not None or arg.star for arg in draw.args):
            return None
        low, high, size = (draw.args[0].value if len(draw.args) == 3 else None), draw.args[-2].value, \
            draw.args[-1].value
        if low is not None and type(low) is not cst.Integer:
            return None
        if not (type(size) is cst.Tuple and len(size.elements) == 1) or not (
                type(high) is cst.BinaryOperation and type(high.operator) is cst.Subtract
                and type(high.left) is cst.Call and _is_len(high.left)
                and len(high.left.args) == 1 and isinstance(high.left.args[0].value, cst.Name)):
            return None
        data = high.left.args[0].value.value
        limit = _linear(_terms(high.right), a.code)
        # NAME = torch.stack([torch.from_numpy(DATA[i + a:i + b].astype(DT)) for i in ix]), one or more
        windows: dict[str, _Window] = {}
        rest = small[1:]
        while rest and isinstance(rest[0], cst.Assign) and isinstance(rest[0].value, cst.Call) and \
                a.qualified(rest[0].value.func) == "torch.stack":
            stmt = rest.pop(0)
            stack = stmt.value
            if len(stmt.targets) != 1 or not isinstance(stmt.targets[0].target, cst.Name) or \
                    len(stack.args) != 1 or stack.args[0].keyword is not None or stack.args[0].star:
                return None
            found = _window(stack.args[0].value, ix, a.qualified)
            name = stmt.targets[0].target.value
            if found is None or found.data != data or name in windows or name in (ix, data):
                return None
            windows[name] = found
        if not windows or len({a.code(w.dtype) for w in windows.values()}) != 1:
            return None
        for w in windows.values():
            start, stop = _linear(w.start, a.code), _linear(w.stop, a.code)
            lowest = int(low.value, 0) if low is not None else 0
            # every window in range, as the host slices were: first index >= 0, last index <= len(DATA) - 1
            if start[0] or lowest + start[1] < 0 or stop[0] != limit[0] or stop[1] - limit[1] > 1:
                return None
        # the copies: `x = x.to(D)`, `x, y = x.to(D), y.to(D)`, or in the return; then `return x, y`
        copied: dict[str, str] = {}

        def take(expr) -> Optional[str]:
            found = _copy_of(expr, a.code)
            if found is None or found[0] not in windows or found[0] in copied:
                return None
            copied[found[0]] = found[1]
            return found[0]

        for stmt in rest[:-1]:
            if not (type(stmt) is cst.Assign and len(stmt.targets) == 1):
                return None
            target, value = stmt.targets[0].target, stmt.value
            pairs = [(target, value)]
            if type(target) is cst.Tuple and type(value) is cst.Tuple and \
                    len(target.elements) == len(value.elements):
                pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
            for t, v in pairs:
                if type(t) is not cst.Name or take(v) != t.value:
                    return None
        ret = rest[-1] if rest else None
        if type(ret) is not cst.Return or ret.value is None:
            return None
        parts = [e.value for e in ret.value.elements] if type(ret.value) is cst.Tuple else [ret.value]
        returned = {}
        for part in parts:
            if type(part) is cst.Name and part.value in copied:
                continue
            name = take(part)
            if name is None:
                return None
            returned[part] = cst.Name(name)
        devices = set(copied.values())
        if set(copied) != set(windows) or len(devices) != 1 or not any(
                _copy_of(copy, a.code) == (n, d) for n, d in copied.items()):
            return None
        device = devices.pop()
        if not self._module_value(data, func, array=True) or not (
                device.startswith(('"', "'")) or (device.isidentifier() and self._module_value(device, func))):
            return None
        dtype_node = next(iter(windows.values())).dtype
        root = dtype_node
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is not cst.Name or not self._module_value(root.value, func):
            return None  # the dtype is read where the helper is defined: module-level names only
        dtype = a.code(dtype_node)
        # the new helper: the draw on the device, each window gathered there, the copies gone
        on_device = fresh_name(a, f"{data}_device")
        body = [lines[0].with_changes(body=[cst.parse_statement(
            f"{ix} = {a.code(draw.func)}({', '.join(a.code(x.value) for x in draw.args)}, device={device})").body[0]])]
        for line, (name, w) in zip(lines[1:], windows.items()):
            start = _linear(w.start, a.code)[1]
            stop = " + ".join(a.code(t) for t in w.stop) or "0"
            span = f"{start}, {stop}" if start else stop
            body.append(line.with_changes(body=[cst.parse_statement(
                f"{name} = {on_device}[{ix}[:, None] + torch.arange({span}, device={device})]").body[0]]))
        if returned:
            value = ret.value
            if type(value) is cst.Tuple:
                value = value.with_changes(elements=[e.with_changes(value=returned.get(e.value, e.value))
                                                     for e in value.elements])
            else:
                value = returned[value]
            ret = ret.with_changes(value=value)
        body.append(lines[-1].with_changes(body=[ret]))
        # blank lines above the helper go above the upload; its comments stay with it
        lead = list(func.leading_lines)
        blank = next((k for k, line in enumerate(lead) if line.comment is not None), len(lead))
        new_func = func.with_changes(body=func.body.with_changes(body=docstring + body),
                                     leading_lines=[cst.EmptyLine(), cst.EmptyLine(), *lead[blank:]])
        upload = cst.parse_statement(f"{on_device} = torch.from_numpy({data}.astype({dtype})).to({device})")
        upload = upload.with_changes(leading_lines=lead[:blank])
        return self.fix(f"Keep `{data}` on the device (uploaded once) and gather the windows there",
                        {func: cst.FlattenSentinel([upload, new_func])}, safe=False)

    def _module_value(self, name: str, func: cst.FunctionDef, array: bool = False) -> bool:
        """`name` holds the same value wherever `func` reads it, and already where `func` is defined: bound only
        by statements of the module's top level before it, by nothing inside `func` or a `global` statement. For
        the array, also read nowhere else but through `len()` and its shape attributes (nothing mutates it)."""
        a = self.analysis
        if a.index.lookup(name, func):
            return False
        found = a.index.lookup(name, a.module)
        if not found or any(a.parent(a.parent(b.source)) is not a.module or a.index.order(b.source) > a.index.order(func)
                            for b in found) \
                or (array and (len(found) != 1 or found[0].kind != "assign")):
            return False
        for node in a.index.names(name):
            parent = a.parent(node)
            if type(parent) is cst.NameItem:  # `global name`
                return False
            if not array or a.index.is_ancestor_or_self(func, node):
                continue
            grand = a.parent(parent) if parent is not None else None
            if type(parent) is cst.AssignTarget and grand is found[0].source:
                continue
            if type(parent) is cst.Arg and type(grand) is cst.Call and _is_len(grand):
                continue
            if type(parent) is cst.Attribute and parent.value is node and parent.attr.value in _ARRAY_READS:
                continue
            return False
        return True


def _device_output(analysis, expr: cst.BaseExpression) -> bool:
    """`expr` is a device tensor: a copy to the accelerator, or a name every binding of which takes (an element of)
    what a network returns (`gen_result, sample_logprobs = self.model(...)` in GPU code)."""
    if data_facts(analysis).on_device(expr):
        return True
    if type(expr) is not cst.Name or not analysis.is_device_tensor(expr):
        return False
    from gpulint.analysis import Kind

    bindings = data_facts(analysis).bindings(expr)
    return bool(bindings) and all(
        b.kind == "assign" and type(b.value) is cst.Call and analysis.kind(b.value.func) is Kind.MODULE
        for b in bindings)


def _element(binding) -> Optional[cst.BaseExpression]:
    """The value a binding gives its name: the whole value, or for `a, b = x, y` the element at its place."""
    if binding.index is None:
        return binding.value
    value = binding.value
    if type(value) in (cst.Tuple, cst.List) and binding.index < len(value.elements) and \
            not any(type(e) is cst.StarredElement for e in value.elements):
        return value.elements[binding.index].value
    return None


def _dtype_only(analysis, call: cst.Call) -> bool:
    """`x.to(torch.long)` / `x.to(dtype=torch.long)`: a conversion that names a dtype and nothing else."""
    if len(call.args) != 1 or call.args[0].star:
        return False
    arg = call.args[0]
    if arg.keyword is not None:
        return arg.keyword.value == "dtype"
    q = analysis.qualified(arg.value) if type(arg.value) in (cst.Name, cst.Attribute) else None
    return q is not None and q.startswith("torch.") and q.count(".") == 1 and q.split(".")[1] in _DTYPE_NAMES


_DTYPE_NAMES = frozenset({"float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
                          "int32", "int", "int16", "short", "int8", "uint8", "bool", "complex64", "complex128"})


def _built_for_the_cpu(analysis, receiver: cst.BaseExpression) -> bool:
    """Every binding of the name `receiver` is a construction passed `device="cpu"` (`torch.device("cpu")`, or a
    name bound to one): the object's copies of host arrays stay on the host (cleanrl's JAX scripts build SB3's
    `ReplayBuffer(..., device="cpu")`)."""
    from gpulint.analysis.kinds import _cpu_device

    if type(receiver) is not cst.Name:
        return False
    scope = analysis.index.enclosing_scope(receiver)
    bindings = analysis.index.lookup(receiver.value, scope) if scope is not None else []
    return bool(bindings) and len(bindings) <= 8 and all(
        b.kind == "assign" and b.index is None and type(b.value) is cst.Call and any(
            a.keyword is not None and a.keyword.value == "device" and _cpu_device(analysis.kinds, a.value)
            for a in b.value.args) for b in bindings)
