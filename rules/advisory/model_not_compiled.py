"""GPU501 `model-not-compiled`."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data_path import data_path_facts
from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, Rule
from gpulint.textsearch import found_in

_COMPILES = re.compile(r"\bcompile\b|torch\.jit|torch_compile|torch\.export|tensorrt|onnx|"
                       r"\bAccelerator\b|deepspeed|lightning")  # frameworks configure compiling outside the code
_SCRIPT = ("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).cuda()\n"
           "opt = torch.optim.AdamW(model.parameters())\n{compile}"
           "for epoch in range(100):\n    for x in loader:\n        model(x.cuda()).sum().backward()\n"
           "        opt.step()\n        opt.zero_grad()\n")


class ModelNotCompiled(Rule):
    """An advisory: a training script that trains on CUDA in a loop and never uses `torch.compile`.

    ## What it does
    Flags the training loop of a script (a module with a `__main__` guard or a top-level training loop) that
    trains on CUDA (`backward()` in a loop over batches, with the model on a CUDA device) when nothing in the
    module compiles (`torch.compile`, `model.compile()`, `torch.jit`, `torch.export`, TensorRT/ONNX, a
    `compile` flag), and the training is not run by a framework that configures compiling outside the code
    (Accelerate's `Accelerator`, whose `dynamo_backend` comes from `accelerate config`; DeepSpeed;
    Lightning). An advisory (family GPU5xx): off by default and only run when selected (`--select GPU5`).

    ## Why it is slow
    In eager mode every PyTorch operation is its own kernel launched from Python: elementwise chains
    (activation, dropout, residual add, normalisation) each read and write the whole tensor. `torch.compile`
    traces the model once and generates fused Triton kernels, so memory-bound chains become one pass; typical
    training speed-ups are 1.3-2x on recent GPUs (PyTorch 2.0 release benchmarks over 163 models; the
    project's guides: "torch.compile ... fusion"). nanoGPT compiles its model by default for this reason.

    ## Example
    ```python
    model = GPT(config).to(device)
    for step in range(max_steps):
        loss = model(x, y)
    ```
    Use instead:
    ```python
    model = torch.compile(GPT(config).to(device))
    ```

    ## Fix
    None: where to compile (the whole model, a block, the loss) and with which mode is a decision.

    ## Fix safety
    No automatic fix.

    ## When it is fine
    It pays only when the run is long enough to amortise compilation (tens of seconds to minutes for a large
    model, repeated for each new input shape and after each recompilation), when the model compiles without
    many graph breaks (`torch._dynamo.explain`, `TORCH_LOGS=graph_breaks`; see GPU414), and when time is
    spent in the GPU kernels and not in the data path. It does not pay for short runs, debugging, input shapes
    that change every step (recompiles; `dynamic=True` helps), models dominated by large matmuls or
    convolutions already at cuBLAS/cuDNN speed, and custom ops Dynamo cannot trace. Measure a few hundred steps
    both ways.
    """

    needs_text = GPU_HINT
    code = "GPU501"
    name = "model-not-compiled"
    message = "training on CUDA without `torch.compile`: the model runs op by op in eager mode; compiling fuses " \
              "kernels (worth it for runs long enough to amortise compilation)"
    family = Family.ADVISORY
    added_in = "0.2.0"
    preview = True
    VALID = (
        _SCRIPT.format(compile="model = torch.compile(model)\n"),
        _SCRIPT.format(compile="").replace(".cuda()", ""),
    )
    INVALID = (Example(_SCRIPT.format(compile=""), message="torch.compile"),)

    def visit_Module(self, node: cst.Module) -> None:
        facts = training_facts(self.analysis)
        if found_in(_COMPILES, self.analysis.source or ""):
            return
        loops = facts.training_loops()
        if not loops or not facts.trains_on_cuda():
            return
        at_top = [loop for loop in loops if not any(type(a) in (cst.FunctionDef, cst.ClassDef)
                                                    for a in self.analysis.index.ancestors(loop))]
        if at_top or data_path_facts(self.analysis).main_guard:
            self.report((at_top or loops)[0])
