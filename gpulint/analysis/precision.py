"""Whether a module computes in reduced precision: a fact for GPU418 and GPU419.

Read from the code without its comments: `torch.autocast` / `autocast(`, `.half()`, or a `bfloat16`/`float16`
dtype mentioned anywhere in the module (a comment saying "no autocast" does not count).
"""

from __future__ import annotations

import re

from gpulint.analysis import ModuleAnalysis

_MIXED = re.compile(r"autocast|\.half\(\)|bfloat16|float16")
_COMMENT = re.compile(r"#[^\n]*")


def _reduced_precision(analysis: ModuleAnalysis) -> bool:
    text = analysis.source if analysis.source is not None else analysis.module.code
    return _MIXED.search(_COMMENT.sub("", text)) is not None


def uses_reduced_precision(analysis: ModuleAnalysis) -> bool:
    return analysis.fact(_reduced_precision)
