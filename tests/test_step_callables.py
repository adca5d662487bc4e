"""Loops whose per-step work is behind project objects (branch recall54, analysis/step_callables.py).

A script's `for frame in trange(1, max_frames + 1):` calls only methods of project objects: `learner.choose(obs)`
runs the network one call further (`self._scores(obs)` -> `self.net(...)`, a project `nn.Module` its `__init__`
builds). Every iteration runs the network, so the loop is a step loop: the call's `.item()` inside `choose` is
paid every step, in the method (GPU101) and at the call (GPU112).

Not a step loop by this: a method whose network call sits in a loop of its own (an epoch's pass over data), a
method that reaches no network or backward pass (saving a checkpoint), a call under a periodic test.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

MAIN = """\
import torch
from tqdm import trange

from agent import Learner

learner = Learner(torch.device("cuda"))
obs = torch.zeros(4, device="cuda")
for frame in trange(1, 100001):
    choice = learner.choose(obs)
    print(choice)
"""

AGENT = """\
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class Learner:
    def __init__(self, device):
        self.net = Scorer().to(device)

    def choose(self, obs):
        with torch.no_grad():
            return self._scores(obs).argmax().item()

    def _scores(self, obs):
        return self.net(obs.unsqueeze(0))

    def fit(self, samples):
        out = []
        for x in samples:
            out.append(self.net(x))
        return out

    def save(self, path):
        torch.save(self.net.state_dict(), path)
"""


def _keys(tmp_path: Path, main: str = MAIN, agent: str = AGENT) -> set:
    root = write_project(tmp_path, {"main.py": main, "agent.py": agent})
    return found(check(root, "--no-cache", "--exit-zero", "--select", "GPU101,GPU112", "main.py", "agent.py"))


def test_a_loop_calling_a_method_that_runs_the_network_is_a_step_loop(tmp_path: Path):
    keys = _keys(tmp_path)
    assert ("main.py", 9, "GPU112") in keys  # `learner.choose(obs)`: its `.item()` every step
    assert ("agent.py", 20, "GPU101") in keys  # in the method the step loop runs


def test_a_while_loop_over_a_counter_too(tmp_path: Path):
    main = MAIN.replace("for frame in trange(1, 100001):\n",
                        "frame = 0\nwhile frame < 100000:\n    frame += 1\n")
    keys = _keys(tmp_path, main=main)
    assert ("main.py", 11, "GPU112") in keys
    assert ("agent.py", 20, "GPU101") in keys


def test_a_method_running_the_network_in_a_loop_of_its_own_is_no_step(tmp_path: Path):
    """`learner.fit(samples)` passes over data: the script's loop runs once per epoch, its `.item()` too."""
    main = MAIN.replace("learner.choose(obs)", "learner.fit([obs])").replace("print(choice)", "print(choice[0].item())")
    keys = _keys(tmp_path, main=main)
    assert ("main.py", 10, "GPU101") not in keys
    assert keys == _keys(tmp_path / "plain", main=main.replace("learner.fit([obs])", "[obs]"))


def test_a_method_reaching_no_network_is_no_step(tmp_path: Path):
    main = MAIN.replace("learner.choose(obs)", "learner.save('ckpt.pt')").replace("print(choice)",
                                                                                  "print(obs.sum().item())")
    keys = _keys(tmp_path, main=main)
    assert ("main.py", 10, "GPU101") not in keys


def test_a_periodic_call_is_no_step(tmp_path: Path):
    main = MAIN.replace("    choice = learner.choose(obs)\n",
                        "    if frame % 1000 == 0:\n        choice = learner.choose(obs)\n")
    keys = _keys(tmp_path, main=main)
    assert ("main.py", 10, "GPU112") not in keys
    assert ("agent.py", 20, "GPU101") not in keys


def test_too_deep_a_chain_is_not_followed(tmp_path: Path):
    """The summary follows a bounded number of calls: a network four calls below the loop's call is not seen."""
    agent = AGENT.replace("            return self._scores(obs).argmax().item()",
                          "            return self._a(obs).argmax().item()") + """
    def _a(self, obs):
        return self._b(obs)

    def _b(self, obs):
        return self._c(obs)

    def _c(self, obs):
        return self._d(obs)

    def _d(self, obs):
        return self._scores(obs)
"""
    keys = _keys(tmp_path, agent=agent)
    assert ("main.py", 9, "GPU112") not in keys


def test_beside_a_method_passing_over_data_the_loop_is_an_outer_loop(tmp_path: Path):
    """Each iteration also calls `learner.fit(samples)`, whose network runs in a loop of its own: the loop is an
    outer loop (once per pass), so the method's `.item()` is not reported as paid every step."""
    main = MAIN.replace("    choice = learner.choose(obs)\n",
                        "    learner.fit([obs, obs])\n    choice = learner.choose(obs)\n")
    keys = _keys(tmp_path, main=main)
    assert ("agent.py", 20, "GPU101") not in keys


RUNNER = """\
import torch

from world import World


class Runner:
    def __init__(self, compile_it):
        self.world = World()
        if compile_it:
            self.world = torch.compile(self.world)

    def _update(self, batch):
        self.world.learn(batch)

    def run(self, batches):
        for step in range(len(batches)):
            self._update(batches[step])
"""

WORLD = """\
import torch
import torch.nn as nn


class World(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.opt = torch.optim.Adam(self.parameters())

    def learn(self, batch):
        loss = self.enc(batch.cuda()).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        print(loss.item())
"""


def test_a_helper_calling_a_held_objects_step_makes_the_loop_a_step_loop(tmp_path: Path):
    """`self._update(batch)` (a method of the runner) calls `self.world.learn(batch)`, one training step of a
    project object (two calls from the loop); `self.world = torch.compile(self.world)` wraps the same object."""
    root = write_project(tmp_path, {"run.py": RUNNER, "world.py": WORLD})
    keys = found(check(root, "--no-cache", "--exit-zero", "--select", "GPU101", "world.py"))
    assert ("world.py", 16, "GPU101") in keys


ROLLOUT = """\
import torch

from agent import Learner

learner = Learner(torch.device("cuda"))
obs = torch.zeros(4, device="cuda")
for iteration in range(1, 1001):
    for step in range(128):
        choice = learner.choose(obs)
    value = learner.choose(obs)
    print(torch.ones(2, device="cuda").sum().item())
"""


def test_a_network_call_beside_a_hot_rollout_leaves_the_rollout_the_step_loop(tmp_path: Path):
    # cleanrl's PPO: `next_value = agent.get_value(next_obs)` once per iteration, after the rollout loop; the
    # iteration's logging `.item()`s run once per rollout, not every step
    root = write_project(tmp_path / "p", {"main.py": ROLLOUT, "agent.py": AGENT})
    got = found(check(root, "--no-cache"))
    assert ("main.py", 11, "GPU101") not in got
    assert ("main.py", 9, "GPU112") in got  # the rollout's own per-step call still syncs every step
