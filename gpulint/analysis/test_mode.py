"""Branches taken only in a test or debug mode that is off by default.

    parser.add_argument("--test_mode", action="store_true")     # off unless asked for
    ...
    if args.test_mode:
        model = GPTModel(TINY_CONFIG)
        device = "cpu"                                          # a smoke test on the CPU
    else:
        model = GPTModel(GPT2_MEDIUM)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)

The run the script exists for takes the `else` branch: the CPU device of the smoke test does not make the model's
device unknown (GPU402 and GPU403 ask whether the parameters are certainly on CUDA). `test_mode_branch(analysis,
if_node, child)`: `child` is the body of an `if` whose test reads a boolean flag of the module's own parser that is
False by default (analysis/flags.py) and whose name says test or debug (`--test_mode`, `--debug`, `--smoke-test`,
`--dry_run`, `--quick_test`): a flag that chooses the CPU for real runs (`--cpu`, `--no_cuda`) is not one.
"""

from __future__ import annotations

import re

import libcst as cst

_TEST_FLAG = re.compile(r"^(test_?mode|testing|debug|debug_?mode|smoke_?test|dry_?run|quick_?test|sanity_?check|"
                        r"fast_?dev_?run|unit_?test)$", re.IGNORECASE)


def test_mode_branch(analysis, node: cst.If, child: cst.CSTNode) -> bool:
    if child is not node.body:
        return False
    test = node.test
    if type(test) is not cst.Attribute or not _TEST_FLAG.match(test.attr.value):
        return False
    from gpulint.analysis.flags import flag_defaults

    return analysis.fact(flag_defaults).default(test) is False
