"""GPU404 `tf32-disabled`."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, FixAvailability, FixSafety, GpuRule, Safety

SETTING = 'torch.set_float32_matmul_precision("high")'


class Tf32Disabled(GpuRule):
    """A CUDA training script doing fp32 matmuls with TF32 left off.

    ## What it does
    Flags, once per module, the first training loop of a script (a module with an `if __name__ == "__main__":`
    block or a training loop outside every function and class) that trains on CUDA in fp32: no autocast or other
    reduced precision, no `torch.set_float32_matmul_precision(...)`, no `torch.backends.cuda.matmul.allow_tf32 = ...`,
    and a model built in the module whose matmuls are big enough to gain: attention/transformer layers, or
    linear/embedding layers at least 512 wide (or of widths the module does not write out), and no convolutions.

    ## Why it is slow
    Since PyTorch 1.12 fp32 matmuls on Ampere and newer GPUs default to full fp32 precision, which runs far
    below the tensor cores' TF32 rate (PyTorch "CUDA semantics", *TensorFloat-32 (TF32) on Ampere (and later)
    devices*; TorchTidy's "fp32 matmul" pattern). `torch.set_float32_matmul_precision("high")` lets every fp32
    matmul use TF32 (10-bit mantissa, fp32 range) with no other change to the program.

    ## Example
    ```python
    import torch

    model = Net().cuda()
    for x, y in loader:
        ...
    ```
    Use instead:
    ```python
    import torch
    torch.set_float32_matmul_precision("high")

    model = Net().cuda()
    for x, y in loader:
        ...
    ```

    ## Fix
    Inserts `torch.set_float32_matmul_precision("high")` once, right after the imports at the top of the
    module. Offered only when that block imports `torch` as `torch`.

    ## Fix safety
    Unsafe: matmuls (and, for cuDNN, convolutions already default to TF32) round their inputs to a 10-bit
    mantissa, so results change at about 1e-3 relative; training is normally unaffected, numerically delicate
    code (solvers, tests comparing against fp32 references) may not be.

    ## When it is fine
    Modules that choose a precision anywhere (autocast, `.half()`, a half or double `dtype=`, TF32 flags,
    `mixed_precision`; `dtype=torch.long` for token ids or `dtype=np.uint8` for images chooses nothing for the
    matmuls), models whose written-out widths are all under 512 (the 64-256-wide MLPs of reinforcement learning
    scripts: each matmul is a few tensor-core tiles, bound by its launch, not by its arithmetic), convolutional
    networks (cuDNN runs their convolutions in TF32 by default), library modules that are not entry points (the setting is global: the script should decide), CPU-only code,
    and code that needs strict fp32: say so with `torch.set_float32_matmul_precision("highest")`. Modules where
    GPU403 reports the training step's forward pass: its fix puts the step under bf16 autocast, whose matmuls run
    on the bf16 tensor cores, so the TF32 setting adds nothing there (measured on an H100: the GPT shape of
    benchmarks/programs/shapes with both fixes ran 0.97x the one with autocast alone, docs/benchmarks.md,
    seventh landing). Where GPU403 is silent, or turned off (`ignore = ["GPU403"]`: no mixed precision wanted),
    TF32 remains the lever and this rule reports it.
    """

    code = "GPU404"
    name = "tf32-disabled"
    message = "CUDA training in fp32 with TF32 off: `torch.set_float32_matmul_precision(\"high\")` speeds up matmuls"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "fp32 matmuls round inputs to TF32 (10-bit mantissa): results change")
    added_in = "0.2.0"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    defers_in_module_to = ("GPU403",)  # bf16 autocast runs the matmuls on the tensor cores: TF32 adds nothing
    VALID = (
        "import torch\ntorch.set_float32_matmul_precision(\"high\")\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n",
        "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "def train(loader):\n    for x in loader:\n        loss = model(x).sum()\n        loss.backward()\n"
        "        opt.step()\n",
        # a placeholder model of one layer (a DDP tutorial)
        "import torch\nmodel = torch.nn.Linear(20, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n",
        # narrow written-out widths (an RL actor/critic): launch-bound matmuls, TF32 changes nothing measurable
        "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(obs_dim, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),\n"
        "                            torch.nn.Linear(256, 1)).cuda()\n"
        "opt = torch.optim.Adam(model.parameters(), lr=3e-4)\n"
        "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n",
        # a half dtype chosen somewhere in the module
        "import torch\nmodel = torch.nn.TransformerEncoderLayer(512, 8).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    loss = model(x.to('cuda', dtype=torch.bfloat16)).sum()\n    loss.backward()\n    opt.step()\n",
        # a convolutional network: cuDNN runs its convolutions in TF32 already
        "import torch\nmodel = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.LazyLinear(2)).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n",
    )
    INVALID = (
        Example("import torch\n\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()\n"
                "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n",
                message="TF32",
                fixed="import torch\ntorch.set_float32_matmul_precision(\"high\")\n\n"
                      "model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                      "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"),
        # integer dtypes for token ids choose no matmul precision; the loop runs at the top level under `while`
        Example("import torch\n\nmodel = torch.nn.Sequential(torch.nn.Embedding(vocab, d_model), torch.nn.TransformerEncoderLayer(d_model, 8)).cuda()\n"
                "ids = torch.zeros(64, 128, dtype=torch.long)\n"
                "opt = torch.optim.AdamW(model.parameters(), lr=1e-4)\nstep = 0\n"
                "while step < steps:\n    for x in loader:\n        loss = model(x).sum()\n        loss.backward()\n"
                "        opt.step()\n        step += 1\n",
                message="TF32",
                fixed="import torch\ntorch.set_float32_matmul_precision(\"high\")\n\n"
                      "model = torch.nn.Sequential(torch.nn.Embedding(vocab, d_model), torch.nn.TransformerEncoderLayer(d_model, 8)).cuda()\n"
                      "ids = torch.zeros(64, 128, dtype=torch.long)\n"
                      "opt = torch.optim.AdamW(model.parameters(), lr=1e-4)\nstep = 0\n"
                      "while step < steps:\n    for x in loader:\n        loss = model(x).sum()\n        loss.backward()\n"
                      "        opt.step()\n        step += 1\n"),
    )

    def visit_For(self, node: cst.For) -> None:
        facts = training_facts(self.analysis)
        loops = facts.training_loops()
        if not loops or loops[0] is not node or not self.analysis.targets_gpu:
            return
        if facts.chose_matmul_precision() or not facts.trains_on_cuda() or not facts.entry_point() or \
                not facts.worth_a_lever() or not facts.matmul_heavy():
            return
        last = facts.last_leading_import()
        fix = None
        if last is not None and facts.imports_torch_as_torch():
            setting = cst.parse_statement(f"{SETTING}\n")
            fix = self.fix("Insert `torch.set_float32_matmul_precision(\"high\")` after the imports",
                           {last: cst.FlattenSentinel([last, setting])}, safe=False)
        self.report(node, fix=fix)
