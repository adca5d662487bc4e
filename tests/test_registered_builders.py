"""Build functions that return several objects, picked from a registry (issue 11, recall): DETR-style detectors
build `model, criterion, postprocessors = build_func(args)` where `build_func = MODULE_BUILD_FUNCS.get(name)` and
the build function is registered by a decorator (`@MODULE_BUILD_FUNCS.registe_with_name(module_name='dino')`),
then hand `model` and `criterion` to `train_one_epoch(...)` in another module. The criterion's host reads run
every step: reported at the loop's call and in the criterion itself. A helper the model's `forward` calls under
`if self.dn_number > 0 or targets is not None:` runs every step too (one operand of the `or` is the module's own
configuration).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

REGISTRY = textwrap.dedent("""\
    from functools import partial


    class Registry(object):
        def __init__(self, name):
            self._name = name
            self._module_dict = dict()

        def get(self, key):
            return self._module_dict.get(key, None)

        def registe_with_name(self, module_name=None, force=False):
            return partial(self.register, module_name=module_name, force=force)

        def register(self, module_build_function, module_name=None, force=False):
            self._module_dict[module_name or module_build_function.__name__] = module_build_function
            return module_build_function


    MODULE_BUILD_FUNCS = Registry('model build functions')
""")

HELPERS = textwrap.dedent("""\
    import torch


    def prepare_for_cdn(targets, training, hidden_dim):
        if training:
            pad_size = 2 * len(targets)
            padding = torch.zeros(pad_size, hidden_dim).cuda()
            return padding
        return None
""")

DETECTOR = textwrap.dedent("""\
    import torch
    from torch import nn
    from ..registry import MODULE_BUILD_FUNCS
    from .helpers import prepare_for_cdn


    class SetCriterion(nn.Module):
        def forward(self, outputs, targets):
            num_boxes = torch.clamp(outputs.sum(), min=1).item()
            return outputs.sum() / num_boxes


    class Detector(nn.Module):
        def __init__(self, dn_number):
            super().__init__()
            self.dn_number = dn_number
            self.lin = nn.Linear(4, 4)

        def forward(self, x, targets=None):
            if self.dn_number > 0 or targets is not None:
                padding = prepare_for_cdn(targets, self.training, 4)
            return self.lin(x)


    @MODULE_BUILD_FUNCS.registe_with_name(module_name='detector')
    def build_detector(args):
        model = Detector(args.dn_number)
        criterion = SetCriterion()
        return model, criterion, None
