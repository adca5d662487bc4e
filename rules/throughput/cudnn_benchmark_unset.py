"""GPU413 `cudnn-benchmark-unset`."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data_facts import data_facts
from gpulint.analysis.data_path import data_path_facts
from gpulint.analysis.node_types import of_types
from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety

# Inputs of one shape: an in-memory TensorDataset, or a fixed-size crop/resize of torchvision.
_ONE_SHAPE = re.compile(r"\bTensorDataset\(|\b(?:RandomResizedCrop|RandomCrop|CenterCrop)\(\s*\d|\bResize\(\s*[(\[]")
# Opacus (differential privacy) draws each batch by Poisson sampling: its size changes every step.
_POISSON = re.compile(r"\bopacus\b")
_HEAD = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

"""
_BODY = """loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True, drop_last=True)
model = nn.Sequential(nn.Conv2d(3, 64, 3), nn.ReLU(), nn.Conv2d(64, 256, 3), nn.Flatten(), nn.LazyLinear(10)).cuda()
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
    `torch.use_deterministic_algorithms`), and the module shows that its inputs have one shape: its batches
    come from an in-memory `TensorDataset`, or its images pass through a fixed-size torchvision transform
    (`RandomResizedCrop(224)`, `RandomCrop(32, ...)`, `CenterCrop(224)`, `Resize((h, w))`). Not in test modules
    or toy programs (one small layer).

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
    deterministic algorithms. A module that hands its loader to Opacus' Poisson sampling
    (`privacy_engine.make_private(...)` without `poisson_sampling=False`, `DPDataLoader`,
    `UniformWithReplacementSampler`) is not reported: every step draws a batch of a different size.

    An early measurement on an H100 had the fix make a small ResNet 0.35x as fast; that was the measurement's
    fault (the first epoch's smaller last batch was auto-tuned inside the timed steps, docs/benchmarks.md "Third
    landing"); timed after the first epoch the fix is what the hand-optimised shapes use. A module whose inputs
    are not shown to have one shape (detection with multi-scale inputs, variable sequence lengths) is not
    reported.
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
    reports_in = ("hot-loop",)  # gpulint/prefilter.py: it needs a training loop in the module
    VALID = (
        _HEAD + "torch.backends.cudnn.benchmark = False  # variable input sizes\n" + _BODY,
        _HEAD + "model = nn.Sequential(nn.Linear(3, 16)).cuda()\n"
                "opt = torch.optim.SGD(model.parameters())\n"
                "for x, y in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n",
        _HEAD + "model = nn.Sequential(nn.Conv2d(3, 16, 3))\nfor x, y in loader:\n    model(x).sum().backward()\n",
        # inputs whose shape may vary (an image folder without a fixed-size crop): each new shape is timed again
        _HEAD + _BODY.replace("TensorDataset(images, labels)", "ImageFolder(root)"),
        # differentially private training with Poisson sampling: the batch size changes every step
        _HEAD + "from opacus import PrivacyEngine\n" + _BODY.replace(
            "for x, y in loader:", "model, opt, loader = PrivacyEngine().make_private(module=model, optimizer=opt, "
            "data_loader=loader, noise_multiplier=1.0, max_grad_norm=1.0)\nfor x, y in loader:"),
        # a toy: one small convolution
        _HEAD + _BODY.replace("nn.Conv2d(3, 64, 3), nn.ReLU(), nn.Conv2d(64, 256, 3)", "nn.Conv2d(3, 8, 3)"),
    )
    INVALID = (
        Example(_HEAD + _BODY, message="cudnn.benchmark",
                fixed=_HEAD.replace("TensorDataset\n", "TensorDataset\ntorch.backends.cudnn.benchmark = True\n", 1) + _BODY),
    )

    def _poisson_sampled(self) -> bool:
        """The module hands its loader to Opacus' Poisson sampling: `privacy_engine.make_private(...)` (or
        `make_private_with_epsilon`) without `poisson_sampling=False`, `DPDataLoader`, or
        `UniformWithReplacementSampler`. Each step then draws a batch of a random size, so the shape changes
        every step (even where an option can turn differential privacy off: the script is written for it)."""
        for call in of_types(self.analysis.index, cst.Call):
            func = call.func  # type: ignore[attr-defined]
            name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
            if name in ("make_private", "make_private_with_epsilon"):
                if not any(a.keyword is not None and a.keyword.value == "poisson_sampling" and
                           type(a.value) is cst.Name and a.value.value == "False" for a in call.args):  # type: ignore[attr-defined]
                    return True
            elif name in ("DPDataLoader", "UniformWithReplacementSampler") or \
                    type(func) is cst.Attribute and name == "from_data_loader" and \
                    type(func.value) is cst.Name and func.value.value == "DPDataLoader":
                return True
        return False

    def visit_Module(self, node: cst.Module) -> None:
        facts = data_path_facts(self.analysis)
        if not facts.conv_layers or facts.chooses_cudnn_algorithms or not data_facts(self.analysis).clearly_cuda():
            return
        if not facts.trains_in_a_loop:
            return  # a model definition or a utility module: the training script decides
        source = self.analysis.source if self.analysis.source is not None else self.analysis.module.code
        if not _ONE_SHAPE.search(source) or not training_facts(self.analysis).worth_a_lever():
            return  # inputs whose shape may vary (each new shape is timed again), a test, a toy
        if _POISSON.search(source) and self._poisson_sampled():
            return  # batches of a size drawn anew every step: each new shape would be timed again
        fix = None
        anchor = facts.import_anchor
        if anchor is not None and facts.imports("torch"):
            setting = cst.parse_statement("torch.backends.cudnn.benchmark = True\n")
            fix = self.fix("Set `torch.backends.cudnn.benchmark = True` after the imports",
                           {anchor: cst.FlattenSentinel([anchor, setting])}, safe=False)
        self.report(facts.conv_layers[0], fix=fix)
