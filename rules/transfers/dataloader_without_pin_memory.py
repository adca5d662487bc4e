"""GPU201 `dataloader-without-pin-memory`."""

from __future__ import annotations

import re

from pathlib import Path

import libcst as cst

from gpulint.analysis import GPU_HINT
from gpulint.analysis.test_code import is_test_path
from gpulint.rule import Rule, Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules._examples import CPU_ONLY_SCRIPTS, DATASET_HEAD, LOADER_TO_GPU, UNPINNED_LOADER
from gpulint.analysis.data_facts import ACCELERATOR, append_keyword, data_facts, has_star_args, is_dataloader, is_false, \
    keyword
from gpulint.analysis.node_types import of_types
from gpulint.analysis.factory_loaders import factory_caller
from gpulint.analysis.loader_classes import wrapping_class
from gpulint.analysis.pyg_loaders import PYG_LOADERS
from gpulint.analysis.project import display_path
from gpulint.diagnostics import Related
from gpulint.syntax import argument, parse_expression
from gpulint.analysis.data import _dataset, _true, flag_off, pin_memory_of, would_pin
from gpulint.analysis.flags import flag_defaults


# Where a call's result is kept or handed on (assigned, returned, passed, put in a container, iterated): only
# there can a loader a factory returns be iterated later. A call whose result is read at once
# (`create_loader(...).dataset`) or dropped hands no loader on, and is not looked up as a factory.
_HOLDS_A_VALUE = (cst.Assign, cst.AnnAssign, cst.NamedExpr, cst.Return, cst.Yield, cst.Arg, cst.Element,
                  cst.StarredElement, cst.DictElement, cst.For, cst.IfExp, cst.BooleanOperation)


# samples moved to the GPU in `__getitem__`: the batches are CUDA tensors, which `pin_memory=True` cannot pin
_DEVICE_SAMPLES = """\
import torch
from torch.utils.data import DataLoader, Dataset


class Windows(Dataset):
    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data) - 9

    def __getitem__(self, i):
        return self.data[i:i + 9].long().cuda()


model = torch.nn.Embedding(256, 8).cuda()
loader = DataLoader(Windows(torch.randint(0, 256, (1000,))), batch_size=8)
for seq in loader:
    model(seq.cuda()).sum().backward()
"""


