"""GPU413 `cudnn-benchmark-unset`."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data_facts import data_facts
from gpulint.analysis.data_path import data_path_facts
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety

_HEAD = """import torch
import torch.nn as nn

"""
_BODY = """model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
"""


class CudnnBenchmarkUnset(Rule):
    """A convolutional network trained on CUDA without `torch.backends.cudnn.benchmark = True`.

    ## What it does
    Flags the first `nn.Conv1d/2d/3d` (or transposed convolution) of a module that trains on CUDA (a
    `.backward()` and a `.step()` inside loops, and a "cuda" device, `.cuda()` or `torch.cuda.*` in the
    module) when the module never sets `torch.backends.cudnn.benchmark` (nor `cudnn.deterministic`, nor
    `torch.use_deterministic_algorithms`).

    ## Why it is slow
    By default cuDNN picks a convolution algorithm from heuristics. With `benchmark = True` it times the
    candidate algorithms for each new input shape once and keeps the fastest, which for fixed-shape training is
    often markedly faster per step (PyTorch's performance tuning guide, "Enable cuDNN auto-tuner",
    https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html).

    ## Example
    ```python
    import torch
    model = ResNet().cuda()
    for x, y in loader:
        ...
    ```
    Use instead:
    ```python
    import torch
    torch.backends.cudnn.benchmark = True
    model = ResNet().cuda()
    ```

    ## Fix
    Inserts `torch.backends.cudnn.benchmark = True` once, after the module's leading imports. No fix when the
    module does not `import torch` at its top.

    ## Fix safety
    Unsafe: the auto-tuner may choose a different (nondeterministic) algorithm on each run, so results are no
    longer bit-for-bit reproducible between runs, and the first step of every new input shape pays for the
    timing.

    ## When it is fine
    Inputs whose shape changes from step to step (variable image sizes, variable sequence lengths): each new
    shape is timed again, which can cost more than it saves. Set `torch.backends.cudnn.benchmark = False`
    explicitly to record that decision (the rule then stays silent), as it does for scripts that ask for
    deterministic algorithms.

    A preview rule (off unless selected, e.g. `--extend-select GPU413`): on an H100 the fix made a small ResNet
    over a map-style loader 0.35x as fast (11.8 -> 34.1 ms/step, docs/benchmarks.md), most likely because the last,
    smaller batch of each epoch is timed again; measure with `gpulint verify` before keeping it.
    """

    needs_text = GPU_HINT
    code = "GPU413"
    name = "cudnn-benchmark-unset"
    message = "convolutional network trained on CUDA with `torch.backends.cudnn.benchmark` unset: cuDNN picks " \
              "algorithms by heuristics instead of timing them for your fixed input shapes"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "the auto-tuner may pick nondeterministic algorithms: runs are no longer "
                                          "bit-for-bit reproducible")
    added_in = "0.2.0"
    preview = True  # measured slower on a shape it fires on; see "When it is fine"
    VALID = (
        _HEAD + "torch.backends.cudnn.benchmark = False  # variable input sizes\n" + _BODY,
        _HEAD + "model = nn.Sequential(nn.Linear(3, 16)).cuda()\n"
                "opt = torch.optim.SGD(model.parameters())\n"
                "for x, y in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n",
        _HEAD + "model = nn.Sequential(nn.Conv2d(3, 16, 3))\nfor x, y in loader:\n    model(x).sum().backward()\n",
    )
    INVALID = (
        Example(_HEAD + _BODY, message="cudnn.benchmark",
                fixed=_HEAD.replace("nn\n", "nn\ntorch.backends.cudnn.benchmark = True\n", 1) + _BODY),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = data_path_facts(self.analysis)
        if not facts.conv_layers or facts.chooses_cudnn_algorithms or not data_facts(self.analysis).clearly_cuda():
            return
        if not facts.trains_in_a_loop:
            return  # a model definition or a utility module: the training script decides
        fix = None
        anchor = facts.import_anchor
        if anchor is not None and facts.imports("torch"):
            setting = cst.parse_statement("torch.backends.cudnn.benchmark = True\n")
            fix = self.fix("Set `torch.backends.cudnn.benchmark = True` after the imports",
                           {anchor: cst.FlattenSentinel([anchor, setting])}, safe=False)
        self.report(facts.conv_layers[0], fix=fix)
