"""Knowing the class of an object the project builds indirectly (issue 11, recall of real per-step costs):

- a project factory whose `return`s build one of several project classes (`build_optimizer` returning `LionW(...)`
  or `AdamW(...)`), or whose return annotation names one (`-> Optimizer`): a method every one of them runs is
  per-step code where a hot loop calls it on the factory's result;
- an attribute declared by an annotation only (a dataclass field `optim: Optimizer`, `self.x: T`), and the
  elements of a container declared so (`evaluators: List[Evaluator]`, iterated by `for ev in self.evaluators:`);
- a flag the hot call passes periodically (`collect=should_log`, `step % 100 == 0`) keeps the member's
  `if collect:` block quiet;
- a project factory that moves the model it returns to CUDA (`model = load_model(path)`) makes an optimizer over
  its parameters one over CUDA parameters (GPU402).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

OPTIM = textwrap.dedent("""\
    import torch


    class Optimizer(torch.optim.Optimizer):
        def clip_and_collect(self, step, collect=False):
            norms = torch.tensor([1.0, 2.0], device="cuda")
            if collect:
                extra = torch.tensor([3.0, 4.0], device="cuda")
            return norms


    class LionW(Optimizer):
        def step(self, closure=None):
            return None


    class AdamW(Optimizer):
        def step(self, closure=None):
            return None


    def build_optimizer(name, params):
        if name == "lion":
            return LionW(params, {})
        return AdamW(params, {})
""")

LOOP = """\
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        {call}
        optim.step()
"""

SCRIPT = textwrap.dedent("""\
    import torch
    from optim import build_optimizer

    model = torch.nn.Linear(4, 4).cuda()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 4)))
    optim = build_optimizer("lion", model.parameters())
""") + textwrap.dedent(LOOP)

NORMS = ("optim.py", 6, "GPU203")  # `torch.tensor([...], device="cuda")` every step
EXTRA = ("optim.py", 8, "GPU203")  # the same under `if collect:`


def _project(root: Path, optim: str, script: str) -> Path:
    return write_project(root, {"optim.py": optim, "train.py": script})


def test_a_method_every_class_of_a_factory_runs_is_per_step_code(tmp_path: Path):
    root = _project(tmp_path, OPTIM, SCRIPT.format(call="optim.clip_and_collect(step)"))
    results = found(check(root, "--no-cache", "optim.py"))
    assert NORMS in results
    assert EXTRA not in results  # `collect` is left at its default False


def test_a_method_overridden_differently_is_not_resolved_through_the_union(tmp_path: Path):
    optim = OPTIM.replace("    def step(self, closure=None):\n        return None\n\n\nclass AdamW",
                          "    def clip_and_collect(self, step, collect=False):\n        return None\n\n\nclass AdamW")
    root = _project(tmp_path, optim, SCRIPT.format(call="optim.clip_and_collect(step)"))
    assert NORMS not in found(check(root, "--no-cache", "optim.py"))  # LionW's own runs for "lion"


def test_a_return_annotation_names_the_class(tmp_path: Path):
    optim = OPTIM.replace("def build_optimizer(name, params):", "def build_optimizer(name, params) -> Optimizer:") \
        .replace('        return LionW(params, {})\n    return AdamW(params, {})',
                 '        return make("lion", params)\n    return make("adamw", params)')
    root = _project(tmp_path, optim, SCRIPT.format(call="optim.clip_and_collect(step)"))
    assert NORMS in found(check(root, "--no-cache", "optim.py"))


def test_a_flag_passed_periodically_keeps_its_block_quiet(tmp_path: Path):
    root = _project(tmp_path, OPTIM, SCRIPT.format(call="optim.clip_and_collect(step, collect=step % 100 == 0)"))
    results = found(check(root, "--no-cache", "optim.py"))
    assert NORMS in results and EXTRA not in results
    root2 = tmp_path / "every"
    root2.mkdir()
    _project(root2, OPTIM, SCRIPT.format(call="optim.clip_and_collect(step, collect=True)"))
    assert EXTRA in found(check(root2, "--no-cache", "optim.py"))  # passed True: every step


TRAINER = textwrap.dedent("""\
    import dataclasses
    from typing import List

    import torch
    from optim import Optimizer
    from evaluator import Evaluator


    @dataclasses.dataclass
    class Trainer:
        model: torch.nn.Module
        optim: Optimizer
        evaluators: List[Evaluator]
        loader: object

        def fit(self):
            for step, (x, y) in enumerate(self.loader):
                out = self.model(x.cuda())
                loss = torch.nn.functional.mse_loss(out, y.cuda())
                loss.backward()
                self.optim.clip_and_collect(step)
                for evaluator in self.evaluators:
                    evaluator.update(loss.detach())
                self.optim.step()
""")

EVALUATOR = textwrap.dedent("""\
    class Evaluator:
        def __init__(self):
            self.total = 0.0

        def update(self, out):
            self.total += out.sum().item()
