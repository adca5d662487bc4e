"""Model code the per-step analysis did not reach (heldout12's VITS and a2c, heldout11's Informer; branch recall36).

- A model wrapped in DDP and handed to the trainer inside a list (`train_and_evaluate(rank, epoch, [net_g, net_d],
  ...)` then `net_g, net_d = nets` or `nets[0]`): the class's `forward` runs every step.
- A helper called as `module.helper(...)` (`import monotonic_align`, `monotonic_align.maximum_path(...)`) from
  per-step model code is per-step code, also in a package folder whose `setup.py` only builds an extension (the
  package belongs to the enclosing project).
- A submodule built in `__init__` (also through a local naming one of several classes: `base = CNNBase` then
  `self.base = base(...)`) and called in a policy method a hot loop calls (`Policy.act`), not in `forward`: its
  `forward` is per-step code, and a module naming no device is GPU code through that chain.
- A base-class method a subclass of the same module calls through `self` in its per-step `forward`
  (`NNBase._forward_gru`), also under a test of the object's own configuration (`if self.is_recurrent:`).
- A base class's attribute built by a builder the subclass overrides (`self.model = self._build_model().to(dev)`
  in `Exp_Basic.__init__`, `Exp_Informer._build_model` returning the model): `self.model(...)` in the subclass's
  loop runs the model.
Periodic callers stay periodic: a policy method called only under `if j % 10 == 0:` reaches nothing.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

ALIGN = """\
import numpy as np
import torch


def maximum_path(neg_cent, mask):
    device = neg_cent.device
    values = neg_cent.data.cpu().numpy()
    path = np.zeros(values.shape, dtype=np.int32)
    return torch.from_numpy(path).to(device=device)
"""

SYNTH = """\
import torch
from torch import nn
import monotonic_align


