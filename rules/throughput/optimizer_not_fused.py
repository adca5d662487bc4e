"""GPU402 `optimizer-not-fused`."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from gpulint.analysis import GPU_HINT

from gpulint.analysis.data_facts import append_keyword, data_facts, has_star_args, keyword, star_keywords
from gpulint.analysis.project import display_path
from gpulint.analysis.training import LOOPING_LIBRARY_OPTIMIZERS, training_facts
from gpulint.syntax import string_value
from gpulint.diagnostics import Related
from gpulint.rule import Example, Family, FixAvailability, FixSafety, GpuRule, Safety
from gpulint.syntax import argument

# torch.optim classes with a fused CUDA implementation (`fused=True`).
FUSED_OPTIMIZERS = {f"torch.optim.{name}" for name in ("Adam", "AdamW", "SGD")} | \
    {f"torch.optim.{name.lower()}.{name}" for name in ("Adam", "AdamW", "SGD")}

_TIMM_FACTORIES = frozenset(f"timm.optim.{m}{f}" for m in ("", "optim_factory.", "_optim_factory.")
                             for f in ("create_optimizer", "create_optimizer_v2"))
_TIMM_TORCH_OPTIMIZERS = {"sgd": "torch.optim.SGD", "nesterov": "torch.optim.SGD", "momentum": "torch.optim.SGD",
                          "adam": "torch.optim.Adam", "adamw": "torch.optim.AdamW"}
_TIMM_MESSAGE = ("timm's `{factory}` builds `{cls}` (`{opt}`) over CUDA parameters without `fused=True`: the update "
                 "runs as several kernels per step; build the torch optimizer with `fused=True` (timm passes none)")
_LIBRARY_LOOP_MESSAGE = ("transformers' `AdamW` over CUDA parameters updates one parameter at a time in Python: use "
                         "`torch.optim.AdamW(..., fused=True)` (mind its default `weight_decay=0.01`)")


def _walk_returns(fn: cst.FunctionDef):
    from gpulint.analysis.training import _all_below

    return (node for node in _all_below(fn.body) if type(node) is cst.Return)


class OptimizerNotFused(GpuRule):
    """`torch.optim.Adam/AdamW/SGD` over CUDA parameters without `fused=True`.

    ## What it does
    Flags `torch.optim.Adam(...)`, `AdamW(...)` and `SGD(...)` built over the `.parameters()` of a model that
    the same module moves to a CUDA device (`model.to(device)`, `model.cuda()`), when neither `fused=` nor
    `foreach=` is given, in a module that trains on CUDA in a loop (a `for` over batches, or a `while` loop
    drawing one every iteration), or that names CUDA and hands the optimizer, in the function building it, to a
    top-level project function whose loop runs `.backward()` and steps it (`train_one_epoch(model, criterion,
    loader, optimizer, device, epoch)` of an engine module). Every move of that model must go to CUDA: a
    device that may be another accelerator (`torch.accelerator.current_accelerator()`, `accelerator.device`) or
    a function's parameter keeps it silent. The class may be named indirectly: a choice between such classes
    (`optim_cls = optim.AdamW if c else optim.SGD`), `getattr(torch.optim, "AdamW")`, a name the project's
    configuration files give (`getattr(torch.optim, cfg.optimizer.type)` with `optimizer: type: Adam` in a YAML
    file, or pytorch-template's `config.init_obj('optimizer', torch.optim, params)` with `"optimizer": {"type":
    "Adam"}` in config.json: reported without a fix, the factory being the project's), or a project subclass
    (`class AdamW(torch.optim.AdamW)`) whose `step` leaves the update to torch (or calls `super().step(...)`) and
    whose `__init__` hands its `**kwargs` on, so `fused=True` reaches torch. A model from a project factory that
    moves it to CUDA (`model = load_model(path)`) counts as moved, and so does a second name for a moved model
    (`model_without_ddp = model`, or `= model.module` of its DDP wrapper). A loop whose step is a closure handed
    to a helper that calls it (`gpu_timer(train_step)`) trains like one that calls it. Options passed as
    `**opt_args` count when the module builds them from keys it can read (`opt_args = dict(lr=lr,
    weight_decay=wd)`) and neither `fused` nor `foreach` is among them.

    A module class may build the optimizers over its own submodules (`self.G_opt = Adam(list(self.G.parameters())
    + list(self.S.parameters()), ...)`, `self.optims[name] = Adam(self.nets[name].parameters())`) in the method that
    moves the whole module to CUDA (`self.cuda(rank)`, `self.to(self.device)` with `self.device = torch.device(
    "cuda" if ... else "cpu")`): moving the module moves every submodule. It is reported when a function of the
    same module runs a backward pass and steps the optimizer by the attribute it is kept as
    (`self.GAN.D_opt.step()`, `optims.generator.step()`). A script may also hand the optimizer to a project
    trainer class (`solver = Solver(data, model, optimizer, args)`) one of whose methods runs a backward pass and
    steps the `self.<attr>` its `__init__` keeps it as, possibly wrapped first in a project class whose `step`
    steps the optimizer it keeps (a learning-rate schedule written as a class: `Scheduled(torch.optim.Adam(...),
    warmup)`): that class trains with it like a `train_one_epoch(...)` function would.

    A trainer class may build the optimizer over the model it keeps (`self.optim = Adam(self.model.parameters())`),
    moved by a method of the class or of a project base class (`self.model = BERTLM(...).to(self.device)` with
    `self.device = torch.device("cuda:0" if c else "cpu")`; a base class's `gpu()` doing `self.model =
    self.model.to(self.dev)` with `self.dev = "cuda:0"` on one branch of an option and `"cpu"` on the other): it is
    reported when every such move goes to a possible CUDA device and the module trains in a loop. A script may
    hand the optimizer to a method of a project trainer object (`trainer.train(epoch, loader, optimizer)`) whose
    loop runs a backward pass and steps it. The parameters may be lists the model keeps on itself (`{'params':
    model.params1}`), and the device a string built by concatenation (`"cuda:" + str(args.dev)`). A trainer
    method may hand the optimizer back (`model_optim = optim.Adam(self.model.parameters()); return model_optim`,
    `_select_optimizer` of an experiment class) for the class's training method to step, and the device may come
    from a method (`self.device = self._acquire_device()` returning `torch.device('cuda:{}'.format(gpu))` or the
    CPU). A name bound to `None` before the real module (`criterion = None`, later built and moved with the model)
    and a device name rebound through itself (`device = torch.device(device)`) are followed.

    The optimizer may also be built in a factory of another module (`build_optimizer(cfg, model)`,
    `init_opt(encoder, predictor, ...)`, `construct_optimizer(model, cfg)`): a top-level function that hands the
    optimizer back (`return optimizer`, also in a tuple) over parameters computed from its own parameters
    (`model.named_parameters()`, `set_weight_decay(model)`). It is reported at the factory's constructor,
    with the calls as related locations, when every call of the factory outside test modules passes a model
    the calling module moves to CUDA (and no model it may not) and that module trains on CUDA with the result
    (its own loop, or a `train_one_epoch(...)` it hands the optimizer to). Every branch of the factory that
    builds Adam, AdamW or SGD is reported: which one runs is the configuration's choice.

    Stance (the majority of the labelled sets, benchmarks/labels/README.md): a default (foreach) `Adam` or
    `AdamW` over CUDA parameters, stepped every iteration, is reported: labels.tsv and the held-out sets up to
    heldout15 label it TRUE, heldout16's labeller alone took it as acceptable. Momentum `SGD` is reported the
    same way, though its gain is smaller (heldout4 did not count detectron2's as TRUE). On by default since it was precise on every finding on 20 real
    repositories (docs/rules/preview-decisions.md, third measurement).

    ## Why it is slow
    The default implementation on CUDA is `foreach`: a handful of multi-tensor kernels per step, each still
    reading and writing the parameters, gradients and optimizer state in separate passes. `fused=True` does the
    whole update in one kernel per group of tensors (GPU MODE lecture 6, "Optimizing Optimizers in PyTorch", in
    the project's guides; PyTorch's `torch.optim` docs: "fused > foreach > for-loop" on CUDA). On an H100 the
    default AdamW was already foreach and `fused=True` was one of the two levers left (/work/shared/facts.md).

    ## Example
    ```python
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ```
    Use instead:
    ```python
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    ```

    transformers' own `AdamW` (`from transformers import AdamW`, deprecated since transformers 4) is reported
    too, under the same conditions: its `step` updates one parameter at a time in a Python loop, several kernels
    per parameter, slower still than torch's default foreach implementation.

    ## Fix
    Adds `fused=True` to the call. transformers' `AdamW` gets no fix: it takes no `fused=`, and torch's class
    has other defaults (`weight_decay=0.01`, no `correct_bias`), so the replacement is the author's.

    ## Fix safety
    Unsafe: the fused kernel computes the same update in a different order, so parameters differ from the
    foreach result in the last bits after each step, and training curves drift apart over many steps. It also
    requires floating-point parameters on a device the fused kernel supports: where a script falls back to
    the CPU (`"cuda" if torch.cuda.is_available() else "cpu"`), fused Adam/AdamW/SGD on CPU needs PyTorch 2.4 or
    later.

    timm's factories are followed too: `create_optimizer(args, model)` and `create_optimizer_v2(model,
    **optimizer_kwargs(cfg=args))` (DeiT's recipe and the many scripts built on it) build torch's `AdamW`, `Adam`
    or `SGD` for `--opt adamw`/`adam`/`sgd`/`momentum`/`nesterov` without `fused=` when the option's default (or an
    `opt=` literal) names one of them and the model is certainly on CUDA; reported at the factory's call, without
    a fix (build the torch optimizer with `fused=True` there).

    ## When it is fine
    `fused=` or `foreach=` given (either is a decision), `**kwargs` that may carry them, a class chosen by a
    name neither the module nor a configuration file of the project tells (`getattr(torch.optim, cfg.name)`), a
    configuration that sets `fused`/`foreach` itself, or among candidates one of which has no fused
    variant (`AdamW if c else NAdam`), a project subclass with its own update (its `step` never runs torch's:
    `fused` changes nothing) or an `__init__` that cannot pass `fused` on, optimizers without a
    fused implementation (Adamax, NAdam, RAdam, LBFGS, ...; Adagrad's is left alone because older releases
    fuse it on the CPU only), parameters the module does not certainly put on a
    GPU (CPU-only scripts, a device chosen elsewhere), and tiny models where the optimizer is a negligible part
    of the step: a program whose only model is one layer (`torch.nn.Linear(20, 1)` in a DDP tutorial), a linear
    probe (an optimizer over a class of this module that builds one layer, or a `requires_grad` filter in a
    module that freezes the backbone), and test modules.
    """

    code = "GPU402"
    name = "optimizer-not-fused"
    message = "optimizer over CUDA parameters without `fused=True`: the update runs as several kernels per step"
    family = Family.THROUGHPUT
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(Safety.UNSAFE, "the fused kernel rounds differently: parameters differ in the last bits")
    added_in = "0.2.0"
    # gpulint/prefilter.py: modules that train (trains_on_cuda), or name CUDA and hand the optimizer to a
    # project function that trains with it (`trainer_steps`; `clearly_cuda` needs "cuda" in the text)
    reports_in = ("hot-loop", "cuda-text", "returned-optimizer", "configured-optimizer")
    # a GPU module (GpuRule's `GPU_HINT`), or an optimizer factory that names no device (its callers do)
    needs_text = re.compile(GPU_HINT.pattern + r"|\bAdam\(|\bAdamW\(|\bSGD\(", re.IGNORECASE)
    _MODEL = "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)){move}\n"
    _LOOP = "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n"
    VALID = (
        _MODEL.format(move=".cuda()") + "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\n" + _LOOP,
        _MODEL.format(move=".cuda()") + "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)\n" + _LOOP,
        _MODEL.format(move="") + "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n" + _LOOP,
        _MODEL.format(move=".cuda()") + "opt = torch.optim.NAdam(model.parameters())\n" + _LOOP,
        # a placeholder model of one layer (a DDP tutorial's `nn.Linear(20, 1)`): nothing to fuse worth a change
        "import torch\nmodel = torch.nn.Linear(20, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + _LOOP,
        # a linear probe: only the head trains, the frozen backbone's parameters are filtered out
        _MODEL.format(move=".cuda()") + "for name, p in model.named_parameters():\n    if not name.startswith('1.'):\n"
        "        p.requires_grad = False\n"
        "opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)\n" + _LOOP,
        # built, but never trained in this module (a factory of optimizers)
        _MODEL.format(move=".cuda()") + "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n",
    )
    INVALID = (
        Example(_MODEL.format(move=".to(\"cuda\")") + "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n" + _LOOP,
                message="fused=True",
                fixed=_MODEL.format(move=".to(\"cuda\")") +
                "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\n" + _LOOP),
    )

    def _returned_by_method(self, node: cst.Call, stored: cst.CSTNode) -> bool:
        """The optimizer is what its method hands back: `return Adam(self.model.parameters())`, or a name bound
        once to it and returned (`model_optim = optim.Adam(...); return model_optim` of a trainer's
        `_select_optimizer`), for the class's training method to step."""
        if type(stored) is cst.Return:
            return True
        if not (type(stored) is cst.Assign and len(stored.targets) == 1 and type(stored.targets[0].target) is cst.Name):
            return False
        fn = self.analysis.index.enclosing_function(node)
        if fn is None:
            return False
        name = stored.targets[0].target.value
        bindings = data_facts(self.analysis).bindings(stored.targets[0].target)
        if len(bindings) != 1:
            return False
        return any(type(r) is cst.Return and type(r.value) is cst.Name and r.value.value == name
                   and self.analysis.index.enclosing_function(r) is fn for r in _walk_returns(fn))

    def _the_chosen_entry(self, node: cst.Call, stored: cst.Assign) -> bool:
        """`node` is the entry of `{key: optimizer, ...}[choice]` the choice picks where `choice` is a string
        literal or a name bound only to one in the module (`optimizer_type = "sgd"`); every entry when the
        choice is not known."""
        entry = self.analysis.parent(node)
        chosen = stored.value
        key = string_value(entry.key) if type(entry) is cst.DictElement else None
        if type(chosen) is not cst.Subscript or len(chosen.slice) != 1 or \
                type(chosen.slice[0].slice) is not cst.Index or key is None:
            return True
        choice = chosen.slice[0].slice.value
        values = [choice]
        if type(choice) is cst.Name:
            bindings = data_facts(self.analysis).bindings(choice)
            values = [b.value for b in bindings if b.kind == "assign" and b.index is None]
            if not bindings or len(values) != len(bindings):
                return True
        texts = {string_value(v) if v is not None else None for v in values}
        return None in texts or key in texts

    def _timm_factory(self, node: cst.Call) -> None:
        """timm's `create_optimizer(args, model)` / `create_optimizer_v2(model, opt=..., ...)` (DeiT's recipe and
        the scripts built on it) building a torch optimizer by name: `args.opt` with a literal default
        (`--opt adamw`), an `opt=` literal, or `**optimizer_kwargs(cfg=args)` (which passes `opt=args.opt`). timm
        passes no `fused=` to torch's AdamW/Adam/SGD. Reported where the model is certainly on CUDA and trained."""
        facts = training_facts(self.analysis)
        qualified = self.analysis.qualified(node.func) or ""
        if qualified.endswith("create_optimizer"):  # create_optimizer(args, model, ...)
            if len(node.args) < 2 or any(a.star for a in node.args[:2]) or node.args[0].keyword is not None:
                return
            options, model = node.args[0].value, node.args[1].value
            chosen = facts.option_text(cst.Attribute(value=options, attr=cst.Name("opt"))) \
                if type(options) is cst.Name else None
        else:  # create_optimizer_v2(model_or_params, opt="sgd", ...)
            first = node.args[0] if node.args else None
            if first is None or first.star or first.keyword is not None and first.keyword.value != "model_or_params":
                return
            model = first.value
            chosen = self._timm_v2_choice(node, facts)
        if chosen is None or chosen.lower() not in _TIMM_TORCH_OPTIMIZERS or type(model) is not cst.Name:
            return
        if not (facts.worth_a_lever() and self.analysis.targets_gpu and facts.module_on_cuda(model)
                and data_facts(self.analysis).clearly_cuda()):
            return
        self.report(node, _TIMM_MESSAGE.format(factory=qualified.rsplit(".", 1)[-1],
                                                cls=_TIMM_TORCH_OPTIMIZERS[chosen.lower()], opt=chosen))

    def _timm_v2_choice(self, node: cst.Call, facts) -> Optional[str]:
        """The optimizer name `create_optimizer_v2` is given: `opt=` (or the second positional argument), a
        literal or an option's literal default; `**optimizer_kwargs(cfg=args)` gives `args.opt`; none: "sgd"."""
        given = keyword(node, "opt")
        opt = given.value if given is not None else None
        if opt is None and len(node.args) > 1 and node.args[1].keyword is None and not node.args[1].star:
            opt = node.args[1].value
        if opt is not None:
            return string_value(opt) if string_value(opt) is not None else facts.option_text(opt)
        stars = [a.value for a in node.args if a.star == "**"]
        if not stars:
            return None if any(a.star for a in node.args) else "sgd"
        if len(stars) == 1 and type(stars[0]) is cst.Call and \
                (self.analysis.qualified(stars[0].func) or "").endswith("optimizer_kwargs"):
            cfg = keyword(stars[0], "cfg") or (stars[0].args[0] if stars[0].args else None)
            cfg = cfg.value if cfg is not None else None
            if type(cfg) is cst.Name:
                return facts.option_text(cst.Attribute(value=cfg, attr=cst.Name("opt")))
        return None

    @staticmethod
    def _building_calls(sites) -> tuple:
        return tuple(Related(display_path(path), line, "the call building it for a CUDA model that is trained")
                     for path, line in sites[:3])

    def visit_Call(self, node: cst.Call) -> None:
        if keyword(node, "fused") is not None or keyword(node, "foreach") is not None:
            return
        if self.analysis.qualified(node.func) in _TIMM_FACTORIES:
            self._timm_factory(node)
            return
        if has_star_args(node):
            # `Adam(params, **opt_args)` with `opt_args = dict(lr=lr, weight_decay=wd)` built here: keys known,
            # neither `fused` nor `foreach` among them; any other `**kwargs` may carry them
            keys = star_keywords(self.analysis, node)
            if keys is None or "fused" in keys or "foreach" in keys:
                return
        key = _configured_key(self.analysis, node)  # `config.init_obj('optimizer', torch.optim, params)`
        params = argument(node, "params", 0) if key is None else (
            node.args[2] if len(node.args) > 2 and node.args[2].keyword is None and not node.args[2].star else None)
        if params is None:
            return
        facts = training_facts(self.analysis)
        stored = facts.stored_by(node)
        if stored is not self.analysis.parent(node) and not self._the_chosen_entry(node, stored):
            return  # `{'adam': ..., 'sgd': ...}[optimizer_type]` with `optimizer_type = "sgd"`: the others never run
        stored_on_self = type(stored) is cst.Assign and len(stored.targets) == 1 \
            and type(stored.targets[0].target) in (cst.Attribute, cst.Subscript)
        if not (type(stored) is cst.Assign and len(stored.targets) == 1 and type(stored.targets[0].target) is cst.Name) \
                and type(stored) not in (cst.Return, cst.Arg) and not stored_on_self and not facts.trains_on_cuda():
            return  # no loop here, no name the optimizer is handed on by (`trainer_steps`), not a factory's return
        # `torch.optim.AdamW`, a choice between such classes, `getattr(torch.optim, "AdamW")`, a project subclass
        # that keeps torch's update: every class the call may build has a fused implementation
        built = facts.optimizer_classes(node.func) if key is None else facts.configured_optimizers(node, key)
        if not built or not built <= FUSED_OPTIMIZERS | LOOPING_LIBRARY_OPTIMIZERS:
            return
        if not facts.worth_a_lever() or facts.probe_parameters(params.value):
            return  # a test or a toy, a linear probe: the update costs next to nothing
        owners = list(facts.parameter_owners(params.value))
        related: tuple = ()
        if not owners and stored_on_self and self.analysis.targets_gpu and data_facts(self.analysis).clearly_cuda() \
                and facts.self_moved_optimizer(node, params.value):
            pass  # a module class's optimizer over its own submodules, the module moved to CUDA, stepped here
        elif not owners and (stored_on_self or self._returned_by_method(node, stored)) and self.analysis.targets_gpu \
                and facts.trains_on_cuda_here() and facts.self_member_on_cuda(node, params.value):
            pass  # a trainer class's optimizer over the model it keeps and moves (maybe in a base class's method)
        elif not (owners and self.analysis.targets_gpu and (facts.trains_on_cuda() or facts.trainer_steps(node))
                  and all(facts.module_on_cuda(o) for o in owners) and (
                      data_facts(self.analysis).clearly_cuda() or facts.device_from_project())):
            # an optimizer factory (`build_optimizer(cfg, model)`) whose every caller trains a CUDA model with it
            # (the callers name the device: the factory's module need not)
            sites = facts.factory_callers(node, params.value)
            if not sites:
                return
            related = self._building_calls(sites)
        elif any(facts.is_parameter(o) for o in owners):
            # the model a parameter of a factory: name the calls that hand it a CUDA model, where there are any
            related = self._building_calls(facts.factory_callers(node, params.value) or [])
        if not built <= FUSED_OPTIMIZERS:
            # transformers' own AdamW has no `fused=` (nor `foreach=`): the lever is torch's class, whose defaults
            # differ (weight_decay, correct_bias), so no fix is offered
            self.report(node, _LIBRARY_LOOP_MESSAGE, related=related)
            return
        if key is not None:  # the project's own factory: whether a keyword reaches the class is its business
            self.report(node, related=related)
            return
        fix = self.fix("Add `fused=True`", {node: lambda updated: append_keyword(updated, "fused", cst.Name("True"))},
                       safe=False)
        self.report(node, fix=fix, related=related)


def _configured_key(analysis, call: cst.Call) -> Optional[str]:
    """`config.init_obj('optimizer', torch.optim, params, ...)` (pytorch-template's `ConfigParser.init_obj`, and
    the projects made from it): a method call handed a string key and the module `torch.optim`, which builds the
    class the configuration names under that key: the key."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in ("init_obj", "initialize") or len(call.args) < 3:
        return None
    first, second = call.args[0], call.args[1]
    if first.keyword is not None or second.keyword is not None or type(first.value) is not cst.SimpleString or \
            analysis.qualified(second.value) != "torch.optim":
        return None
    value = first.value.evaluated_value
    return value if isinstance(value, str) and value else None
