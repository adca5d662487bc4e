"""Objects held in a field of a configuration dataclass (branch recall55, gsplat's `self.cfg.strategy`).

`strategy: DefaultStrategy = field(default_factory=DefaultStrategy)` in a config dataclass, stored by the trainer
(`self.cfg = cfg` from `cfg: Config`), and `self.cfg.strategy.step_post_backward(...)` every step: the strategy's
method runs every step, so its sync is reported there and at the per-step call. A class the field does not
declare, with a method of the same name, stays silent; so does a field whose annotation is not a project class
and that has no default building one.
"""

from __future__ import annotations

from projects import check, found, write_project

STRATEGY = """\
import torch


class DefaultStrategy:
    def step_post_backward(self, state, step):
        torch.cuda.synchronize()
        state["count"] += 1


class OtherStrategy:
    def step_post_backward(self, state, step):
        torch.cuda.synchronize()
"""

TRAINER = """\
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import DataLoader

from strategy import DefaultStrategy


@dataclass
class Config:
    strategy: DefaultStrategy = field(default_factory=DefaultStrategy)
    other: Any = None
    steps: int = 100


class Runner:
    def __init__(self, cfg: Config, dataset):
        self.cfg = cfg
        self.model = torch.nn.Linear(4, 1).cuda()
        self.optimizer = torch.optim.Adam(self.model.parameters(), fused=True)
        self.loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)

    def train(self):
        state = {"count": 0}
        for step, x in enumerate(self.loader):
            x = x.cuda(non_blocking=True)
            loss = self.model(x).mean()
            loss.backward()
            self.optimizer.step()
            self.cfg.strategy.step_post_backward(state, step)
            self.cfg.other.step_post_backward(state, step)
"""


def test_a_config_field_object_runs_its_method_every_step(tmp_path):
    write_project(tmp_path, {"strategy.py": STRATEGY, "trainer.py": TRAINER})
    keys = found(check(tmp_path, "--no-cache", "--exit-zero"))
    assert ("strategy.py", 6, "GPU109") in keys
    assert ("trainer.py", 31, "GPU112") in keys
    assert ("strategy.py", 12, "GPU109") not in keys  # OtherStrategy: no field holds it
    assert ("trainer.py", 32, "GPU112") not in keys  # `other: Any = None`: unknown


QUIET = """\
class QuietStrategy:
    def step_post_backward(self, state, step):
        state["count"] += 1
"""


def _union_trainer(members: str, imports: str) -> str:
    return TRAINER.replace("from strategy import DefaultStrategy", imports).replace(
        "strategy: DefaultStrategy = field(default_factory=DefaultStrategy)",
        f"strategy: Union[{members}] = field(default_factory=DefaultStrategy)").replace(
        "from typing import Any", "from typing import Any, Union")


def test_a_union_field_pays_at_the_call_only_when_every_member_pays(tmp_path):
    both = _union_trainer("DefaultStrategy, OtherStrategy", "from strategy import DefaultStrategy, OtherStrategy")
    write_project(tmp_path / "both", {"strategy.py": STRATEGY, "trainer.py": both})
    keys = found(check(tmp_path / "both", "--no-cache", "--exit-zero"))
    assert {("strategy.py", 6, "GPU109"), ("strategy.py", 12, "GPU109"), ("trainer.py", 31, "GPU112")} <= keys
    one = _union_trainer("DefaultStrategy, QuietStrategy",
                         "from strategy import DefaultStrategy\nfrom quiet import QuietStrategy")
    write_project(tmp_path / "one", {"strategy.py": STRATEGY, "quiet.py": QUIET, "trainer.py": one})
    keys = found(check(tmp_path / "one", "--no-cache", "--exit-zero"))
    assert ("strategy.py", 6, "GPU109") in keys  # the run whose config picks it pays in the method
    assert not any(path == "trainer.py" and code == "GPU112" for path, _row, code in keys)