class DataLoaderWithoutPinMemory(Rule):
    """`DataLoader(...)` without `pin_memory=True` whose batches go to a GPU.

    ## What it does
    Flags a `torch.utils.data.DataLoader(...)` call that does not pass `pin_memory` when a training or
    evaluation loop of the same module copies its batches to an accelerator (`.to(device)`, `.cuda()`), or the
    module plainly targets CUDA and the loader is iterated in a training loop (or handed elsewhere). Options
    passed as `**kwargs` count when the dict is built in the module from keys written out (`kw = {...}`,
    `dict(...)`, `kw.update({...})` or of another such dict, `kw["key"] = ...`), as PyTorch's MNIST example does.
    `pin_memory=args.pin_mem` where the module's parser declares `--pin-mem` off by default (`action=
    'store_true'`, no `set_defaults(pin_mem=True)`) does not pin in the default run: reported, with no fix (the
    flag's default is the user's to change). So does `pin_memory=cfg.PIN_MEMORY` where the project's yacs
    configuration declares the setting `False` (`_C.PIN_MEMORY = False`) and no YAML file of the project sets it:
    that one is judged as a loader that passes no `pin_memory` (also when it is handed to another module's loop),
    while `pin_memory=False` written out, or a flag a shipped recipe may pass, needs a loop of the module seen
    copying its batches. A project loader factory whose `pin_memory` is its own parameter
    (`def create_loader(..., pin_mem=False)`) is judged at each call by the argument it gets (a literal, such a
    flag, or the parameter's default), also when the factory wraps the loader in a prefetcher class that
    iterates it. PyTorch Geometric's `DataLoader` and `NeighborLoader` (subclasses of torch's that pass
    `pin_memory` on) are checked the same way when the graphs they sample are known to be on the host and a loop
    of the module moves their batches; a graph moved to the GPU first (`data = data.to(device)`, even partly:
    `data.to(device, "x", "y")`) yields batches that cannot be pinned, and is left alone. PyG 1.x's
    `torch_geometric.data.DataLoader` and `LinkNeighborLoader` count too. A project subclass of torch's
    `DataLoader` (`class DataLoaderMasking(DataLoader)` that passes its `**kwargs` on, adds no pinning of its own
    and moves nothing) is checked like the `DataLoader` it is. timm's `create_loader(...)` (`pin_memory=False`
    by default) is a loader factory judged by its `pin_memory` argument; its finding has no fix. A project
    generator that hands on a loader's batches (`while True: yield from loader`) is a loader factory, and a
    device returned by a project function (`.to(dist_util.dev())`) counts as the GPU. A loader kept by a trainer
    class is followed to the class's loop: handed to its constructor (`Trainer(model, train_dataloader=loader)`,
    kept as `self.train_data`, iterated by a method or by the method it is handed to, `self.iteration(epoch,
    self.train_data)`), or stored on `self` by a base class's method (`self.data_loader['train'] =
    DataLoader(...)`) and iterated by a project subclass; it is reported where it is built when that loop copies
    the batches to a device (`.to(self.dev)`, `{k: v.to(self.device) for k, v in data.items()}`) in a module that
    names CUDA (or whose class's bases' modules do).

    The finding names, as related locations, the copies of the loader's batches to the GPU in the module's loops
    over it (the first three): where the pageable copy is paid, with `non_blocking=True` or without.

    ## Why it is slow
    A copy from pageable host memory is staged through a pinned bounce buffer by the driver and blocks the
    Python thread until it is done, so it cannot overlap with the GPU's work. With `pin_memory=True` the
    loader's workers (or its pin thread) place each batch in page-locked memory, and `.to(device,
    non_blocking=True)` (GPU202) becomes a true asynchronous DMA.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```
    Use instead:
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix
    Adds `pin_memory=True` to the call; where the script picks its device at run time, it pins only when that
    device is CUDA, so the script still runs quietly on CPU-only machines: `pin_memory=torch.cuda.is_available()`
    for `device = "cuda" if torch.cuda.is_available() else "cpu"`, `pin_memory=device.type == "cuda"` for
    `device = torch.device(args.device)`. No fix for a loader built in a factory of another function or module:
    the finding is at the call, naming the factory. The factory's own `DataLoader(...)` (returned alone or in a
    tuple, without `pin_memory` or with `pin_memory=False`) is reported too, in its module, when a project script
    calling the factory gets that call-site finding (related location: the call); there the fix adds or sets
    `pin_memory=True` and is unsafe, since other callers of the factory may not use a GPU. The script may get
    the loaders through another function that hands them on (`get_dataset(cfg)` unpacking
    `get_cifar100_dataloaders(...)` into names it returns): the factory's loaders are reported when that
    function's caller gets the finding.

    An explicit `pin_memory=False` on such a loader costs the same as none passed, and is reported too
    (`DataLoader(ds, batch_size=8, pin_memory=False)` whose batches go to `.to(device)` every step); its fix
    sets the value (`pin_memory=True`) and is unsafe, since it reverses a choice written out.

    ## Fix safety
    Safe: batches hold the same values; only the host memory they live in changes. On a machine without an
    accelerator PyTorch warns once and does not pin. Unsafe where it replaces a written `pin_memory=False`:
    the values are the same, but the choice may have been measured (see below).

    ## When it is fine
    `pin_memory=True` (or a value that is not the literal `False`), `**kwargs` that may carry it
    (a parameter, a dict updated from one, or handed to a function that may add keys),
    datasets already on the GPU (pinning CUDA tensors raises), datasets whose `__getitem__` moves each sample to
    the GPU itself (`return seq.cuda()`: the same), loaders whose batches stay on the CPU, and
    modules that never use a GPU. Pinning has a cost of its own (a pin-memory thread copies every batch once
    more): with tiny batches and no workers it can make a step slower, as `gpulint verify` showed on an eval
    loop of 64x784 batches on an H100 (1.09 -> 1.70 ms/step, docs/benchmarks.md). Measure with
    `gpulint verify`, and keep a measured `pin_memory=False` with `# noqa: GPU201` on the call.
    """

    # Every finding needs a copy to an accelerator (`.to(`/`.cuda(`) or a "cuda" device in the text, or a loader
    # factory's `DataLoader(...)` (reported where a script calling the factory feeds a GPU).
    needs_text = re.compile(GPU_HINT.pattern + "|DataLoader", re.IGNORECASE)
    code = "GPU201"
    reports_in = ("copy-in-for-loop", "cuda-text", "returned-loader")  # gpulint/prefilter.py
    name = "dataloader-without-pin-memory"
    message = "`DataLoader` without `pin_memory=True` feeds a GPU: host-to-device copies block and cannot overlap"
    family = Family.TRANSFERS
    fix_availability = FixAvailability.ALWAYS
    fix_safety = FixSafety(Safety.SAFE, "batches hold the same values; only the host memory they live in changes")
    VALID = [LOADER_TO_GPU.format(pin=", pin_memory=True", non_blocking="non_blocking=True"),
             UNPINNED_LOADER.replace("pin_memory=False)", "pin_memory=False)  # noqa: GPU201"), *CPU_ONLY_SCRIPTS,
             _DEVICE_SAMPLES]
    _MULTILINE = "loader = DataLoader(\n    dataset,\n    batch_size=8,\n{})\nfor x, y in loader:\n" \
                 "    model(x.cuda()).sum().backward()\n"
    INVALID = [
        Example(LOADER_TO_GPU.format(pin="", non_blocking="non_blocking=True"),
                message="`DataLoader` without `pin_memory=True` feeds a GPU: host-to-",
                fixed=LOADER_TO_GPU.format(pin=", pin_memory=True", non_blocking="non_blocking=True")),
        # a multi-line call keeps one argument per line
        Example(DATASET_HEAD + _MULTILINE.format(""), fixed=DATASET_HEAD + _MULTILINE.format("    pin_memory=True,\n")),
    ]  # `pin_memory=False` written out (an unsafe fix): tests/test_transfers.py

    def visit_Call(self, node: cst.Call) -> None:
        facts = data_facts(self.analysis)
        made = None if is_dataloader(self.analysis, node) or not facts.feeds_an_accelerator() or \
            not isinstance(self.analysis.parent(node), _HOLDS_A_VALUE) else facts.factory(node)
        if made is None and not is_dataloader(self.analysis, node):
            return
        if not would_pin(self, node):
            if made is None:
                self._at_factory(node)
            return
        if made is not None and is_test_path(Path(self.analysis.path) if self.analysis.path else None):
            return  # a test calling the project's loader factory is no training run
        if made is not None:  # built in a factory: the fix belongs there, the cost is paid here
            # a library's factory (`timm.data.create_loader`, line 0): no project line to point at
            related = (Related(display_path(made.path), made.line, "the `DataLoader` is built here"),) \
                if made.line else ()
            self.report(node, f"`{self.analysis.code(node.func)}(...)` returns a `DataLoader` without "
                              f"`pin_memory=True` whose batches go to a GPU: host-to-device copies block "
                              f"and cannot overlap", related=related)
            return
        value = self._pin_value(node)
        text = cst.Module([]).code_for_node(value)
        written = keyword(node, "pin_memory")
        if written is not None and flag_off(self, written.value):  # `pin_memory=args.pin_mem`, off by default
            what = "flag" if self.analysis.fact(flag_defaults).default(written.value) is False else \
                "configuration setting"
            self.report(node, f"`DataLoader` with `pin_memory={self.analysis.code(written.value)}`, a {what} that is "
                              f"off by default, feeds a GPU every step: in the default run host-to-device copies "
                              f"block and cannot overlap; turn the flag on by default")
            return
        if written is not None:  # `pin_memory=False` written out: the same copies, a decision the fix reverses
            fix = self.fix(f"Set `pin_memory={text}`", {written.value: lambda _: value}, safe=False)
            self.report(node, "`DataLoader` with `pin_memory=False` feeds a GPU every step: host-to-device copies "
                              "block and cannot overlap", fix=fix)
            return
        fix = self.fix(f"Add `pin_memory={text}`",
                       {node: lambda updated: append_keyword(updated, "pin_memory", value)}, safe=True)
        self.report(node, fix=fix, related=self._copies_of_its_batches(node))

    def _copies_of_its_batches(self, loader: cst.Call) -> tuple:
        """The copies to the accelerator, in this module's loops over `loader`, of the batches it hands out (the
        first three, in document order): where the unpinned memory is paid, `non_blocking=True` or not."""
        from gpulint.analysis.forward import _line_of

        path = self.analysis.path
        if path is None or str(path).endswith(".ipynb"):
            return ()
        facts = data_facts(self.analysis)
        loops = facts.loops_over(loader)
        found: list = []
        for call in of_types(self.analysis.index, cst.Call):
            if not loops or len(found) == 3:
                break
            if facts.copy_target(call) != ACCELERATOR:
                continue
            loop = facts.batch_loop(call.func.value)  # type: ignore[union-attr]
            if loop is not None and any(loop is each for each in loops):
                line = _line_of(self.analysis, call)
                if all(r.row != line for r in found):
                    found.append(Related(display_path(path), line,
                                         "a batch of it copied to the GPU from pageable memory every step"))
        return tuple(found)

    def _at_factory(self, node: cst.Call) -> None:
        """A `DataLoader(...)` returned by a function of this module whose call in a project script gets the
        call-site finding (analysis/factory_loaders.py): reported here too, where the fix goes."""
        if self.analysis.qualified(node.func) in PYG_LOADERS:
            return
        if has_star_args(node) and pin_memory_of(self, node) is not None:
            return  # `**options` that may carry `pin_memory` (their keys are read where they can be)
        written = keyword(node, "pin_memory")
        if written is not None and not is_false(written.value):
            return  # a value this module does not decide (a parameter, a flag): judged at each call
        if data_facts(self.analysis).on_device(_dataset(node)):
            return
        found = factory_caller(self.analysis, node)
        if found is None:
            return
        caller, line, call = found
        related = (Related(display_path(caller), line, f"`{call}` takes it to a GPU loop"),)
        # a loader class's own DataLoader (analysis/loader_classes.py): its instances hand on the batches
        handed = "wrapped by" if wrapping_class(self.analysis, node) is not None else \
            "yielded by" if type(self.analysis.parent(node)) is cst.Yield else "returned to"
        if written is not None:
            fix = self.fix("Set `pin_memory=True`", {written.value: lambda _: _true()}, safe=False)
            self.report(node, f"`DataLoader` with `pin_memory=False`, {handed} `{call}`, feeds a GPU every step: "
                              f"host-to-device copies block and cannot overlap", fix=fix, related=related)
            return
        fix = self.fix("Add `pin_memory=True`", {node: lambda updated: append_keyword(updated, "pin_memory", _true())},
                       safe=False)
        self.report(node, f"`DataLoader` without `pin_memory=True`, {handed} `{call}`, feeds a GPU every step: "
                          f"host-to-device copies block and cannot overlap", fix=fix, related=related)

    def _pin_value(self, loader: cst.Call) -> cst.BaseExpression:
        """`True` where the batches certainly go to CUDA; where the script picks its device at run time, pin only
        when that device is CUDA (pinning on a CPU-only machine warns on every run): `torch.cuda.is_available()`
        for `device = "cuda" if torch.cuda.is_available() else "cpu"`, `<device>.type == "cuda"` for a device
        built from the script's own flag (`device = torch.device(args.device)`)."""
        device = self._copy_device(loader)
        if type(device) is cst.Name:
            bindings = self.analysis.index.visible_bindings(device)
            values = [b.value for b in bindings if b.kind == "assign" and b.index is None]
            if len(values) == 1 and len(bindings) == 1:
                value = values[0]
                if type(value) is cst.IfExp and "is_available" in self.analysis.code(value.test):
                    return parse_expression("torch.cuda.is_available()") \
                        if self.analysis.index.imports.qualify(cst.Name("torch")) == "torch" else _true()
                if type(value) is cst.Call and self.analysis.qualified(value.func) == "torch.device" \
                        and value.args and not isinstance(value.args[0].value, cst.SimpleString):
                    chosen = value.args[0].value
                    if type(chosen) is cst.IfExp and "is_available" in self.analysis.code(chosen.test):
                        return parse_expression("torch.cuda.is_available()")
                    return parse_expression(f'{device.value}.type == "cuda"')
        return _true()

    def _copy_device(self, loader: cst.Call):
        """The device argument of the first copy of this loader's batches (`x.to(device)`), if any."""
        facts = data_facts(self.analysis)
        for loop in facts.loops_over(loader):
            for call in facts.body_calls(loop):
                if facts.copy_target(call) is not None and type(call.func) is cst.Attribute \
                        and call.func.attr.value == "to" and facts.batch_loop(call.func.value) is loop:
                    target = argument(call, "device", 0)
                    return target.value if target is not None else None
        return None
