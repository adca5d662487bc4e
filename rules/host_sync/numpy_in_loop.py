"""GPU103 `numpy-in-loop`."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.syntax import method_call
from gpulint.analysis.host_reads import _NOT_TENSOR, _on_host_already


class NumpyInLoop(GpuRule):
    """`.numpy()` on a tensor every iteration.

    ## What it does
    Flags `tensor.numpy(force=True)` on every iteration of a training/eval loop. `x.cpu().numpy()` is reported
    once, at `.cpu()` (GPU104). A plain `.numpy()` is never reported: on a CUDA tensor it raises ("can't convert
    cuda:0 device type tensor to numpy"), so code that runs has a host tensor there and copies nothing.

    ## Why it is slow
    The array lives in host memory, so the tensor must be copied there: the CPU waits for the GPU to finish
    every queued kernel.

    ## Example
    ```python
    for x, y in loader:
        scores.append(model(x).detach().numpy(force=True))
    ```
    Stack on the device and convert once after the loop:
    ```python
        scores.append(model(x).detach())
    scores = torch.cat(scores).cpu().numpy()
    ```

    ## Fix
    None.

    ## Fix safety
    No fix.

    ## When it is fine
    CPU-only code (no GPU anywhere in the module), periodic logging, code outside loops, and `.numpy()` without
    `force=True` (a host tensor: a loader's labels never moved, a value already copied with `.cpu()`).
    """

    code = "GPU103"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "numpy-in-loop"
    message = "`.numpy()` every iteration copies the tensor to the host and waits for the GPU"
    family = Family.HOST_SYNC
    VALID = [TRAIN_STEP + "arr = loss.detach().numpy(force=True)\n",
             # without force=True `.numpy()` raises on a CUDA tensor: what runs is a host tensor (labels never moved)
             "import torch\n\nmodel = torch.nn.Linear(4, 2).cuda()\nfor x, labels in loader:\n"
             "    out = model(x.cuda())\n    hits.append(labels.numpy())\n",
             # computed from a host copy: the copy (and its wait) is `.cpu()`'s, reported there (GPU104)
             "import torch\nimport torch.nn.functional as F\n\n\ndef predict(net, img, threshold=0.5):\n"
             "    with torch.no_grad():\n        output = net(img.cuda()).cpu()\n"
             "        output = F.interpolate(output, (64, 64), mode='bilinear')\n        if net.n_classes > 1:\n"
             "            mask = output.argmax(dim=1)\n        else:\n            mask = torch.sigmoid(output) > threshold\n"
             "    return mask[0].long().squeeze().numpy()\n\n\nfor image in images:\n    masks.append(predict(net, image))\n"]
    INVALID = [
        Example(TRAIN_STEP + "    arr = loss.detach().numpy(force=True)\n",
                message="`.numpy()` every iteration copies the tensor to the host and"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "numpy")
        if attr is None or not _forced(node) or self.analysis.kind(attr.value) in _NOT_TENSOR or _on_host_already(self, attr.value):
            return
        where = self.where(node)
        if where:
            self.report(node, where=where)


def _forced(node: cst.Call) -> bool:
    """`.numpy(force=True)` (or a non-constant `force=`): the only `.numpy()` that copies from the GPU."""
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "force":
            return not (type(arg.value) is cst.Name and arg.value.value == "False")
    return False
