"""What a module's training does: its training loops, the precision it computes in, and where its model lives.

Shared by the throughput rules (GPU4xx). Every fact here leans towards silence: a module that mentions reduced
precision anywhere (autocast, `.half()`, "bf16", accelerate's `mixed_precision`, ...) counts as already using it,
and a model counts as on a GPU only when the module itself moves it there.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterator, Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.test_mode import test_mode_branch

from gpulint.analysis import ModuleAnalysis
from gpulint.analysis.data_facts import _walk, data_facts, keyword
from gpulint.analysis.loops import LoopRole
from gpulint.analysis.imports import dotted_name
from gpulint.analysis.kinds import Kind
from gpulint.syntax import argument, string_value
from gpulint.textsearch import found_in
from gpulint.analysis.node_types import of_types

# Any spelling of lower precision or of a choice about matmul precision: the module decided, say nothing.
_REDUCED_PRECISION = re.compile(r"autocast|\.half\(|bfloat16|float16|\bfp16\b|\bbf16\b|mixed_precision|"
                                r"\bamp\b|GradScaler|set_float32_matmul_precision|allow_tf32|"
                                r"\bdtype\s*=|\bprecision\b|\baccelerate\b|Accelerator\(|deepspeed|lightning|"
                                r"\bFabric\(", re.IGNORECASE)
# The same choices without the bare `dtype=` (GPU404): a dtype argument counts only through the next pattern.
_MATMUL_PRECISION = re.compile(_REDUCED_PRECISION.pattern.replace(r"\bdtype\s*=|", ""), re.IGNORECASE)
# `dtype=` naming something other than an integer, boolean or fp32 dtype (or a NumPy float64: host arrays, such
# as a diffusion schedule's betas, never the model's precision): a half/double dtype, a variable.
_FLOAT_DTYPE_ARGUMENT = re.compile(r"\bdtype\s*=(?!=)(?!\s*(?:torch|np|numpy)\.(?:u?int\d*|long|short|bool|float32|float)\b"
                                   r"|\s*(?:np|numpy)\.float64\b|\s*[\"'](?:u?int\d*|long|bool|float32)[\"'])")
# GPU403's choices: `_MATMUL_PRECISION` with `precision` only as a setting (`precision=`, `args.precision`,
# `--precision`, a `"precision"` key), not a detection metric's `precision, recall = ...`.
_CHOSEN_PRECISION = re.compile(_MATMUL_PRECISION.pattern.replace(
    r"\bprecision\b", r"\bprecision\s*=(?!=)|\.precision\b|--precision\b|[\"']precision[\"']"), re.IGNORECASE)
# GPU403's `dtype=`: any dtype argument may choose the precision, integer ones included (measured: bf16 autocast
# made the launch-bound encoder and ResNet shapes, whose only dtypes are `torch.long`/`np.uint8`, 12-13% slower,
# docs/benchmarks.md "Seventeenth landing: GPU403 on modules that name integer dtypes"; and again in the twentieth
# landing's run); only a NumPy float64 or float32 (host arrays, such as a diffusion schedule's betas or an
# evaluation's prediction buffer `np.zeros((n, k, 3), dtype=np.float32)`) chooses none.
_DTYPE_CHOICE = re.compile(r"\bdtype\s*=(?!=)(?!\s*(?:np|numpy)\.float(?:64|32)\b)")
_MODULE_MOVES = ("to", "cuda")
# library callables of the reviewed table (analysis/libraries.py) one call of which runs the backward pass and
# steps the optimizer: `loss_scaler(loss, optimizer, parameters=...)` of timm's scalers
# optimizers of libraries whose `step` updates one parameter at a time in a Python loop (no foreach, no fused
# kernel): transformers' own `AdamW` (transformers/optimization.py, `for p in group["params"]: ...`, deprecated
# in favour of `torch.optim.AdamW` since 4.x) and its pytorch_transformers ancestor
LOOPING_LIBRARY_OPTIMIZERS = frozenset({"transformers.AdamW", "transformers.optimization.AdamW",
                                        "pytorch_transformers.AdamW", "pytorch_transformers.optimization.AdamW"})
_BACKWARD_LIBRARY_CALLS = frozenset({"timm.utils.NativeScaler.__call__", "timm.utils.ApexScaler.__call__"})
_DTYPES = {"float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long", "int32"}


def _empty_list(value: Optional[cst.BaseExpression]) -> bool:
    """`[]` or `list()`."""
    return type(value) is cst.List and not value.elements or type(value) is cst.Call and \
        type(value.func) is cst.Name and value.func.value == "list" and not value.args


def _over_parameters(b) -> bool:
    """A loop name bound to each parameter of a model: `param` of `for name, param in model.named_parameters():`
    or `p` of `for p in model.parameters():` (the groups split by name: biases, the rest)."""
    value = b.value if b.kind == "for" else None
    if type(value) is not cst.Call or type(value.func) is not cst.Attribute:
        return False
    method = value.func.attr.value
    return method == "parameters" and b.index is None or method == "named_parameters" and b.index == 1


# A model's method handing out its parameters in groups (`get_optim_policies`, `optim_parameters`,
# `get_param_groups`, `get_1x_lr_params`)
_PARAMETER_GROUPS = re.compile(r"param|polic")


class TrainingFacts:
    """Training loops and precision of one module; built once, on first use."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.analysis = analysis
        self.index = analysis.index
        self._loops: Optional[list[cst.For]] = None
        self._chose_precision: Optional[bool] = None
        self._chose_matmul_precision: Optional[bool] = None
        self._calls_on: Optional[dict[str, list[cst.Call]]] = None
        self._attribute_values: Optional[dict[tuple[str, str], list[cst.BaseExpression]]] = None
        self._toy: Optional[bool] = None
        self._owners: dict[tuple[int, int], tuple[cst.CSTNode, list[cst.Name]]] = {}
        self._stepped_names: Optional[frozenset[str]] = None
        self._project_device: Optional[bool] = None

    # -- training loops ----------------------------------------------------------------------------------------
    def training_loops(self) -> list[cst.For]:
        """Hot for-loops whose own body (or a step function it calls, or hands to a helper that calls it:
        `gpu_timer(train_step)`) runs `.backward()`: each step trains."""
        return [n for n in self._step_loops() if type(n) is cst.For]

    def _step_loops(self) -> list:
        """The hot `for` and `while` loops that train (`while True: batch = next(it) ... loss.backward()`, a
        trainer's step loop drawing one batch per iteration), in the module's order."""
        if self._loops is None:
            loops = self.analysis.loops
            self._loops = [n for n in of_types(self.index, cst.For, cst.While)
                           if loops.role(n) is LoopRole.HOT and self._runs_backward(n.body)]
        return self._loops

    def _runs_backward(self, body: cst.CSTNode, depth: int = 0) -> bool:
        for node in _walk(body):
            if type(node) is cst.Call:
                if type(node.func) is cst.Attribute and node.func.attr.value == "backward":
                    return True
                if type(node.func) is cst.Name and node.args and self._library_backward(node):
                    return True  # `loss_scaler(loss, optimizer)`: timm's scaler runs backward and steps
                helper = self.analysis.loops.local_function(node)
                if helper is not None and depth < 2 and self._runs_backward(helper.body, depth + 1):
                    return True
                # a step closure handed to a helper that calls it (`gpu_timer(train_step)`: loops.passed_functions)
                if depth < 2 and any(self._runs_backward(fn.body, depth + 1)
                                     for fn in self.analysis.loops.passed_functions(node)):
                    return True
        return False

    def _library_backward(self, call: cst.Call) -> bool:
        from gpulint.analysis.calls import module_calls

        fact = module_calls(self.analysis).library_fact(call)
        return fact is not None and fact.target in _BACKWARD_LIBRARY_CALLS

    def trains_on_cuda(self) -> bool:
        """The module names CUDA itself and trains: forward, backward and step in a loop over batches (a `for`
        over a loader, or a `while` loop that draws a batch every iteration)."""
        return bool(self._step_loops()) and (data_facts(self.analysis).clearly_cuda() or self._imported_cuda_device())

    def trains_on_cuda_here(self) -> bool:
        """The module trains in a loop of its own (`_step_loops`), whatever it names: for an optimizer whose
        parameters are shown to be on CUDA by other means (`self_member_on_cuda`)."""
        return bool(self._step_loops())

    def _imported_cuda_device(self) -> bool:
        """The module moves something to a device it imports from a project module that binds it to CUDA at its
        top level: `from conf import *` (or `from config import device`) with conf.py's `device =
        torch.device("cuda:0" if torch.cuda.is_available() else "cpu")`, then `model.to(device)`. Asked only where
        the module names no CUDA itself (its own text is searched first)."""
        from gpulint.analysis.calls import project_calls

        source = self.analysis.source
        if source is not None and ".to(" not in source and "device=" not in source:
            return False
        names: set[str] = set()
        for node in of_types(self.index, cst.Call):
            func = node.func  # type: ignore[attr-defined]
            device = None
            if type(func) is cst.Attribute and func.attr.value in ("to", "cuda") and node.args:  # type: ignore
                device = node.args[0].value  # type: ignore[attr-defined]
            kw = keyword(node, "device")  # type: ignore[arg-type]
            for value in (device, kw.value if kw is not None else None):
                if type(value) is cst.Name and not self.index.visible_bindings(value):
                    names.add(value.value)
        if not names or self.analysis.path is None:
            return False
        calls = self.analysis.fact(project_calls)
        if calls is None:
            return False
        return any(_imported_cuda(calls.project, Path(self.analysis.path), name) for name in sorted(names))

    def stored_by(self, call: cst.Call) -> Optional[cst.CSTNode]:
        """The node holding `call`'s value: its parent, or for a choice between several by a key (`optimizer =
        {'adam': optim.Adam(...), 'sgd': optim.SGD(...)}[optimizer_type]`) the assignment of the chosen one."""
        parent = self.analysis.parent(call)
        if type(parent) is cst.DictElement and parent.value is call:
            table = self.analysis.parent(parent)
            chosen = self.analysis.parent(table) if type(table) is cst.Dict else None
            holder = self.analysis.parent(chosen) if type(chosen) is cst.Subscript and chosen.value is table else None
            if type(holder) is cst.Assign:
                return holder
        return parent

    def trainer_steps(self, optimizer: cst.Call) -> bool:
        """The optimizer built by `optimizer` (`opt = torch.optim.AdamW(...)`) is handed, in the same function, to
        a top-level project function whose loop runs `.backward()` and steps it (`opt.step()` or
        `scaler.step(opt)` of the parameter it arrives as): `train_one_epoch(model, criterion, loader, opt, ...)`
        of an engine module, the script's epoch loop around it. The script trains through that function."""
        from gpulint.analysis.calls import project_calls
        from gpulint.analysis.project import FunctionSummary, _find_function

        from gpulint.analysis.project import ClassSummary

        calls = self.analysis.fact(project_calls)
        if calls is None:
            return False
        built = optimizer
        stmt = self.stored_by(optimizer)
        if type(stmt) is cst.Arg and not stmt.star:
            # `TransformerOptimizer(torch.optim.Adam(...), k, warmup)`: a project wrapper whose `step` steps the
            # optimizer it keeps (a learning-rate schedule written as a class)
            wrapper = self.analysis.parent(stmt)
            if type(wrapper) is not cst.Call or type(wrapper.func) not in (cst.Name, cst.Attribute):
                return False
            found = calls._lookup(wrapper.func)
            param = _parameter_of(wrapper, stmt, found.methods.get("__init__")) \
                if isinstance(found, ClassSummary) else None
            if param is None or not _wrapper_steps(found, param):
                return False
            built = wrapper
            stmt = self.analysis.parent(wrapper)
        if type(stmt) is not cst.Assign or len(stmt.targets) != 1 or type(stmt.targets[0].target) is not cst.Name:
            return False
        if type(stmt.value) is cst.Subscript and stmt.value is not built:
            built = stmt.value  # `{'adam': ..., 'sgd': optim.SGD(...)}[optimizer_type]`: the chosen one
        name = stmt.targets[0].target.value
        scope = self.index.enclosing_scope(optimizer)
        for node in self.index.names(name):
            arg = self.analysis.parent(node)
            call = self.analysis.parent(arg) if type(arg) is cst.Arg else None
            if type(call) is not cst.Call or arg.star or self.index.enclosing_scope(call) is not scope:
                continue
            if not any(b.value is built for b in self.analysis.kinds.reaching_bindings(node)):
                continue  # another optimizer bound to the name by then (a later cell's `optimizer = ...`)
            if type(call.func) is cst.Attribute and _method_steps(calls, call, arg):
                return True  # `trainer.train(epoch, loader, optimizer)`: a method of a project trainer's class
            found = calls._lookup(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
            if isinstance(found, ClassSummary):
                # `solver = Solver(data, model, optimizer, args)`: a trainer class keeping the optimizer on
                # `self`, one of whose methods runs a backward pass and steps it
                param = _parameter_of(call, arg, found.methods.get("__init__"))
                if param is not None and _class_steps(found, param, calls.project):
                    return True
                continue
            if not isinstance(found, FunctionSummary) or "." in found.qualname:
                continue
            info = calls.project.module(found.path)
            fn = _find_function(info, found.qualname)[0] if info is not None else None
            if fn is None:
                continue
            positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
            if arg.keyword is not None:
                param = arg.keyword.value
            else:
                at = [a for a in call.args if a.keyword is None].index(arg)
                param = positional[at] if at < len(positional) else None
            if param is not None and _steps_in_a_loop(fn, param):
                return True
        return False

    def trains_through_caller(self, where) -> bool:
        """The training step is a function or method of this module that a loop of another project module runs
        every step (`Execution.via`, `forward.per_step_caller`: a trainer's `forward_backward(data)` called by
        its engine's batch loop, an algorithm's `update(minibatches)` called by a training script). The two
        modules train on CUDA together when either names CUDA (`clearly_cuda`); the loop's module must choose
        no precision either (`chose_precision`: autocast or a GradScaler around the call, a precision option)
        and not be a toy or a test (`worth_a_lever`)."""
        from gpulint.analysis.forward import CallSite, _project_of, caller_analysis

        via = where.via if where is not None else None
        if not isinstance(via, CallSite) or via.assumed or self.analysis.path is None:
            return False  # an assumed forward (trained_modules) has no caller to look at
        project, _ = self.analysis.fact(_project_of)
        caller = caller_analysis(project, via.path)
        if caller is None:
            return False
        theirs = training_facts(caller)
        if theirs.chose_precision() or not theirs.worth_a_lever():
            return False
        return data_facts(self.analysis).clearly_cuda() or data_facts(caller).clearly_cuda()

    def factory_callers(self, optimizer: cst.Call, params: cst.CSTNode) -> list[tuple[Path, int]]:
        """Where the optimizer `optimizer` builds is made for a CUDA model trained elsewhere: the call is in a
        top-level function of this module that hands it back (`return torch.optim.AdamW(groups, ...)`, or
        `optimizer = ...` then `return optimizer, scheduler`), its parameters come from parameters of that
        function (`build_optimizer(cfg, model)` over `model.named_parameters()`, `set_weight_decay(model)`,
        `init_opt(encoder, predictor)`), and every project call of the function passes, for one of them at
        least, a model that the calling module moves to CUDA (`module_on_cuda`; and no model that it may not) in a module that trains on CUDA with the
        result (`trains_on_cuda`, or hands it to a function whose loop steps it: `trainer_steps`), names CUDA,
        and is no toy; calls in test modules are not asked (a test's toy model on the host). The (file, line) of each call; empty when any of this cannot be told."""
        from gpulint.analysis.calls import project_calls
        from gpulint.analysis.forward import _line_of, _project_of, caller_analysis
        from gpulint.analysis.kinds import Kind
        from gpulint.analysis.project import FunctionSummary
        from gpulint.analysis.test_code import is_test_path

        fn = self.index.enclosing_function(optimizer)
        if fn is None or self.analysis.path is None or type(self.analysis.parent(fn)) is not cst.Module \
                or not self._returned(optimizer, fn):
            return []
        names = [n.value for n in self._function_parameters(params, fn)]
        if not names:
            return []
        positional = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        project, _ = self.analysis.fact(_project_of)
        sites: list[tuple[Path, int]] = []
        for file in project._files_mentioning(fn.name.value):
            if is_test_path(Path(file)):
                continue  # a test builds it for a toy model on the host; the training run is what counts
            caller = self.analysis if Path(file) == Path(self.analysis.path) else caller_analysis(project, file)
            calls = caller.fact(project_calls) if caller is not None else None
            if calls is None:
                return []
            theirs = training_facts(caller)
            for call in of_types(caller.index, cst.Call):
                func = call.func
                last = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else None
                if last != fn.name.value:
                    continue
                found = calls._lookup(func)
                if not isinstance(found, FunctionSummary) or found.qualname != fn.name.value or \
                        Path(found.path).resolve() != Path(self.analysis.path).resolve():
                    continue
                if any(a.star for a in call.args):
                    return []
                on_cuda = False
                for name in names:
                    arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)
                    if arg is None and name in positional:
                        at = positional.index(name)
                        plain = [a for a in call.args if a.keyword is None]
                        arg = plain[at] if at < len(plain) else None
                    value = arg.value if arg is not None else None
                    while type(value) is cst.Attribute and value.attr.value == "module":
                        value = value.value
                    if type(value) is cst.Name and theirs.module_on_cuda(value):
                        on_cuda = True
                    elif value is not None and caller.kind(value) is Kind.MODULE:
                        return []  # a model passed that may stay on the host
                if not on_cuda or not (theirs.trains_on_cuda() or theirs.trainer_steps(call)) or not theirs.worth_a_lever() \
                        or not data_facts(caller).clearly_cuda():
                    return []
                sites.append((Path(file), _line_of(caller, call)))
        return sites

    def _returned(self, optimizer: cst.Call, fn: cst.FunctionDef) -> bool:
        """`fn` hands the optimizer back: `return torch.optim.AdamW(...)`, or the name it is bound to in a
        `return` of `fn` (`return optimizer`, `return optimizer, scheduler`)."""
        stmt = self.analysis.parent(optimizer)
        if type(stmt) is cst.Return:
            return True
        if type(stmt) is not cst.Assign or len(stmt.targets) != 1 or type(stmt.targets[0].target) is not cst.Name:
            return False
        name = stmt.targets[0].target.value
        for node in _walk(fn.body):
            if type(node) is cst.Return and node.value is not None and \
                    any(type(n) is cst.Name and n.value == name for n in _walk(node.value)):
                return True
        return False

    def _function_parameters(self, expr: cst.CSTNode, fn: cst.FunctionDef, depth: int = 0) -> list[cst.Name]:
        """The parameters of `fn` that `expr` is computed from, through the names it reads (each once)."""
        found: dict[str, cst.Name] = {}
        if depth > 3:
            return []
        for node in _walk(expr):
            if type(node) is not cst.Name or _is_attribute_name(self.analysis, node):
                continue
            owner = self.index.parameter_of(node)
            if owner is not None and owner[0] is fn:
                found.setdefault(node.value, node)
                continue
            for b in data_facts(self.analysis).bindings(node):
                if b.kind == "assign" and b.value is not None and self.index.enclosing_scope(b.value) is not None:
                    for name in self._function_parameters(b.value, fn, depth + 1):
                        found.setdefault(name.value, name)
        return list(found.values())

    # -- precision ---------------------------------------------------------------------------------------------
    def chose_precision(self) -> bool:
        """The module mentions autocast, a half dtype, a `dtype=` argument other than a NumPy float64 one
        (`_DTYPE_CHOICE`), a precision setting or a matmul-precision setting anywhere. A detection metric named
        `precision` is not a setting."""
        if self._chose_precision is None:  # a search of the whole text: once per module, not per call
            text = self.analysis.source if self.analysis.source is not None else self.analysis.module.code
            self._chose_precision = found_in(_CHOSEN_PRECISION, text) or found_in(_DTYPE_CHOICE, text)
        return self._chose_precision

    def project_chose_dtype(self) -> bool:
        """A file of the project sets torch's default dtype (`project_default_dtype`): asked last, where the
        module's own text decides nothing (it reads the project's identifier index)."""
        return self.analysis.fact(project_default_dtype)

    def chose_matmul_precision(self) -> bool:
        """As `chose_precision`, but a `dtype=` argument counts only when it names a floating dtype other than
        fp32 (or a variable): `dtype=torch.long` for token ids, `dtype=np.uint8` for images and an explicit
        `dtype=torch.float32` choose no precision for the model's matmuls (GPU404)."""
        if self._chose_matmul_precision is None:
            text = self.analysis.source if self.analysis.source is not None else self.analysis.module.code
            self._chose_matmul_precision = found_in(_MATMUL_PRECISION, text) or found_in(_FLOAT_DTYPE_ARGUMENT, text)
        return self._chose_matmul_precision

    def imports_torch_as_torch(self) -> bool:
        return self.index.imports.aliases.get("torch") == "torch"

    def entry_point(self) -> bool:
        """A script: an `if __name__ == "__main__":` block, or a training loop outside every function and class."""
        for stmt in self.analysis.module.body:
            if type(stmt) is cst.If and "__name__" in self.analysis.code(stmt.test) \
                    and "__main__" in self.analysis.code(stmt.test):
                return True
        return any(self._at_top_level(loop) for loop in self.training_loops())

    def _at_top_level(self, node: cst.CSTNode) -> bool:
        """Outside every function and class: the module's own code (in `while step < steps:` too)."""
        parent = self.analysis.parent(node)
        while parent is not None and not isinstance(parent, cst.Module):
            if type(parent) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                return False
            parent = self.analysis.parent(parent)
        return parent is not None

    def last_leading_import(self) -> Optional[cst.SimpleStatementLine]:
        """The last line of the block of imports at the top of the module (after a docstring), if any."""
        last = None
        for stmt in self.analysis.module.body:
            if type(stmt) is cst.SimpleStatementLine:
                if all(type(s) in (cst.Import, cst.ImportFrom) for s in stmt.body):
                    last = stmt
                    continue
                if last is None and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) and \
                        isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
                    continue  # the docstring
            break
        return last

    # -- where a model lives -----------------------------------------------------------------------------------
    def module_on_cuda(self, name: cst.Name, depth: int = 0) -> bool:
        """Every move of the model `name` that this module makes goes to a CUDA device, and there is one:
        `Net().to("cuda")`, `model.cuda()`, `model = model.to(device)` with `device = torch.device("cuda")`,
        or built with `device="cuda"`. A device that may be another accelerator or the CPU makes it unknown.
        A second name for the same module (`model_without_ddp = model`, `= model.module` of its DDP wrapper)
        is where that model is: `.to()` moves a module in place, so the alias moves with it."""
        moves: list[Optional[bool]] = []
        for b in data_facts(self.analysis).bindings(name):
            if b.kind == "assign" and b.value is not None:
                alias = b.value
                while type(alias) is cst.Attribute and alias.attr.value == "module":
                    alias = alias.value
                if type(alias) is cst.Name and alias.value == "None":
                    continue  # `criterion = None` before the real one is built (`if not criterion: ...`): no model
                if b.index is None and type(alias) is cst.Name and alias.value != name.value and depth < 3:
                    moves.append(self.module_on_cuda(alias, depth + 1))
                    continue
                if b.index is not None and type(b.value) is cst.Call and depth < 3:
                    if self._handed_back_element(b.value, b.index, depth):
                        moves.append(True)  # `model, criterion = set_model(opt)` of this module's function
                        continue
                moves.extend(self._moves(b.value))
            elif b.kind == "param" and depth < 3:
                # `def train(model, device, config): optimizer = optim.Adam(model.parameters())`, called as
                # `train(model=model, ...)` after `model.to(device=device)`: where this module's own calls put it
                for arg in data_facts(self.analysis).arguments_for(b):
                    found = [] if type(arg) is cst.Name else list(self._moves(arg))
                    moves.append(self.module_on_cuda(arg, depth + 1) if type(arg) is cst.Name
                                 else bool(found) and all(found))
        scope = self.index.enclosing_scope(name)
        for node in self._method_calls_on().get(name.value, ()):
            if self.index.enclosing_scope(node) is scope:
                moves.extend(self._moves(node))
        if not moves and depth < 3:
            # `model_train = model.train()` (the same module), then `model_train = DataParallel(model_train)` and
            # `model_train = model_train.cuda()`: the other name's moves move this model
            for alias in self._aliases_of(name, scope):
                moves.append(self.module_on_cuda(alias, depth + 1))
        if not moves and depth < 3:
            # `trainer = GaussianDiffusionTrainer(net_model, ...).to(device)`: a project module class keeping the
            # model as a submodule, moved: `.to()` moves its submodules, this model with them
            moves.extend(self._moved_as_submodule(name, scope, depth))
        return bool(moves) and all(moves)

    def _moved_as_submodule(self, name: cst.Name, scope, depth: int) -> list:
        """For each call in `scope` handing `name` to a project `nn.Module` class that keeps that argument on
        `self` (`self.model = model`), whose instance is moved where it is built (`Wrapper(name, ...).to(device)`)
        or under a name: whether that move goes to CUDA."""
        from gpulint.analysis.calls import project_calls
        from gpulint.analysis.project import ClassSummary

        calls = self.analysis.fact(project_calls)
        if calls is None:
            return []
        found: list = []
        for node in self.index.names(name.value):
            arg = self.analysis.parent(node)
            call = self.analysis.parent(arg) if type(arg) is cst.Arg else None
            if type(call) is not cst.Call or arg.star or self.index.enclosing_scope(call) is not scope or \
                    type(call.func) not in (cst.Name, cst.Attribute):
                continue
            cls = calls._lookup(call.func)
            if not isinstance(cls, ClassSummary) or not calls.project.is_module_class(cls):
                continue
            param = _parameter_of(call, arg, cls.methods.get("__init__"))
            if param is None or not _kept_as(cls, param, calls.project):
                continue
            outer = self.analysis.parent(call)
            if type(outer) is cst.Attribute and outer.attr.value in _MODULE_MOVES:
                found.extend(self._moves(self.analysis.parent(outer)))
                continue
            if type(outer) is cst.Assign and len(outer.targets) == 1 and type(outer.targets[0].target) is cst.Name:
                found.append(self.module_on_cuda(outer.targets[0].target, depth + 1))
        return found

    def _aliases_of(self, name: cst.Name, scope) -> list[cst.Name]:
        """Other names of the scope bound to `name` itself, to `name.train()`/`name.eval()`, or to a wrapper of
        it (`DataParallel(name)`): the same module under another name."""
        found: list[cst.Name] = []
        for node in of_types(self.index, cst.Assign):
            if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name or \
                    node.targets[0].target.value == name.value or self.index.enclosing_scope(node) is not scope:
                continue
            value = node.value
            if type(value) is cst.Call and self.analysis.qualified(value.func) in _MODEL_WRAPPERS and value.args:
                value = value.args[0].value
            while type(value) is cst.Call and type(value.func) is cst.Attribute and not value.args and \
                    value.func.attr.value in ("train", "eval"):
                value = value.func.value
            if type(value) is cst.Name and value.value == name.value:
                found.append(node.targets[0].target)
        return found

    def _handed_back_element(self, call: cst.Call, index: int, depth: int) -> bool:
        """Element `index` of what this module's function `call` returns is a model it moved to CUDA (SupContrast's
        `set_model` returning `model, criterion` after `model = model.cuda()`): every `return` of the function a
        tuple whose element there is a name `module_on_cuda` holds. False otherwise (the call is then left to
        `_moves`: a device the function is handed)."""
        from gpulint.analysis.tree import own_scope_nodes

        fn = self.analysis.loops.local_function(call)
        returns = [n for n in own_scope_nodes([fn.body]) if type(n) is cst.Return] if fn is not None else []
        if not returns or any(type(r.value) is not cst.Tuple or index >= len(r.value.elements) or
                              type(r.value.elements[index]) is cst.StarredElement or
                              type(r.value.elements[index].value) is not cst.Name for r in returns):
            return False
        return all(self.module_on_cuda(r.value.elements[index].value, depth + 1) for r in returns)

    def is_parameter(self, name: cst.Name) -> bool:
        """`name` is bound as a parameter of its function (and by nothing else)."""
        if type(name) is not cst.Name:
            return False
        bindings = data_facts(self.analysis).bindings(name)
        return bool(bindings) and all(b.kind == "param" for b in bindings)

    def self_moved_optimizer(self, optimizer: cst.Call, params: cst.CSTNode) -> bool:
        """An optimizer a module class builds over its own submodules, in the method that moves the whole
        module to CUDA, and that the module's training code steps: `self.G_opt = Adam(list(self.G.parameters())
        + ..., lr)` (or `self.optims[name] = Adam(self.nets[name].parameters())`) next to `self.cuda(rank)` /
        `self.to(self.device)` with `self.device = torch.device("cuda" if ... else "cpu")`, then a function of
        this module that runs a backward pass and calls `<...>.G_opt.step()`. Moving the module moves every
        submodule, so the parameters are on CUDA however the submodules were built."""
        fn = self.index.enclosing_function(optimizer)
        if fn is None or self.index.enclosing_class(fn) is None or not fn.params.params \
                or fn.params.params[0].name.value != "self":
            return False
        stmt = self.analysis.parent(optimizer)
        if type(stmt) is not cst.Assign or len(stmt.targets) != 1:
            return False
        target = stmt.targets[0].target
        if type(target) is cst.Subscript:
            target = target.value
        if not (type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self"):
            return False
        if not self._self_owned_parameters(params, fn) or not self._moves_self_to_cuda(fn):
            return False
        return target.attr.value in self._stepped_receiver_names()

    def self_member_on_cuda(self, optimizer: cst.Call, params: cst.CSTNode) -> bool:
        """An optimizer a class's method builds over a model it keeps on `self` (`self.optim =
        Adam(self.model.parameters())`), where every method of the class and of its project base classes that
        stores `self.model` by a device move sends it to a possible CUDA device: `self.model = Net().to(
        self.device)` with `self.device = torch.device("cuda:0" if c else "cpu")`, or a base class's `gpu()`
        method doing `self.model = self.model.to(self.dev)` with `self.dev = "cuda:0"` (and `"cpu"` on the other
        branch of an option). At least one such move; a move to the CPU or to a device that cannot be told, or
        a `.parameters()` of anything but a `self.<member>`, makes it unknown."""
        from gpulint.analysis.calls import project_calls
        from gpulint.analysis.project import ClassSummary

        fn = self.index.enclosing_function(optimizer)
        cls = self.index.enclosing_class(fn) if fn is not None else None
        if cls is None or not fn.params.params or fn.params.params[0].name.value != "self" \
                or self.analysis.path is None:
            return False
        members: set[str] = set()
        parts = [params]
        if type(params) is cst.Name:
            # `params_list = list()`, then `params_list.append({'params': self.model.pretrained.parameters()})`
            parts.extend(self._appended(params, data_facts(self.analysis).bindings(params)))
        for node in (n for part in parts for n in _walk(part)):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    node.func.attr.value in ("parameters", "named_parameters"):
                owner = node.func.value
                while type(owner) is cst.Attribute and owner.attr.value == "module":
                    owner = owner.value
                if type(owner) is cst.Call and self.analysis.qualified(owner.func) == "getattr" and owner.args:
                    owner = owner.args[0].value  # `getattr(self.model, name).parameters()`: a submodule of it
                while type(owner) is cst.Attribute and type(owner.value) is cst.Attribute:
                    owner = owner.value  # `self.model.pretrained`: a submodule of `self.model` moves with it
                if not (type(owner) is cst.Attribute and type(owner.value) is cst.Name
                        and owner.value.value == "self"):
                    return False
                members.add(owner.attr.value)
        calls = self.analysis.fact(project_calls)
        if not members or calls is None:
            return False
        summary = calls.project.lookup(Path(self.analysis.path), cls.name.value)
        if not isinstance(summary, ClassSummary):
            return False
        chain = _class_chain(calls.project, summary)

        def outer(name: str, attr: str) -> list:
            return self._assigned_attributes().get((name, attr), [])

        return all(_member_moves_to_cuda(chain, member, outer) for member in sorted(members))

    def _self_owned_parameters(self, expr: cst.CSTNode, fn: cst.FunctionDef, depth: int = 0) -> bool:
        """Every `.parameters()` in `expr` (through the names it reads, bound in `fn`) is of a submodule of
        `self` (`self.G`, `self.nets[name]`), and there is one. A name bound elsewhere, or by anything but an
        assignment, makes it unknown."""
        found = False
        for node in _walk(expr):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    node.func.attr.value in ("parameters", "named_parameters"):
                root = node.func.value
                while type(root) in (cst.Attribute, cst.Subscript):
                    root = root.value  # type: ignore[attr-defined]
                if not (type(root) is cst.Name and root.value == "self") or node.func.value is root:
                    return False
                found = True
            elif type(node) is cst.Name and not _is_attribute_name(self.analysis, node) and node.value != "self":
                bindings = [b for b in data_facts(self.analysis).bindings(node)]
                if not bindings or depth > 2:
                    continue  # `list`, `lr`: a builtin or a hyperparameter, no parameters
                for b in bindings:
                    if b.kind == "assign" and b.value is not None and _has_parameters_call(b.value):
                        if b.scope is not fn or not self._self_owned_parameters(b.value, fn, depth + 1):
                            return False
                        found = True
        return found

    def _moves_self_to_cuda(self, fn: cst.FunctionDef) -> bool:
        """`fn` moves `self` (the module) to CUDA, and nowhere else: `self.cuda(...)`, `self.to(<CUDA device>)`,
        where the device may be a `self.<attr>` that `fn` assigns once."""
        moves: list[bool] = []
        for node in _walk(fn.body):
            if not (type(node) is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name
                    and node.func.value.value == "self" and node.func.attr.value in ("cuda", "to")):
                continue
            if node.func.attr.value == "cuda":
                moves.append(True)
                continue
            target = argument(node, "device", 0)
            if target is None or _is_dtype(self.analysis, target.value):
                continue
            device = target.value
            if type(device) is cst.Attribute and type(device.value) is cst.Name and device.value.value == "self":
                values = [s.value for s in _walk(fn.body) if type(s) is cst.Assign and len(s.targets) == 1
                          and type(s.targets[0].target) is cst.Attribute
                          and type(s.targets[0].target.value) is cst.Name
                          and s.targets[0].target.value.value == "self"
                          and s.targets[0].target.attr.value == device.attr.value]
                moves.append(len(values) == 1 and self.cuda_device(values[0]))
            else:
                moves.append(self.cuda_device(device))
        return bool(moves) and all(moves)

    def _stepped_receiver_names(self) -> frozenset[str]:
        """The names in the receivers of the `X.step()` calls (no arguments) made by functions of this module
        that also run a backward pass (`loss.backward()`, a `backwards(loss, opt)` helper): `self.GAN.D_opt.step()`
        gives {"self", "GAN", "D_opt"}. Computed once per module."""
        if self._stepped_names is None:
            names: set[str] = set()
            backward: dict[int, bool] = {}
            for node in of_types(self.index, cst.Call):
                func = node.func  # type: ignore[attr-defined]
                if not (type(func) is cst.Attribute and func.attr.value == "step" and not node.args):  # type: ignore
                    continue
                fn = self.index.enclosing_function(node)
                if fn is None:
                    continue
                if id(fn) not in backward:
                    backward[id(fn)] = any(
                        type(c) is cst.Call and "backward" in _called_name(c.func) for c in _walk(fn.body))
                if not backward[id(fn)]:
                    continue
                receiver = func.value
                while type(receiver) in (cst.Attribute, cst.Subscript):
                    if type(receiver) is cst.Attribute:
                        names.add(receiver.attr.value)
                    receiver = receiver.value
                if type(receiver) is cst.Name:
                    names.add(receiver.value)
            self._stepped_names = frozenset(names)
        return self._stepped_names

    def _assigned_attributes(self) -> dict[tuple[str, str], list[cst.BaseExpression]]:
        """`x.name = value` anywhere in the module (not `self`), by `(x, name)`: one pass for all look-ups."""
        if self._attribute_values is None:
            self._attribute_values = {}
            for node in of_types(self.index, cst.Assign):
                for target in node.targets:  # type: ignore[attr-defined]
                    t = target.target
                    if type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value != "self":
                        self._attribute_values.setdefault((t.value.value, t.attr.value), []).append(
                            node.value)  # type: ignore[attr-defined]
        return self._attribute_values

    def _method_calls_on(self) -> dict[str, list[cst.Call]]:
        """`x.method(...)` calls of the module by the name `x`: one pass over the nodes for all look-ups."""
        if self._calls_on is None:
            self._calls_on = {}
            for node in of_types(self.index, cst.Call):
                if type(node.func) is cst.Attribute and type(node.func.value) is cst.Name:
                    self._calls_on.setdefault(node.func.value.value, []).append(node)
        return self._calls_on

    def _moves(self, expr: cst.CSTNode) -> Iterator[bool]:
        """For each device move in `expr` (`.to(...)`, `.cuda()`, `device=`): whether it certainly goes to CUDA."""
        for node in _walk(expr):
            if type(node) is not cst.Call:
                continue
            func = node.func
            if type(func) is cst.Attribute and func.attr.value in _MODULE_MOVES:
                if func.attr.value == "cuda":
                    yield True
                    continue
                target = argument(node, "device", 0)
                if target is not None and not _is_dtype(self.analysis, target.value):
                    yield self.cuda_device(target.value)
                    continue
            device = keyword(node, "device")
            if device is not None:
                yield self.cuda_device(device.value)
                continue
            if self._factory_on_cuda(node):
                yield True  # `model = load_model(path)`: a project factory that moves its model to CUDA

    def optimizer_classes(self, func: cst.BaseExpression, depth: int = 0) -> Optional[frozenset]:
        """The `torch.optim` classes (qualified names) a call of `func` may build, every candidate known:
        `torch.optim.AdamW`; `getattr(torch.optim, "AdamW")`; a name every binding of which is one of these or
        a choice between them (`optim_cls = optim.AdamW if c else optim.NAdam`); a project subclass of one
        that keeps its update and its keyword arguments (`class AdamW(torch.optim.AdamW)`, see
        `_torch_optimizer_base`). None when any candidate cannot be told (a name read from a config)."""
        if depth > 4:
            return None
        if type(func) is cst.IfExp:
            body = self.optimizer_classes(func.body, depth + 1)
            orelse = self.optimizer_classes(func.orelse, depth + 1)
            return body | orelse if body is not None and orelse is not None else None
        if type(func) is cst.Call:  # `getattr(torch.optim, "AdamW")`
            if self.analysis.qualified(func.func) == "getattr" and len(func.args) == 2 \
                    and self.analysis.qualified(func.args[0].value) == "torch.optim":
                name = string_value(func.args[1].value)
                if name is None:  # `getattr(optim, args.optim)` with `--optim` defaulting to 'Adam' (TCN)
                    name = self.option_text(func.args[1].value)
                if name is None:  # `getattr(torch.optim, cfg.optimizer.type)`: the configuration files' names
                    return self.configured_optimizers(func.args[1].value)
                return frozenset({f"torch.optim.{name}"}) if name and name.isidentifier() else None
            return None
        qualified = self.analysis.qualified(func) or ""
        if qualified.startswith("torch.optim.") or qualified in LOOPING_LIBRARY_OPTIMIZERS:
            return frozenset({qualified})
        if type(func) is cst.Name:
            bindings = self.index.visible_bindings(func)
            if bindings and len(bindings) <= 4 and all(b.kind == "assign" and b.index is None and b.value is not None
                                                      for b in bindings):
                found: frozenset = frozenset()
                for b in bindings:
                    one = self.optimizer_classes(b.value, depth + 1)
                    if one is None:
                        return None
                    found |= one
                return found or None
        if type(func) in (cst.Name, cst.Attribute):
            from gpulint.analysis.calls import project_calls
            from gpulint.analysis.project import ClassSummary

            calls = self.analysis.fact(project_calls)
            cls = calls._lookup(func) if calls is not None else None
            if isinstance(cls, ClassSummary):
                base = _torch_optimizer_base(calls.project, cls)
                return frozenset({base}) if base is not None else None
        return None

    def configured_optimizers(self, expr: cst.BaseExpression, key: Optional[str] = None) -> Optional[frozenset]:
        """The `torch.optim` classes the project's configuration files name where `expr` reads the class name
        (`cfg.optimizer.type`, `cfg["optimizer"]["name"]`: the field `type` of the key `optimizer`), or under
        `key` (`config.init_obj('optimizer', torch.optim, ...)`: its `type`); None when a file does not say, or
        a name is not a `torch.optim` class (analysis/configured_names.py)."""
        from gpulint.analysis.configured_names import configured_names
        from gpulint.analysis.project import project_for

        if self.analysis.path is None:
            return None
        field: Optional[str] = "type"
        if key is None:
            parts = _access_path(expr)
            if len(parts) < 2:
                return None
            field, key = (parts[-1], parts[-2]) if parts[-1] in ("type", "name") else (None, parts[-1])
        names = configured_names(project_for(Path(self.analysis.path)), key, field)
        if not names:
            return None
        built = frozenset(f"torch.optim.{_OPTIMIZER_SPELLING.get(n.lower(), n)}" for n in names)
        return built if all(b.split(".")[-1] in _TORCH_OPTIMIZER_NAMES for b in built) else None

    def option_text(self, expr: cst.BaseExpression) -> Optional[str]:
        """The literal string default of the command-line option `expr` reads (`args.optim`, declared in this
        module with `default='Adam'` and never assigned; flags.ast_option_text), else None: the default run
        builds that class."""
        from gpulint.analysis.flags import ast_option_text
        from gpulint.analysis.project import project_for

        if type(expr) is not cst.Attribute or type(expr.value) is not cst.Name or self.analysis.path is None:
            return None
        here = Path(self.analysis.path).resolve()
        info = project_for(here).module(here)
        if info is None or getattr(info, "tree", None) is None:
            return None
        return ast_option_text(info, ast.Attribute(value=ast.Name(id=expr.value.value), attr=expr.attr.value))

    def _factory_on_cuda(self, call: cst.Call) -> bool:
        """A project function every `return` of which hands back a model it moved to a CUDA device."""
        from gpulint.analysis.calls import project_calls
        from gpulint.analysis.project import FunctionSummary

        if type(call.func) not in (cst.Name, cst.Attribute):
            return False
        calls = self.analysis.fact(project_calls)
        found = calls._lookup(call.func) if calls is not None else None
        if not isinstance(found, FunctionSummary):
            return False
        if found.returns_on_cuda:
            return True
        param = found.returns_on_device_param
        if param is None or any(a.star for a in call.args):
            return False
        # `g_model, ema, d_model = build_model(config, device)`, each moved `.to(device)` there: the caller's device
        params = [p for p in found.params if p not in ("self", "cls")]
        arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == param), None)
        if arg is None and param in params:
            plain = [a for a in call.args if a.keyword is None]
            at = params.index(param)
            arg = plain[at] if at < len(plain) else None
        return arg is not None and self.cuda_device(arg.value)

    def cuda_device(self, expr: cst.CSTNode, depth: int = 0, within: frozenset = frozenset()) -> bool:
        """`expr` names a CUDA device: "cuda:0", `torch.device("cuda")`, a device index, `"cuda" if ... else
        "cpu"`, or a name every assignment of which is one of these. A rebinding that reads the name it binds
        (`device = torch.device(device)`) reads the other bindings: `within` holds the ones being followed."""
        if depth > 4:
            return False
        text = string_value(expr)
        if text is not None:
            return text.startswith("cuda")
        if type(expr) is cst.FormattedString:
            return "".join(p.value for p in expr.parts if type(p) is cst.FormattedStringText).startswith("cuda")
        if type(expr) is cst.Integer:
            return True
        if type(expr) is cst.IfExp:
            return self.cuda_device(expr.body, depth + 1, within) or self.cuda_device(expr.orelse, depth + 1, within)
        if type(expr) is cst.Call:
            if type(expr.func) is cst.Attribute and expr.func.attr.value == "format":
                return (string_value(expr.func.value) or "").startswith("cuda")  # `'cuda:{:d}'.format(rank)`
            q = self.analysis.qualified(expr.func)
            if q == "torch.device" and expr.args:
                return self.cuda_device(expr.args[0].value, depth + 1, within)
            if type(expr.func) is cst.Name and expr.func.value == "int" and len(expr.args) == 1:
                return True  # `int(os.getenv("LOCAL_RANK", 0))`: a device index
            return q == "torch.cuda.current_device"
        if type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Add:
            left = expr.left
            while type(left) is cst.BinaryOperation and type(left.operator) is cst.Add:
                left = left.left
            return (string_value(left) or "").startswith("cuda")  # `"cuda:" + str(args.gpu)`
        if type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Modulo:
            if (string_value(expr.left) or "").startswith("cuda"):
                return True  # `"cuda:%d" % rank`
            # `rank % torch.cuda.device_count()`: a CUDA device index (DiT, many DDP scripts)
            right = expr.right
            return type(right) is cst.Call and self.analysis.qualified(right.func) == "torch.cuda.device_count"
        if type(expr) is cst.Attribute and self.analysis.loops.option_default_is_cuda(expr):
            return True  # `torch.device(args.device)` with `add_argument('--device', default='cuda')`
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value != "self":
            # `model.to(args.device)` where the script sets `args.device = device` of `device =
            # torch.device("cuda" if torch.cuda.is_available() else "cpu")`: every such assignment in the module
            values = self._assigned_attributes().get((expr.value.value, expr.attr.value), [])
            return bool(values) and all(self.cuda_device(v, depth + 1, within) for v in values)
        if type(expr) is cst.Name:
            # a binding on the no-CUDA branch (`if torch.cuda.is_available(): device = torch.device("cuda")
            # else: device = torch.device("cpu")`) never runs where the GPU is: like `"cuda" if ... else "cpu"`
            facts = data_facts(self.analysis)
            bindings = [b for b in facts.bindings(expr)
                        if id(b) not in within and (b.value is None or not self._without_cuda(b.value))]
            return bool(bindings) and all(
                self._cuda_argument(b, depth, within) if b.kind == "param" else
                self._returned_cuda(b) if b.index is not None and type(b.value) is cst.Call else
                b.value is not None and self.cuda_device(b.value, depth + 1, within | {id(b)}) for b in bindings)
        return False

    def device_from_project(self) -> bool:
        """The module takes its device from a project function that returns a CUDA device where there is one
        (`device, device_ids = prepare_device(config['n_gpu'])`): CUDA named one call away, as `clearly_cuda`
        asks of the module's own text."""
        if self._project_device is None:
            self._project_device = False
            for node in of_types(self.index, cst.Assign):
                if len(node.targets) != 1 or type(node.value) is not cst.Call:  # type: ignore[attr-defined]
                    continue
                target = node.targets[0].target  # type: ignore[attr-defined]
                names = [(None, target)] if type(target) is cst.Name else list(enumerate(
                    e.value for e in target.elements)) if type(target) is cst.Tuple else []
                for position, name in names:
                    if type(name) is cst.Name and "device" in name.value.lower() and \
                            self._returned_cuda_at(node.value, position):  # type: ignore[attr-defined]
                        self._project_device = True
                        return True
        return self._project_device

    def _returned_cuda_at(self, call: cst.Call, index: Optional[int]) -> bool:
        from gpulint.analysis.device_functions import ACCELERATOR, returned_device

        return returned_device(self.analysis, call, index) == ACCELERATOR

    def _returned_cuda(self, binding) -> bool:
        """`device, device_ids = prepare_device(n_gpu)`: element `index` of what a project function returns is
        a CUDA device where there is one (`torch.device('cuda:0' if n_gpu_use > 0 else 'cpu')`, as `"cuda" if
        torch.cuda.is_available() else "cpu"` reads; analysis/device_functions.py)."""
        return self._returned_cuda_at(binding.value, binding.index)

    def _cuda_argument(self, binding, depth: int, within: frozenset) -> bool:
        """A parameter (`def train(rank, ...)`: `.to(rank)`) that every call of its function in this module
        passes a CUDA device: `train(rank=int(os.getenv("RANK", 0)))` (an index) or `train(rank=device)` with
        `device = torch.device("cuda" if use_cuda else "cpu")`; a parameter with a default or never passed: no."""
        passed = list(data_facts(self.analysis).arguments_for(binding))
        return bool(passed) and all(self.cuda_device(a, depth + 1, within | {id(binding)}) for a in passed)

    def without_cuda(self, node: cst.CSTNode) -> bool:
        """`node` lies on a branch taken only where CUDA is unavailable (`LoopAnalysis.without_cuda`)."""
        return self._without_cuda(node)

    def _without_cuda(self, node: cst.CSTNode) -> bool:
        """`node` lies on a branch taken only where CUDA is unavailable (`LoopAnalysis.without_cuda`)."""
        child = node
        for parent in self.index.ancestors(node):
            if type(parent) is cst.If and self.analysis.loops.without_cuda(parent, child):
                return True
            if type(parent) is cst.If and test_mode_branch(self.analysis, parent, child):
                return True  # `if args.test_mode: device = "cpu"`: a smoke test, not the run (analysis/test_mode.py)
            if type(parent) in (cst.FunctionDef, cst.ClassDef, cst.Module):
                return False
            child = parent
        return False

    def parameter_owners(self, expr: cst.CSTNode, depth: int = 0) -> list[cst.Name]:
        """The names whose `.parameters()` (or `named_parameters()`) `expr` is built from, through names; each
        name once, in the order first met. Remembered per expression and depth: a chain of rebindings
        (`h = h + f(h)` many times over) is followed once per binding, not once per path through it."""
        key = (id(expr), depth)
        found = self._owners.get(key)
        if found is None:
            found = self._owners[key] = (expr, self._compute_owners(expr, depth))
        return found[1]

    def _compute_owners(self, expr: cst.CSTNode, depth: int) -> list[cst.Name]:
        if depth > 3:
            return []
        owners: dict[int, cst.Name] = {}
        for node in _walk(expr):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    node.func.attr.value in ("parameters", "named_parameters"):
                owner = node.func.value
                while type(owner) is cst.Attribute and owner.attr.value == "module":
                    owner = owner.value  # `model.module.parameters()` of a DDP wrapper
                if type(owner) is cst.Attribute:
                    root = owner
                    while type(root) is cst.Attribute:
                        root = root.value
                    if type(root) is cst.Name and root.value != "self" and self.analysis.kind(root) is Kind.MODULE:
                        owner = root  # `model.module.layer1.parameters()`: a submodule moves with its model
                if type(owner) is cst.Name:
                    for found in self._iterated_submodules(owner):
                        owners.setdefault(id(found), found)
            elif type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    type(node.func.value) is cst.Name and _PARAMETER_GROUPS.search(node.func.attr.value) and \
                    self.analysis.kind(node.func.value) is Kind.MODULE:
                # `policies = model.get_optim_policies()`, `model.optim_parameters(args)`: the model hands out
                # its own parameters, grouped
                owners.setdefault(id(node.func.value), node.func.value)
            elif type(node) is cst.Attribute and type(node.value) is cst.Name and self._parameter_list(expr, node, depth):
                # `{'params': model.params1}`: a list of parameters the model keeps on itself (its own
                # `self.params1 = list(self.convs.parameters())`); they move with the model
                owners.setdefault(id(node.value), node.value)
            elif type(node) is cst.Name and not _is_attribute_name(self.analysis, node):
                bindings = data_facts(self.analysis).bindings(node)
                for module in self._walked_modules_of(node, bindings):
                    # `pg1.append(v.weight)` for `k, v in model.named_modules()`: the model's own parameters
                    owners.setdefault(id(module), module)
                for b in bindings:
                    if b.kind == "assign" and b.value is not None or _over_parameters(b):
                        for owner in self.parameter_owners(b.value, depth + 1):
                            owners.setdefault(id(owner), owner)
                for added in self._appended(node, bindings):
                    # `params_list = []`, then `params_list.append(dict(params=module.parameters(), lr=lr))`
                    for owner in self.parameter_owners(added, depth + 1):
                        owners.setdefault(id(owner), owner)
        return list(owners.values())

    def _walked_modules_of(self, name: cst.Name, bindings) -> list[cst.Name]:
        """The model whose submodules a loop binds the name to: `for k, v in model.named_modules():` (the second
        element) or `for v in model.modules():`; the loop around the read, else every binding such a loop over
        one model."""
        found: list[cst.Name] = []
        around = [b for b in bindings if b.kind == "for" and b.source is not None and
                  self.index.is_ancestor_or_self(b.source, name)]
        for b in around[-1:] or bindings:
            value = b.value if b.kind == "for" else None
            if type(value) is not cst.Call or type(value.func) is not cst.Attribute or \
                    type(value.func.value) is not cst.Name or value.args:
                return []
            method = value.func.attr.value
            if not (method == "modules" and b.index is None or method == "named_modules" and b.index == 1):
                return []
            found.append(value.func.value)
        return found[:1] if found and len({f.value for f in found}) == 1 else []

    def _appended(self, name: cst.Name, bindings) -> list[cst.BaseExpression]:
        """What `name.append(x)` / `name.extend(x)` adds to a list `name` is bound to empty (`params = []`) in
        the same scope: the groups of parameters built one by one."""
        if not bindings or not all(b.kind == "assign" and b.index is None and _empty_list(b.value) for b in bindings):
            return []
        scope = self.index.enclosing_scope(name)
        return [call.args[0].value for call in self._method_calls_on().get(name.value, ())
                if call.func.attr.value in ("append", "extend") and len(call.args) == 1  # type: ignore[attr-defined]
                and not call.args[0].star and self.index.enclosing_scope(call) is scope]

    def _iterated_submodules(self, owner: cst.Name) -> list[cst.Name]:
        """`owner` itself, or, where `owner` is the target of loops over lists of one model's submodules
        (`for module in modules_ori:` of `modules_ori = [model.layer0, model.layer1]`), that model."""
        facts = data_facts(self.analysis)
        bindings = facts.bindings(owner)
        if not bindings or any(b.kind != "for" or b.index is not None for b in bindings):
            return [owner]
        elements: list = []
        for b in bindings:
            listed = b.value
            if type(listed) is cst.Name:
                lists = facts.bindings(listed)
                if not lists or not all(x.kind == "assign" and x.index is None and
                                        type(x.value) in (cst.List, cst.Tuple) for x in lists):
                    return [owner]
                elements.extend(e for x in lists for e in x.value.elements)  # type: ignore[union-attr]
            elif type(listed) in (cst.List, cst.Tuple):
                elements.extend(listed.elements)  # type: ignore[union-attr]
            else:
                return [owner]
        bases = [e.value.value for e in elements if type(e) is cst.Element and type(e.value) is cst.Attribute]
        if not elements or len(bases) != len(elements) or \
                any(type(b) is not cst.Name for b in bases) or len({b.value for b in bases}) != 1:
            return [owner]
        return [bases[0]]

    def _parameter_list(self, expr: cst.CSTNode, node: cst.Attribute, depth: int) -> bool:
        """`node` (`model.params1`) is handed to the optimizer as a whole list of parameters: the params
        expression itself or an element of its list (the optimizer's own argument, `depth` 0), or the
        `'params'` value of a parameter group; never a hyper-parameter (`'lr': args.lr`), a part of a larger
        expression, nor a value a name read on the way stands for (`k=dataset.num_classes` of the model's
        constructor)."""
        if node is expr:
            return depth == 0
        parent = self.analysis.parent(node)
        if type(parent) is cst.Element:
            return depth == 0 and type(self.analysis.parent(parent)) in (cst.List, cst.Tuple) \
                and self.analysis.parent(parent) is expr
        if type(parent) is cst.DictElement and parent.value is node:
            return string_value(parent.key) == "params"
        return False

    # -- models too small for the throughput levers ---------------------------------------------------------
    def worth_a_lever(self) -> bool:
        """Not a test module (a test's toy model) and not a toy program (`toy_program`). A module named like a
        test that runs as a script (TCN's `pmnist_test.py`: argparse, a training loop, no test) is a program."""
        from gpulint.analysis.test_code import is_test_path, program_named_like_a_test

        path = self.analysis.path
        return not (is_test_path(path) and not program_named_like_a_test(self.analysis.module, path)) and \
            not self.toy_program()

    def matmul_heavy(self) -> bool:
        """The module builds its model's layers itself, with linear/attention/embedding layers and no
        convolutions: fp32 matmuls (TF32's domain). A convolutional network already runs its convolutions in
        TF32 by default (`torch.backends.cudnn.allow_tf32`), and a model built elsewhere cannot be told."""
        from gpulint.analysis.node_types import of_types

        if self._built_elsewhere():
            return False
        layers = [n for n in of_types(self.index, cst.Call) if self.analysis.qualified(n.func) in _WEIGHT_LAYERS]
        built = {self.analysis.qualified(n.func) for n in layers}
        if not built or any("Conv" in q for q in built):  # type: ignore[operator]
            return False
        if built & _ATTENTION_LAYERS:
            return True
        # widths written out (or bound once to an integer) and all narrow (cleanrl's `Linear(obs, 120)`,
        # `Linear(120, 84)`, `Linear(64, 64)`): each matmul is a handful of tensor-core tiles, bound by its
        # launch, and TF32 changes nothing measurable; widths from a config or arguments stay unknown: heavy.
        sizes = [self._integer(a.value) for n in layers for a in n.args[:2] if a.keyword is None and not a.star]
        known = [s for s in sizes if s is not None]
        return not known or max(known) >= _WIDE_MATMUL

    def _built_elsewhere(self) -> bool:
        """Some model of the module comes from elsewhere: a registry (`models.__dict__[arch](...)`), a model
        library, a class of another module: what it computes cannot be read here."""
        from gpulint.analysis.kinds import Kind
        from gpulint.analysis.node_types import of_types

        local = {c.name.value for c in of_types(self.index, cst.ClassDef)}
        for node in of_types(self.index, cst.Call):
            func = node.func  # type: ignore[attr-defined]
            q = self.analysis.qualified(func)
            if type(func) is cst.Subscript or q is not None and (
                    q.startswith(_MODEL_LIBRARIES) or q.endswith(("from_pretrained", "create_model"))):
                return True
            if self.analysis.kind(func) is Kind.MODULE_CLASS and not (type(func) is cst.Name and func.value in local) \
                    and not (q or "").startswith("torch."):
                return True
        return False

    def toy_program(self) -> bool:
        """The module builds exactly one layer with weights (`torch.nn.Linear(20, 1)`, a DDP tutorial's
        placeholder) and no other model (no project `nn.Module`, no library model factory): nothing a Tensor
        Core, TF32 or a fused optimizer speeds up measurably."""
        if self._toy is None:
            from gpulint.analysis.kinds import Kind
            from gpulint.analysis.node_types import of_types

            layers = 0
            sizes: list[Optional[int]] = []
            self._toy = False
            for node in of_types(self.index, cst.Call):
                q = self.analysis.qualified(node.func)  # type: ignore[attr-defined]
                if type(node.func) is cst.Subscript or q is not None and (
                        q.startswith(_MODEL_LIBRARIES) or q.endswith(("from_pretrained", "create_model"))):
                    return False  # `models.__dict__[arch](...)`, a registry, a library's model: a real model
                if q is None or type(node.func) is cst.Attribute and q.split(".")[-1] in _MODULE_MOVES:
                    continue  # `Net().cuda()`, `model.to(device)`: the model was counted where it was built
                if q in _WEIGHT_LAYERS:
                    layers += 1
                    sizes.append(self._weights(node))
                elif q.startswith("torch.nn.") or q in _MODEL_WRAPPERS:
                    continue  # activations, norms, losses, containers, DDP
                elif self.analysis.kind(node) is Kind.MODULE or self.analysis.kind(node.func) is Kind.MODULE_CLASS:
                    return False  # a real model built here
            # layers whose sizes are written out and small (the tutorial MLP `Linear(32, 64)`), or one layer of
            # sizes not written out (a probe's `Linear(dim, classes)` alone)
            self._toy = sizes == [None] or bool(sizes) and None not in sizes and sum(sizes) < _TOY_WEIGHTS  # type: ignore
        return self._toy

    def _weights(self, layer: cst.Call) -> Optional[int]:
        """In x out of a layer whose first two sizes are integers written in the module, else None."""
        args = [a.value for a in layer.args if a.keyword is None and not a.star]
        values = [self._integer(a) for a in args[:2]]
        if len(values) != 2 or None in values:
            return None
        weights = values[0] * values[1]  # type: ignore[operator]
        q = self.analysis.qualified(layer.func) or ""
        if "Conv" in q:  # times the kernel's size per dimension (`Conv2d(64, 256, 3)`: 3 x 3)
            kernel = self._integer(args[2]) if len(args) > 2 else None
            if kernel is None:
                return None
            weights *= kernel ** int(q[-2]) if q[-2].isdigit() else kernel
        return weights

    def _integer(self, expr: cst.BaseExpression) -> Optional[int]:
        if type(expr) is cst.Integer:
            return int(expr.evaluated_value)
        if type(expr) is cst.Name:
            bindings = data_facts(self.analysis).bindings(expr)
            if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].value, cst.Integer):
                return int(bindings[0].value.evaluated_value)
        return None

    def probe_parameters(self, params: cst.CSTNode) -> bool:
        """An optimizer's parameters that are a linear probe's: a `requires_grad` filter in a module that freezes
        parameters itself (`param.requires_grad = False` for all but the head: a frozen backbone's trainable
        head), or the parameters of a module whose class, defined in this module, builds one layer with weights
        (`LinearClassifier` of a linear evaluation)."""
        source = self.analysis.source if self.analysis.source is not None else self.analysis.module.code
        if _FREEZES.search(source) and not self._freezes_norms_only():
            texts = [self.analysis.code(params)] + [
                self.analysis.code(b.value) for name in _names_in(params)
                for b in data_facts(self.analysis).bindings(name) if b.kind == "assign" and b.value is not None]
            if any("requires_grad" in text for text in texts):
                return True
        owners = list(self.parameter_owners(params))
        return bool(owners) and all(self._one_layer_class(o) for o in owners)

    def _freezes_norms_only(self) -> bool:
        """Every `.requires_grad = False` / `.requires_grad_(False)` of the module sits under an `if isinstance(m,
        nn.BatchNorm2d):` (a test naming a normalisation layer): frozen batch-norm weights (`--freeze_bn`), not a
        frozen backbone whose trainable head is a linear probe."""
        freezes = [n for n in of_types(self.index, cst.Assign)
                   if any(type(t.target) is cst.Attribute and t.target.attr.value == "requires_grad"
                          for t in n.targets) and type(n.value) is cst.Name and n.value.value == "False"]
        freezes += [n for n in of_types(self.index, cst.Call)
                    if type(n.func) is cst.Attribute and n.func.attr.value == "requires_grad_" and n.args and
                    type(n.args[0].value) is cst.Name and n.args[0].value.value == "False"]
        return bool(freezes) and all(any(
            type(a) is cst.If and type(a.test) is cst.Call and dotted_name(a.test.func) == "isinstance" and
            "Norm" in self.analysis.code(a.test) for a in self.index.ancestors(f)) for f in freezes)

    def _one_layer_project_class(self, call: cst.Call) -> bool:
        """`call` builds a class of another project module whose methods build exactly one layer with weights
        (`class LogisticRegression(nn.Module)` holding one `nn.Linear`), and that has no project base class."""
        from gpulint.analysis.calls import project_calls
        from gpulint.analysis.project import ClassSummary, _dotted

        calls = self.analysis.fact(project_calls)
        found = calls._lookup(call.func) if calls is not None else None
        if not isinstance(found, ClassSummary) or any(calls.project.lookup(found.path, b) is not None
                                                      for b in found.bases):
            return False
        info = calls.project.module(found.path)
        if info is None:
            return False
        layers = 0
        for fn in found.methods.values():
            for node in ast.walk(fn):
                if isinstance(node, (ast.For, ast.While, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)) \
                        and any(isinstance(n, ast.Call) and info.qualify(_dotted(n.func) or "") in _WEIGHT_LAYERS
                                for n in ast.walk(node)):
                    return False  # `nn.ModuleList(nn.Linear(d, d) for _ in range(4))`: a layer per block
                if not isinstance(node, ast.Call):
                    continue
                dotted = _dotted(node.func) or ""
                if info.qualify(dotted) in _WEIGHT_LAYERS:
                    layers += 1
                elif dotted and isinstance(calls.project.lookup(found.path, dotted), ClassSummary):
                    return False  # a submodule of the project's own (`Gate(dim)`): more than one layer
        return layers == 1

    def _one_layer_class(self, owner: cst.Name, depth: int = 0) -> bool:
        from gpulint.analysis.node_types import of_types

        classes = {c.name.value: c for c in of_types(self.index, cst.ClassDef)}
        for b in data_facts(self.analysis).bindings(owner):
            value = b.value
            while type(value) is cst.Call and type(value.func) is cst.Attribute and \
                    value.func.attr.value in _MODULE_MOVES:
                value = value.func.value
            while type(value) is cst.Attribute and value.attr.value == "module":
                value = value.value  # `model_without_ddp = model.module`
            if b.kind == "assign" and b.index is None and type(value) is cst.Name and value.value != owner.value:
                if depth < 3 and self._one_layer_class(value, depth + 1):
                    continue  # `model_without_ddp = model`: a second name, the model's own bindings decide
                return False
            if b.kind == "assign" and type(value) is cst.Name:
                continue  # `probe = probe.cuda()`: the binding it moves decides
            if b.kind != "assign" or type(value) is not cst.Call:
                return False
            if self.analysis.qualified(value.func) in _MODEL_WRAPPERS:
                # `DataParallel(resnet.__dict__[args.arch]())`: a wrapper of the model the other bindings build
                # (`model = DDP(model)`), or of what it is handed, which decides
                wrapped = argument(value, "module", 0)
                wrapped_value = wrapped.value if wrapped is not None else None
                if type(wrapped_value) is cst.Name and wrapped_value.value == owner.value:
                    continue
                if type(wrapped_value) is cst.Name and depth < 3 and self._one_layer_class(wrapped_value, depth + 1):
                    continue
                if type(wrapped_value) is not cst.Call:
                    return False
                value = wrapped_value
                while type(value) is cst.Call and type(value.func) is cst.Attribute and \
                        value.func.attr.value in _MODULE_MOVES:
                    value = value.func.value
                if type(value) is not cst.Call:
                    return False
            if self.analysis.qualified(value.func) in _WEIGHT_LAYERS:
                continue  # one layer
            cls = classes.get(value.func.value) if type(value.func) is cst.Name else None
            if cls is None:
                if self._one_layer_project_class(value):
                    continue  # `LogisticRegression(n_features, n_classes)` of the project's modules
                return False
            if sum(1 for n in _all_below(cls) if type(n) is cst.Call and
                   self.analysis.qualified(n.func) in _WEIGHT_LAYERS) != 1:
                return False
        return True


