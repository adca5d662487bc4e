"""Episode loops of an environment run the policy every environment step (branch recall61,
`analysis/loops._episode_loop`, `forward._conforms`).

`while not done: action = agent.select_action(state); next_state, reward, done, _ = env.step(action); state =
next_state` runs the agent's method once per environment step, in training (with an update loop inside it) as in
the evaluation episodes; the agent's host-to-device copy of the observation and its `.cpu()` of the action are
per-step costs. An evaluation helper typed by a `typing.Protocol` (`algo: AlgoProtocol`) runs the method of any
project class that implements every member of the protocol. Not: a random policy or an action computed from no
observation, a loop of a handful of written-out iterations, a class that lacks a member of the protocol.
"""

from __future__ import annotations

from projects import check, found, write_project

AGENT = """\
import numpy as np
import torch


class Agent:
    def __init__(self, policy):
        self.device = torch.device("cuda")
        self.policy = policy.to(self.device)

    def select_action(self, state):
        state = torch.as_tensor(state, dtype=torch.float32).to(self.device).unsqueeze(0)
        action = self.policy(state)
        return action.detach().cpu().numpy()[0]

    def fixed_action(self):
        return np.zeros(2)

    def predict(self, x):
        with torch.no_grad():
            action = self.policy(torch.as_tensor(x, device=self.device))
        return action.cpu().numpy()

    def predict_value(self, x, action):
        return np.zeros(len(x))

    def sample_action(self, x):
        return self.predict(x)
"""

MAIN = """\
import itertools

import gym
import torch

from agent import Agent

env = gym.make("Pendulum-v1")
agent = Agent(torch.nn.Linear(3, 1))
for i_episode in itertools.count(1):
    state = env.reset()
    done = False
    while not done:
        action = agent.select_action(state)
        next_state, reward, done, _ = env.step(action)
        state = next_state
    if i_episode > 100:
        break
"""

EVALUATION = """\
from typing import Protocol

import numpy as np


class AlgoProtocol(Protocol):
    def predict(self, x): ...

    def predict_value(self, x, action): ...

    def sample_action(self, x): ...


def evaluate(algo: AlgoProtocol, env, n_trials: int = 10) -> float:
    returns = []
    for _ in range(n_trials):
        observation, _ = env.reset()
        total = 0.0
        while True:
            action = algo.predict(np.expand_dims(observation, axis=0))[0]
            observation, reward, done, truncated, _ = env.step(action)
            total += float(reward)
            if done or truncated:
                break
        returns.append(total)
    return float(np.mean(returns))
"""

RUN = """\
import gym
import torch

from agent import Agent
from evaluation import evaluate

print(evaluate(Agent(torch.nn.Linear(3, 1)), gym.make("Pendulum-v1")))
"""


def _lint(root, modules) -> set:
    items = check(write_project(root, modules), "--no-cache", "--exit-zero", ".")
    return {key for key in found(items) if key[0] == "agent.py"}


def test_the_policy_of_an_episode_loop_runs_every_environment_step(tmp_path):
    assert _lint(tmp_path, {"agent.py": AGENT, "main.py": MAIN}) >= {("agent.py", 13, "GPU104")}


def test_a_policy_call_inside_a_training_step_with_an_update_loop(tmp_path):
    main = MAIN.replace("        state = next_state\n", "        state = next_state\n"
                        "        for _ in range(4):\n            agent.policy.zero_grad()\n")
    assert _lint(tmp_path, {"agent.py": AGENT, "main.py": main}) >= {("agent.py", 13, "GPU104")}


def test_an_action_computed_from_no_observation(tmp_path):
    main = MAIN.replace("agent.select_action(state)", "agent.fixed_action() + agent.select_action(0)")
    assert _lint(tmp_path, {"agent.py": AGENT, "main.py": main}) == set()


def test_a_handful_of_written_out_steps(tmp_path):
    main = MAIN.replace("    while not done:\n", "    for _ in range(3):\n")
    assert _lint(tmp_path, {"agent.py": AGENT, "main.py": main}) == set()


def test_an_evaluation_helper_typed_by_a_protocol(tmp_path):
    modules = {"agent.py": AGENT, "evaluation.py": EVALUATION, "run.py": RUN}
    assert _lint(tmp_path, modules) == {("agent.py", 21, "GPU104")}


def test_a_class_that_lacks_a_member_of_the_protocol(tmp_path):
    evaluation = EVALUATION.replace("    def sample_action(self, x): ...\n",
                                    "    def sample_action(self, x): ...\n\n    def reset_state(self): ...\n")
    modules = {"agent.py": AGENT, "evaluation.py": evaluation, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()


def test_a_beam_searchs_step_of_many_arguments_is_no_environment(tmp_path):
    main = MAIN.replace("env.step(action)", "env.step(action, state, reward)")
    assert _lint(tmp_path, {"agent.py": AGENT, "main.py": main}) == set()