class Synth(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        attn = monotonic_align.maximum_path(x, x)
        return self.lin(x) + attn
"""

VITS_TRAIN = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from models import Synth


def run(rank, loader):
    net_g = Synth().cuda(rank)
    optim_g = torch.optim.AdamW(net_g.parameters(), fused=True)
    net_g = DDP(net_g, device_ids=[rank])
    for epoch in range(10):
        train_and_evaluate(rank, epoch, [net_g, None], [optim_g, None], [loader, None])


def train_and_evaluate(rank, epoch, nets, optims, loaders):
    net_g, net_d = nets
    optim_g, optim_d = optims
    train_loader, eval_loader = loaders
    for batch_idx, (x, y) in enumerate(train_loader):
        x = x.cuda(rank, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y_hat = net_g(x)
            loss = (y_hat - y).abs().mean()
        optim_g.zero_grad()
        loss.backward()
        optim_g.step()
"""

ALIGN_SITE = ("models.py", 12, "GPU112")
ALIGN_COPY = ("monotonic_align/__init__.py", 7, "GPU104")


def _vits(tmp_path, train=VITS_TRAIN, setup=False):
    modules = {"models.py": SYNTH, "monotonic_align/__init__.py": ALIGN, "train.py": train}
    if setup:  # a build script for a Cython extension, as VITS ships beside `monotonic_align/__init__.py`
        modules["monotonic_align/setup.py"] = "from distutils.core import setup\nsetup(name='core')\n"
    return found(check(write_project(tmp_path, modules)))


def test_ddp_model_in_a_list_handed_to_the_trainer_runs_every_step(tmp_path):
    got = _vits(tmp_path)
    assert ALIGN_SITE in got
    assert ALIGN_COPY in got  # the helper called as `monotonic_align.maximum_path(...)`


def test_an_element_taken_by_index_runs_every_step(tmp_path):
    got = _vits(tmp_path, VITS_TRAIN.replace("    net_g, net_d = nets\n", "    net_g = nets[0]\n"))
    assert ALIGN_SITE in got


def test_another_element_of_the_list_is_not_the_model(tmp_path):
    got = _vits(tmp_path, VITS_TRAIN.replace("    net_g, net_d = nets\n", "    net_d, net_g = nets\n"))
    assert ALIGN_SITE not in got and ALIGN_COPY not in got


def test_a_package_with_a_build_script_belongs_to_the_enclosing_project(tmp_path):
    (tmp_path / ".git").mkdir()
    got = _vits(tmp_path, setup=True)
    assert ALIGN_COPY in got


POLICY = """\
import torch
from torch import nn
from distributions import DiagGaussian


class NNBase(nn.Module):
    def __init__(self, recurrent):
        super().__init__()
        self._recurrent = recurrent

    @property
    def is_recurrent(self):
        return self._recurrent

    def _forward_gru(self, x, masks):
        has_zeros = (masks[1:] == 0.0).any(dim=-1).nonzero().squeeze().cpu()
        return x * has_zeros.numel()


class CNNBase(NNBase):
    def __init__(self, num_inputs, recurrent=False):
        super().__init__(recurrent)
        self.main = nn.Linear(num_inputs, 8)

    def forward(self, inputs, masks):
        x = self.main(inputs)
        if self.is_recurrent:
            x = self._forward_gru(x, masks)
        return x


class MLPBase(NNBase):
    def __init__(self, num_inputs, recurrent=False):
        super().__init__(recurrent)
        self.main = nn.Linear(num_inputs, 8)

    def forward(self, inputs, masks):
        return self.main(inputs)


class Policy(nn.Module):
    def __init__(self, obs_shape, base=None):
        super().__init__()
        if base is None:
            if len(obs_shape) == 3:
                base = CNNBase
            else:
                base = MLPBase
        self.base = base(obs_shape[0], recurrent=True)
        self.dist = DiagGaussian(8, 2)

    def forward(self, inputs, masks):
        raise NotImplementedError

    def act(self, inputs, masks):
        features = self.base(inputs, masks)
        return self.dist(features)

    def evaluate_actions(self, inputs, masks):
        features = self.base(inputs, masks)
        return self.dist(features)
"""

DISTRIBUTIONS = """\
import torch
from torch import nn


class DiagGaussian(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super().__init__()
        self.fc_mean = nn.Linear(num_inputs, num_outputs)

    def forward(self, x):
        mean = self.fc_mean(x)
        zeros = torch.zeros(mean.size())
        if x.is_cuda:
            zeros = zeros.cuda()
        return mean + zeros
"""

RL_MAIN = """\
import torch
from model import Policy


def main(envs, agent, rollouts, num_updates, num_steps):
    device = torch.device("cuda:0")
    actor_critic = Policy(envs.observation_space.shape)
    actor_critic.to(device)
    for j in range(num_updates):
        for step in range(num_steps):
            with torch.no_grad():
                action = actor_critic.act(rollouts.obs[step], rollouts.masks[step])
            obs, reward, done, infos = envs.step(action)
            rollouts.insert(obs, action, reward)
        agent.update(rollouts)
"""

AGENT = """\
from torch import optim


class PPO:
    def __init__(self, actor_critic):
        self.actor_critic = actor_critic
        self.optimizer = optim.Adam(actor_critic.parameters(), lr=1e-3, fused=True)

    def update(self, rollouts):
        for sample in rollouts.feed_forward_generator():
            loss = self.actor_critic.evaluate_actions(sample, sample).sum()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""

GRU_READ = ("model.py", 16, "GPU104")
GAUSSIAN_COPY = ("distributions.py", 14, "GPU203")


def _rl(tmp_path, main=RL_MAIN):
    modules = {"model.py": POLICY, "distributions.py": DISTRIBUTIONS, "main.py": main, "algo.py": AGENT}
    return found(check(write_project(tmp_path, modules)))


def test_submodules_called_in_a_per_step_policy_method_run_every_step(tmp_path):
    got = _rl(tmp_path, RL_MAIN.replace("from model import Policy\n", "from model import Policy\nfrom algo import PPO\n")
              .replace("    for j in range(num_updates):\n",
                       "    agent = PPO(actor_critic)\n    for j in range(num_updates):\n"))
    assert GAUSSIAN_COPY in got  # `self.dist = DiagGaussian(...)`, called in `act`
    assert GRU_READ in got  # `base = CNNBase` then `self.base = base(...)`; `NNBase._forward_gru` via `self`


def test_a_policy_method_called_only_periodically_reaches_nothing(tmp_path):
    periodic = RL_MAIN.replace("""\
        for step in range(num_steps):
            with torch.no_grad():
                action = actor_critic.act(rollouts.obs[step], rollouts.masks[step])
""", """\
        for step in range(num_steps):
            action = rollouts.actions[step]
            if step % 100 == 0:
                with torch.no_grad():
                    action = actor_critic.act(rollouts.obs[step], rollouts.masks[step])
""")
    assert periodic != RL_MAIN
    periodic = periodic.replace("from model import Policy\n", "from model import Policy\nfrom algo import PPO\n") \
        .replace("    for j in range(num_updates):\n", "    agent = PPO(actor_critic)\n    for j in range(num_updates):\n")
    agent = AGENT.replace("self.actor_critic.evaluate_actions(sample, sample)", "sample")
    got = found(check(write_project(tmp_path, {"model.py": POLICY, "distributions.py": DISTRIBUTIONS,
                                               "main.py": periodic, "algo.py": agent})))
    assert GAUSSIAN_COPY not in got and GRU_READ not in got


def test_setup_code_of_the_policy_is_not_per_step(tmp_path):
    main = RL_MAIN.replace("from model import Policy\n", "from model import Policy\nfrom algo import PPO\n") \
        .replace("    for j in range(num_updates):\n", "    agent = PPO(actor_critic)\n    for j in range(num_updates):\n")
    policy = POLICY.replace("        self.dist = DiagGaussian(8, 2)\n",
                            "        self.dist = DiagGaussian(8, 2)\n        self.dist(torch.zeros(8))\n") \
        .replace("        return self.dist(features)\n", "        return features\n")
    agent = AGENT.replace("self.actor_critic.evaluate_actions(sample, sample)", "sample")
    got = found(check(write_project(tmp_path, {"model.py": policy, "distributions.py": DISTRIBUTIONS,
                                               "main.py": main, "algo.py": agent})))
    assert GAUSSIAN_COPY not in got  # built and called once in `__init__` only


EXP_BASIC = """\
import torch


class ExpBasic(object):
    def __init__(self, args):
        self.args = args
        self.device = torch.device("cuda:0")
        self.model = self._build_model().to(self.device)

    def _build_model(self):
        raise NotImplementedError
"""

MASKING = """\
import torch
from torch import nn
from masks import ProbMask


class ProbAttention(nn.Module):
    def forward(self, x):
        return self._update_context(x)

    def _update_context(self, x):
        return x * ProbMask(x.shape[0], device=x.device).mask


class FullAttention(nn.Module):
    def forward(self, x):
        return x


class AttentionLayer(nn.Module):
    def __init__(self, attention):
        super().__init__()
        self.inner_attention = attention

    def forward(self, x):
        return self.inner_attention(x)


class Informer(nn.Module):
    def __init__(self, d, attn="prob"):
        super().__init__()
        self.lin = nn.Linear(d, d)
        Attn = ProbAttention if attn == "prob" else FullAttention
        self.attention = AttentionLayer(Attn())

    def forward(self, x):
        mask = torch.ones(x.shape[0], x.shape[0]).to(x.device)
        return self.attention(self.lin(x) * mask)
"""

MASKS = """\
import torch


class ProbMask():
    def __init__(self, n, device="cpu"):
        self.mask = torch.ones(n, n, dtype=torch.bool).to(device).triu(1)
"""

EXP = """\
import torch
from torch import nn
from exp_basic import ExpBasic
from informer import Informer


class ExpInformer(ExpBasic):
    def _build_model(self):
        model_dict = {"informer": Informer, "other": nn.Linear}
        model = model_dict[self.args.model](self.args.d).float()
        if self.args.use_multi_gpu:
            model = nn.DataParallel(model)
        return model

    def train(self, loader):
        optimizer = torch.optim.Adam(self.model.parameters(), fused=True)
        for x, y in loader:
            x = x.to(self.device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = (self.model(x) - y).abs().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

MASK_COPY = ("informer.py", 36, "GPU203")
PROB_MASK = ("masks.py", 6, "GPU203")  # `ProbAttention`, chosen by a conditional expression, builds `ProbMask`


def _informer(tmp_path, masking=MASKING, exp=EXP):
    return found(check(write_project(tmp_path, {"exp_basic.py": EXP_BASIC, "informer.py": masking,
                                                "masks.py": MASKS, "exp_informer.py": exp})))


def test_a_model_built_by_an_overridden_builder_of_the_base_class_runs_every_step(tmp_path):
    got = _informer(tmp_path)
    assert MASK_COPY in got  # `model_dict[self.args.model](...)` of a dict naming the class
    assert PROB_MASK in got  # a plain class built in a method the per-step `forward` calls


def test_a_builder_the_subclass_does_not_override_builds_nothing_known(tmp_path):
    got = _informer(tmp_path, exp=EXP.replace("    def _build_model(self):", "    def _make_model(self):"))
    assert MASK_COPY not in got and PROB_MASK not in got


def test_a_plain_class_built_only_in_setup_is_not_per_step(tmp_path):
    masking = MASKING.replace("        return x * ProbMask(x.shape[0], device=x.device).mask\n", "        return x\n")
    masking = masking.replace("        self.lin = nn.Linear(d, d)\n",
                              "        self.lin = nn.Linear(d, d)\n        self.mask = ProbMask(d).mask\n")
    got = _informer(tmp_path, masking=masking)
    assert ("informer.py", MASK_COPY[1] + 1, "GPU203") in got and PROB_MASK not in got  # one line added above


ENVS = """\
import torch
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper


class VecPyTorch(VecEnvWrapper):
    def __init__(self, venv, device):
        super().__init__(venv)
        self.device = device

    def reset(self):
        return torch.from_numpy(self.venv.reset()).float().to(self.device)

    def step_async(self, actions):
        self.venv.step_async(actions.numpy())

    def step_wait(self):
        obs, reward, done, info = self.venv.step_wait()
        obs = torch.from_numpy(obs).float().to(self.device)
        return obs, reward, done, info


def make_vec_envs(env_fns, device):
    envs = DummyVecEnv(env_fns)
    envs = VecPyTorch(envs, device)
    return envs
"""

ENV_MAIN = """\
import torch
from envs import make_vec_envs
from algo import PPO
from model import Policy


def main(env_fns, rollouts, num_updates, num_steps):
    device = torch.device("cuda:0")
    envs = make_vec_envs(env_fns, device)
    actor_critic = Policy(envs.observation_space.shape)
    actor_critic.to(device)
    agent = PPO(actor_critic)
    obs = envs.reset()
    for j in range(num_updates):
        for step in range(num_steps):
            with torch.no_grad():
                action = actor_critic.act(obs, rollouts.masks[step])
            obs, reward, done, infos = envs.step(action)
            rollouts.insert(obs, action, reward)
        agent.update(rollouts)
"""

OBS_COPY = ("envs.py", 18, "GPU410")  # `step_wait`'s pageable copy of the observations
RESET_COPY = ("envs.py", 11, "GPU410")


def _envs(tmp_path, envs=ENVS):
    return found(check(write_project(tmp_path, {"envs.py": envs, "main.py": ENV_MAIN, "algo.py": AGENT,
                                                "model.py": POLICY, "distributions.py": DISTRIBUTIONS})))


def test_a_vectorised_environment_wrapper_steps_with_the_loop(tmp_path):
    got = _envs(tmp_path)
    assert OBS_COPY in got
    assert RESET_COPY not in got  # `reset` runs once, before the loop


def test_a_wrapper_of_no_known_vectorised_environment_is_left_alone(tmp_path):
    got = _envs(tmp_path, ENVS.replace("from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper",
                                       "from mylib import DummyVecEnv, VecEnvWrapper"))
    assert OBS_COPY not in got


def test_a_helper_imported_by_an_earlier_module_that_never_steps_it_is_still_found(tmp_path):
    """The search for `module.helper(...)` spellings is made per caller module: a first module that imports the
    helper without a per-step call does not hide a later one's (`import monotonic_align` in `a_tools.py`)."""
    tools = "import monotonic_align\n\n\ndef once(x):\n    return monotonic_align.maximum_path(x, x)\n"
    got = found(check(write_project(tmp_path, {"models.py": SYNTH, "monotonic_align/__init__.py": ALIGN,
                                               "train.py": VITS_TRAIN, "a_tools.py": tools})))
    assert ALIGN_SITE in got and ALIGN_COPY in got


def test_the_vectorised_environment_search_reads_callers_as_the_member_search_does(tmp_path, monkeypatch):
    """One reading of caller files (`forward.hot_callers`) serves both per-step searches: a wrapper's
    `step_wait` is found through the caller the member search reads, under the same bound on how many it reads."""
    from gpulint.analysis import forward
    from gpulint.analysis.project import project_for
    from gpulint.analysis.vec_env_wrappers import vec_env_site

    root = write_project(tmp_path, {"envs.py": ENVS, "main.py": ENV_MAIN, "algo.py": AGENT, "model.py": POLICY,
                                    "distributions.py": DISTRIBUTIONS})
    envs = (root / "envs.py").resolve()
    site = vec_env_site(project_for(envs), envs, "VecPyTorch", "step_wait")
    assert (Path(site.path).name, site.runs) == ("main.py", "VecPyTorch.step_wait")
    monkeypatch.setattr(forward, "_CALLERS_PER_QUESTION", 0)
    project_for(envs).forget(None)
    assert vec_env_site(project_for(envs), envs, "VecPyTorch", "step_wait") is None
