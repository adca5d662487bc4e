"""An evaluator built from a registry of classes and a trainer whose helpers hand back device tensors (issue 11,
recall): Dassl's `self.evaluator = build_evaluator(cfg)` returns `EVALUATOR_REGISTRY.get(cfg.TEST.EVALUATOR)(cfg)`,
the one class registered there (`@EVALUATOR_REGISTRY.register()`), and its test loop hands `evaluator.process` the
output of `self.model_inference(input)` and the label of `input, label = self.parse_batch_test(batch)` (a base class
declares both abstract; the trainer defines them). `Classification.process` reads `int(matches.sum().item())` every
test batch: reported at the call, with the read as related location.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

REGISTRY = textwrap.dedent("""\
    class Registry:
        def __init__(self, name):
            self._name = name
            self._obj_map = {}

        def register(self, obj=None):
            def deco(cls):
                self._obj_map[cls.__name__] = cls
                return cls
            return deco if obj is None else deco(obj)

        def get(self, name):
            return self._obj_map[name]
""")

EVALUATION_INIT = textwrap.dedent("""\
    from .build import build_evaluator, EVALUATOR_REGISTRY
    from .evaluator import Classification
""")

BUILD = textwrap.dedent("""\
    from pkg.registry import Registry

    EVALUATOR_REGISTRY = Registry("EVALUATOR")


    def build_evaluator(cfg, **kwargs):
        return EVALUATOR_REGISTRY.get(cfg.TEST.EVALUATOR)(cfg, **kwargs)
""")

EVALUATOR = textwrap.dedent("""\
    from .build import EVALUATOR_REGISTRY


    class EvaluatorBase:
        def __init__(self, cfg):
            self.cfg = cfg

        def process(self, mo, gt):
            raise NotImplementedError


    @EVALUATOR_REGISTRY.register()
    class Classification(EvaluatorBase):
        def __init__(self, cfg, **kwargs):
            super().__init__(cfg)
            self._correct = 0

        def process(self, mo, gt):
            pred = mo.max(1)[1]
            matches = pred.eq(gt).float()
            self._correct += int(matches.sum().item())
""")

TRAINER = textwrap.dedent("""\
    import torch
    from pkg.evaluation import build_evaluator


    class TrainerBase:
        def parse_batch_test(self, batch):
            raise NotImplementedError

        def model_inference(self, input):
            raise NotImplementedError


    class SimpleTrainer(TrainerBase):
        def __init__(self, cfg, test_loader):
            self.device = torch.device("cuda")
            self.model = torch.nn.Linear(4, 2).to(self.device)
            self.test_loader = test_loader
            self.evaluator = build_evaluator(cfg)

        @torch.no_grad()
        def test(self):
            for batch_idx, batch in enumerate(self.test_loader):
                input, label = self.parse_batch_test(batch)
                output = self.model_inference(input)
                self.evaluator.process(output, label)

        def model_inference(self, input):
            return self.model(input)

        def parse_batch_test(self, batch):
            input = batch["img"]
            label = batch["label"]
            input = input.to(self.device)
            label = label.to(self.device)
            return input, label
""")


CALL = ("pkg/engine/trainer.py", 25, "GPU112")


def _files(evaluator: str = EVALUATOR, trainer: str = TRAINER) -> dict:
    return {"pkg/__init__.py": "", "pkg/registry.py": REGISTRY, "pkg/evaluation/__init__.py": EVALUATION_INIT,
            "pkg/evaluation/build.py": BUILD, "pkg/evaluation/evaluator.py": evaluator, "pkg/engine/__init__.py": "",
            "pkg/engine/trainer.py": trainer}


def _lint(root: Path, files: dict) -> set:
    write_project(root, files)
    return found(check(root, "--no-cache", "."))


def test_the_one_registered_evaluator_is_followed_from_the_test_loop(tmp_path: Path):
    assert CALL in _lint(tmp_path, _files())


def test_two_registered_evaluators_leave_the_call_unknown(tmp_path: Path):
    """With a second registered class the configuration picks one: a cost at the call site is not claimed."""
    evaluator = EVALUATOR + textwrap.dedent("""\


        @EVALUATOR_REGISTRY.register()
        class Retrieval(EvaluatorBase):
            def process(self, mo, gt):
                self.scores = mo
    """)
    assert CALL not in _lint(tmp_path, _files(evaluator=evaluator))


def test_helpers_that_hand_back_host_values_are_not_tensors(tmp_path: Path):
    """`parse_batch_test` returning the batch's entries as they are (no copy) and `model_inference` returning a
    list: nothing says the evaluator is given device tensors."""
    trainer = TRAINER.replace("        return self.model(input)", "        return [1, 2]") \
        .replace("        input = input.to(self.device)\n        label = label.to(self.device)\n", "")
    assert CALL not in _lint(tmp_path, _files(trainer=trainer))
