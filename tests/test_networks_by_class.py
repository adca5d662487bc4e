"""A network known by its class, not by its name (issue 11, heldout8): an RL algorithm keeps its network in
`self.policy`, a recommender script in a module global `dlrm` bound inside `run()` under `global`. Neither name
says "model"; what the code declares does:

- `policy: ActorCriticNet` in the class body (or a base class's), or every `self.<attr> = Cls(...)` building a
  project class deriving from `nn.Module`: `self.<attr>(...)` runs the network, so a loop calling it every
  environment step is a per-step loop (its `actions.cpu()` is a blocking copy each step);
- a name bound only in functions that declare it `global`: what those functions bind it to.

An attribute declared as anything else (a scheduler class, a string) stays unknown: no finding.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

NETS = textwrap.dedent("""\
    import torch as th
    from torch import nn


    class BaseNet(nn.Module):
        pass


    class ActorCriticNet(BaseNet):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 3)

        def forward(self, obs):
            out = self.body(obs)
            return out, out, out


    class Schedule:
        def __call__(self, obs):
            return obs
""")

ALGO = textwrap.dedent("""\
    import numpy as np
    import torch as th
    from nets import ActorCriticNet, Schedule


    class Algorithm:
        {declaration}

        def __init__(self, env, device="cuda"):
            self.env = env
            self.device = device
            {construction}

        def collect(self, n_steps):
            steps = 0
            while steps < n_steps:
                with th.no_grad():
                    obs = th.as_tensor(self.last_obs, device=self.device)
                    actions, values, log_probs = self.{attr}(obs)
                actions = actions.cpu().numpy()
                self.last_obs, rewards, dones, infos = self.env.step(actions)
                steps += 1
""")

COPY = ("algo.py", 20, "GPU104")


def _algo(tmp_path, declaration="", construction="pass", attr="policy"):
    text = ALGO.format(declaration=declaration or "pass", construction=construction, attr=attr)
    root = write_project(tmp_path / "p", {"nets.py": NETS, "algo.py": text})
    return found(check(root))


def test_attribute_annotated_in_the_class_body_is_a_network(tmp_path):
    assert COPY in _algo(tmp_path, declaration="policy: ActorCriticNet",
                         construction="self.policy = self.make_policy()")


def test_annotation_in_a_base_class_counts(tmp_path):
    text = ALGO.format(declaration="pass", construction="self.policy = self.make_policy()", attr="policy")
    text = text.replace("class Algorithm:", "class Base:\n    policy: ActorCriticNet\n\n\nclass Algorithm(Base):")
    root = write_project(tmp_path / "p", {"nets.py": NETS, "algo.py": text})
    assert ("algo.py", 24, "GPU104") in found(check(root))


def test_attribute_built_from_a_module_class_is_a_network(tmp_path):
    assert COPY in _algo(tmp_path, construction="self.agent = ActorCriticNet().to(device)", attr="agent")


def test_attribute_declared_as_something_else_stays_unknown(tmp_path):
    assert not _algo(tmp_path, declaration="policy: Schedule", construction="self.policy = Schedule()")
    assert not _algo(tmp_path, construction="self.agent = Schedule()", attr="agent")
    # one assignment of something that is not a module is enough to leave the attribute unknown
    assert not _algo(tmp_path, construction="self.agent = ActorCriticNet() if env else Schedule()",
                     attr="agent")


SCRIPT = textwrap.dedent("""\
    import torch
    from torch import nn


    class RecNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.top = nn.Linear(16, 1)

        def forward(self, x):
            return self.top(x)


    def net_wrap(X, device):
        return recnet(X.to(device))


    def evaluate(test_ld, device):
        total = 0
        for i, batch in enumerate(test_ld):
            X, T = batch
            Z = net_wrap(X, device)
            S = Z.detach().cpu().numpy()
            total += S.sum()
        return total


    def run(loader, test_ld, device):
        global recnet
        recnet = RecNet()
        recnet = recnet.to(device)
        evaluate(test_ld, device)
""")


def test_global_bound_under_a_global_declaration_is_a_network(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": SCRIPT})
    assert ("train.py", 23, "GPU104") in found(check(root))


def test_global_bound_to_something_else_stays_unknown(tmp_path):
    text = SCRIPT.replace("recnet = RecNet()\n", "recnet = make_table()\n").replace(
        "recnet = recnet.to(device)\n", "")
    root = write_project(tmp_path / "p", {"train.py": text})
    assert not any(code == "GPU104" for _, _, code in found(check(root)))


def test_prefilter_keeps_a_loop_that_calls_a_declared_attribute():
    """The `ast` prefilter over-approximates the above: a loop whose only sign of a model is `self.<attr>(...)`,
    an attribute the class declares or builds from a class, is parsed (its kind is decided with the project)."""
    import ast

    from gpulint import prefilter

    def hot(source: str) -> bool:
        return prefilter.FileFacts(source, ast.parse(source)).holds(prefilter.HOT_LOOP)

    loop = "    def act(self, items):\n        while items:\n            out = self.{attr}(items.pop())\n"
    declared = "class Runner:\n    agent: Agent\n\n" + loop.format(attr="agent")
    built = "class Runner:\n    def __init__(self):\n        self.agent = nets.Agent().to('cuda')\n\n" + \
        loop.format(attr="agent")
    plain = "class Runner:\n    def __init__(self):\n        self.agent = make()\n\n" + loop.format(attr="agent")
    assert hot(declared) and hot(built)
    assert not hot(plain)


def test_attributes_of_a_network_class_are_left_to_their_names(tmp_path):
    """A class defining `forward` (its base a library class gpulint cannot see) is a network: a loop of its own
    over time steps or layers calling a submodule is model code, run as its caller decides, not a step loop."""
    text = ALGO.format(declaration="pass", construction="self.agent = ActorCriticNet()", attr="agent")
    text = text.replace("class Algorithm:", "class Algorithm(LibraryHead):").replace(
        "    def collect(self, n_steps):", "    def forward(self, x):\n        return x\n\n    def collect(self, n_steps):")
    root = write_project(tmp_path / "p", {"nets.py": NETS, "algo.py": "from lib import LibraryHead\n" + text})
    assert not any(code == "GPU104" for _, _, code in found(check(root)))


def test_a_loss_summed_anew_in_each_call_of_a_per_step_method_is_no_accumulator(tmp_path):
    """`loss = a * ce` then `loss += b * mse` inside the trainer's `step()` (the losses now known as tensors, the
    criteria being `nn` modules the class builds): the name is bound anew on every call, so no graph piles up
    across steps: GPU301 stays quiet (it reported line 17 before the rule saw the rebinding)."""
    text = textwrap.dedent("""\
        import torch
        from torch import nn


        class Trainer:
            def __init__(self, student, loader, optimizer):
                self.student = student
                self.loader = loader
                self.optimizer = optimizer
                self.ce_fct = nn.CrossEntropyLoss()
                self.mse_fct = nn.MSELoss()
                self.running = 0

            def step(self, x, y):
                out = self.student(x.cuda())
                loss = 0.5 * self.ce_fct(out, y.cuda())
                loss += 0.5 * self.mse_fct(out, out)
                self.running += loss
                self.optimize(loss)

            def optimize(self, loss):
                loss.backward()
                self.optimizer.step()

            def train(self):
                for x, y in self.loader:
                    self.step(x, y)
    """)
    root = write_project(tmp_path / "p", {"trainer.py": text})
    assert not any(code == "GPU301" for _, _, code in found(check(root)))
