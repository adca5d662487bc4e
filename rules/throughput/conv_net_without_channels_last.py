"""GPU418 `conv-net-without-channels-last`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT, Kind
from gpulint.analysis.precision import uses_reduced_precision
from gpulint.analysis.data_facts import append_keyword, data_facts, keyword
from gpulint.analysis.data_path import data_path_facts
from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety
from gpulint.analysis.node_types import of_types

_HEAD = "import torch\nimport torch.nn as nn\n"
_LOOP = ("opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
         "for x, y in loader:\n    with torch.autocast('cuda', dtype=torch.float16):\n"
         "        loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
         "    loss.backward()\n    opt.step()\n")


class ConvNetWithoutChannelsLast(Rule):
    """A 2-D convolutional network trained on CUDA in reduced precision, in the default NCHW memory format.

    ## What it does
    Flags a module that builds `nn.Conv2d` layers, trains in a loop on CUDA (`backward()` and `step()`), uses
    reduced precision (`torch.autocast`, `.half()`, `bfloat16`/`float16`) and never mentions
    `channels_last`. The finding sits on the first `Conv2d`. A preview rule: it runs when selected
    (`--select GPU4`).

    ## Why it is slow
    Tensor Cores compute convolutions in NHWC: with NCHW (`contiguous_format`) tensors cuDNN inserts transposes
    around each convolution or picks slower kernels. PyTorch's "Channels Last Memory Format" tutorial and the
    "Performance Tuning Guide" (*Use channels_last memory format for computer vision models*) report 8-35 %
    faster training of ResNets and similar networks under AMP on Volta and later GPUs; in fp32 without Tensor
    Cores the gain is small, which is why the rule requires reduced precision. In fp32 on an H100 (TF32
    convolutions) it lost: a small GroupNorm UNet with both its models in `channels_last` ran 10.27 ms a step
    against 7.88 ms in NCHW (three interleaved rounds, docs/benchmarks.md "Eighth landing").

    ## Example
    ```python
    model = ResNet50().to(device)
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(x.to(device)), y.to(device))
    ```
    Use instead:
    ```python
    model = ResNet50().to(device, memory_format=torch.channels_last)
    for x, y in loader:
        x = x.to(device, memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(x), y.to(device))
    ```

    ## Fix
    Adds `memory_format=torch.channels_last` to the `model = ...to(device)` call that moves the trained model to
    CUDA (when there is exactly one and it is a `.to(...)`; `.cuda()` takes no memory format). Converting the
    inputs too is left to you: a convolution with channels-last weights already returns channels-last outputs,
    and converting each batch is one more copy unless the loader produces them.

    ## Fix safety
    Unsafe: convolutions may run different cuDNN algorithms, so results differ in the last bits, and code that
    calls `.view()` on parameters or activations assuming contiguous NCHW strides fails with a stride error.

    ## When it is fine
    Models that are mostly not convolutions (a small conv stem in front of a transformer), 1-D or 3-D
    convolutions (`channels_last_3d` exists, check first), fp32 training on GPUs without Tensor Cores, and
    networks with layers that have no channels-last kernels (some custom CUDA ops, older `GroupNorm`
    releases), which convert back and forth: measure a few steps both ways. A module that mentions
    `channels_last` at all is left alone.
    """

    needs_text = GPU_HINT
    code = "GPU418"
    name = "conv-net-without-channels-last"
    message = ("convolutional network trained on CUDA in reduced precision in NCHW: Tensor Core convolutions "
               "want `memory_format=torch.channels_last`")
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "convolutions may pick other algorithms (last-bit differences), and "
                                          "`.view()` on NCHW-strided tensors can fail")
    added_in = "0.2.0"
    preview = True
    VALID = (
        _HEAD + "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten()).to('cuda', "
                "memory_format=torch.channels_last)\n" + _LOOP,
        _HEAD + "model = nn.Sequential(nn.Linear(3, 8)).to('cuda')\n" + _LOOP,
        _HEAD + "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten()).to('cuda')\n"
                + _LOOP.replace("    with torch.autocast('cuda', dtype=torch.float16):\n        loss", "    loss"),
    )
    INVALID = (
        Example(_HEAD + "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten()).to('cuda')\n" + _LOOP,
                message="channels_last",
                fixed=_HEAD + "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten()).to('cuda', "
                              "memory_format=torch.channels_last)\n" + _LOOP),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = data_path_facts(self.analysis)
        convs = [c for c in facts.conv_layers if (self.analysis.qualified(c.func) or "").endswith("Conv2d")]
        text = self.analysis.source or ""
        if not convs or "channels_last" in text or not uses_reduced_precision(self.analysis) or \
                not facts.trains_in_a_loop:
            return
        if not data_facts(self.analysis).clearly_cuda():
            return
        move = self._model_move()
        fix = None
        if move is not None and training_facts(self.analysis).imports_torch_as_torch():
            value = cst.parse_expression("torch.channels_last")
            fix = self.fix("Add `memory_format=torch.channels_last` to the model's `.to(...)`",
                           {move: lambda updated: append_keyword(updated, "memory_format", value)}, safe=False)
        self.report(convs[0], fix=fix)

    def _model_move(self) -> Optional[cst.Call]:
        """The one `model = ....to(<cuda device>)` assignment of a model this module moves to CUDA."""
        facts = training_facts(self.analysis)
        moves = []
        for node in of_types(self.analysis.index, cst.Assign):
            if len(node.targets) == 1 and \
                    isinstance(node.targets[0].target, cst.Name) and type(node.value) is cst.Call and \
                    type(node.value.func) is cst.Attribute and node.value.func.attr.value == "to":
                name = node.targets[0].target
                if self.analysis.kind(name) is Kind.MODULE and keyword(node.value, "memory_format") is None and \
                        node.value.args and facts.module_on_cuda(name):
                    moves.append(node.value)
        return moves[0] if len(moves) == 1 else None
