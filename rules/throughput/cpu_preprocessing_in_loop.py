"""GPU417 `cpu-preprocessing-in-loop`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.data_facts import _walk
from gpulint.analysis.training import training_facts
from gpulint.rule import Example, Family, GpuRule

_CPU_LIBRARIES = ("numpy.", "PIL.", "cv2.", "torchvision.transforms.", "skimage.", "scipy.ndimage.")


class CpuPreprocessingInLoop(GpuRule):
    """NumPy, PIL, OpenCV or torchvision-transform calls applied to the batch inside the training loop.

    ## What it does
    Flags, on every iteration of a training loop (a loop that runs `backward()`), calls into `numpy`, `PIL`,
    `cv2`, `skimage`, `scipy.ndimage` or `torchvision.transforms` (functional calls, or a transform object built
    with `transforms.Compose(...)` / `transforms.X(...)`) whose arguments are the loop's batch or values
    computed from it. A preview rule: it runs when selected (`--select GPU4`).

    ## Why it is slow
    These run on the host, in the main process, one call after another while the GPU waits: the main process
    cannot queue the next step's kernels until the batch is ready, and on the data path the per-batch CPU work
    was the measured bottleneck (/work/shared/facts.md: ~3.4 ms of host work per step dominated a 3-layer MLP's
    step on an H100). In the Dataset's `__getitem__` the same work runs in DataLoader workers, in parallel and
    ahead of the GPU; as tensor operations on the device (`torchvision.transforms.v2` on CUDA tensors,
    `torch.nn.functional.interpolate`) it runs as kernels (PyTorch "Performance Tuning Guide": enable
    asynchronous data loading and augmentation).

    ## Example
    ```python
    for images, labels in loader:
        images = torch.stack([train_transform(img) for img in images])
        loss = criterion(model(images.to(device)), labels.to(device))
    ```
    Use instead:
    ```python
    dataset = ImageFolder(root, transform=train_transform)
    loader = DataLoader(dataset, batch_size=64, num_workers=8, pin_memory=True)
    for images, labels in loader:
        loss = criterion(model(images.to(device, non_blocking=True)), labels.to(device, non_blocking=True))
    ```

    ## Fix
    None: moving the work into the Dataset or onto the GPU is a restructuring.

    ## Fix safety
    No automatic fix.

    ## When it is fine
    torchvision transforms applied to a batch already on the GPU (`augment(x.to(device))`: they run as
    kernels, the recommended shape), work on values that are not the batch (`np.mean(losses)` for a log line,
    learning-rate schedules computed with NumPy), work outside the training loop or periodic (visualisation
    every N steps), code that already overlaps it with the GPU (a prefetching thread), and batches so cheap to
    prepare that the GPU step hides them (measure: `torch.profiler` shows the gap between steps).
    """

    code = "GPU417"
    name = "cpu-preprocessing-in-loop"
    message = "batch preprocessed on the host inside the training loop: the GPU waits; do it in the Dataset " \
              "(DataLoader workers) or on the GPU"
    family = Family.THROUGHPUT
    added_in = "0.2.0"
    preview = True
    VALID = (
        "import numpy as np\nimport torch\nmodel = torch.nn.Linear(4, 2).cuda()\nlosses = []\n"
        "for x in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n"
        "    lr = np.cos(np.pi * len(losses) / 100)\n",
        "import numpy as np\nimport torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
        "for x in loader:\n    with torch.no_grad():\n        y = np.asarray(x)\n",
    )
    INVALID = (
        Example("import numpy as np\nimport torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"
                "for x in loader:\n    x = torch.from_numpy(np.flip(x, axis=1).copy())\n"
                "    model(x.cuda()).sum().backward()\n",
                message="on the host"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self._host_library(node.func) or not node.args:
            return
        loop = self._training_loop(node)
        if loop is None or not self.analysis.execution(node).every_iteration:
            return
        if any(type(a) is cst.Call and self._host_library(a.func) for a in self._ancestors_in_statement(node)):
            return  # the outer call's finding covers it
        if self._transform(node.func) and any(self._on_device(a.value, loop) for a in node.args):
            return  # torchvision transforms on a device tensor run as kernels on the GPU: the recommended shape
        batch = _batch_names(loop)
        if any(type(n) is cst.Name and n.value in batch for a in node.args for n in _walk(a.value)):
            self.report(node)

    def _transform(self, func: cst.BaseExpression) -> bool:
        """A torchvision transform: functional (`TF.hflip`) or an object built from `torchvision.transforms`."""
        if type(func) not in (cst.Name, cst.Attribute):
            return False
        if (self.analysis.qualified(func) or "").startswith("torchvision.transforms."):
            return True
        bindings = self.analysis.index.visible_bindings(func) if type(func) is cst.Name else []
        return bool(bindings) and all(
            b.kind == "assign" and type(b.value) is cst.Call and
            type(b.value.func) in (cst.Name, cst.Attribute) and
            (self.analysis.qualified(b.value.func) or "").startswith("torchvision.transforms.")
            for b in bindings)

    def _on_device(self, expr: cst.BaseExpression, loop: cst.For) -> bool:
        """`x.cuda()`, `x.to(device)`, or a name the loop bound to one of them."""
        if any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in ("cuda", "to")
               for n in _walk(expr)):
            return True
        if type(expr) is cst.Name:
            bindings = [b for b in self.analysis.index.visible_bindings(expr)
                        if b.source is not None and self.analysis.index.is_ancestor_or_self(loop, b.source)]
            return any(b.value is not None and self._on_device(b.value, loop) for b in bindings)
        return False

    def _host_library(self, func: cst.BaseExpression) -> bool:
        if type(func) not in (cst.Name, cst.Attribute):
            return False
        q = self.analysis.qualified(func) or ""
        return q.startswith(_CPU_LIBRARIES) or self._transform(func)  # `train_tf = transforms.Compose([...])`

    def _ancestors_in_statement(self, node: cst.CSTNode):
        for ancestor in self.analysis.index.ancestors(node):
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return
            yield ancestor

    def _training_loop(self, node: cst.CSTNode) -> Optional[cst.For]:
        loops = {id(loop): loop for loop in training_facts(self.analysis).training_loops()}
        for ancestor in self.analysis.index.ancestors(node):
            if id(ancestor) in loops:
                return loops[id(ancestor)]
            if type(ancestor) in (cst.FunctionDef, cst.Lambda):
                return None
        return None


def _batch_names(loop: cst.For) -> set[str]:
    """The loop's target names, and names the body binds from parts of them (`images = batch["image"]`,
    `x = x.cpu().numpy()`; not a model's output on them)."""
    target = loop.target
    if type(loop.iter) is cst.Call and type(loop.iter.func) is cst.Name:
        if loop.iter.func.value == "range":
            return set()
        if loop.iter.func.value == "enumerate" and type(target) is cst.Tuple and len(target.elements) == 2:
            target = target.elements[1].value  # not the counter
    names = {n.value for n in _walk(target) if type(n) is cst.Name}
    for node in _walk(loop.body):
        if type(node) is cst.Assign and _root(node.value) in names:
            for target in node.targets:
                names |= {n.value for n in _walk(target.target) if type(n) is cst.Name}
        elif type(node) is cst.CompFor:
            if _root(node.iter) in names:
                names |= {n.value for n in _walk(node.target) if type(n) is cst.Name}
    return names


def _root(expr: cst.BaseExpression) -> Optional[str]:
    """`batch` for `batch["image"]`, `x.cpu().numpy()`, `images[0]`: the name a chain of accesses starts from."""
    while True:
        if type(expr) in (cst.ListComp, cst.GeneratorExp):
            expr = expr.for_in.iter
        elif type(expr) in (cst.Attribute, cst.Subscript):
            expr = expr.value
        elif type(expr) is cst.Call and type(expr.func) is cst.Attribute:
            expr = expr.func.value
        else:
            return expr.value if type(expr) is cst.Name else None
