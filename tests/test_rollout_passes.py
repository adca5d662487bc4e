"""A second pass over a rollout's steps (branch recall35; heldout12 GAIL in ikostrikov's
pytorch-a2c-ppo-acktr-gail): after the rollout `for step in range(num_steps):` the update loop relabels every
step's reward with the discriminator, `for step in range(num_steps): rollouts.rewards[step] =
discr.predict_reward(...)`. That loop runs a network once per environment step, as the rollout does, so what
`predict_reward` reads back on the host (`self.returns.cpu().numpy()`) is paid every step. A pass under a
periodic test of the update loop, or over another iterable, is a loop of its own that runs the discriminator
on every iteration (branch recall54, analysis/step_callables.py): what `predict_reward` reads back is paid once per
iteration of that pass, as for a pass in the same module that calls a network of a class it sees (`for x in
items: r = net(x); r.cpu()` is reported so).
"""

from __future__ import annotations

from projects import check, found, write_project

from test_rl_update_loops import MODEL, PPO

DISCR = """\
import torch
from torch import nn


class Discriminator(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.trunk = nn.Linear(4, 1).to(device)

    def predict_reward(self, state, masks):
        with torch.no_grad():
            reward = self.trunk(state)
            self.stats = reward.cpu().numpy().mean()
            return reward * masks
"""

MAIN = """\
import torch
from algo.model import Policy
from algo.ppo import PPO
from algo.gail import Discriminator


def main(envs, rollouts, num_updates, num_steps):
    device = torch.device("cuda")
    actor_critic = Policy()
    actor_critic.to(device)
    discr = Discriminator(device)
    agent = PPO(actor_critic, 4, 3e-4)
    for j in range(num_updates):
        for step in range(num_steps):
            with torch.no_grad():
                value, action = actor_critic.act(rollouts.obs[step])
            obs, reward, done, infos = envs.step(action)
            rollouts.insert(obs, action, value, reward)
        for step in range(num_steps):
            rollouts.rewards[step] = discr.predict_reward(rollouts.obs[step], rollouts.masks[step])
        loss = agent.update(rollouts)
"""


def _findings(tmp_path, main=MAIN):
    root = write_project(tmp_path / "p", {"algo/__init__.py": "", "algo/model.py": MODEL, "algo/ppo.py": PPO,
                                          "algo/gail.py": DISCR, "main.py": main})
    return found(check(root, "--no-cache"))


def test_reward_relabelling_pass_over_the_rollout_steps_runs_every_step(tmp_path):
    assert ("algo/gail.py", 13, "GPU104") in _findings(tmp_path)


def test_a_relabelling_pass_every_n_updates_pays_per_iteration_of_its_own_loop(tmp_path):
    main = MAIN.replace("        for step in range(num_steps):\n            rollouts.rewards",
                        "        if j % 10 == 0:\n          for step in range(num_steps):\n            rollouts.rewards")
    assert "if j % 10 == 0:" in main
    assert ("algo/gail.py", 13, "GPU104") in _findings(tmp_path / "method", main)


def test_a_pass_over_another_iterable_pays_per_iteration_like_a_direct_network_call(tmp_path):
    main = MAIN.replace("        for step in range(num_steps):\n            rollouts.rewards",
                        "        for step in range(num_labels):\n            rollouts.rewards").replace(
        "num_updates, num_steps)", "num_updates, num_steps, num_labels)")
    assert "range(num_labels)" in main
    assert ("algo/gail.py", 13, "GPU104") in _findings(tmp_path / "method", main)
