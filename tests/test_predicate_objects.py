"""Step loops guarded by project predicate objects, and `instantiate` through a builder function (branch recall74).

An RL workspace (the DrQ shape) builds its agent through a module function that calls Hydra:

    def make_agent(obs_spec, cfg):                   # cfgs/config.yaml
        return hydra.utils.instantiate(cfg)          # agent:
    self.agent = make_agent(spec, self.cfg.agent)    #   _target_: agent.Agent

and its step loop evaluates every N steps through a predicate object of the project:

    eval_every_step = utils.Every(self.cfg.eval_every_frames)   # __call__: `if step % every == 0: return True`
    while train_until_step(self.global_step):
        if eval_every_step(self.global_step):
            self.eval()                                          # a loop of its own over episodes
        metrics = self.agent.update(batch, step)                 # `.item()` per update

- the evaluation under the predicate is periodic, so the training loop stays a step loop (it was read as an
  epoch loop around the evaluation's hot loop) and the agent's per-update `.item()` is reported;
- a predicate object whose `__call__` is no modulo test (`return step < until`) proves nothing: quiet;
- `make_agent(..., self.cfg.agent)` builds what the configuration names under `agent` (`_instantiating_builders`).
"""

from __future__ import annotations

import ast
from pathlib import Path

from projects import check, found, write_project

from gpulint.analysis.config_targets import _instantiating_builders

FILES = {
    "cfgs/config.yaml": """\
device: cuda
eval_every_frames: 10000
agent:
  _target_: agent.Agent
  device: ${device}
  lr: 0.0001
""",
    "utils.py": """\
class Until:
    def __init__(self, until):
        self._until = until

    def __call__(self, step):
        return step < self._until


class Every:
    def __init__(self, every):
        self._every = every

    def __call__(self, step):
        if self._every is None:
            return False
        if step % self._every == 0:
            return True
        return False
""",
    "agent.py": """\
import torch
import torch.nn as nn


class Agent:
    def __init__(self, device, lr):
        self.device = device
        self.critic = nn.Linear(8, 1).to(device)
        self.opt = torch.optim.Adam(self.critic.parameters(), lr=lr, fused=True)

    def act(self, obs):
        obs = torch.as_tensor(obs, device=self.device)
        return self.critic(obs)

    def update(self, batch, step):
        metrics = dict()
        obs = torch.as_tensor(batch, device=self.device)
        loss = self.critic(obs).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        metrics['critic_loss'] = loss.item()
        return metrics
""",
    "train.py": """\
import hydra
import numpy as np
import torch

import utils


def make_agent(obs_spec, cfg):
    cfg.obs_shape = obs_spec
    return hydra.utils.instantiate(cfg)


class Workspace:
    def __init__(self, cfg):
        self.cfg = cfg
        self.global_step = 0
        self.agent = make_agent((8,), self.cfg.agent)

    def eval(self):
        episode = 0
        while episode < 10:
            with torch.no_grad():
                action = self.agent.act(np.zeros(8, dtype=np.float32))
            episode += 1

    def train(self):
        train_until_step = utils.Until(self.cfg.num_train_frames)
        eval_every_step = utils.PREDICATE(self.cfg.eval_every_frames)
        while train_until_step(self.global_step):
            if eval_every_step(self.global_step):
                self.eval()
            batch = np.zeros((4, 8), dtype=np.float32)
            metrics = self.agent.update(batch, self.global_step)
            self.global_step += 1


@hydra.main(config_path="cfgs", config_name="config")
def main(cfg):
    Workspace(cfg).train()


if __name__ == "__main__":
    main()
""",
}


def _lint(tmp_path: Path, predicate: str) -> set:
    files = dict(FILES)
    files["train.py"] = files["train.py"].replace("PREDICATE", predicate)
    return found(check(write_project(tmp_path, files), "--no-cache", "--select", "GPU101", "."))


def test_a_predicate_object_guard_keeps_the_step_loop(tmp_path: Path):
    assert ("agent.py", 22, "GPU101") in _lint(tmp_path, "Every")  # loss.item() per update


def test_a_predicate_without_a_modulo_proves_nothing(tmp_path: Path):
    # `Until.__call__` returns `step < until`: the evaluation may run every step, the loop stays an epoch loop
    assert ("agent.py", 22, "GPU101") not in _lint(tmp_path, "Until")


def test_builder_functions_returning_instantiate():
    tree = ast.parse(FILES["train.py"] + """
def rebinds(cfg):
    cfg = cfg.agent
    return hydra.utils.instantiate(cfg)
""")
    assert _instantiating_builders(tree) == {"make_agent": (1, "cfg")}
