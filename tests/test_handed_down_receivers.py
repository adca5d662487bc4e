"""A method another module's loop runs every step calls a method of an object it is handed (branch recall57):
`def update_critic(self, obs, target, logger, step): logger.log("loss", loss, step)`, reached from the trainer's
`self.agent.update(self.buffer, self.logger, self.step)` through `self.update_critic(..., logger, step)`. The
receiver `logger` is the `Logger` the per-step call hands down, so what `Logger.log` does with the device loss
(`.item()`) is a sync at the call (pytorch_sac's `logger.log('train_critic/loss', critic_loss, step)`,
heldout14). Silent when the call is periodic, when another call hands something else, when the helper reads
nothing, or when a host number is logged."""

from __future__ import annotations

from tests.projects import check, found, write_project

LOGGER = """\
import torch


class Logger:
    def __init__(self):
        self.values = {}

    def log(self, key, value, step):
        if isinstance(value, torch.Tensor):
            value = value.item()
        self.values[key] = value


class Recorder:
    def __init__(self):
        self.values = {}

    def log(self, key, value, step):
        self.values[key] = value
"""

AGENT = """\
import torch
import torch.nn.functional as F


class Agent:
    def __init__(self, critic, lr):
        self.device = torch.device("cuda")
        self.critic = critic.to(self.device)
        self.opt = torch.optim.Adam(self.critic.parameters(), lr=lr, fused=True)

    def update_critic(self, obs, target, logger, step):
        loss = F.mse_loss(self.critic(obs), target)
        logger.log("train/critic_loss", {value}, step)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def update(self, buffer, logger, step):
        obs, target = buffer.sample()
        self.update_critic(obs, target, logger, step)
{more}"""

TRAIN = """\
from agent import Agent
from logger import Logger, Recorder


class Workspace:
    def __init__(self, critic, buffer, steps):
        self.logger = {logger}()
        self.agent = Agent(critic, 1e-3)
        self.buffer = buffer
        self.num_train_steps = steps
        self.step = 0

    def run(self):
        while self.step < self.num_train_steps:
            {call}
            self.step += 1
"""

CALL = "self.agent.update(self.buffer, self.logger, self.step)"


def _found(tmp_path, value="loss", logger="Logger", call=CALL, more=""):
    write_project(tmp_path, {"logger.py": LOGGER, "agent.py": AGENT.format(value=value, more=more),
                             "train.py": TRAIN.format(logger=logger, call=call)})
    return found(check(tmp_path, "--select", "GPU1", "--no-cache"))


def test_a_device_loss_handed_to_the_logger_the_per_step_call_passes_down_syncs(tmp_path):
    assert found_rows(_found(tmp_path)) == {("agent.py", 13, "GPU112")}


def test_a_logger_that_reads_nothing_is_fine(tmp_path):
    assert found_rows(_found(tmp_path, logger="Recorder")) == set()


def test_a_host_number_logged_is_fine(tmp_path):
    assert found_rows(_found(tmp_path, value="1.0")) == set()


def test_a_periodic_update_is_fine(tmp_path):
    call = f"if self.step % 100 == 0:\n                {CALL}"
    assert found_rows(_found(tmp_path, call=call)) == set()


def test_a_parameter_another_call_fills_with_something_else_is_unknown(tmp_path):
    # a second path hands `update_critic` an object built in place: the parameter may hold either
    more = ("\n    def update_quietly(self, buffer, step):\n"
            "        obs, target = buffer.sample()\n"
            "        self.update_critic(obs, target, Recorder(), step)\n")
    assert found_rows(_found(tmp_path, more=more)) == set()


def found_rows(keys) -> set:
    return {(path, row, code) for path, row, code in keys if code == "GPU112"}
