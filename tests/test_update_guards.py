"""An agent's `update()` that returns early unless `step % self.update_every == 0` and whose rest runs the
optimizer steps through the class's own methods (`self.update_critic(...)` stepping `self.critic_opt`) is the
training step itself (branch recall81): its costs are paid on every optimizer step, so they are reported as
every-step costs, as where the step is written in the guarded block (gradient accumulation). A guarded block that
steps nothing (periodic logging, evaluation) stays periodic: quiet by default.
"""

from __future__ import annotations

from projects import check, found, write_project

AGENT = """\
import torch


class Agent:
    def __init__(self, update_every):
        self.critic = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).cuda()
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=1e-4, fused=True)
        self.update_every = update_every

    def update_critic(self, obs, target):
        metrics = dict()
        loss = torch.nn.functional.mse_loss(self.critic(obs), target)
        metrics["critic_loss"] = loss.item()
        loss.backward()
        {step}
        return metrics

    def update(self, replay_iter, step):
        if step % self.update_every != 0:
            return dict()
        obs, target = next(replay_iter)
        return self.update_critic(obs.cuda(non_blocking=True), target.cuda(non_blocking=True))
"""

TRAIN = """\
from agent import Agent


def main(replay_iter, num_steps):
    agent = Agent(update_every=2)
    for step in range(num_steps):
        metrics = agent.update(replay_iter, step)
"""


def _lint(tmp_path, step="self.critic_opt.step()"):
    root = write_project(tmp_path, {"agent.py": AGENT.format(step=step), "train.py": TRAIN})
    return check(root, "--no-cache", "--exit-zero", "--select", "GPU101", ".")


def test_an_update_guarded_by_its_period_that_steps_through_a_method_is_the_training_step(tmp_path):
    items = _lint(tmp_path)
    assert found(items) == {("agent.py", 13, "GPU101")}
    assert "runs every step" in items[0]["message"] and "periodically" not in items[0]["message"]


def test_a_guarded_method_that_steps_no_optimizer_stays_periodic(tmp_path):
    assert found(_lint(tmp_path, step="self.grads.append(loss.detach())")) == set()
