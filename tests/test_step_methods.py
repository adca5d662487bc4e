"""Trainer loops that step a project agent (branch recall43).

A workspace class runs `while self.step < self.cfg.num_train_steps:` and calls `self.agent.update(...)` on an
agent that Hydra builds from a configuration file (`class: agents.sac.SACAgent`, Hydra 0.11's key, or
`_target_:`); the agent's `update` calls `self.update_critic(...)`, which runs `loss.backward()`. That loop has
no loader and no backward of its own, yet each iteration is one training step: the agent's per-step code (its
`update`, `act` and what they reach) runs every step.

- a loop whose agent method trains only inside a loop of its own (an epoch's pass) is no step loop by this;
- a call of the update under a periodic test (`if self.step % 1000 == 0:`) does not make the loop a step loop;
- a `class:` value that is no dotted path (`class: person`) names no class.

The objects the workspace hands the agent's per-step method (`self.agent.update(obs, self.logger, step)`) run
their methods every step too: `logger.log(...)` in `update_critic`, which `update` calls with its own parameter
(analysis/helper_sites.py `passed_object_site`). Not a call under a periodic test, nor a class of the same method
name that no per-step call passes.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

from gpulint.analysis.config_targets import read_targets

TRAIN = """\
import hydra
import torch

from envs import make_env
from logs import Logger


class Workspace:
    def __init__(self, cfg):
        self.cfg = cfg
        self.device = torch.device(cfg.device)
        self.env = make_env(cfg)
        self.agent = hydra.utils.instantiate(cfg.agent)
        self.logger = Logger()
        self.step = 0

    def run(self):
        obs = self.env.reset()
        while self.step < self.cfg.num_train_steps:
            action = self.agent.act(obs)
            self.agent.update(obs, self.logger, self.step)
            obs, reward, done, info = self.env.step(action)
            self.step += 1


@hydra.main(config_path="config/train.yaml")
def main(cfg):
    Workspace(cfg).run()
"""

AGENT = """\
import torch
import torch.nn as nn


class SACAgent:
    def __init__(self, obs_dim, device):
        self.device = torch.device(device)
        self.critic = nn.Linear(obs_dim, 1).to(self.device)
        self.opt = torch.optim.Adam(self.critic.parameters(), fused=True)

    def act(self, obs):
        obs = torch.as_tensor(obs, device="cuda")
        return self.critic(obs).cpu().numpy()

    def update(self, obs, logger, step):
        obs = obs.to("cuda", non_blocking=True)
        self.update_critic(obs, logger, step)

    def update_critic(self, obs, logger, step):
        loss = self.critic(obs).pow(2).mean()
        print("loss", loss.item())
        logger.log("loss", loss)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
"""

LOGS = """\
import torch


class Logger:
    def log(self, key, value):
        torch.cuda.synchronize()


class FileLogger:
    def log(self, key, value):
        torch.cuda.synchronize()
"""

CONFIG = """\
defaults:
    - agent: sac
device: cuda
num_train_steps: 1e6
"""

AGENT_CONFIG = """\
agent:
  name: sac
  class: agents.sac.SACAgent
  params:
    obs_dim: 4
    device: ${device}
"""


def _project(tmp_path: Path, train: str = TRAIN, agent: str = AGENT, agent_config: str = AGENT_CONFIG) -> Path:
    return write_project(tmp_path, {"train.py": train, "agents/__init__.py": "", "logs.py": LOGS,
                                    "envs.py": "def make_env(cfg):\n    return None\n", "agents/sac.py": agent,
                                    "config/train.yaml": CONFIG, "config/agent/sac.yaml": agent_config})


def _keys(root: Path) -> set:
    return found(check(root, "--no-cache", "--exit-zero", "--select", "GPU101,GPU104", "agents/sac.py"))


def test_a_configured_agents_step_runs_every_iteration(tmp_path: Path):
    keys = _keys(_project(tmp_path))
    assert ("agents/sac.py", 21, "GPU101") in keys  # update -> update_critic: loss.item() every step
    assert ("agents/sac.py", 13, "GPU104") in keys  # act: .cpu() of the action every step


def test_hydra_target_key_too(tmp_path: Path):
    config = AGENT_CONFIG.replace("class: agents.sac.SACAgent", "_target_: agents.sac.SACAgent")
    assert ("agents/sac.py", 21, "GPU101") in _keys(_project(tmp_path, agent_config=config))


def test_a_constructed_agent_too(tmp_path: Path):
    train = TRAIN.replace("hydra.utils.instantiate(cfg.agent)", "SACAgent(4, 'cuda')").replace(
        "import torch\n", "import torch\nfrom agents.sac import SACAgent\n", 1)
    assert ("agents/sac.py", 21, "GPU101") in _keys(_project(tmp_path, train=train))


def test_an_agent_training_in_a_loop_of_its_own_still_acts_every_environment_step(tmp_path: Path):
    agent = AGENT.replace("        self.update_critic(obs, logger, step)\n",
                          "        for epoch in range(obs.shape[0]):\n            self.update_critic(obs, logger, step)\n")
    keys = _keys(_project(tmp_path, agent=agent))
    # the workspace loop steps the environment with the agent's action: `act` runs once per environment step
    # whatever loops the update holds (branch recall61, `loops._episode_loop`; SAC's shape in heldout17)
    assert ("agents/sac.py", 13, "GPU104") in keys


def test_a_periodic_update_is_no_step(tmp_path: Path):
    train = TRAIN.replace("            self.agent.update(obs, self.logger, self.step)\n",
                          "            if self.step % 1000 == 0:\n                self.agent.update(obs, self.logger, self.step)\n")
    keys = _keys(_project(tmp_path, train=train))
    assert ("agents/sac.py", 21, "GPU101") not in keys  # the update's `.item()`: once per 1000 steps
    # The loop still runs the critic every iteration through `self.agent.act(obs)` (branch recall54,
    # analysis/step_callables.py), so it is a step loop and act's `.cpu()` is paid every step.
    assert ("agents/sac.py", 13, "GPU104") in keys


def test_an_unnamed_class_key_names_nothing():
    assert read_targets("agent:\n  class: agents.sac.SACAgent\n") == {"agent": {"agents.sac.SACAgent": 0}}
    assert read_targets("label:\n  class: person\n") == {}


def test_an_object_handed_to_the_agents_step_runs_its_method_every_step(tmp_path: Path):
    keys = found(check(_project(tmp_path), "--no-cache", "--exit-zero", "--select", "GPU109", "logs.py"))
    assert ("logs.py", 6, "GPU109") in keys  # update -> update_critic(obs, logger, step) -> logger.log(...)
    assert ("logs.py", 11, "GPU109") not in keys  # FileLogger: no per-step call passes one


def test_a_periodic_log_call_stays_quiet(tmp_path: Path):
    agent = AGENT.replace('        logger.log("loss", loss)\n',
                          '        if step % 100 == 0:\n            logger.log("loss", loss)\n')
    keys = found(check(_project(tmp_path, agent=agent), "--no-cache", "--exit-zero", "--select", "GPU109",
                       "logs.py"))
    assert ("logs.py", 6, "GPU109") not in keys


NETS = """\
import torch.nn as nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


