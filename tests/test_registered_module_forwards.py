"""A model class a registry decorator builds by a configuration's name (issue 11, recall): LAVIS registers
`@registry.register_model("blip2") class Blip2Qformer(Blip2Base)`, which the pretraining configuration trains, while a
subclass (`Blip2ITM`) overrides `forward` and another model builds one for its features (`self.blip =
Blip2Qformer(...)`, `self.blip.extract_features(...)`). Neither tells whether the configurations naming "blip2" train
it: its `forward` runs on every batch when they do, as for any registered module (analysis/trained_modules.py).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

REGISTRY = textwrap.dedent("""\
    class Registry:
        mapping = {"model_name_mapping": {}}

        @classmethod
        def register_model(cls, name):
            def wrap(model_cls):
                cls.mapping["model_name_mapping"][name] = model_cls
                return model_cls
            return wrap

        @classmethod
        def get_model_class(cls, name):
            return cls.mapping["model_name_mapping"].get(name, None)


    registry = Registry()
""")

QFORMER = textwrap.dedent("""\
    import torch
    from torch import nn
    from lavis.registry import registry


    @registry.register_model("blip2")
    class Blip2Qformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, samples):
            image = samples["image"]
            embeds = self.proj(image)
            image_atts = torch.ones(embeds.size()[:-1], dtype=torch.long).to(image.device)
            return (embeds * image_atts.unsqueeze(-1)).sum()

        def extract_features(self, samples):
            return self.proj(samples["image"])


    class Blip2ITM(Blip2Qformer):
        def forward(self, samples):
            return self.proj(samples["image"]).sum()
""")

DIFFUSION = textwrap.dedent("""\
    from torch import nn
    from lavis.blip2_qformer import Blip2Qformer


    class BlipDiffusion(nn.Module):
        def __init__(self):
            super().__init__()
            self.blip = Blip2Qformer()

        def forward(self, samples):
            return self.blip.extract_features(samples)
""")

RUNNER = textwrap.dedent("""\
    import torch
    from lavis.registry import registry


    def train(cfg, loader):
        model = registry.get_model_class(cfg.arch)().cuda()
        optimizer = torch.optim.AdamW(model.parameters(), fused=True)
        for samples in loader:
            loss = model(samples)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")

ONES = ("lavis/blip2_qformer.py", 15, "GPU203")  # `torch.ones(...).to(image.device)` in the registered forward


def _lint(root: Path, qformer: str = QFORMER) -> set:
    write_project(root, {"lavis/__init__.py": "", "lavis/registry.py": REGISTRY, "lavis/blip2_qformer.py": qformer,
                         "lavis/blip_diffusion.py": DIFFUSION, "lavis/runner.py": RUNNER})
    return found(check(root, "--no-cache", "."))


def test_a_registered_module_is_trained_by_the_configurations_naming_it(tmp_path: Path):
    assert ONES in _lint(tmp_path)


def test_without_the_registry_a_base_with_an_overriding_subclass_stays_quiet(tmp_path: Path):
    """Not registered: built only by another model for its features, and overridden by a subclass; whether its
    own `forward` ever runs is not known, so nothing is claimed."""
    assert ONES not in _lint(tmp_path, QFORMER.replace('@registry.register_model("blip2")\n', ""))
