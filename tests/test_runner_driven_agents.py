"""Agents driven by a runner function, their device kept in a class attribute (branch recall83).

A device-generic RL library keeps its device in `Config.DEVICE` (set to `torch.device('cuda:0')` or the CPU by a
`select_device` helper), copies with a `tensor(x)` helper and reads back with `to_np(t)`. Its agents' `step()` runs
from `run_steps(agent)`, a `while True:` over its parameter; the script building the agents may be unreadable.

- `analysis/driver_loops.py`: a loop over an object parameter calling `p.step()` every iteration makes `step`
  per-step in every project class that defines it and trains (or the annotated class and its subclasses);
- `analysis/device_helpers.py`: a module naming no device that copies through a helper of a CUDA-naming module is
  GPU code (its syncs through arguments are reported);
- `analysis/module_attrs.py`: `self.network = config.network_fn()` whose class reads `self.network.parameters()`
  holds a module, so `self.network(x)` returns tensors.
"""

from __future__ import annotations

from projects import lint_files

TORCH_UTILS = """\
    import numpy as np
    import torch


    class Config:
        DEVICE = torch.device('cpu')


    def select_device(gpu_id):
        if gpu_id >= 0:
            Config.DEVICE = torch.device('cuda:%d' % gpu_id)
        else:
            Config.DEVICE = torch.device('cpu')


    def tensor(x):
        if isinstance(x, torch.Tensor):
            return x
        x = np.asarray(x, dtype=np.float32)
        return torch.from_numpy(x).to(Config.DEVICE)


    def to_np(t):
        return t.cpu().detach().numpy()
"""

MISC = """\
    def run_steps(agent):
        while True:
            if agent.total_steps >= agent.max_steps:
                break
            agent.step()
"""

AGENT = """\
    import numpy as np
    from torch_utils import tensor, to_np


    class A2CAgent:
        def __init__(self, config):
            self.task = config.task_fn()
            self.network = config.network_fn()
            self.optimizer = config.optimizer_fn(self.network.parameters())
            self.total_steps = 0
            self.states = self.task.reset()

        def step(self):
            prediction = self.network(self.states)
            next_states, rewards, terminals, info = self.task.step(to_np(prediction['action']))
            advantages = tensor(np.zeros((4, 1)))
            loss = (tensor(rewards) - prediction['v']).pow(2).mean() + advantages.mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.states = next_states
            self.total_steps += 1
"""

# An environment wrapper with a `step()` of its own that trains nothing: never made per-step by the runner.
ENV = """\
    import numpy as np
    from torch_utils import tensor


    class Recorder:
        def __init__(self):
            self.frames = []

        def step(self):
            self.frames.append(tensor(np.zeros(3)))
"""


def test_runner_makes_the_agents_step_per_step(tmp_path):
    found = lint_files(tmp_path, {"torch_utils.py": TORCH_UTILS, "misc.py": MISC, "a2c_agent.py": AGENT,
                                  "env.py": ENV}, "GPU112")
    agent = {(row, code) for name, row, code in found if name == "a2c_agent.py"}
    assert (16, "GPU112") in agent  # `tensor(np.zeros(...))`: a host-to-device copy every step
    assert (17, "GPU112") in agent  # `tensor(rewards)`
    assert (15, "GPU112") in agent  # `to_np(prediction['action'])`: a sync every step (the network's output)
    assert not {f for f in found if f[0] == "env.py"}  # a `step()` that trains nothing is not driven


def test_annotated_runner_parameter_picks_its_class(tmp_path):
    runner = "from a2c_agent import A2CAgent\n\n\ndef run(agent: A2CAgent):\n    for _ in range(10 ** 6):\n" \
             "        agent.step()\n"
    found = lint_files(tmp_path, {"torch_utils.py": TORCH_UTILS, "misc.py": runner, "a2c_agent.py": AGENT,
                                  "env.py": ENV}, "GPU112")
    assert ("a2c_agent.py", 16, "GPU112") in found
    assert not {f for f in found if f[0] == "env.py"}


def test_no_runner_no_finding(tmp_path):
    # the same agent, nothing driving its `step()`: the copies run as often as whoever calls it, unknown
    found = lint_files(tmp_path, {"torch_utils.py": TORCH_UTILS, "a2c_agent.py": AGENT}, "GPU112")
    assert ("a2c_agent.py", 16, "GPU112") not in found


def test_cpu_only_helpers_stay_quiet(tmp_path):
    # the same project with a helper that never names CUDA: a CPU-only library, its syncs cost nothing
    cpu_utils = TORCH_UTILS.replace("torch.device('cuda:%d' % gpu_id)", "torch.device('cpu')")
    found = lint_files(tmp_path, {"torch_utils.py": cpu_utils, "misc.py": MISC, "a2c_agent.py": AGENT}, "GPU112")
    assert ("a2c_agent.py", 15, "GPU112") not in found