""")


def test_annotated_fields_and_the_elements_of_an_annotated_list_resolve(tmp_path: Path):
    root = _project(tmp_path, OPTIM, TRAINER)
    (root / "evaluator.py").write_text(EVALUATOR)
    results = found(check(root, "--no-cache", "."))
    assert NORMS in results  # `self.optim.clip_and_collect(step)` through the field `optim: Optimizer`
    # `evaluator.update(loss.detach())` for each of `evaluators` reads the loss back (evaluator.py:6)
    assert ("train.py", 23, "GPU112") in results


def test_an_unannotated_field_stays_unknown(tmp_path: Path):
    root = _project(tmp_path, OPTIM, TRAINER.replace("    optim: Optimizer\n", "    optim: object\n")
                    .replace("    evaluators: List[Evaluator]\n", "    evaluators: list\n"))
    (root / "evaluator.py").write_text(EVALUATOR)
    results = found(check(root, "--no-cache", "."))
    assert NORMS not in results and ("train.py", 23, "GPU112") not in results


MODELS = textwrap.dedent("""\
    import torch


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(256, 256)
            self.b = torch.nn.Linear(256, 10)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))


    def load_model(path, device=None):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Net().to(device)
        return model
""")

FACTORY_SCRIPT = textwrap.dedent("""\
    import torch
    from models import load_model

    model = load_model("net.cfg")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 256), torch.randn(8, 10)))
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")


def test_a_model_from_a_factory_that_moves_it_to_cuda_is_on_cuda(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "train.py").write_text(FACTORY_SCRIPT)
    assert ("train.py", 5, "GPU402") in found(check(tmp_path, "--no-cache", "train.py"))


def test_a_factory_whose_model_stays_on_the_cpu_is_not(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "models.py").write_text(MODELS.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cpu"'))
    (tmp_path / "train.py").write_text(FACTORY_SCRIPT)
    assert ("train.py", 5, "GPU402") not in found(check(tmp_path, "--no-cache", "train.py"))


GPU402_SCRIPT = textwrap.dedent("""\
    import torch
    {extra}

    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()
    opt = {build}
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 512)), pin_memory=True)
    for (x,) in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
        opt.step()
""")

SUBCLASS = textwrap.dedent("""\
    class AdamW(torch.optim.AdamW):
        def __init__(self, *args, record=False, **kwargs):
            super().__init__(*args, **kwargs)
            self.record = record

        def step(self, closure=None):
            if not self.record:
                return super().step(closure=closure)
            return None
""")


def _gpu402(tmp_path: Path, extra: str, build: str) -> set:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "train.py").write_text(GPU402_SCRIPT.format(extra=extra, build=build))
    return {f for f in found(check(tmp_path, "--no-cache", "train.py")) if f[2] == "GPU402"}


def test_a_project_subclass_of_a_torch_optimizer_that_keeps_its_update_is_not_fused(tmp_path: Path):
    assert _gpu402(tmp_path, SUBCLASS, "AdamW(model.parameters(), lr=1e-3)") == {("train.py", 14, "GPU402")}


def test_a_subclass_with_its_own_update_or_without_kwargs_is_left_alone(tmp_path: Path):
    own_step = SUBCLASS.replace("return super().step(closure=closure)", "return self.my_update()")
    assert _gpu402(tmp_path, own_step, "AdamW(model.parameters(), lr=1e-3)") == set()
    no_kwargs = SUBCLASS.replace("*args, record=False, **kwargs", "params, lr").replace("*args, **kwargs", "params, lr")
    assert _gpu402(tmp_path, no_kwargs, "AdamW(model.parameters(), lr=1e-3)") == set()


def test_optimizers_chosen_by_name_or_condition(tmp_path: Path):
    # every candidate has a fused implementation: reported
    assert _gpu402(tmp_path, "use_sgd = False", "(torch.optim.SGD if use_sgd else torch.optim.AdamW)"
                   "(model.parameters())") == {("train.py", 5, "GPU402")}
    assert _gpu402(tmp_path, "", 'getattr(torch.optim, "AdamW")(model.parameters())') == {("train.py", 5, "GPU402")}
    # one candidate without one (NAdam), or a name read from a config: not
    assert _gpu402(tmp_path, "use_nadam = False", "(torch.optim.NAdam if use_nadam else torch.optim.AdamW)"
                   "(model.parameters())") == set()
    assert _gpu402(tmp_path, "import sys", "getattr(torch.optim, sys.argv[1])(model.parameters())") == set()


def test_a_clipping_loop_over_a_param_group_in_a_per_step_optimizer_method(tmp_path: Path):
    optim = OPTIM.replace("        return norms\n", textwrap.indent(textwrap.dedent('''\
        for group in self.param_groups:
            self._clip(group)
        return norms

    def _clip(self, group):
        for p in group["params"]:
            p.grad.mul_(0.5)
    '''), "    "), 1)
    root = _project(tmp_path, optim, SCRIPT.format(call="optim.clip_and_collect(step)"))
    assert ("optim.py", 14, "GPU411") in found(check(root, "--no-cache", "optim.py"))
    # the same loop in a method nobody calls every step stays quiet
    root2 = tmp_path / "never"
    root2.mkdir()
    _project(root2, optim, SCRIPT.format(call="pass"))
    assert ("optim.py", 14, "GPU411") not in found(check(root2, "--no-cache", "optim.py"))
