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

The same options keep code out of every step (`diagnostic_off(analysis, test)`, asked by `LoopAnalysis._walk_up`
through its `never_runs` hook): the body of `if opt.debug > 0:` (a visualisation level, default 0), of
`if opt.eval_oracle_wh:` (an analysis that substitutes the ground truth for a prediction, `store_true`), of
`if args.test_mode:` runs only in a run that asks for it, and so does what it calls (a trainer's `self.debug(...)`).
The option may be declared in another module of the project (`opts.py`, the parser whose result the trainers
receive: `flags.option_default`). Only options whose name says debug, test mode, oracle or visualisation count: a
store_true option that selects a mode the program ships (`--test` evaluation, `--amp`, `--use_ema`) is a real run.
An option that dumps per-sample outputs to disk for inspection counts as a visualisation one: its name is `save`
and what is saved (`--save_val_results`, `--save_images`, `--save-preds`, `--save_test_outputs`), off by default.
"""

from __future__ import annotations

import operator
import os
import re
from pathlib import Path
from typing import Optional

import libcst as cst

_TEST_FLAG = re.compile(r"^(test_?mode|testing|debug|debug_?mode|smoke_?test|dry_?run|quick_?test|sanity_?check|"
                        r"fast_?dev_?run|unit_?test)$", re.IGNORECASE)


# a word of the option's name (`eval_oracle_wh`, `debug_level`, `vis_debug`)
_DIAGNOSTIC_WORD = re.compile(r"(^|_)(debug|oracle|visuali[sz]e|visuali[sz]ation|vis|visdom|verbose)(_|$)",
                              re.IGNORECASE)
# an option saving per-sample outputs for inspection (`save_val_results`, `save_images`, `save_preds`)
_SAVE_OUTPUTS = re.compile(r"^save_?(val_?|valid_?|test_?|eval_?)?(results?|preds?|predictions?|images?|imgs?|"
                           r"outputs?|vis|visuals?|samples?)$", re.IGNORECASE)
_COMPARE = {cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge, cst.LessThan: operator.lt,
            cst.LessThanEqual: operator.le, cst.Equal: operator.eq, cst.NotEqual: operator.ne}


def diagnostic_off(analysis, test: cst.BaseExpression, alternative: bool = False) -> Optional[str]:
    """A reason when `test` holds only in a run that sets a debug/analysis option away from its default:
    `opt.eval_oracle_wh` (store_true), `opt.debug > 0` (default 0), `args.test_mode`; else None.

    `alternative`: the `if` has an `else` (or `elif`), so the option picks between two versions of the same work
    (`if args.use_amp: <step under autocast> else: <step>`). An option of any name that nothing ships turns on
    (`_unshipped`) then does not count: its branch is the step itself for whoever turns the feature on, not an
    extra left off; debug, verbose, test and save-output options still do."""
    from gpulint.analysis.flags import UNKNOWN, option_default

    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        # `if labels is not None and verbose_loss:`: off when either operand is
        return diagnostic_off(analysis, test.left, alternative) or diagnostic_off(analysis, test.right, alternative)
    if type(test) is cst.Name:
        return _local_option_off(analysis, test, alternative)
    option, compare, bound = test, None, None
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        option = test.left
        compare = _COMPARE.get(type(test.comparisons[0].operator))
        bound = test.comparisons[0].comparator
        if compare is None or type(bound) not in (cst.Integer, cst.Float):
            return None
    if type(option) is not cst.Attribute:
        return None
    named = _TEST_FLAG.match(option.attr.value) or _DIAGNOSTIC_WORD.search(option.attr.value) or \
        _SAVE_OUTPUTS.match(option.attr.value)
    if not named and type(option.value) is not cst.Name and not (
            type(option.value) is cst.Attribute and type(option.value.value) is cst.Name):
        return None  # any option by its name alone only as `opt.X`, `self.opt.X` (`self.X`: unset_options.py)
    default = option_default(analysis, option)
    if default is UNKNOWN:
        return None
    if not named and (alternative or default is not None and not isinstance(default, (bool, int, float)) or
                      not _unshipped(analysis, option.attr.value)):
        return None
    if compare is None:
        holds = bool(default)
    elif isinstance(default, (int, float)) and not isinstance(default, bool):
        holds = compare(default, bound.evaluated_value)  # type: ignore[union-attr]
    else:
        return None
    return None if holds else f"`--{option.attr.value}` is off by default"


def test_mode_branch(analysis, node: cst.If, child: cst.CSTNode) -> bool:
    if child is not node.body:
        return False
    test = node.test
    if type(test) is not cst.Attribute or not _TEST_FLAG.match(test.attr.value):
        return False
    from gpulint.analysis.flags import flag_defaults

    return analysis.fact(flag_defaults).default(test) is False


def _local_option_off(analysis, test: cst.Name, alternative: bool = False) -> Optional[str]:
    """`verbose_loss = eval_kwargs.get('verbose_loss', 1)` (or `opt['verbose_loss']`, `getattr(opt,
    'verbose_loss', 1)`), the name's one binding in its function, then `if verbose_loss:`: the option read from
    the parsed options as a dict (`eval_kwargs.update(vars(opt))`), whose parser declares it off by default (the
    parser's default wins: the key is always there). Only debug, verbose and visualisation names, as above."""
    from gpulint.analysis.flags import UNKNOWN, option_default_of

    bindings = analysis.index.visible_bindings(test)
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None:
        return None
    dest = _option_key(bindings[0].value)
    if dest is None:
        return None
    default = option_default_of(analysis, dest)
    if default is UNKNOWN or bool(default):
        return None
    if not (_TEST_FLAG.match(dest) or _DIAGNOSTIC_WORD.search(dest) or _SAVE_OUTPUTS.match(dest) or
            not alternative and _unshipped(analysis, dest)):
        return None
    return f"`--{dest}` is off by default"


def _option_key(value) -> Optional[str]:
    """The option name of `opts.get('name', d)`, `opts['name']`, `getattr(opts, 'name', d)`."""
    if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "get" and \
            value.args and type(value.args[0].value) is cst.SimpleString:
        key = value.args[0].value.evaluated_value
    elif type(value) is cst.Call and type(value.func) is cst.Name and value.func.value == "getattr" and \
            len(value.args) >= 2 and type(value.args[1].value) is cst.SimpleString:
        key = value.args[1].value.evaluated_value
    elif type(value) is cst.Subscript and len(value.slice) == 1 and type(value.slice[0].slice) is cst.Index and \
            type(value.slice[0].slice.value) is cst.SimpleString:
        key = value.slice[0].slice.value.evaluated_value
    else:
        return None
    return key if isinstance(key, str) and key.isidentifier() else None


# The text files a project ships besides its Python code: READMEs, configs, run scripts, notebooks.
_SHIPPED_SUFFIXES = (".md", ".rst", ".txt", ".yml", ".yaml", ".json", ".toml", ".sh", ".bash", ".cfg", ".ini",
                     ".ipynb", ".gin", ".conf")
_SHIPPED_FILES = 3000
_SHIPPED_BYTES = 1_000_000
_SHIPPED_TOTAL = 16_000_000
# Options that select what the program runs (`--test` runs the evaluation it ships), not an extra left off.
_RUN_MODE = re.compile(r"^(do_)?(test|testing|eval|evaluate|evaluation|val|validate|validation|infer|inference|"
                       r"predict|demo|train|training|finetune|fine_tune|resume)(_only|_mode)?$", re.IGNORECASE)
_SHIPPED: dict = {}  # project root -> the identifiers its shipped text files contain
_SHIPPED_PATHS: dict = {}  # project root -> the shipped text files read for `_SHIPPED` (cache dependencies)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DASHED_OPTION = re.compile(r"(?<=--)[A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+")
_SKIPPED_FOLDERS = {"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env", ".git"}


def _unshipped(analysis, dest: str) -> bool:
    """A command-line option off by default that nothing the project ships turns on: no README command, config
    file, run script or notebook names it (`--block_trigrams 1`, `remove_bad_endings: 1`), and no Python file sets
    it (`opt.X = ...`, `X=...` as a keyword, a `'X':` dict key; `option_default` already rules out the declaring
    modules' assignments). Such an option runs only when a user asks for it by hand: its branch is no step of any
    run the project documents (self-critical's `block_trigrams`, `remove_bad_endings`)."""
    if analysis.path is None or _RUN_MODE.match(dest):
        return False  # `--test`, `--eval`: a mode the program ships, chosen on the command line in real runs
    from gpulint.analysis.forward import _project_of

    project, _ = analysis.fact(_project_of)
    root = Path(project.root)
    key = (root, dest)
    if key not in _UNSHIPPED:
        if len(_UNSHIPPED) > 4096:
            _UNSHIPPED.clear()
        _UNSHIPPED[key] = _compute_unshipped(project, root, dest)
    _record_shipped(project, root, dest)
    return _UNSHIPPED[key]


def _record_shipped(project, root: Path, dest: str) -> None:
    """The answer depends on the text of every file read for it (the shipped text files, the Python files naming
    the option): a lint cached on it is valid only while they keep their content (an edited README or config that
    now names the option must be seen by the next warm run, cache.py)."""
    from gpulint.analysis.project import _record, text_dependency

    with text_dependency():
        for path in _SHIPPED_PATHS.get(root, ()):
            _record(path)
        for path in project.files_naming(dest):
            _record(project._resolved(path))


_UNSHIPPED: dict = {}  # (project root, option) -> whether nothing the project ships turns it on


def _compute_unshipped(project, root: Path, dest: str) -> bool:
    from gpulint.files import read_regular

    if root in _SHIPPED and _SHIPPED[root] is None:
        return False
    words = _SHIPPED.get(root)
    if words is None:
        words = set()
        read: list = []
        count = total = 0
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
            for name in sorted(names):
                if not name.endswith(_SHIPPED_SUFFIXES) and name not in ("Makefile", "Dockerfile"):
                    continue
                count += 1
                if count > _SHIPPED_FILES:
                    _SHIPPED[root] = None
                    return False  # too many to read: unknown
                path = Path(folder) / name
                try:
                    size = path.stat().st_size
                    if size > _SHIPPED_BYTES:
                        continue
                    total += size
                    if total > _SHIPPED_TOTAL:
                        _SHIPPED[root] = None
                        return False  # too much to read: unknown
                    text = read_regular(path)[0].decode("utf-8", "replace")
                    words.update(_IDENTIFIER.findall(text))
                    # `--mlperf-logging` in a run script sets the option argparse stores as `mlperf_logging`
                    words.update(w.replace("-", "_") for w in _DASHED_OPTION.findall(text))
                    read.append(path.resolve())
                except (OSError, ValueError, Exception):  # noqa: BLE001 - an unreadable file names nothing
                    continue
        if len(_SHIPPED) > 64:
            _SHIPPED.clear()
            _SHIPPED_PATHS.clear()
        _SHIPPED[root] = words
        _SHIPPED_PATHS[root] = tuple(read)
    if dest in words:
        return False
    setter = re.compile(r"\.%s\s*=(?!=)|\b%s\s*=(?!=)|[\"']%s[\"']\s*:" % ((re.escape(dest),) * 3))
    for file in project.files_naming(dest):
        try:
            text = read_regular(Path(file))[0].decode("utf-8", "replace")
        except Exception:  # noqa: BLE001
            return False
        for match in setter.finditer(text):
            line = text[text.rfind("\n", 0, match.start()) + 1:text.find("\n", match.end())]
            if "add_argument" in line or ".get(" in line:
                continue  # the declaration (`default=0`) or a read (`opt.get('X', 0)`)
            return False
    return True