""")

ENGINE = textwrap.dedent("""\
    def train_one_epoch(model, criterion, data_loader, optimizer, device):
        model.train()
        for samples, targets in data_loader:
            samples = samples.to(device, non_blocking=True)
            outputs = model(samples, targets)
            loss = criterion(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")

MAIN = textwrap.dedent("""\
    import torch
    from engine import train_one_epoch


    def build_model_main(args):
        from models.registry import MODULE_BUILD_FUNCS
        build_func = MODULE_BUILD_FUNCS.get(args.modelname)
        model, criterion, postprocessors = build_func(args)
        return model, criterion, postprocessors


    def main(args):
        device = torch.device("cuda")
        model, criterion, postprocessors = build_model_main(args)
        model.to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        loader = torch.utils.data.DataLoader(args.dataset, batch_size=2, pin_memory=True)
        for epoch in range(10):
            train_one_epoch(model, criterion, loader, optimizer, device)
""")

CRITERION_ITEM = ("models/detector/detector.py", 9, "GPU101")  # `.item()` in SetCriterion.forward
CRITERION_CALL = ("engine.py", 6, "GPU112")  # `criterion(outputs, targets)` every step
HELPER_COPY = ("models/detector/helpers.py", 7, "GPU203")  # `torch.zeros(...).cuda()` every forward


def _lint(root: Path, files: dict, *named: str) -> set:
    write_project(root, files)
    return found(check(root, "--no-cache", *(named or (".",))))


def _project(detector: str = DETECTOR, main: str = MAIN) -> dict:
    return {"models/__init__.py": "", "models/registry.py": REGISTRY, "models/detector/__init__.py":
            "from .detector import build_detector\n", "models/detector/helpers.py": HELPERS,
            "models/detector/detector.py": detector, "engine.py": ENGINE, "main.py": main}


def test_a_build_function_picked_from_a_registry_hands_its_criterion_to_the_loop(tmp_path: Path):
    results = _lint(tmp_path, _project())
    assert {CRITERION_CALL, CRITERION_ITEM} <= results


def test_the_criterion_module_linted_alone_is_per_step_code(tmp_path: Path):
    assert CRITERION_ITEM in _lint(tmp_path, _project(), "models/detector/detector.py")


def test_a_plain_register_decorator_and_a_module_level_import(tmp_path: Path):
    detector = DETECTOR.replace(".registe_with_name(module_name='detector')", ".register")
    main = MAIN.replace("        from models.registry import MODULE_BUILD_FUNCS\n", "") \
        .replace("from engine import train_one_epoch\n",
                 "from engine import train_one_epoch\nfrom models.registry import MODULE_BUILD_FUNCS\n")
    assert CRITERION_CALL in _lint(tmp_path, _project(detector, main))


def test_a_helper_under_an_or_with_the_modules_own_configuration_runs_every_step(tmp_path: Path):
    assert HELPER_COPY in _lint(tmp_path, _project())


def test_a_helper_under_an_or_of_two_flag_parameters_may_not_run(tmp_path: Path):
    """`if targets is not None or return_aux:`: both operands are the caller's arguments, either may be off."""
    detector = DETECTOR.replace("def forward(self, x, targets=None):", "def forward(self, x, targets=None, aux=False):") \
        .replace("if self.dn_number > 0 or targets is not None:", "if aux or targets is not None:")
    assert HELPER_COPY not in _lint(tmp_path, _project(detector))


def test_an_element_of_a_factorys_tuple_called_in_the_loop_is_found(tmp_path: Path):
    """`model, criterion, _ = build_detector(args)` and the loop in the same function: the criterion's forward runs
    every step, reported with the loop's call as related location."""
    main = textwrap.dedent("""\
        import torch
        from models.detector.detector import build_detector


        def main(args):
            model, criterion, _ = build_detector(args)
            model.cuda()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
            loader = torch.utils.data.DataLoader(args.dataset, batch_size=2, pin_memory=True)
            for samples, targets in loader:
                outputs = model(samples.cuda(non_blocking=True))
                loss = criterion(outputs, targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """)
    results = _lint(tmp_path, _project(main=main))
    assert {CRITERION_ITEM, ("main.py", 12, "GPU112")} <= results


def test_torch_range_built_on_the_host_and_moved_every_step(tmp_path: Path):
    script = textwrap.dedent("""\
        import torch


        def train(model, loader, optimizer):
            for x, n in loader:
                idx = torch.range(0, 9).long().cuda()
                loss = model(x.cuda(non_blocking=True))[idx].sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """)
    assert ("train.py", 6, "GPU203") in _lint(tmp_path, {"train.py": script})


def test_an_element_another_branch_binds_to_a_library_class_is_not_followed(tmp_path: Path):
    """`optimizer = torch.optim.Adam(...)` by default, `optimizer = LARS(...)` under an option, then `return
    optimizer, scheduler` (SimCLR's `load_optimizer`): the element may be Adam, so `LARS.step` is not claimed to run
    every step through it."""
    lars = textwrap.dedent("""\
        import torch


        class LARS(torch.optim.Optimizer):
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        trust = float(p.norm().item())
                        p.data.add_(p.grad, alpha=-trust)
    """)
    main = textwrap.dedent("""\
        import torch
        from lars import LARS


        def load_optimizer(args, model):
            scheduler = None
            if args.optimizer == "Adam":
                optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, fused=True)
            elif args.optimizer == "LARS":
                optimizer = LARS(model.parameters(), lr=0.3)
            return optimizer, scheduler


        def main(args, model, loader):
            model = model.cuda()
            optimizer, scheduler = load_optimizer(args, model)
            for x in loader:
                loss = model(x.cuda(non_blocking=True)).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """)
    results = _lint(tmp_path, {"lars.py": lars, "main.py": main})
    assert ("lars.py", 8, "GPU101") not in results
    # the same factory building only LARS: its step runs every step
    only = main.replace('    if args.optimizer == "Adam":\n        optimizer = torch.optim.Adam('
                        'model.parameters(), lr=3e-4, fused=True)\n    elif args.optimizer == "LARS":\n'
                        '        optimizer = LARS(model.parameters(), lr=0.3)\n',
                        '    optimizer = LARS(model.parameters(), lr=0.3)\n')
    assert only != main
    assert ("lars.py", 8, "GPU101") in _lint(tmp_path, {"lars.py": lars, "main.py": only})
