"""GPU420 `dataloader-workers-restarted`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.data import _dataset, accelerator_loops, loader_workers, no_workers
from gpulint.analysis.data_facts import _walk, append_keyword
from gpulint.rule import Example, Family, FixAvailability, FixSafety, Rule, Safety

_PROGRAM = """import torch
from torch.utils.data import DataLoader


def main(dataset, model, optimizer, epochs):
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4{extra})
    for epoch in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
"""
_CALLED_PER_EPOCH = """import torch
from torch.utils.data import DataLoader

train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=args.workers{extra})


def train(epoch):
    for x, y in train_loader:
        loss = criterion(model(x.to("cuda")), y.to("cuda"))
        loss.backward()
        optimizer.step()


for epoch in range(args.epochs):
    train(epoch)
"""
_HOOKS = 3  # calls deep that "the function holding the loop is called from a loop" is followed


class DataLoaderWorkersRestarted(Rule):
    """A `DataLoader` with worker processes, iterated once per epoch, that shuts its workers down after every epoch.

    ## What it does
    Flags `DataLoader(..., num_workers=N)` (N not `0`) without `persistent_workers`, when a training or
    evaluation loop of the same module iterates it with its batches going to an accelerator, and that loop runs
    more than once: it sits inside another loop (`for epoch in range(epochs): for batch in loader:`), or the
    function holding it is called from a loop (`for epoch in ...: train(epoch)`). The loader must be built
    outside that outer loop (a loader built again each epoch starts new workers whatever its options).

    ## Why it is slow
    Without `persistent_workers=True`, every `for batch in loader:` starts `num_workers` new processes and the
    first batches of each epoch wait until those workers have started, rebuilt their copy of the dataset and
    filled the prefetch queue; at the end of the epoch they are shut down again. The GPU idles at every epoch
    boundary. `persistent_workers=True` keeps the same workers between epochs (PyTorch's `DataLoader`
    documentation, `persistent_workers`; PyTorch Lightning warns about the same loader: "Consider setting
    `persistent_workers=True` ... to speed up the dataloader worker initialization"). Measured on an H100 on the
    ResNet program shape of `benchmarks/programs/shapes/` (78 steps per epoch, 2 workers): 8.7 ms per step
    without, 8.1 with (docs/benchmarks.md, sixteenth landing).

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)
    for epoch in range(epochs):
        for x, y in loader:
            train_step(x.cuda(), y.cuda())
    ```
    Use instead:
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4, persistent_workers=True)
    ```

    ## Fix
    Adds `persistent_workers=True` when `num_workers` is a positive integer, and `persistent_workers=<n> > 0`
    when it is a name or attribute (`args.workers`: `persistent_workers=True` raises `ValueError` with no
    workers). No fix for any other `num_workers` expression.

    ## Fix safety
    Unsafe: the workers are no longer started again from the main process each epoch, so random augmentations
    in `__getitem__` continue each worker's random stream instead of drawing from a fresh seed (other numbers
    than before); changes the main process makes to the dataset object between epochs are no longer seen by the
    workers; and the workers (with their memory) stay alive while other code, such as evaluation, runs.

    ## When it is fine
    A loop that iterates the loader once (a single pass of inference), a dataset the epoch loop changes
    (`dataset.set_epoch(epoch)`, `loader.dataset.resample()`, attributes set on it: persistent workers would keep
    their stale copy; not reported), and very long epochs, where the start-up of the workers is a negligible
    share of the epoch. A preview rule: it runs when selected (`--extend-select GPU420`). Its cost is paid once
    per epoch, not per step, and on real code most of the loaders it names are otherwise fine (pinned, copied
    without blocking): a choice to make, not a default (docs/rules/preview-decisions.md).
    """

    needs_text = GPU_HINT
    code = "GPU420"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "dataloader-workers-restarted"
    message = "`DataLoader` with `num_workers={workers}` but no `persistent_workers=True` is iterated every epoch " \
              "({repeats}): its worker processes are shut down and started again each epoch, and the GPU waits " \
              "for them at every epoch boundary"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "workers keep their random streams and their copy of the dataset between "
                                          "epochs")
    added_in = "0.16.0"
    preview = True  # docs/rules/preview-decisions.md: pinned loaders are labelled fine for per-step costs
    VALID = (
        _PROGRAM.format(extra=", persistent_workers=True"),
        _PROGRAM.format(extra=", persistent_workers=False"),
        _PROGRAM.format(extra="").replace("num_workers=4", "num_workers=0"),
        # one pass: nothing is restarted
        _PROGRAM.format(extra="").replace("    for epoch in range(epochs):\n", "    if epochs:\n"),
        # the dataset is changed between epochs: persistent workers would keep a stale copy
        _PROGRAM.format(extra="").replace("    for epoch in range(epochs):\n",
                                          "    for epoch in range(epochs):\n        dataset.set_epoch(epoch)\n"),
        # built again each epoch: new workers whatever the options
        _PROGRAM.format(extra="").replace(
            "    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)\n"
            "    for epoch in range(epochs):\n",
            "    for epoch in range(epochs):\n"
            "        loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)\n"),
    )
    INVALID = (
        Example(_PROGRAM.format(extra=""), message="shut down and started again each epoch",
                fixed=_PROGRAM.format(extra=", persistent_workers=True")),
        Example(_CALLED_PER_EPOCH.format(extra=""), message="`train(...)` runs it inside `for epoch in range(args.epochs):`",
                fixed=_CALLED_PER_EPOCH.format(extra=", persistent_workers=args.workers > 0")),
    )

    def visit_Call(self, node: cst.Call) -> None:
        options = loader_workers(self.analysis, node)
        if options is None or no_workers(options[0]) or options[1] is not None:
            return  # no workers to restart, or `persistent_workers` chosen
        value = options[0].value  # type: ignore[union-attr]
        for loop in accelerator_loops(self, node):
            if type(loop) is not cst.For:
                continue
            repeats = self._repeats(node, loop)
            if repeats is None:
                continue
            outer, why = repeats
            if outer is not None and self._changes_dataset(node, outer):
                return
            self.report(node, self.message.format(workers=self.analysis.code(value), repeats=why),
                        fix=self._fix(node, value))
            return

    # -- does the loop over the loader run more than once? -------------------------------------------------------
    def _repeats(self, loader: cst.Call, loop: cst.For) -> Optional[tuple[Optional[cst.CSTNode], str]]:
        """The outer loop that runs `loop` again and again (None when the repetition is a call from a loop in
        another function), with the reason for the message; None when `loop` is seen to run once."""
        index = self.analysis.index
        inner: cst.CSTNode = loop
        for _ in range(_HOOKS + 1):
            outer = _enclosing_loop(index, inner)
            if outer is not None:
                if index.is_ancestor_or_self(outer, loader):
                    return None  # the loader is built in the same loop: new workers each time anyway
                return outer, f"inside `{self._header(outer)}`" if inner is loop \
                    else f"its loop's function is called inside `{self._header(outer)}`"
            fn = index.enclosing_function(inner)
            if fn is None or index.is_ancestor_or_self(fn, loader):
                return None  # a loader built inside the function holding the loop is new on every call
            calls = [c for c in self.analysis.loops.calls_to(fn) if not index.is_ancestor_or_self(fn, c)]
            if not calls:
                return None
            looped = next((c for c in calls if _enclosing_loop(index, c) is not None), None)
            if looped is not None:
                outer = _enclosing_loop(index, looped)
                if index.is_ancestor_or_self(outer, loader):
                    return None
                return outer, f"`{self.analysis.code(looped.func)}(...)` runs it inside `{self._header(outer)}`"
            inner = calls[0]
        return None

    def _header(self, loop: cst.CSTNode) -> str:
        """The loop's header on one line (`for epoch in range(args.epochs):`), long ones shortened."""
        if type(loop) is cst.For:
            text = f"for {self.analysis.code(loop.target)} in {self.analysis.code(loop.iter)}"
        else:
            text = f"while {self.analysis.code(loop.test)}"  # type: ignore[attr-defined]
        text = " ".join(text.split())
        return (text if len(text) <= 70 else text[:67] + "...") + ":"

    def _changes_dataset(self, loader: cst.Call, outer: cst.CSTNode) -> bool:
        """The outer loop calls a method of the dataset or sets one of its attributes (`dataset.set_epoch(e)`,
        `loader.dataset.x = ...`): persistent workers would not see the change."""
        names = set()
        dataset = _dataset(loader)
        if dataset is not None and type(dataset) in (cst.Name, cst.Attribute):
            names.add(self.analysis.code(dataset))
        holder = self.analysis.parent(loader)
        if type(holder) is cst.Assign and len(holder.targets) == 1:
            names.add(self.analysis.code(holder.targets[0].target) + ".dataset")
        if not names:
            return False
        for node in _walk(outer):
            target = None
            if type(node) is cst.Call and type(node.func) is cst.Attribute:
                target = node.func.value
            elif type(node) in (cst.Assign, cst.AugAssign):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                target = next((t.value for t in targets if type(t) is cst.Attribute), None)
            if target is not None and self.analysis.code(target) in names:
                return True
        return False

    def _fix(self, node: cst.Call, workers: cst.BaseExpression):
        if type(workers) is cst.Integer:
            value: cst.BaseExpression = cst.Name("True")
        elif type(workers) in (cst.Name, cst.Attribute):
            value = cst.Comparison(left=workers, comparisons=[cst.ComparisonTarget(
                operator=cst.GreaterThan(), comparator=cst.Integer("0"))])
        else:
            return None
        return self.fix(f"Add `persistent_workers={self.analysis.code(value)}`",
                        {node: lambda updated: append_keyword(updated, "persistent_workers", value)}, safe=False)


def _enclosing_loop(index, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The innermost `for`/`while` around `node` whose body holds it, within its function."""
    child = node
    for parent in index.ancestors(node):
        if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            return None
        if type(parent) in (cst.For, cst.While) and child is parent.body:
            return parent
        child = parent
    return None
