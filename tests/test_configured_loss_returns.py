"""Values a configured loss hands back detached (issue 11, precision): a preference-optimisation recipe builds its
loss with `instantiate(cfg.loss)` and adds the rewards it returns to running metrics every step. The loss class
the configuration files name returns its rewards `.detach()`ed, so the sums keep no graph alive and GPU301 stays
quiet. A configuration naming a loss whose rewards keep their history brings the report back (for that position
only), and a class whose `forward` does not return a tuple of the unpacked length is no candidate.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

LOSSES = """\
import torch
import torch.nn.functional as F
from torch import nn


class TokenLoss(nn.Module):
    def forward(self, logits, labels):
        return F.cross_entropy(logits, labels)


class PairLoss(nn.Module):
    def __init__(self, beta=0.1):
        super().__init__()
        self.beta = beta

    def forward(self, chosen, rejected, ref_chosen, ref_rejected):
        logits = (chosen - rejected) - (ref_chosen - ref_rejected)
        losses = -F.logsigmoid(self.beta * logits)
        chosen_rewards = self.beta * (chosen - ref_chosen).detach()
        rejected_rewards = self.beta * (rejected - ref_rejected).detach()
        return losses, chosen_rewards, rejected_rewards


class MarginLoss(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.margin = margin

    def forward(self, chosen, rejected, ref_chosen, ref_rejected):
        losses = F.relu(self.margin - (chosen - rejected))
        return losses, chosen - ref_chosen, (rejected - ref_rejected).detach()


class LearnedScaleLoss(nn.Module):
    def __init__(self, beta=0.1):
        super().__init__()
        self.beta = nn.Parameter(torch.tensor(beta))

    def forward(self, chosen, rejected, ref_chosen, ref_rejected):
        losses = -F.logsigmoid(chosen - rejected)
        return losses, self.beta * (chosen - ref_chosen).detach(), self.beta * (rejected - ref_rejected).detach()
"""

RECIPE = """\
import torch
from hydra.utils import instantiate


class Recipe:
    def __init__(self, cfg):
        self.model = torch.nn.Linear(8, 4).cuda()
        self._loss_fn = instantiate(cfg.loss)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), fused=True)

    def train(self, loader, log):
        running_metrics = {"chosen": 0, "rejected": 0}
        for batch, ref in loader:
            out = self.model(batch.cuda(non_blocking=True))
            ref = ref.cuda(non_blocking=True)
            loss, chosen_rewards, rejected_rewards = self._loss_fn(out[:, 0], out[:, 1], ref[:, 0], ref[:, 1])
            loss = loss.mean()
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            running_metrics["chosen"] += 0.5 * chosen_rewards.mean()
            running_metrics["rejected"] += 0.5 * rejected_rewards.mean()
        log(running_metrics)
"""

CHOSEN, REJECTED = ("recipe.py", 21, "GPU301"), ("recipe.py", 22, "GPU301")


def _lint(root: Path, configs: dict[str, str]) -> set:
    modules = {"losses.py": LOSSES, "recipe.py": RECIPE}
    modules.update({f"configs/{name}.yaml": f"loss:\n  _component_: {target}\n" for name, target in configs.items()})
    return {f for f in found(check(write_project(root, modules), "--no-cache", "--exit-zero")) if f[2] == "GPU301"}


def test_rewards_the_configured_loss_detaches_are_not_reported(tmp_path: Path) -> None:
    # the single-tensor loss of another recipe's configuration cannot be unpacked into three: no candidate
    assert _lint(tmp_path / "p", {"dpo": "losses.PairLoss", "sft": "losses.TokenLoss"}) == set()


def test_a_candidate_returning_attached_rewards_keeps_that_position_reported(tmp_path: Path) -> None:
    assert _lint(tmp_path / "p", {"dpo": "losses.PairLoss", "margin": "losses.MarginLoss"}) == {CHOSEN}


def test_a_learned_scale_keeps_the_history(tmp_path: Path) -> None:
    # `self.beta` is an `nn.Parameter`: `self.beta * x.detach()` still carries the parameter's graph
    assert _lint(tmp_path / "p", {"dpo": "losses.LearnedScaleLoss"}) == {CHOSEN, REJECTED}


def test_a_loss_built_by_its_constructor(tmp_path: Path) -> None:
    # `self._loss_fn = MarginLoss()`: the one class is read the same way (its second reward is detached)
    recipe = RECIPE.replace("from hydra.utils import instantiate", "from losses import MarginLoss").replace(
        "instantiate(cfg.loss)", "MarginLoss()")
    root = write_project(tmp_path / "p", {"losses.py": LOSSES, "recipe.py": recipe})
    assert {f for f in found(check(root, "--no-cache", "--exit-zero")) if f[2] == "GPU301"} == {CHOSEN}