def to_np(t):
    return t.cpu().detach().numpy()
"""


def test_a_network_built_from_an_interpolated_configuration(tmp_path: Path):
    """`self.scorer = hydra.utils.instantiate(scorer_cfg)` with `scorer_cfg: ${double_q_critic}` in the agent's
    parameters and `double_q_critic: class: agents.nets.Critic`: the attribute holds a network, so what it
    returns is a tensor (`to_np(action)` of it syncs)."""
    agent = AGENT.replace("def __init__(self, obs_dim, device):", "def __init__(self, obs_dim, device, scorer_cfg):") \
        .replace("self.critic = nn.Linear(obs_dim, 1).to(self.device)",
                 "self.critic = nn.Linear(obs_dim, 1).to(self.device)\n"
                 "        self.scorer = hydra.utils.instantiate(scorer_cfg).to(self.device)") \
        .replace("import torch\n", "import hydra\nimport torch\nfrom agents.nets import to_np\n", 1) \
        .replace("        obs = torch.as_tensor(obs, device=\"cuda\")\n        return self.critic(obs).cpu().numpy()\n",
                 "        action = self.scorer(obs)\n        return to_np(action)\n")
    config = AGENT_CONFIG + "    scorer_cfg: ${double_q_critic}\n\ndouble_q_critic:\n  class: agents.nets.Critic\n"
    root = _project(tmp_path, agent=agent, agent_config=config)
    (root / "agents/nets.py").write_text(NETS)
    keys = found(check(root, "--no-cache", "--exit-zero", "--select", "GPU112", "agents/sac.py"))
    assert ("agents/sac.py", 16, "GPU112") in keys
    config = config.replace("scorer_cfg: ${double_q_critic}", "scorer_cfg: ${unknown_critic}")
    (root / "config/agent/sac.yaml").write_text(config)
    keys = found(check(root, "--no-cache", "--exit-zero", "--select", "GPU112", "agents/sac.py"))
    assert ("agents/sac.py", 16, "GPU112") not in keys  # the interpolation names nothing: unknown


def test_a_log_call_after_a_periodic_return_stays_quiet(tmp_path: Path):
    agent = AGENT.replace('        logger.log("loss", loss)\n',
                          '        if step % 100 != 0:\n            return\n        logger.log("loss", loss)\n')
    keys = found(check(_project(tmp_path, agent=agent), "--no-cache", "--exit-zero", "--select", "GPU109",
                       "logs.py"))
    assert ("logs.py", 6, "GPU109") not in keys


def test_a_counter_loop_without_an_environment(tmp_path: Path):
    """`while self.step < self.cfg.num_train_steps:` over batches the agent draws itself (no loader, no backward and
    no environment step in the trainer's file): still the step loop."""
    train = TRAIN.replace("            obs, reward, done, info = self.env.step(action)\n", "")
    assert "env.step" not in train
    assert ("agents/sac.py", 21, "GPU101") in _keys(_project(tmp_path, train=train))
    other = TRAIN.replace("            obs, reward, done, info = self.env.step(action)\n", "").replace(
        "while self.step < self.cfg.num_train_steps:", "while self.pending:")
    assert ("agents/sac.py", 21, "GPU101") not in _keys(_project(tmp_path / "other", train=other))


def test_a_log_call_on_an_error_path_stays_quiet(tmp_path: Path):
    agent = AGENT.replace('        logger.log("loss", loss)\n',
                          '        try:\n            loss = loss * 2\n        except RuntimeError:\n'
                          '            logger.log("loss", loss)\n')
    keys = found(check(_project(tmp_path, agent=agent), "--no-cache", "--exit-zero", "--select", "GPU109",
                       "logs.py"))
    assert ("logs.py", 6, "GPU109") not in keys