_WIDE_MATMUL = 512  # a layer this wide (in or out) is where TF32's tensor-core rate can show; narrower ones are launch-bound
_ATTENTION_LAYERS = frozenset(f"torch.nn.{name}" for name in (
    "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer"))
_TOY_WEIGHTS = 100_000  # below this many weights in all (written-out sizes), a model is a toy for these levers
_MODEL_LIBRARIES = ("torchvision.models", "timm.", "transformers.", "torch.hub.", "diffusers.")
_FREEZES = re.compile(r"requires_grad\s*=\s*False|requires_grad_\(\s*False")
# Layers with weights: one of them alone is a placeholder or a linear probe, not a model worth a lever.
_WEIGHT_LAYERS = frozenset(f"torch.nn.{name}" for name in (
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Embedding", "EmbeddingBag", "LSTM", "GRU", "RNN", "MultiheadAttention", "Transformer",
    "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer"))
_MODEL_WRAPPERS = frozenset(("torch.compile", "torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel",
                             "torch.nn.parallel.DataParallel", "torch.nn.SyncBatchNorm.convert_sync_batchnorm"))


def _imported_cuda(project, importer: Path, name: str, depth: int = 0) -> bool:
    """`name`, read in `importer` without a binding there, is imported (by name or through `from m import *`,
    followed module by module) from a project module whose top-level assignments of it all name a CUDA device."""
    info = project.module(importer)
    if info is None or depth > 4:
        return False
    owners: list[tuple[Path, str]] = []
    if name in info.imports:
        module, attr, level = info.imports[name]
        owner = project.resolver.resolve(module, info.path, level) if attr is not None and (module or level) else None
        if owner is not None and owner != info.path:
            owners.append((owner, attr))
    else:
        for module, level in info.star_imports:
            owner = project.resolver.resolve(module, info.path, level) if (module or level) else None
            if owner is not None and owner != info.path:
                owners.append((owner, name))
    for owner, attr in owners:
        target = project.module(owner)
        if target is None:
            continue
        values = [stmt.value for stmt in target.tree.body if isinstance(stmt, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == attr for t in stmt.targets)]
        if values:
            if all(_cuda_value(v) for v in values):
                return True
            continue
        if _imported_cuda(project, owner, attr, depth + 1):
            return True
    return False


