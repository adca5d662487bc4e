"""Reinforcement-learning trainers whose update is an agent class of another module (PPO as ikostrikov's
pytorch-a2c-ppo-acktr-gail writes it).

The main loop neither iterates a loader nor trains in its own body: `for j in range(num_updates):` runs a rollout
(`for step in range(num_steps):` calling the policy's `act` and `envs.step(action)`) and then
`agent.update(rollouts)`, a method of a class imported from another module whose minibatch loop over the rollout
storage's generator runs `backward()` and `optimizer.step()`. The rollout is then a step loop (one iteration per
environment step), and the agent's module, which names no device itself, trains the network the script moved to
the GPU: its per-minibatch host reads are reported. An evaluation rollout every N updates stays periodic, a script
that never names a device leaves the agent's module quiet, and a rollout beside an update that does not train
is not a step loop.
"""

from __future__ import annotations

from projects import check, found, write_project

MODEL = """\
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 2)

    def act(self, obs):
        value = self.body(obs)
        return value, value.argmax(-1)
"""

PPO = """\
from torch import optim


class PPO:
    def __init__(self, actor_critic, epochs, lr):
        self.actor_critic = actor_critic
        self.epochs = epochs
        self.optimizer = optim.Adam(actor_critic.parameters(), lr=lr)

    def update(self, rollouts):
        total = 0
        for e in range(self.epochs):
            for sample in rollouts.feed_forward_generator(4):
                obs, returns = sample
                values, _ = self.actor_critic.act(obs)
                loss = (values - returns).pow(2).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total += loss.item()
        return total / self.epochs
"""

MAIN = """\
import torch
from algo.model import Policy
from algo.ppo import PPO


def main(envs, rollouts, num_updates, num_steps, eval_interval, save_interval):
    device = torch.device("cuda")
    actor_critic = Policy()
    actor_critic.to(device)
    agent = PPO(actor_critic, 4, 3e-4)
    obs = envs.reset()
    for j in range(num_updates):
        for step in range(num_steps):
            with torch.no_grad():
                value, action = actor_critic.act(rollouts.obs[step])
            obs, reward, done, infos = envs.step(action.cpu().numpy())
            rollouts.insert(obs, action, value, reward)
        loss = agent.update(rollouts)
        if j % eval_interval == 0:
            for t in range(num_steps):
                with torch.no_grad():
                    value, action = actor_critic.act(obs)
                obs, reward, done, infos = envs.step(action.cpu().numpy())
        if j % save_interval == 0:
            torch.save(actor_critic, "agent.pt")
"""


def _findings(tmp_path, main=MAIN, ppo=PPO):
    root = write_project(tmp_path / "p", {"algo/__init__.py": "", "algo/model.py": MODEL, "algo/ppo.py": ppo,
                                          "main.py": main})
    return found(check(root, "--no-cache"))


def test_rollout_beside_an_agent_update_runs_every_environment_step(tmp_path):
    findings = _findings(tmp_path)
    assert ("main.py", 16, "GPU104") in findings


def test_evaluation_rollout_every_n_updates_is_an_evaluation_loop_of_its_own(tmp_path):
    # The rollout under `if j % eval_interval == 0:` is not the training step loop, but it is a loop of its own
    # that feeds the policy's output back in (`obs` from `envs.step(act(obs))`, recall32's sampler loops): its
    # per-step copy is reported like a periodic validation loop's per-batch reads; the save is not.
    findings = _findings(tmp_path)
    assert ("main.py", 23, "GPU104") in findings
    assert not any(path == "main.py" and row > 23 for path, row, _ in findings)


def test_agent_minibatch_loop_reads_are_reported_in_the_agent_module(tmp_path):
    findings = _findings(tmp_path)
    assert ("algo/ppo.py", 20, "GPU302") in findings


def test_agent_of_a_script_that_names_no_device_stays_quiet(tmp_path):
    main = MAIN.replace('    device = torch.device("cuda")\n', "").replace("    actor_critic.to(device)\n", "")
    findings = _findings(tmp_path, main=main)
    assert not any(path == "algo/ppo.py" for path, _, _ in findings)


def test_a_policy_rollout_beside_an_update_that_does_not_train_is_still_a_per_item_loop(tmp_path):
    # After the merge with recall32's per-item loops: a loop running the policy network once per environment step
    # is a loop of its own (like a sampler or a per-image inference loop), whatever the update beside it does;
    # its per-step `.cpu()` is reported in both programs.
    assert ("main.py", 16, "GPU104") in _findings(tmp_path / "trains")
    findings = _findings(tmp_path / "not", ppo=PPO.replace("                loss.backward()\n", ""))
    assert ("main.py", 16, "GPU104") in findings
    assert ("algo/ppo.py", 20, "GPU302") not in findings  # no backward: the agent's minibatch loop is not a step
