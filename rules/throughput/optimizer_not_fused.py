"""GPU402 `optimizer-not-fused`."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.data_facts import append_keyword, data_facts, has_star_args, keyword
from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, FixAvailability, FixSafety, GpuRule, Safety
from gpulint.syntax import argument

# torch.optim classes with a fused CUDA implementation (`fused=True`).
FUSED_OPTIMIZERS = {f"torch.optim.{name}" for name in ("Adam", "AdamW", "SGD")} | \
    {f"torch.optim.{name.lower()}.{name}" for name in ("Adam", "AdamW", "SGD")}


class OptimizerNotFused(GpuRule):
    """`torch.optim.Adam/AdamW/SGD` over CUDA parameters without `fused=True`.

    ## What it does
    Flags `torch.optim.Adam(...)`, `AdamW(...)` and `SGD(...)` built over the `.parameters()` of a model that
    the same module moves to a CUDA device (`model.to(device)`, `model.cuda()`), when neither `fused=` nor
    `foreach=` is given. Every move of that model must go to CUDA: a device that may be another accelerator
    (`torch.accelerator.current_accelerator()`, `accelerator.device`) or a function's parameter keeps it silent.
    A preview rule: it runs when selected (`--select GPU4`).

    ## Why it is slow
    The default implementation on CUDA is `foreach`: a handful of multi-tensor kernels per step, each still
    reading and writing the parameters, gradients and optimizer state in separate passes. `fused=True` does the
    whole update in one kernel per group of tensors (GPU MODE lecture 6, "Optimizing Optimizers in PyTorch", in
    the project's guides; PyTorch's `torch.optim` docs: "fused > foreach > for-loop" on CUDA). On an H100 the
    default AdamW was already foreach and `fused=True` was one of the two levers left (/work/shared/facts.md).

    ## Example
    ```python
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ```
    Use instead:
    ```python
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    ```

    ## Fix
    Adds `fused=True` to the call.

    ## Fix safety
    Unsafe: the fused kernel computes the same update in a different order, so parameters differ from the
    foreach result in the last bits after each step, and training curves drift apart over many steps. It also
    requires floating-point parameters on a device the fused kernel supports: where a script falls back to
    the CPU (`"cuda" if torch.cuda.is_available() else "cpu"`), fused Adam/AdamW/SGD on CPU needs PyTorch 2.4 or
    later.

    ## When it is fine
    `fused=` or `foreach=` given (either is a decision), `**kwargs` that may carry them, optimizers without a
    fused implementation (Adamax, NAdam, RAdam, LBFGS, ...; Adagrad's is left alone because older releases
    fuse it on the CPU only), parameters the module does not certainly put on a
    GPU (CPU-only scripts, a device chosen elsewhere), and tiny models where the optimizer is a negligible part
    of the step.
    """

    code = "GPU402"
    name = "optimizer-not-fused"
    message = "optimizer over CUDA parameters without `fused=True`: the update runs as several kernels per step"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.ALWAYS
    fix_safety = FixSafety(Safety.UNSAFE, "the fused kernel rounds differently: parameters differ in the last bits")
    added_in = "0.2.0"
    preview = True
    VALID = (
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
        "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\n",
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
        "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)\n",
        "import torch\nmodel = torch.nn.Linear(4, 2)\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n",
        "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\nopt = torch.optim.NAdam(model.parameters())\n",
    )
    INVALID = (
        Example("import torch\nmodel = torch.nn.Linear(4, 2).to(\"cuda\")\n"
                "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n",
                message="fused=True",
                fixed="import torch\nmodel = torch.nn.Linear(4, 2).to(\"cuda\")\n"
                      "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.analysis.targets_gpu or self.analysis.qualified(node.func) not in FUSED_OPTIMIZERS:
            return
        if has_star_args(node) or keyword(node, "fused") is not None or keyword(node, "foreach") is not None:
            return
        params = argument(node, "params", 0)
        if params is None:
            return
        facts = training_facts(self.analysis)
        owners = list(facts.parameter_owners(params.value))
        if not owners or not all(facts.module_on_cuda(o) for o in owners):
            return
        if not data_facts(self.analysis).clearly_cuda():
            return
        fix = self.fix("Add `fused=True`", {node: lambda updated: append_keyword(updated, "fused", cst.Name("True"))},
                       safe=False)
        self.report(node, fix=fix)