def _cuda_value(expr: ast.expr, depth: int = 0) -> bool:
    """`"cuda"`, `torch.device("cuda:0" if torch.cuda.is_available() else "cpu")`, `"cuda" if ... else "cpu"`."""
    if depth > 3:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and expr.value.startswith("cuda")
    if isinstance(expr, ast.IfExp):
        return _cuda_value(expr.body, depth + 1) or _cuda_value(expr.orelse, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, (ast.Attribute, ast.Name)) and expr.args and \
            (expr.func.attr if isinstance(expr.func, ast.Attribute) else expr.func.id) == "device":
        return _cuda_value(expr.args[0], depth + 1)
    return False


def _parameter_of(call: cst.Call, arg: cst.Arg, init) -> Optional[str]:
    """The parameter of the `ast` method `init` (an `__init__`, `self` first) that `arg` of the class call
    `call` is passed to."""
    if init is None or arg.star:
        return None
    positional = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]
    if arg.keyword is not None:
        return arg.keyword.value if arg.keyword.value in positional + [a.arg for a in init.args.kwonlyargs] else None
    at = [a for a in call.args if a.keyword is None].index(arg)
    return positional[at] if at < len(positional) else None


def _kept_as(cls, param: str, project=None, depth: int = 0) -> set:
    """The `self.<attr>` names the `__init__` of the `ast` class summary `cls` binds to its parameter `param`;
    with `project`, also those a project base class's `__init__` binds where `super().__init__(..., param, ...)`
    hands it on (pytorch-template's `Trainer` -> `BaseTrainer`: `self.optimizer = optimizer`)."""
    import ast

    init = cls.methods.get("__init__")
    kept: set = set()
    for node in ast_walk.walk(init) if init is not None else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == param:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                        target.value.id == "self":
                    kept.add(target.attr)
        if project is not None and depth < 3 and isinstance(node, ast.Call) and \
                isinstance(node.func, ast.Attribute) and node.func.attr == "__init__" and \
                isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name) and \
                node.func.value.func.id == "super":
            kept |= _kept_by_base(project, cls, node, param, depth)
    return kept


