"""Tensors a preprocessing call builds on the host: `tokenizer(text, return_tensors="pt")`.

Hugging Face tokenizers, processors and feature extractors given `return_tensors="pt"` tokenize (or resize,
normalise) on the CPU and hand back a `BatchEncoding`/`BatchFeature` of CPU tensors in pageable memory.
`.to(device)` of that object, of one of its fields (`.input_ids`, `["attention_mask"]`) or of a name bound to
it copies those tensors to the device from pageable memory: a blocking copy, every time the call runs. The
convention is the keyword itself (transformers' `TensorType.PYTORCH`), whatever the callee is called, so the
callee need not be resolved. Used by GPU203 (rules/transfers/host_tensor_moved_each_step.py).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.data_facts import data_facts, keyword
from gpulint.syntax import string_value

_MAX_DEPTH = 4


def host_tensors_call(call: cst.BaseExpression) -> bool:
    """`f(..., return_tensors="pt")`: a tokenizer/processor call that returns CPU tensors."""
    if type(call) is not cst.Call:
        return False
    arg = keyword(call, "return_tensors")
    return arg is not None and string_value(arg.value) == "pt"


# A Hugging Face tokenizer's special-token ids (`tokenizer.eos_token_id`): Python ints (or None), never tensors.
_SPECIAL_TOKEN_IDS = frozenset(f"{name}_token_id" for name in ("bos", "eos", "pad", "unk", "sep", "cls", "mask"))


def special_token_id(expr: cst.BaseExpression) -> bool:
    """`tokenizer.eos_token_id` (`bos`/`eos`/`pad`/`unk`/`sep`/`cls`/`mask`): a Python int, whatever the object."""
    return type(expr) is cst.Attribute and expr.attr.value in _SPECIAL_TOKEN_IDS


def tokenized_on_host(analysis, expr: cst.BaseExpression, depth: int = 0) -> Optional[cst.Call]:
    """The `return_tensors="pt"` call whose host tensors `expr` is: the call itself, a field of its result
    (`.input_ids`, `["input_ids"]`), or a name bound once, by a plain assignment, to one of those."""
    if depth > _MAX_DEPTH:
        return None
    if host_tensors_call(expr):
        return expr  # type: ignore[return-value]
    if type(expr) is cst.Attribute and type(expr.attr) is cst.Name and not expr.attr.value.startswith("_"):
        return tokenized_on_host(analysis, expr.value, depth + 1)
    if type(expr) is cst.Subscript and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) and \
            string_value(expr.slice[0].slice.value) is not None:
        return tokenized_on_host(analysis, expr.value, depth + 1)
    if type(expr) is cst.Name:
        # `batch = batch.to(device)` in a loop: the rebinding the copy itself makes is seen from the next iteration
        bindings = [b for b in data_facts(analysis).bindings(expr) if not _contains(b.source, expr)]
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
                bindings[0].value is None or not isinstance(bindings[0].source, cst.Assign) or \
                len(bindings[0].source.targets) != 1:
            return None
        return tokenized_on_host(analysis, bindings[0].value, depth + 1)
    return None


def _contains(node: cst.CSTNode, inner: cst.CSTNode) -> bool:
    if type(node) is not cst.Assign:
        return False
    found = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if n is inner:
                found.append(n)
            return not found

    node.value.visit(_Find())
    return bool(found)
