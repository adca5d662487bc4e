"""Callable wrappers built inside a per-step method and handed to a function that calls them (issue 11,
heldout2/heldout7: the diffusion repositories' respaced `training_losses` wraps the model in `_WrappedModel`,
whose `__call__` builds `torch.tensor(self.timestep_map, device=...)` from a Python list on every model call).

- The wrapper's `__call__` is per-step code when a per-step method of the module hands an instance (built there,
  or by a method every `return` of which builds one or hands back its parameter) to a function that calls it.
- An attribute filled with numbers (`self.timestep_map = []`, `.append(i)`), and what another class stores from
  it through its `__init__`, holds host values: `torch.tensor` of it copies them every call (GPU203).
- A wrapper nobody calls per step, or an attribute holding tensors, stays quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

DIFFUSION = textwrap.dedent("""\
    import torch


    class Base:
        def losses(self, model, x, t):
            return (model(x, t) - x).pow(2).mean()


    class Spaced(Base):
        def __init__(self, steps):
            self.timestep_map = []
            for i in range(steps):
                if i % 2 == 0:
                    self.timestep_map.append({appended})

        def losses(self, model, x, t):
            return super().losses(self._wrap(model), x, t)

        def _wrap(self, model):
            if isinstance(model, Wrapped):
                return model
            return Wrapped(model, self.timestep_map)


    class Wrapped:
        def __init__(self, model, timestep_map):
            self.model = model
            self.timestep_map = timestep_map

        def __call__(self, x, ts):
            table = torch.tensor(self.timestep_map, device=ts.device)
            return self.model(x, table[ts])
""")

TRAIN = textwrap.dedent("""\
    import torch
    from diffusion import Spaced


    def train(model, loader, opt):
        model = model.cuda()
        diffusion = Spaced(1000)
        for x in loader:
            x = x.cuda(non_blocking=True)
            t = torch.randint(0, 500, (x.shape[0],), device=x.device)
            loss = diffusion.losses(model, x, t)
            loss.backward()
            opt.step()
""")


def _findings(tmp_path, appended="i", train=TRAIN):
    root = write_project(tmp_path / "p", {"diffusion.py": DIFFUSION.format(appended=appended), "train.py": train})
    return found(check(root))


def test_wrapper_called_through_a_per_step_method_copies_host_values(tmp_path):
    assert ("diffusion.py", 31, "GPU203") in _findings(tmp_path)


def test_attribute_holding_tensors_stays_quiet(tmp_path):
    assert ("diffusion.py", 31, "GPU203") not in _findings(tmp_path, appended="torch.tensor(i)")


def test_wrapper_not_run_every_step_stays_quiet(tmp_path):
    once = TRAIN.replace("diffusion.losses(model, x, t)", "model(x, t).mean()")
    assert not any(path == "diffusion.py" for path, _, _ in _findings(tmp_path, train=once))