def _kept_by_base(project, cls, call, param: str, depth: int) -> set:
    """`super().__init__(model, criterion, metric_ftns, optimizer, config)` handing `param` on: what the first
    project base's `__init__` keeps it as."""
    import ast

    from gpulint.analysis.hierarchy import project_bases

    bases = project_bases(project, cls)
    base = next((b for b in bases if "__init__" in b.methods), None)
    if base is None:
        return set()
    init = base.methods["__init__"]
    positional = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]  # without `self`
    for at, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return set()
        if isinstance(arg, ast.Name) and arg.id == param and at < len(positional):
            return _kept_as(base, positional[at], project, depth + 1)
    for keyword in call.keywords:
        if keyword.arg is not None and isinstance(keyword.value, ast.Name) and keyword.value.id == param:
            return _kept_as(base, keyword.arg, project, depth + 1)
    return set()


def _steps_attribute(method, attrs: set) -> bool:
    """`self.<attr>.step()` (or `scaler.step(self.<attr>)`) in the `ast` function `method`, for an attr of `attrs`."""
    import ast

    def kept(expr) -> bool:
        return isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" \
            and expr.attr in attrs

    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
               and (kept(n.func.value) or len(n.args) == 1 and kept(n.args[0])) for n in ast_walk.walk(method))


