"""GPU419 `matmul-dims-not-multiple-of-8`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.precision import uses_reduced_precision
from gpulint.analysis.data_facts import data_facts
from gpulint.rule import Example, Family, Rule
from gpulint.syntax import argument

_LINEAR = {"torch.nn.Linear", "torch.nn.modules.linear.Linear"}
_SMALLEST = 64  # below this a GEMM is bound by memory and launch cost; padding it buys nothing measurable


class MatmulDimsNotMultipleOf8(Rule):
    """`nn.Linear` with a literal size that is not a multiple of 8, in a model trained in fp16/bf16 on CUDA.

    ## What it does
    Flags `nn.Linear(in_features, out_features)` whose literal `in_features` or `out_features` is at least 64
    and not a multiple of 8, in a module that runs on CUDA and uses reduced precision (`torch.autocast`,
    `.half()`, `bfloat16`/`float16`). A preview rule: it runs when selected (`--select GPU4`).

    ## Why it is slow
    Tensor Cores multiply fp16/bf16 tiles whose dimensions are multiples of 8 (16 bytes); cuBLAS pads or falls
    back to slower kernels for the rest of the matrix when a dimension is not (NVIDIA "Matrix Multiplication
    Background User's Guide" and "Deep Learning Performance: Tensor Core requirements": choose multiples of 8
    for fp16, 64 or more is better still). The classic case is a vocabulary: nanoGPT pads GPT-2's 50257 to
    50304 for a measured speed-up of the whole model.

    ## Example
    ```python
    self.proj = nn.Linear(768, 1000)
    ```
    Use instead (pad, and ignore or slice off the extra outputs):
    ```python
    self.proj = nn.Linear(768, 1008)
    ```

    ## Fix
    None: changing a layer's size changes the model (its checkpoint, its outputs).

    ## Fix safety
    No automatic fix.

    ## When it is fine
    Small layers (below 64: a 10-class head, a scalar regression output), where the matrix multiply is bound by
    memory and launch cost and padding buys nothing measurable; fp32 training without TF32; sizes that must
    match a pretrained checkpoint or a dataset's label count exactly (padding is then extra work with
    slicing); and layers that are a negligible share of the model's FLOPs.
    """

    needs_text = GPU_HINT
    code = "GPU419"
    name = "matmul-dims-not-multiple-of-8"
    message = "linear layer size not a multiple of 8 in a model trained in fp16/bf16: Tensor Core kernels pad " \
              "or fall back to slower tiles"
    family = Family.THROUGHPUT
    added_in = "0.2.0"
    preview = True
    VALID = (
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(768, 1008).cuda()\n"
        "with torch.autocast('cuda'):\n    y = model(x)\n",
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(768, 1000).cuda()\ny = model(x)\n",
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(768, 10).cuda()\n"
        "with torch.autocast('cuda'):\n    y = model(x)\n",
    )
    INVALID = (
        Example("import torch\nimport torch.nn as nn\nmodel = nn.Linear(768, 1001).cuda()\n"
                "with torch.autocast('cuda'):\n    y = model(x)\n",
                message="multiple of 8"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.analysis.qualified(node.func) not in _LINEAR:
            return
        sizes = [_literal(argument(node, "in_features", 0)), _literal(argument(node, "out_features", 1))]
        odd = [n for n in sizes if n is not None and n >= _SMALLEST and n % 8]
        if not odd or not self._reduced_precision_on_cuda():
            return
        padded = (odd[0] + 7) // 8 * 8
        self.report(node, f"{self.message} ({odd[0]} -> {padded})")

    def _reduced_precision_on_cuda(self) -> bool:
        return uses_reduced_precision(self.analysis) and data_facts(self.analysis).clearly_cuda()


def _literal(arg: Optional[cst.Arg]) -> Optional[int]:
    if arg is not None and type(arg.value) is cst.Integer:
        return int(arg.value.value.replace("_", ""), 0)
    return None
