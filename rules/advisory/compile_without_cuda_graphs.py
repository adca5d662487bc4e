"""GPU502 `compile-without-cuda-graphs`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data_facts import append_keyword, has_star_args, keyword
from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety
from gpulint.syntax import argument, string_value
from gpulint.analysis.node_types import of_types

_LAYERS = {"torch.nn.Linear": ("in_features", "out_features"), "torch.nn.Conv2d": ("in_channels", "out_channels")}
_SMALL = 1024  # every layer at most this wide: kernels of microseconds, launch-bound
_SCRIPT = ("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), "
           "torch.nn.Linear(256, 10)).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
           "fast = torch.compile(model{mode})\n"
           "for x in loader:\n    fast(x.cuda()).sum().backward()\n    opt.step()\n")


class CompileWithoutCudaGraphs(Rule):
    """An advisory: `torch.compile` of a small model in the default mode, where CUDA graphs would cut launches.

    ## What it does
    Flags `torch.compile(model)` without `mode=` (or `options=`, or a backend other than Inductor) in a module
    that trains on CUDA, when every `nn.Linear` / `nn.Conv2d` the module builds has literal sizes of at most
    1024 (and there is at least one): a small model whose kernels each take microseconds. An advisory (family
    GPU5xx): off by default and only run when selected (`--select GPU5`).

    ## Why it is slow
    A small model's step is bound by kernel launches, not arithmetic: even fused, each of its kernels is
    launched from the CPU, and the GPU idles between launches. `mode="reduce-overhead"` records the compiled
    graph as a CUDA graph and replays the whole step with one launch (PyTorch `torch.compile` docs: "reduces
    the overhead of python with CUDA graphs, useful for small batches"; Mark Saroufim's GPU optimisation
    workshop notes in the project's guides: "Reduce overhead ... torch.compile(model, mode=\\"reduce-overhead\\")").

    ## Example
    ```python
    model = torch.compile(SmallMLP().cuda())
    ```
    Use instead:
    ```python
    model = torch.compile(SmallMLP().cuda(), mode="reduce-overhead")
    ```

    ## Fix
    Adds `mode="reduce-overhead"` to the call.

    ## Fix safety
    Unsafe: CUDA graphs keep static input and output buffers, so a tensor returned by one call is overwritten by
    the next (keeping it across steps needs `.clone()`, or PyTorch raises "accessing tensor output of
    CUDAGraphs that has been overwritten"); each new input shape records a new graph (memory, and a slow first
    step for each shape), and graphs cannot capture CPU syncs or dynamic control flow, which then run without
    them.

    ## When it is fine
    Large models (kernels of milliseconds: launch overhead is already hidden), input shapes that vary from step
    to step (a graph per shape: memory and recording time eat the gain; pad to a few buckets first), code that
    keeps outputs of the compiled model across calls, and steps with graph breaks (GPU414) or CPU work between
    the kernels. Measure: the gain is large (2x and more) only when the step is launch-bound.
    """

    needs_text = GPU_HINT
    code = "GPU502"
    name = "compile-without-cuda-graphs"
    message = "small model compiled in the default mode: its step is launch-bound; `mode=\"reduce-overhead\"` " \
              "replays it as one CUDA graph"
    family = Family.ADVISORY
    fix_availability = FixAvailability.ALWAYS
    fix_safety = FixSafety(Safety.UNSAFE, "CUDA graphs reuse output buffers (outputs kept across calls are "
                                          "overwritten) and record one graph per input shape")
    added_in = "0.2.0"
    preview = True
    VALID = (
        _SCRIPT.format(mode=", mode=\"max-autotune\""),
        _SCRIPT.format(mode="").replace("Linear(256, 10)", "Linear(256, 4096)"),
        _SCRIPT.format(mode="").replace(".cuda()", ""),
    )
    INVALID = (Example(_SCRIPT.format(mode=""), message="reduce-overhead",
                       fixed=_SCRIPT.format(mode=", mode=\"reduce-overhead\"")),)

    def visit_Call(self, node: cst.Call) -> None:
        if self.analysis.qualified(node.func) != "torch.compile" or not node.args or has_star_args(node):
            return
        if keyword(node, "mode") is not None or keyword(node, "options") is not None:
            return
        backend = keyword(node, "backend")
        if backend is not None and string_value(backend.value) != "inductor":
            return  # CUDA graphs are an Inductor mode
        largest = self._largest_layer()
        if largest is None or largest > _SMALL or not training_facts(self.analysis).trains_on_cuda():
            return
        fix = self.fix("Add `mode=\"reduce-overhead\"`",
                       {node: lambda updated: append_keyword(updated, "mode", cst.SimpleString('"reduce-overhead"'))},
                       safe=False)
        self.report(node, fix=fix)

    def _largest_layer(self) -> Optional[int]:
        """The widest literal size of the module's layers; None without layers or with any non-literal size."""
        sizes = []
        for node in of_types(self.analysis.index, cst.Call):
            names = _LAYERS.get(self.analysis.qualified(node.func) or "")
            if names is None:
                continue
            for position, name in enumerate(names):
                arg = argument(node, name, position)
                if arg is None or type(arg.value) is not cst.Integer:
                    return None
                sizes.append(int(arg.value.value.replace("_", ""), 0))
        return max(sizes) if sizes else None