def _wrapper_steps(cls, param: str) -> bool:
    """The `step` method of the project class `cls` steps the optimizer its `__init__` keeps from `param`."""
    attrs = _kept_as(cls, param)
    step = cls.methods.get("step")
    return bool(attrs) and step is not None and _steps_attribute(step, attrs)


def _class_steps(cls, param: str, project=None) -> bool:
    """A method of the project class `cls` runs a backward pass (`loss.backward()`, `scaler.scale(loss)
    .backward()`) and steps the optimizer its `__init__` keeps from `param` (or a base class's, `_kept_as`)."""
    import ast

    attrs = _kept_as(cls, param, project)
    if not attrs:
        return False
    for name, method in cls.methods.items():
        if name == "__init__":
            continue
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
               for n in ast_walk.walk(method)) and _steps_attribute(method, attrs):
            return True
    return False


def _method_steps(calls, call: cst.Call, arg: cst.Arg) -> bool:
    """`call` is `x.method(..., optimizer, ...)` on an instance of project classes (every one known,
    `instance_classes`), and in each of them the method (its own or a base class's) has a loop that runs a
    backward pass and steps the parameter `arg` arrives as: `trainer.train(epoch, loader, optimizer)`."""
    from gpulint.analysis import _method_node

    if arg.star:
        return False
    classes = calls.instance_classes(call.func.value)
    if not classes:
        return False
    for cls in classes:
        method = calls.project.method(cls, call.func.attr.value)
        fn = _method_node(calls.project, method) if method is not None else None
        if fn is None or any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
                             for d in fn.decorator_list):
            return False
        param = _parameter_of(call, arg, fn)
        if param is None or not _steps_in_a_loop(fn, param):
            return False
    return True


