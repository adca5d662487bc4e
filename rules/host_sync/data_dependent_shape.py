"""GPU111 `data-dependent-shape`."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis import Kind
from gpulint.analysis.data_facts import DataFacts
from gpulint.rule import GpuRule, Example, Family
from gpulint.rules._examples import TRAIN_STEP
from gpulint.syntax import argument, method_call


class DataDependentShape(GpuRule):
    """An operation whose output size depends on the data, every iteration.

    ## What it does
    Flags `nonzero()`, boolean-mask indexing `x[mask]` (also inside a tuple index: `x[mask, 1:]`, `x[:, keep]`),
    `masked_select`, `unique`, one-argument `torch.where`, `argwhere` and `repeat_interleave` without
    `output_size` on every iteration of a training/eval loop. The indexed value may be anything not known to be
    something else when the mask is known to be a device tensor (`vis[ids == first[:, None]]` with `vis` read
    from a batch and `ids` on the GPU): the count of a device mask is read on the host whatever it selects from.

    ## Why it is slow
    PyTorch must know how many elements the result has before it can allocate it, so it copies a count from the
    GPU to the host and waits for it: a hidden sync per call.

    ## Example
    ```python
    for x, y in loader:
        valid = y != IGNORE
        loss = criterion(model(x)[valid], y[valid])
    ```
    Keep shapes static: weight or mask instead of selecting, `criterion(..., ignore_index=IGNORE)`,
    `torch.where(mask, x, 0)`, `masked_fill`, or pass `output_size=` to `repeat_interleave`.

    ## Fix
    None: the static-shape version changes what the code computes downstream.

    ## Fix safety
    No fix.

    ## When it is fine
    Periodic code, code outside loops, assignments through a mask with a scalar (`x[mask] = 0` runs as
    `masked_fill_`, without a sync).
    """

    code = "GPU111"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "data-dependent-shape"
    message = "`{op}` has a data-dependent output shape: PyTorch syncs every iteration to size the result"
    _FUNCTIONS = {"torch.nonzero": "nonzero", "torch.masked_select": "masked_select", "torch.unique": "unique",
                  "torch.argwhere": "argwhere", "torch.unique_consecutive": "unique_consecutive"}
    _METHODS = {"nonzero", "masked_select", "unique", "argwhere", "unique_consecutive"}
    family = Family.HOST_SYNC
    VALID = [TRAIN_STEP + "idx = torch.nonzero(x)\n"]
    INVALID = [
        Example(TRAIN_STEP + "    idx = torch.nonzero(x)\n",
                message="`nonzero` has a data-dependent output shape: PyTorch syncs e"),
        # `x[ok]` where nothing is known of `x`, and the mask is a comparison of a tensor made on the device
        Example(TRAIN_STEP + "    ok = torch.arange(4, device='cuda') > 1\n    kept = extras['scores'][ok]\n",
                message="`x[mask]` has a data-dependent output shape"),
        # per-graph weights spread to nodes by the batch's offsets: a slice is a sequence, so `repeats` is a tensor
        Example(TRAIN_STEP + "    w = torch.repeat_interleave(batch.weight, batch.ptr[1:] - batch.ptr[:-1])\n",
                message="`repeat_interleave without output_size` has a data-dependent output shape"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        op = attr = None
        q = self.analysis.qualified(node.func)
        if q in self._FUNCTIONS:
            op = self._FUNCTIONS[q]
        elif q == "torch.where" and len(node.args) == 1:
            op = "torch.where(cond)"
        elif q == "torch.repeat_interleave" and argument(node, "output_size") is None and \
                len(node.args) >= 2 and (self.analysis.is_tensor(node.args[1].value)
                                         or _sliced(node.args[1].value)):
            op = "repeat_interleave without output_size"
        else:
            attr = method_call(node, tuple(self._METHODS) + ("repeat_interleave",))
            if attr is not None and self.analysis.is_device_tensor(attr.value):
                if attr.attr.value != "repeat_interleave":
                    op = attr.attr.value
                elif argument(node, "output_size") is None and node.args and \
                        (self.analysis.is_tensor(node.args[0].value) or _sliced(node.args[0].value)):
                    op = "repeat_interleave without output_size"
        if op is None:
            return
        if attr is None:
            # `torch.unique_consecutive(torch.tensor(sizes))`, `torch.repeat_interleave(torch.arange(b),
            # torch.tensor(counts))`: the input is built in host memory, its size is counted on the CPU
            first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
            if first is not None and self.analysis.kinds.on_host(first):
                return
        where = self.where(node)
        if where:
            self.report(node, self.message.format(op=op), where=where)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        value_kind = self.analysis.kind(node.value)
        if value_kind is Kind.TENSOR:
            if self.analysis.kinds.on_host(node.value):
                return
        elif value_kind is not Kind.UNKNOWN:
            return
        # `x[mask]`, and a mask in any position of a tuple index: `x[mask, 1:]`, `x[:, keep]`
        # a mask in host memory sizes the result on the host, without waiting for the GPU; where nothing is
        # known of `x`, a mask built from tensors moved to or made on the device decides (whatever `x` holds,
        # the mask's count is read)
        if not any(type(e.slice) is cst.Index and self.analysis.is_bool_tensor(e.slice.value) and
                   (self._device_mask(e.slice.value) if value_kind is Kind.UNKNOWN
                    else not self.analysis.kinds.on_host(e.slice.value)) for e in node.slice):
            return
        parent = self.analysis.parent(node)
        if type(parent) is cst.AssignTarget or (type(parent) is cst.AugAssign and parent.target is node):
            return  # x[mask] = v goes through masked_fill_/index_put_ without reading a count
        where = self.where(node)
        if where:
            self.report(node, self.message.format(op="x[mask]" if len(node.slice) == 1 else "x[..., mask, ...]"),
                        where=where)

    def _device_mask(self, mask: cst.BaseExpression) -> bool:
        """A mask certainly on the device: a tensor not in host memory, built from tensors moved to an
        accelerator or made there (`torch.arange(T, device=device) == first[:, None]`)."""
        return self.analysis.is_device_tensor(mask) and self.analysis.fact(DataFacts).on_device(mask)


def _sliced(expr: cst.BaseExpression) -> bool:
    """`ptr[1:] - ptr[:-1]`, `counts[:n]`: a slice (or arithmetic of slices) is a sequence, never an int, so as
    the `repeats` of `torch.repeat_interleave` (an int or a tensor) it is a tensor: the sizes of a batch's graphs
    from its offsets, every step."""
    if type(expr) is cst.BinaryOperation:
        return _sliced(expr.left) or _sliced(expr.right)
    return type(expr) is cst.Subscript and any(type(e.slice) is cst.Slice for e in expr.slice)
