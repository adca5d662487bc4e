"""GPU109 `cuda-synchronize-in-loop`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP


class CudaSynchronizeInLoop(GpuRule):
    """`torch.cuda.synchronize()` every iteration.

    ## What it does
    Flags `torch.cuda.synchronize()` (and `torch.accelerator.synchronize()`, `torch.cuda.current_stream()
    .synchronize()`) on every iteration of a training/eval loop.

    ## Why it is slow
    It waits for the whole device to go idle, throwing away the overlap between Python and the GPU that makes
    asynchronous execution fast.

    ## Example
    ```python
    for x, y in loader:
        loss = step(x, y)
        torch.cuda.synchronize()
    ```
    Remove it, or time with CUDA events (`torch.cuda.Event(enable_timing=True)`) and read them periodically.

    ## Fix
    None: a synchronize is often there for a reason (timing, a race with host code).

    ## Fix safety
    No fix.

    ## When it is fine
    Benchmark code that times a step with a host clock or CUDA events right beside it (`torch.cuda.synchronize()`
    next to `time.perf_counter()`, or between `end.record()` and `start.elapsed_time(end)`, which needs the
    events complete) in a loop that repeats fixed inputs (`for _ in range(iters)`), periodic checks, code
    outside loops. A loop over a loader's batches (training or evaluation), or over a sequence's items by index
    (`for j in range(len(test_files)):` reading `test_files[j]`), is reported even beside a timer: the
    stall is paid every step of the real run, and `torch.cuda.Event(enable_timing=True)` pairs time the step
    without it.
    """

    code = "GPU109"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "cuda-synchronize-in-loop"
    message = "`{call}` every iteration stalls the CPU until the GPU is idle; time with CUDA events instead"
    _CALLS = {"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize",
              "torch.mps.synchronize", "torch.cuda.current_stream.synchronize"}
    family = Family.HOST_SYNC
    VALID = [TRAIN_STEP + "torch.cuda.synchronize()\n",
             # a loop over several loaders (one evaluation each), not over batches
             "import torch\nresults = {}\nfor name, data_loader in zip(names, data_loaders_val):\n"
             "    torch.cuda.synchronize()\n    results[name] = evaluate(data_loader)\n",
             # a benchmark: the same input timed again and again with a host clock
             "import time\nimport torch\nmodel = torch.nn.Linear(2, 2).cuda()\nx = torch.randn(8, 2, device=\"cuda\")\n"
             "for _ in range(100):\n    start = time.perf_counter()\n    model(x).sum().backward()\n"
             "    torch.cuda.synchronize()\n    times.append(time.perf_counter() - start)\n",
             # a benchmark timed with CUDA events: `elapsed_time` needs both events done
             "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nx = torch.randn(8, 2, device=\"cuda\")\n"
             "start = torch.cuda.Event(enable_timing=True)\nend = torch.cuda.Event(enable_timing=True)\n"
             "for _ in range(100):\n    start.record()\n    model(x).sum().backward()\n    end.record()\n"
             "    torch.cuda.synchronize()\n    times.append(start.elapsed_time(end))\n"]
    INVALID = [
        Example(TRAIN_STEP + "    torch.cuda.synchronize()\n",
                message="`torch.cuda.synchronize()` every iteration stalls the CPU un"),
        # an evaluation pass timed batch by batch: the stall is paid on every batch of the real run
        Example("import time\nimport torch\n\n\ndef validate(model, val_loader, log):\n    end = time.time()\n"
                "    data_iter = enumerate(val_loader)\n    for i, (images, target) in data_iter:\n"
                "        output = model(images.cuda(non_blocking=True))\n        torch.cuda.synchronize()\n"
                "        log(time.time() - end)\n        end = time.time()\n"),
        # a test set's images loaded one by one and timed: a pass over data, not a benchmark
        Example("import time\nimport torch\nnet = Net().cuda()\n"
                "for j in range(len(test_files)):\n    img = load_image(test_files[j]).cuda()\n"
                "    t_start = time.time()\n    out = net(img)\n"
                "    torch.cuda.synchronize()\n    times.append(time.time() - t_start)\n",
                message="`torch.cuda.synchronize()` every iteration stalls the CPU un"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = self._qualified(node)
        if q not in self._CALLS or (self._beside_a_timer(node) and self._in_a_benchmark_loop(node)):
            return
        where = self.where(node)
        if where:
            self.report(node, self.message.format(call=f"{q}()"), where=where)

    def _qualified(self, node: cst.Call) -> Optional[str]:
        func = node.func
        if type(func) is cst.Attribute and type(func.value) is cst.Call:
            inner = self.analysis.qualified(func.value.func)
            return f"{inner}.{func.attr.value}" if inner else None
        return self.analysis.qualified(func)

    def _in_a_benchmark_loop(self, node: cst.Call) -> bool:
        """The innermost loop around the call repeats a fixed input (`for _ in range(iters)`), not one that takes
        a loader's batches: timing every step of a training or evaluation pass over data still stalls every
        step, and CUDA events measure it without the stall."""
        for parent in self.analysis.index.ancestors(node):
            if type(parent) in (cst.For, cst.While):
                return not self.analysis.loops.loops_over_batches(parent) and not _indexes_a_sequence(parent)
            if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return False  # a step helper: how often it runs is its caller's loop
        return False

    def _beside_a_timer(self, node: cst.Call) -> bool:
        from gpulint.syntax import statement_of

        stmt = statement_of(node, self.analysis.parent)
        block = self.analysis.parent(stmt) if stmt is not None else None
        if type(block) is not cst.IndentedBlock:
            return False
        body = list(block.body)
        i = next((k for k, s in enumerate(body) if s is stmt), None)
        if i is None:
            return False
        for neighbour in body[max(0, i - 1):i + 2]:
            if neighbour is not stmt and "time" in self.analysis.code(neighbour) and any(
                    t in self.analysis.code(neighbour)
                    for t in ("perf_counter", "time()", "monotonic", "timer", "elapsed_time")):
                return True
        return False


def _indexes_a_sequence(loop) -> bool:
    """`for j in tqdm(range(len(test_files))):` whose body reads `test_files[j]`: a pass over data (a test set's
    images loaded one by one), not a benchmark repeating a fixed input."""
    if type(loop) is not cst.For or type(loop.target) is not cst.Name:
        return False
    iterable = loop.iter
    while type(iterable) is cst.Call and iterable.args and type(iterable.func) in (cst.Name, cst.Attribute) and \
            (iterable.func.value if type(iterable.func) is cst.Name else iterable.func.attr.value) in (
                "tqdm", "trange", "enumerate", "track", "progress_bar"):
        iterable = iterable.args[0].value
    if type(iterable) is not cst.Call or type(iterable.func) is not cst.Name or iterable.func.value != "range" or \
            len(iterable.args) != 1:
        return False
    size = iterable.args[0].value
    if type(size) is not cst.Call or type(size.func) is not cst.Name or size.func.value != "len" or \
            len(size.args) != 1:
        return False
    sequence = cst.Module([]).code_for_node(size.args[0].value)
    index = loop.target.value
    found = []

    class _Reads(cst.CSTVisitor):
        def visit_Subscript(self, node: cst.Subscript) -> None:
            if cst.Module([]).code_for_node(node.value) == sequence and len(node.slice) == 1 and \
                    type(node.slice[0].slice) is cst.Index and type(node.slice[0].slice.value) is cst.Name and \
                    node.slice[0].slice.value.value == index:
                found.append(node)

    loop.body.visit(_Reads())
    return bool(found)