def _steps_in_a_loop(fn, param: str) -> bool:
    """A `for`/`while` loop of the `ast` function `fn` runs `.backward()` and steps the optimizer `param`:
    `param.step()`, or `scaler.step(param)` of a gradient scaler."""
    import ast

    for loop in ast_walk.walk(fn):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        backward = stepped = False
        for node in (n for stmt in loop.body for n in ast_walk.walk(stmt)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "backward":
                    backward = True
                elif node.func.attr == "step" and (
                        isinstance(node.func.value, ast.Name) and node.func.value.id == param
                        or len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == param):
                    stepped = True
        if backward and stepped:
            return True
    return False


def _all_below(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every node below it, nested definitions included (a class's methods)."""
    from gpulint.analysis.tree import child_nodes

    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))


def _names_in(expr: cst.CSTNode) -> list[cst.Name]:
    return [n for n in _walk(expr) if type(n) is cst.Name]


def _is_dtype(analysis: ModuleAnalysis, expr: cst.CSTNode) -> bool:
    q = analysis.qualified(expr) if type(expr) in (cst.Name, cst.Attribute) else None
    return q is not None and q.startswith("torch.") and q.split(".")[-1] in _DTYPES


def _is_attribute_name(analysis: ModuleAnalysis, name: cst.Name) -> bool:
    parent = analysis.parent(name)
    return type(parent) is cst.Attribute and parent.attr is name


def training_facts(analysis: ModuleAnalysis) -> TrainingFacts:
    return analysis.fact(TrainingFacts)


# torch.optim's optimizer classes (a configured name must be one of them to be judged)
_TORCH_OPTIMIZER_NAMES = frozenset({"Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "ASGD", "LBFGS",
                                    "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam"})
# Lower-case spellings configs use for them (`optimizer: adam`), when the code maps them by name
_OPTIMIZER_SPELLING = {n.lower(): n for n in _TORCH_OPTIMIZER_NAMES}


def _access_path(expr: cst.BaseExpression) -> list[str]:
    """`cfg.optimizer.type` / `cfg["optimizer"]["type"]` -> ["cfg", "optimizer", "type"]; [] for anything else."""
    parts: list[str] = []
    while True:
        if type(expr) is cst.Attribute:
            parts.append(expr.attr.value)
            expr = expr.value
        elif type(expr) is cst.Subscript and len(expr.slice) == 1 and type(expr.slice[0].slice) is cst.Index and \
                type(expr.slice[0].slice.value) is cst.SimpleString:
            value = expr.slice[0].slice.value.evaluated_value
            if not isinstance(value, str):
                return []
            parts.append(value)
            expr = expr.value
        elif type(expr) is cst.Name:
            parts.append(expr.value)
            return list(reversed(parts))
        else:
            return []


def _torch_optimizer_base(project, cls) -> Optional[str]:
    """The `torch.optim` class a project optimizer class builds on (`class AdamW(torch.optim.AdamW, Base)`),
    when what `fused=` changes still runs and `fused=True` can be passed: every class on the way leaves `step` to
    torch or calls `super().step(...)` in its override (OLMo's AdamW does, unless it records update metrics),
    and leaves `__init__` alone or hands its `**kwargs` to `super().__init__(...)`. A subclass with its own
    update (`step` never calling torch's) makes `fused` moot: None."""
    import ast

    from gpulint.analysis.forward import _calls_super
    from gpulint.analysis.hierarchy import first_bases
    from gpulint.analysis.project import ClassSummary

    # the chain of first project bases, five classes deep; a `torch.optim` base written before a class's first
    # project base ends it (`class AdamW(torch.optim.AdamW, Base)`)
    for current in first_bases(project, cls, 5):
        step = current.methods.get("step")
        if step is not None and not _calls_super(step, "step"):
            return None
        init = current.methods.get("__init__")
        if init is not None:
            kwargs = init.args.kwarg.arg if init.args.kwarg is not None else None
            if kwargs is None or not any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
                    and any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwargs
                            for k in n.keywords)
                    for n in ast_walk.walk(init)):
                return None
        info = project.module(current.path)
        for base in current.bases:
            qualified = info.qualify(base) if info is not None and base else ""
            if qualified.startswith("torch.optim."):
                return qualified
            found = project.lookup(current.path, base) if base else None
            if isinstance(found, ClassSummary) and found is not current:
                break  # the class `first_bases` goes on to
    return None


