"""Methods an RL rollout calls every environment step (issue 11, heldout8: SB3's `RolloutBuffer.add`).

A rollout file has no loader and no backward: its loop is a step loop because it runs the policy network and
hands the actions to `env.step(...)` (four or five names unpacked). The methods of other project modules it calls
every iteration (a buffer's `add`, which copies the value estimates to the host with `.cpu().numpy()`) run every
environment step, as those called from a loop over a loader do: their own host reads are reported where they are
written, with the rollout's call as the related location. A loop that steps the environment with actions it
draws at random (no network runs: a warm-up that fills the buffer) is no step loop, and the buffer's reads stay
quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

BUFFERS = textwrap.dedent("""\
    import numpy as np
    import torch as th


    class Buffer:
        def __init__(self, size, device="auto"):
            self.values = np.zeros(size)
            self.device = th.device(device)
            self.pos = 0

        def add(self, obs, value):
            self.values[self.pos] = value.clone().cpu().numpy().flatten()
            self.pos += 1
""")

ALGO = textwrap.dedent("""\
    import torch as th
    from torch import nn
    from buffers import Buffer


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 3)

        def forward(self, obs):
            out = self.body(obs)
            return out, out, out


    class Algorithm:
        policy: Net

        def __init__(self, env, device="cuda"):
            self.env = env
            self.device = device
            self.policy = Net().to(device)
            self.buffer = Buffer(128)

        def collect(self, buffer: Buffer, n_steps):
            steps = 0
            while steps < n_steps:
                with th.no_grad():
                    obs = th.as_tensor(self.last_obs, device=self.device)
                    actions, values, log_probs = self.policy(obs)
                actions = actions.cpu().numpy()
                {step}
                buffer.add(self.last_obs, values)
                steps += 1
""")

ENV_STEP = "new_obs, rewards, dones, infos = self.env.step(actions)"


def _findings(tmp_path, step):
    root = write_project(tmp_path / "p", {"buffers.py": BUFFERS, "algo.py": ALGO.format(step=step)})
    return found(check(root))


def test_buffer_method_called_every_environment_step_is_per_step_code(tmp_path):
    findings = _findings(tmp_path, ENV_STEP)
    assert ("buffers.py", 12, "GPU104") in findings
    assert ("algo.py", 33, "GPU112") in findings  # the call site, as before


def test_gymnasium_five_names_count_too(tmp_path):
    findings = _findings(tmp_path, "new_obs, rewards, terminated, truncated, infos = self.env.step(actions)")
    assert ("buffers.py", 12, "GPU104") in findings


def test_random_warm_up_steps_are_not_per_step(tmp_path):
    text = ALGO.format(step=ENV_STEP).replace("actions, values, log_probs = self.policy(obs)",
                                              "actions, values = self.env.sample(), obs")
    root = write_project(tmp_path / "p", {"buffers.py": BUFFERS, "algo.py": text})
    assert not any(path == "buffers.py" for path, _, _ in found(check(root)))