# `torch.set_default_dtype(torch.float64)`, `tools.set_default_dtype(args.default_dtype)` (a project helper around
# it), `torch.set_default_tensor_type(torch.DoubleTensor)`: the program picks the dtype every parameter is built in
# (an interatomic potential or a physics model trained in float64 on purpose); anything but an explicit fp32.
_DEFAULT_DTYPE_FILES = 12
_FP32 = frozenset({"torch.float32", "torch.float", "float32", "torch.FloatTensor", "torch.cuda.FloatTensor"})


def project_default_dtype(analysis) -> bool:
    """Fact provider: a non-test file of the module's project sets torch's default dtype to something other than
    fp32: the run's precision is chosen, whichever module holds the training step (GPU403 says nothing; bf16
    autocast would undo a float64 model's point). At most `_DEFAULT_DTYPE_FILES` files naming
    `set_default_dtype`/`set_default_tensor_type` are read (the project model's `ast` of each)."""
    if analysis.path is None:
        return False
    from gpulint.analysis.forward import _project_of
    from gpulint.analysis.project import text_dependency

    project, _ = analysis.fact(_project_of)
    files = project.files_naming("set_default_dtype") + project.files_naming("set_default_tensor_type")
    files = [f for f in files if not _test_path(f)]
    for file in files[:_DEFAULT_DTYPE_FILES]:
        with text_dependency():
            info = project.module(Path(file))
        tree = getattr(info, "tree", None) if info is not None else None
        if tree is None:
            continue
        for node in ast_walk.walk(tree):
            if not isinstance(node, ast.Call) or len(node.args) != 1 or node.keywords:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name not in ("set_default_dtype", "set_default_tensor_type"):
                continue
            arg = node.args[0]
            text = ast.unparse(arg) if not isinstance(arg, ast.Constant) else str(arg.value)
            if text not in _FP32:
                return True
    return False


def _test_path(path) -> bool:
    parts = Path(path).parts
    return any(p in ("tests", "test") for p in parts[:-1]) or Path(path).name.startswith("test_")


def _has_parameters_call(expr: cst.CSTNode) -> bool:
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute
               and n.func.attr.value in ("parameters", "named_parameters") for n in _walk(expr))


def _called_name(func: cst.BaseExpression) -> str:
    if type(func) is cst.Attribute:
        return func.attr.value
    if type(func) is cst.Name:
        return func.value
    return ""


def _class_chain(project, cls, depth: int = 0) -> list:
    """`cls` and its project base classes (depth first, at most four levels)."""
    from gpulint.analysis.project import ClassSummary

    chain = [cls]
    if depth < 4:
        for base in cls.bases:
            found = project.lookup(cls.path, base) if base else None
            if isinstance(found, ClassSummary) and found not in chain:
                chain.extend(c for c in _class_chain(project, found, depth + 1) if c not in chain)
    return chain


def _member_moves_to_cuda(chain: list, member: str, outer=None) -> bool:
    """Every store of `self.<member>` in the classes of `chain` that moves it (`= x.to(dev)`, `= x.cuda()`)
    moves it to a possible CUDA device (`_self_device`), and there is one."""
    from gpulint.analysis.project import _is_dtype, _self_stores

    moves: list[bool] = []
    for cls in chain:
        for node in _self_stores(cls).get(member, ()):
            value = node.value
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
                continue
            if value.func.attr == "cuda":
                moves.append(True)
            elif value.func.attr == "to":
                device = value.args[0] if value.args else next(
                    (k.value for k in value.keywords if k.arg == "device"), None)
                if device is not None and not _is_dtype(device):
                    moves.append(_self_device(chain, device, outer=outer if cls is chain[0] else None))
        for call in _in_place_moves(cls, member):
            # `self.unet.to(self.device)` on a statement of its own: `Module.to` moves the module in place
            if call.func.attr == "cuda":  # type: ignore[attr-defined]
                moves.append(True)
                continue
            device = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "device"), None)
            if device is not None and not _is_dtype(device):
                moves.append(_self_device(chain, device, outer=outer if cls is chain[0] else None))
    return bool(moves) and all(moves)


def _in_place_moves(cls, member: str) -> list:
    """The calls `self.<member>.to(...)` / `self.<member>.cuda()` that methods of `cls` (a `ClassSummary`)
    make as statements of their own (the result not stored: the module moves in place)."""
    found = []
    for method in cls.methods.values():
        for node in ast.walk(method):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
                    isinstance(node.value.func, ast.Attribute) and node.value.func.attr in ("to", "cuda") and \
                    isinstance(node.value.func.value, ast.Attribute) and node.value.func.value.attr == member and \
                    isinstance(node.value.func.value.value, ast.Name) and node.value.func.value.value.id == "self":
                found.append(node.value)
    return found


def _self_device(chain: list, device: ast.expr, depth: int = 0, outer=None) -> bool:
    """`device` may be a CUDA device, and is nothing else than CUDA or the CPU: "cuda:0", `torch.device("cuda"
    if c else "cpu")`, or a `self.<attr>` every store of which in `chain` is one of these (`self.dev = "cuda:0"`
    on one branch of an option, `"cpu"` on the other), one of them CUDA."""
    from gpulint.analysis.project import _self_stores

    def kinds(expr: ast.expr, depth: int) -> Optional[set]:
        if depth > 6:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            text = expr.value
            return {"cuda"} if text.startswith("cuda") else {"cpu"} if text == "cpu" else None
        if isinstance(expr, ast.IfExp):
            body, orelse = kinds(expr.body, depth + 1), kinds(expr.orelse, depth + 1)
            return body | orelse if body is not None and orelse is not None else None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "device" \
                and expr.args and not expr.keywords:
            return kinds(expr.args[0], depth + 1)  # `torch.device(...)`
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format" \
                and isinstance(expr.func.value, ast.Constant):
            return kinds(expr.func.value, depth + 1)  # `'cuda:{}'.format(args.gpu)`
        if isinstance(expr, ast.JoinedStr) and expr.values and isinstance(expr.values[0], ast.Constant):
            return kinds(expr.values[0], depth + 1)  # f"cuda:{rank}"
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add) and isinstance(expr.left, ast.Constant):
            return kinds(expr.left, depth + 1)  # "cuda:" + str(rank)
        if isinstance(expr, ast.Call) and not expr.args and not expr.keywords \
                and isinstance(expr.func, ast.Attribute) and isinstance(expr.func.value, ast.Name) \
                and expr.func.value.id == "self":
            # `self.device = self._acquire_device()`: the method's returns, each a device or a local name bound
            # to one (`device = torch.device('cuda:{}'.format(gpu))` on one branch, `'cpu'` on the other)
            method = next((c.methods[expr.func.attr] for c in chain if expr.func.attr in c.methods), None)
            if method is None:
                return None
            found = set()
            for node in ast.walk(method):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not method:
                    return None  # a nested function's returns are not the method's
                if not isinstance(node, ast.Return):
                    continue
                if node.value is None:
                    return None
                values = [node.value]
                if isinstance(node.value, ast.Name):
                    name = node.value.id
                    simple = [a for a in ast.walk(method) if isinstance(a, ast.Assign)
                              for t in a.targets if isinstance(t, ast.Name) and t.id == name]
                    stores = [n for n in ast.walk(method) if isinstance(n, ast.Name) and n.id == name
                              and isinstance(n.ctx, ast.Store)]
                    params = {a.arg for a in method.args.args + method.args.kwonlyargs + method.args.posonlyargs}
                    if not simple or len(simple) != len(stores) or name in params:
                        return None  # also bound by a loop, an unpacking, `+=`, or a parameter: not only these
                    values = [a.value for a in simple]
                for value in values:
                    one = kinds(value, depth + 1)
                    if one is None:
                        return None
                    found |= one
            return found or None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            found: set = set()
            stores = [n for cls in chain for n in _self_stores(cls).get(expr.attr, ())]
            for node in stores:
                if isinstance(node, ast.AugAssign):
                    return None
                one = kinds(node.value, depth + 1) if node.value is not None else None
                if one is None:
                    return None
                found |= one
            return found or None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and outer is not None:
            # `self.device = torch.device(args.device)` with the script's `args.device = "cuda"` on one branch
            # and `"cpu"` on the other (`outer`: the module's own assignments of that attribute)
            values = outer(expr.value.id, expr.attr)
            found = set()
            for value in values:
                text = string_value(value)
                if text is None:
                    return None
                if not (text.startswith("cuda") or text == "cpu"):
                    return None
                found.add("cuda" if text.startswith("cuda") else "cpu")
            return found or None
        return None

    found = kinds(device, depth)
    return found is not None and "cuda" in found
