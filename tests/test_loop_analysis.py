"""The training-loop analysis: which code runs every iteration, periodically, or outside hot loops.

Each snippet marks lines with `# every`, `# periodic` or `# outside`; the statement on that line must be
classified so. This is where precision comes from, so the cases mirror how real training scripts are written.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gpulint.analysis import Frequency, Kind, ModuleAnalysis

MARKS = {"# every": Frequency.EVERY_ITERATION, "# periodic": Frequency.PERIODIC, "# outside": Frequency.OUTSIDE}

PRELUDE = """\
import time
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
model = nn.Linear(2, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader([1, 2, 3])
"""

CASES = {
    "dataloader loop": """
        for x, y in loader:
            out = model(x)  # every
    """,
    "enumerate + tqdm wrapped loader": """
        from tqdm import tqdm
        for i, (x, y) in enumerate(tqdm(loader)):
            out = model(x)  # every
    """,
    "range loop that trains in its body (nanoGPT)": """
        for it in range(1000):
            loss = model(x).sum()  # every
            loss.backward()
    """,
    "while True loop with optimizer step": """
        while True:
            loss = model(x).sum()  # every
            optimizer.step()
            if it > 10:
                break
    """,
    "while True taking batches with next() from an iterator over a loader": """
        it = iter(loader)
        while True:
            x, y = next(it)
            total = x.sum().cpu()  # every
    """,
    "while loop over next() of an iterator that is not a loader's": """
        it = iter(names)
        while True:
            name = next(it)
            total = table.sum().cpu()  # outside
    """,
    "periodic guard": """
        for step, (x, y) in enumerate(loader):
            out = model(x)
            if step % 100 == 0:
                print(out)  # periodic
            else:
                print(out)  # every
    """,
    "negated periodic guard's else": """
        for step, (x, y) in enumerate(loader):
            if step % 10 != 0:
                pass  # every
            else:
                log = 1  # periodic
    """,
    "guard combined with and / or": """
        for it, b in enumerate(loader):
            if master and it % 10 == 0:
                a = 1  # periodic
            if it % 10 == 0 or it == last:
                b = 1  # periodic
            if it % 10 == 0 or verbose:
                c = 1  # every
    """,
    "not (step % N)": """
        for step, b in enumerate(loader):
            if not step % 50:
                x = 1  # periodic
    """,
    "last batch": """
        for i, b in enumerate(loader):
            if i == len(loader) - 1:
                x = 1  # periodic
    """,
    "counter bumped by += 1": """
        n = 0
        for b in loader:
            n += 1
            if n == 5:
                x = 1  # periodic
    """,
    "skip guard then continue": """
        for step, b in enumerate(loader):
            loss = model(b)  # every
            if step % 100 != 0:
                continue
            print(loss)  # periodic
    """,
    "flag variable": """
        for step, b in enumerate(loader):
            do_log = (step % 10 == 0)
            if do_log:
                x = 1  # periodic
    """,
    "time-based": """
        t0 = time.time()
        for b in loader:
            if time.time() - t0 > 60:
                x = 1  # periodic
    """,
    "epoch loop around the batch loop": """
        for epoch in range(10):
            for x, y in loader:
                out = model(x)  # every
            print(out)  # periodic
        print(out)  # outside
    """,
    "gradient accumulation: the step loop stays hot": """
        for step in range(100):
            for micro in range(4):
                loss = model(x).sum()  # every
                loss.backward()
            optimizer.step()  # every
    """,
    "epoch loop that also runs the model once per epoch": """
        for epoch in range(10):
            for x, y in loader:
                model(x).sum().backward()
            sample = model(torch.randn(2, 2))  # periodic
    """,
    "nested non-training loop inside a hot loop": """
        for x, y in loader:
            for p in model.parameters():
                g = p.grad  # every
    """,
    "loop else block and iterable run once": """
        for x, y in loader:
            out = model(x)
        else:
            done = 1  # outside
    """,
    "step helper called every iteration": """
        def train_step(batch):
            loss = model(batch).sum()  # every
            loss.backward()
        for b in loader:
            train_step(b)
    """,
    "step helper called periodically": """
        def evaluate_now(batch):
            return model(batch)  # periodic
        for step, b in enumerate(loader):
            model(b).sum().backward()
            if step % 1000 == 0:
                evaluate_now(b)
    """,
    "method helper via self": """
        class Trainer:
            def step(self, batch):
                return self.model(batch)  # every
            def fit(self, loader):
                for b in loader:
                    self.step(b)
    """,
    "trainer class: the step trains through its helpers, a read two calls deep": """
        class Engine:
            def fit(self, batches):
                for i in range(self.total_steps):
                    self.train_one(next(batches))
            def train_one(self, batch):
                loss = self.compute_loss(batch)
                self.apply(loss)
            def compute_loss(self, batch):
                return self.net(batch).mean()  # every
            def apply(self, loss):
                loss.backward()
                self.report()  # every
            def report(self):
                total = sum(p.grad.norm() for p in self.net.parameters())  # every
    """,
    "a step function that calls an epoch function is not a step": """
        class Trainer:
            def fit(self):
                for epoch in range(3):
                    self.run_epoch()
            def run_epoch(self):
                self.train_batches()
            def train_batches(self):
                for b in loader:
                    model(b).sum().backward()  # every
                done = 1  # outside
    """,
    "an ONNX-export branch inside a step runs at export, not every step": """
        for b in loader:
            out = model(b)  # every
            if torch.onnx.is_in_onnx_export():
                out = torch.from_numpy(out.cpu().numpy())  # outside
            out.sum().backward()  # every
    """,
    "the no-CUDA branch of a step runs only where there is no GPU": """
        for b in loader:
            if torch.cuda.is_available():
                h = torch.zeros(1, 8).cuda()  # every
            else:
                h = torch.zeros(1, 8).cpu()  # outside
            if not torch.cuda.is_available():
                h = h.cpu()  # outside
            elif b is None:
                h = h.cpu()  # every
            model(b, h).sum().backward()  # every
    """,
    "a sweep over written-out configurations is not a training loop": """
        def check(hook):
            model(hook).sum().backward()
        def main():
            for hook in ["no", "fp16", "bf16"]:
                check(hook)
                m = nn.Linear(2, 2)  # outside
    """,
    "epoch function called from an epoch loop": """
        def train(epoch):
            for b in loader:
                model(b).sum().backward()  # every
            summary = 1  # periodic
        for epoch in range(3):
            train(epoch)
            sample = 2  # periodic
    """,
    "function defined inside a hot loop is not run by it": """
        for b in loader:
            def hook(g):
                return g  # outside
            model(b)
    """,
    "loop without training": """
        for name in ["a", "b"]:
            print(name)  # outside
        for i in range(10):
            x = torch.zeros(3)  # outside
    """,
    "loop over a tensor's rows is not a training loop": """
        t = torch.randn(3, 3)
        for row in t:
            v = row.sum()  # outside
    """,
    "while test runs every iteration": """
        while (model(x) > 0).any():  # every
            pass
    """,
    "a base class's loop over self.run_step() runs the subclasses' overrides every iteration": """
        class TrainerBase:
            def train(self, start, end):
                self.before_train()
                for self.iter in range(start, end):
                    self.run_step()
            def before_train(self):
                pass
            def run_step(self):
                raise NotImplementedError
        class SimpleTrainer(TrainerBase):
            def before_train(self):
                self.first = torch.zeros(3).cpu()  # outside
            def run_step(self):
                loss = model(x).sum()
                loss.backward()
                self.log(loss)
            def log(self, loss):
                value = loss.item()  # every
        class AMPTrainer(SimpleTrainer):
            def run_step(self):
                loss = model(x).sum()
                loss.backward()
                value = loss.item()  # every
    """,
    "an override of a method the base class calls outside its loop is not per-step": """
        class Base:
            def fit(self):
                self.setup()
                for i in range(10):
                    self.show(i)
            def setup(self):
                pass
            def show(self, i):
                print(i)
        class Child(Base):
            def setup(self):
                model(x).sum().backward()  # outside
            def show(self, i):
                print(i + 1)  # outside
    """,
    "a block after a compound continue guard runs once per tick (StyleGAN2-ADA)": """
        it = iter(loader)
        done = False
        cur_nimg = cur_tick = tick_start_nimg = 0
        while True:
            x = next(it)
            loss = model(x).sum()  # every
            loss.backward()
            cur_nimg += 4
            if (grid is not None) and (done or cur_tick % snapshot_ticks == 0):
                a = loss.item()  # periodic
            done = (cur_nimg >= total_kimg * 1000)
            if (not done) and (cur_tick != 0) and (cur_nimg < tick_start_nimg + kimg_per_tick * 1000):
                continue
            b = loss.item()  # periodic
            if (rank == 0) and (snapshot_ticks is not None) and (done or cur_tick % snapshot_ticks == 0):
                c = loss.cpu()  # periodic
            cur_tick += 1
            tick_start_nimg = cur_nimg
            if done:
                break
    """,
    "a block that raises its own bare threshold runs once per crossing (a learning-rate warm-up boundary)": """
        warm_up_steps = 100
        for step in range(1000):
            loss = model(x).sum()
            loss.backward()  # every
            if step >= warm_up_steps:
                a = loss.item()  # periodic
                warm_up_steps = warm_up_steps * 3
            if step >= 500:
                b = loss.item()  # every
            if step > limit:
                limit += 10
                c = loss.item()  # periodic
    """,
    "an RL rollout beside the update loops runs every environment step (cleanrl's PPO)": """
        class Agent(nn.Module):
            def act(self, obs):
                return obs
        agent = Agent().cuda()
        for iteration in range(num_iterations):
            for step in range(num_steps):
                with torch.no_grad():
                    action, value = agent.act(next_obs)  # every
                next_obs, reward, done, info = envs.step(action.cpu().numpy())  # every
                next_obs = torch.Tensor(next_obs).to(device)  # every
            returns = compute_returns(rewards)  # periodic
            for epoch in range(update_epochs):
                for start in range(0, batch_size, minibatch_size):
                    loss = agent.loss(b_obs[start:start + minibatch_size])
                    loss.backward()  # every
                    optimizer.step()
            print(loss.item())  # periodic
    """,
    "logging at an episode's end, or in the first steps of a rollout, is not every environment step": """
        class Agent(nn.Module):
            def act(self, obs):
                return obs
        agent = Agent().cuda()
        for iteration in range(num_iterations):
            for step in range(num_steps):
                action = agent.act(next_obs)
                next_obs, reward, done, info = envs.step(action.cpu().numpy())  # every
                for idx, d in enumerate(done):
                    if d and info["lives"][idx] == 0:
                        print(values[step].cpu().numpy())  # periodic
                if 0 <= step <= 2:
                    print(values[step].item())  # periodic
                rewards[step] = torch.tensor(reward).to(device)  # every
            for epoch in range(update_epochs):
                loss = agent.loss(b_obs)
                loss.backward()  # every
    """,
    "a modulo guard whose period defaults to 1 in the script's options runs every step": """
        import argparse
        from dataclasses import dataclass
        @dataclass
        class Args:
            target_network_frequency: int = 1
            policy_frequency: int = 2
        args = tyro.cli(Args)
        class Plain:
            eval_every: int = 1
            def __init__(self, eval_every=500):
                self.eval_every = eval_every
        plain = Plain()
        parser = argparse.ArgumentParser()
        parser.add_argument("--log-every", type=int, default=1)
        parser.add_argument("--save-every", type=int, default=1)
        parser.add_argument("--save-every", type=int, default=1000)
        opts = parser.parse_args()
        for b in loader:
            model(b).sum().backward()
            if step % args.target_network_frequency == 0:
                soft = 1  # every
            if step % args.policy_frequency == 0:
                actor = 1  # periodic
            if step % opts.log_every == 0:
                log = 1  # every
            if step % opts.save_every == 0:
                save = 1  # periodic
            if step % plain.eval_every == 0:
                evaluate = 1  # periodic
    """,
    # an evaluation's episodes step the environment with the policy's action: a step loop of its own (branch
    # recall61, `_episode_loop`; heldout17/18 label the per-environment-step copies of evaluation episodes)
    "an evaluation rollout every N iterations is a loop of environment steps of its own": """
        class Agent(nn.Module):
            def act(self, obs):
                return obs
        agent = Agent().cuda()
        for iteration in range(num_iterations):
            for step in range(num_steps):
                action = agent.act(next_obs)
                next_obs, reward, done, info = envs.step(action.cpu().numpy())  # every
            for epoch in range(update_epochs):
                loss = agent.loss(b_obs)
                loss.backward()  # every
            if iteration % eval_every == 0:
                for t in range(max_steps):
                    action = agent.act(obs)
                    obs, reward, done, info = env.step(action.cpu().numpy())  # every
    """,
    "an evaluation rollout after training steps the environment every iteration; a sampler's step is none": """
        class Agent(nn.Module):
            def act(self, obs):
                return obs
        agent = Agent().cuda()
        for b in loader:
            model(b).sum().backward()
        for episode in range(num_episodes):
            for t in range(max_steps):
                action = agent.act(obs)
                obs, reward, done, info = env.step(action.cpu().numpy())  # every
        for t in range(max_steps):
            action = agent.act(obs)
            obs, reward, done, info = env.step(action.cpu().numpy())  # every
        for epoch in range(epochs):
            for b in loader:
                model(b).sum().backward()
            for t in range(num_timesteps):
                eps = agent.act(x)
                x = scheduler.step(eps, t, x).prev_sample
                print(x.cpu())  # periodic
    """,
    "a flag the loop sets beside a periodic test (a cancellation) keeps the block periodic": """
        cancel_initiated = False
        for step, x in enumerate(loader):
            model(x).sum().backward()
            if not cancel_initiated and step % 100 == 0:
                cancel_initiated, extra_steps = check_if_cancelled()
            if cancel_initiated or (save_interval is not None and step % save_interval == 0):
                save(model.weight.cpu())  # periodic
            if step % save_interval == 0 or options.save_every_step:
                save(model.weight.cpu())  # every
            if step % 100 == 0 or model(x).sum() > 0:
                print(x.cpu())  # every
    """,
    "a period that is a module constant of 1 is every step unless a function rebinds it": """
        log_interval = 1
        save_interval = 100
        eval_interval = 1
        for iter_num, x in enumerate(loader):
            loss = model(x).sum()
            loss.backward()
            if iter_num % log_interval == 0:
                print(loss.item())  # every
            if iter_num % save_interval == 0:
                print(loss.item())  # periodic
            if iter_num % eval_interval == 0:
                print(loss.item())  # periodic
            if iter_num % 1 == 0:
                print(loss.item())  # every

        def set_eval(n):
            global eval_interval
            eval_interval = n
    """,
    "a helper returning a divisibility test through a local name narrowed with and is periodic": """
        def every_n_steps(state, freq, acc_step=None, acc_freq=None):
            test = state.step % freq == 0
            if acc_step is not None:
                test = test and (state.acc_step == acc_step)
            elif acc_freq is not None:
                test = test and ((state.acc_step % acc_freq) == 0)
            return test

        def every_step_or_flag(state, freq, flag):
            test = state.step % freq == 0
            test = test or flag
            return test

        for x in loader:
            loss = model(x).sum()
            loss.backward()
            if every_n_steps(state, log_freq, acc_step=0):
                print(loss.item())  # periodic
            if every_step_or_flag(state, log_freq, verbose):
                print(loss.item())  # every
    """,
    "generation loop is not a training loop": """
        for k in range(3):
            y = model.generate(x)  # outside
    """,
}


def _case_lines(text: str):
    for row, line in enumerate(text.splitlines(), start=1):
        for mark, freq in MARKS.items():
            if line.rstrip().endswith(mark):
                yield row, freq


@pytest.mark.parametrize("name", list(CASES))
def test_execution_frequency(name: str):
    source = PRELUDE + textwrap.dedent(CASES[name])
    analysis = ModuleAnalysis(cst.parse_module(source))
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(analysis.module, unsafe_skip_copy=True).resolve(PositionProvider)
    first_on_line = {}
    for node in analysis.index.nodes:
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)) and node in positions:
            first_on_line.setdefault(positions[node].start.line, node)
    expected = list(_case_lines(source))
    assert expected, "case has no marks"
    for row, freq in expected:
        node = first_on_line[row]
        if isinstance(node, cst.While):
            node = node.test
        assert analysis.execution(node).frequency is freq, f"line {row}: {source.splitlines()[row - 1]!r}"


KIND_CASES = [
    ("loss = criterion(model(x), y)", "loss", Kind.TENSOR),
    ("import torch as T\nv = T.zeros(3)", "v", Kind.TENSOR),
    ("from torch import isnan\nv = isnan(w)", "v", Kind.TENSOR),
    ("import numpy as np\nv = np.ones(3)", "v", Kind.NUMPY),
    ("v = loss.item()", "v", Kind.NUMBER),
    ("loss = model(x).sum()\nv = 0.0\nv += loss", "v", Kind.TENSOR),
    ("v = 0.0\nv += unknown_thing", "v", Kind.NUMBER),
    # `v = v.item()`: the receiver still holds the tensor (its read is a sync); after the statement, a number
    ("v = model(x).sum()\nv = v.item()", "v", Kind.TENSOR),
    ("v = model(x).sum()\nv = v.item()\nprint(v)", "v", Kind.NUMBER),
    ("v = torch.device('cuda')", "v", Kind.OTHER),
    ("v = DataLoader(ds)", "v", Kind.LOADER),
    ("v = torch.optim.Adam(p)", "v", Kind.OPTIMIZER),
    ("v = nn.Linear(2, 2)", "v", Kind.MODULE),
    ("class Net(nn.Module):\n    pass\nv = Net()", "v", Kind.MODULE),
    ("for v, w in loader:\n    pass", "v", Kind.TENSOR),
    ("for i, (v, w) in enumerate(loader):\n    pass", "i", Kind.NUMBER),
    ("for k, v in batch.items():\n    pass", "k", Kind.OTHER),
    ("v = len(loader)", "v", Kind.NUMBER),
    ("t = torch.zeros(2)\nv = t.shape", "v", Kind.OTHER),
    ("v = (pred == y).sum()", "v", Kind.UNKNOWN),
    ("pred = model(x)\nv = (pred == y).sum()", "v", Kind.TENSOR),
    ("def f(t: torch.Tensor):\n    v = t\n    return v", "v", Kind.TENSOR),
    # `v /= 255` keeps the kind `v` had: a number on the right says nothing about it
    ("for v, w in loader:\n    v = v.float()\n    v /= 255", "v", Kind.TENSOR),
    ("v = '%g' % model(x).sum()", "v", Kind.OTHER),
    ("v = ('%11s' * 2 + '%g') % (1, 2)", "v", Kind.OTHER),
    ("det = model(x)\nfor *v, conf, cls in reversed(det):\n    pass", "cls", Kind.TENSOR),
    # iterating a name that holds a tensor in one branch and a list of tensors in another yields tensors
    ("pred = model(x)\nif split:\n    pred = [pred, None]\nfor v in pred:\n    pass", "v", Kind.TENSOR),
    ("rows = model(x)\nif split:\n    rows = ['a', 'b']\nfor v in rows:\n    pass", "v", Kind.UNKNOWN),
    # a loader's `labels` rebound to decoded strings and zipped: a `str`-only method call says the element is
    # text (deep-text-recognition-benchmark's `if pred == gt:` after `gt = gt[:gt.find('[s]')]`)
    ("for x, labels in loader:\n    labels = converter.decode(labels)\n    for v in labels:\n"
     "        v = v[:v.find('[s]')]", "v", Kind.UNKNOWN),
    ("for x, labels in loader:\n    labels = converter.decode(labels)\n    for v in labels:\n"
     "        v = v[:3]", "v", Kind.TENSOR),
    # a method named for what it handles is not that thing (BasicSR's checkpoint save looped over the state dict
    # of `self.get_bare_model(net_)` and read as a forward pass every iteration)
    ("class T:\n    def save(self, net):\n        v = self.get_bare_model", "v", Kind.UNKNOWN),
    ("class T:\n    def save(self, net):\n        v = self.bare_model", "v", Kind.MODULE),
]


@pytest.mark.parametrize("source,name,kind", KIND_CASES)
def test_value_kinds(source, name, kind):
    text = PRELUDE + "criterion = nn.CrossEntropyLoss()\n" + source + "\n"
    analysis = ModuleAnalysis(cst.parse_module(text))
    names = [n for n in analysis.index.nodes if isinstance(n, cst.Name) and n.value == name]
    assert analysis.kind(names[-1]) is kind


# Loops with no model that do tensor math many times (iterative solvers, k-means, sampling) are hot; a handful
# of items, setup code, or a loop some other loop calls is not.
TENSOR_LOOP_CASES = {
    "the guides' measured loop: a reduction copied to the host each iteration": """
        def inefficient(t1, t2, iterations=1000):
            results = []
            for _ in range(iterations):
                result = (t1 * t2).sum().cpu().numpy()  # every
                results.append(result)
            return results
    """,
    "k-means over device tensors": """
        pts = torch.randn(1000, 2, device="cuda")
        centers = pts[:8]
        for it in range(max_iter):
            assign = torch.cdist(pts, centers).argmin(1)  # every
            for k in range(8):
                centers[k] = pts[assign == k].mean(0)  # every
    """,
    "a while loop with a tensor condition": """
        x = torch.ones(10, device="cuda")
        while x.norm() > 1e-3:
            x = x * 0.5  # every
    """,
    "a literal range of 8 or more": """
        x = torch.ones(10, device="cuda")
        for i in range(8):
            x = x @ w  # every
    """,
    "a handful of items is not hot": """
        x = torch.ones(10, device="cuda")
        for i in range(3):
            y = x * i  # outside
        for name in ["a", "b"]:
            y = x.sum()  # outside
        for i in range(2, 9):
            y = x + i  # outside
    """,
    "no tensor math: only factories": """
        for i in range(100):
            buf = torch.zeros(3)  # outside
    """,
    "setup code and an inner loop under a periodic guard stay as they were": """
        class M(nn.Module):
            def __init__(self):
                for i in range(n):
                    self.table = self.table * 2  # outside
        for step, (x, y) in enumerate(loader):
            loss = model(x)
            if step % 100 == 0:
                for i in range(n):
                    s = loss * i  # periodic
    """,
    "a k-NN chunk loop in a function a config loop calls runs per chunk": """
        def knn(train_features, test_features, n, chunk):
            top1 = 0.0
            for idx in range(0, n, chunk):
                feats = test_features[idx:idx + chunk]
                sim = torch.mm(feats, train_features)
                correct = sim.topk(5).indices.eq(0)
                top1 = top1 + correct.sum().item()  # every
            return top1
        for k in config.ks:
            knn(train, test, 1000, 100)
    """,
    "the same chunk loop called periodically from a training loop is periodic": """
        def knn(train_features, test_features, n, chunk):
            top1 = 0.0
            for idx in range(0, n, chunk):
                sim = torch.mm(test_features[idx:idx + chunk], train_features)
                top1 = top1 + sim.topk(5).indices.eq(0).sum().item()  # periodic
            return top1
        for step, (x, y) in enumerate(loader):
            model(x).sum().backward()
            if step % 100 == 0:
                knn(train, test, 1000, 100)
    """,
    "a function that a loop calls is judged by its caller": """
        def refine(x):
            for i in range(n):
                x = x * 0.5  # outside
            return x
        for name in ["a", "b"]:
            refine(t)
    """,
}


TENSOR_LOOP_CASES_NOT_HOT = {
    "an interactive `while True` loop": """
        while True:
            src = encode(input())
            out = (src * 2).cpu()  # outside
    """,
    "an epoch loop handing the model to an imported train()": """
        from utils import train
        for epoch in range(1, epochs + 1):
            acc = train(model, loader)
            history.append(acc.item())  # outside
    """,
    "a generation loop calling a model's method": """
        for k in range(num_samples):
            y = model.generate(x, 100)
            print(y[0].tolist())  # outside
    """,
    "printing samples already generated": """
        y = model.generate(x, 100)
        for i in range(num_samples):
            print(tokenizer.decode(y[i].cpu().squeeze()))  # outside
    """,
    "a plotting loop": """
        import matplotlib.pyplot as plt
        for i in range(n):
            plt.subplot(3, 3, i + 1)
            plt.imshow(images[i].cpu().numpy())  # outside
    """,
}


@pytest.mark.parametrize("name", list(TENSOR_LOOP_CASES) + list(TENSOR_LOOP_CASES_NOT_HOT))
def test_tensor_math_loops(name: str):
    CASES[name] = {**TENSOR_LOOP_CASES, **TENSOR_LOOP_CASES_NOT_HOT}[name]
    try:
        test_execution_frequency(name)
    finally:
        del CASES[name]


def test_an_error_path_that_ends_the_run_runs_at_most_once():
    from gpulint.diagnostics import FixMode  # noqa: F401
    from gpulint.runner import lint_source

    text = (
        "import sys\nimport torch\n"
        "model = torch.nn.Linear(2, 1).cuda()\n"
        "for x in loader:\n"
        "    loss = model(x.cuda()).sum()\n"
        "    if not torch.isfinite(loss):\n"
        "        print('Loss is {}, stopping training'.format(loss.item()))\n"
        "        sys.exit(1)\n"
        "    loss.backward()\n"
        "    if loss.item() > 100:\n"
        "        print('big')\n"
    )
    found = [(d.location.row, d.code) for d in lint_source(text, "t.py", frozenset({"GPU101"})).diagnostics]
    assert found == [(10, "GPU101")]  # the every-step `.item()` still counts; the one before sys.exit does not


FIRST_PASS = '''\
import torch

device = torch.device("cuda")
model = torch.nn.Linear(4, 4).to(device)


def generate(x, steps, prompt_size):
    {init}
    for _ in range(steps):
        x = model(x)
        if {test}:
            {flag} = {cleared}
            input_pos = torch.tensor([prompt_size], device=device)
        {again}
    return x
'''


@pytest.mark.parametrize("init,test,flag,cleared", [
    ("prefill = True", "prefill", "prefill", "False"),            # litgpt's prefill step
    ("done = False", "not done", "done", "True"),                  # a first-pass setup
])
def test_a_block_that_clears_its_own_flag_runs_once_not_every_step(init, test, flag, cleared):
    from gpulint.runner import lint_source

    once = FIRST_PASS.format(init=init, test=test, flag=flag, cleared=cleared, again="")
    assert lint_source(once, "gen.py", frozenset({"GPU203"})).diagnostics == []
    # the loop sets the flag again: the block may run on any step
    again = FIRST_PASS.format(init=init, test=test, flag=flag, cleared=cleared,
                              again=f"if x.shape[0] > 2:\n            {flag} = {'True' if cleared == 'False' else 'False'}")
    assert [d.code for d in lint_source(again, "gen.py", frozenset({"GPU203"})).diagnostics] == ["GPU203"]


MOVED_LATER = '''\
import torch


class Trainer:
    def train_step(self, batch):
        metrics = {{}}
        {early}
        if (instance_mask := batch.get("instance_mask")) is not None:
            metrics["masked"] = (~instance_mask).sum().item()
        metrics["tokens"] = batch["input_ids"].sum().item()
        self.optim.zero_grad(set_to_none=True)
        {late}
        loss = self.model(batch["input_ids"]).sum()
        loss.backward()
        self.optim.step()
        return metrics

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
'''


@pytest.mark.parametrize("late", ["batch = move_to_device(batch, self.device)",
                                  "batch = batch.to(self.device)",
                                  "batch = batch.cuda()"])
def test_reads_before_the_function_moves_the_batch_to_the_device_are_host_reads(late):
    """OLMo's `train_step` counts masked instances on the batch it moves to the GPU two lines later."""
    from gpulint.runner import lint_source

    source = MOVED_LATER.format(early="", late=late)
    assert [d.code for d in lint_source(source, "trainer.py", frozenset({"GPU101"})).diagnostics] == []
    moved_first = MOVED_LATER.format(early=late, late="")  # moved before the reads: they sync
    assert [d.code for d in lint_source(moved_first, "trainer.py", frozenset({"GPU101"})).diagnostics] == \
        ["GPU101", "GPU101"]
    other = MOVED_LATER.format(early="", late="inputs = move_to_device(batch, self.device)")  # not rebound
    assert [d.code for d in lint_source(other, "trainer.py", frozenset({"GPU101"})).diagnostics] == \
        ["GPU101", "GPU101"]


RUNNING_TOTAL = '''\
import torch


class Recipe:
    def train(self):
        running_loss = 0
        for idx, batch in enumerate(self._dataloader):
            batch = {{k: v.to(self._device) for k, v in batch.items()}}
            current_loss = self._loss_step(batch) * self.scale
            running_loss += {added}
            current_loss.backward()
            if (idx + 1) % self._gradient_accumulation_steps == 0:
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                loss_value = (running_loss / 8).item()
                running_loss = 0
'''


@pytest.mark.parametrize("added", ["current_loss.detach()", "current_loss"])
def test_a_running_total_started_at_zero_and_fed_a_loss_from_a_helper_is_a_tensor(added):
    """torchtune's recipes: `running_loss = 0`, `running_loss += current_loss.detach()` where `current_loss` comes
    from a method (`self._loss_step(batch)`) and is back-propagated: reading the total every optimizer step syncs."""
    from gpulint.runner import lint_source

    def rows(text):
        return [d.location.row for d in lint_source(text, "recipe.py", frozenset({"GPU101"})).diagnostics]

    source = RUNNING_TOTAL.format(added=added)
    read = next(i for i, line in enumerate(source.splitlines(), 1) if "loss_value =" in line)
    assert rows(source) == [read]
    assert rows(RUNNING_TOTAL.format(added="current_loss.item()")) == []  # a host float total: nothing to read


def test_an_object_whose_backward_takes_the_loss_is_not_a_tensor():
    """`accelerator.backward(loss)` back-propagates `loss`; `accelerator` stays an Accelerator (its
    `check_trigger()` returns a bool: branching on it is not a tensor branch)."""
    from gpulint.runner import lint_source

    source = (
        "import torch\nfrom accelerate import Accelerator\n\n\ndef train(model, loader, optimizer, make):\n"
        "    accelerator = make()\n    for batch in loader:\n        loss = model(batch.to('cuda')).sum()\n"
        "        accelerator.backward(loss)\n        optimizer.step()\n        if accelerator.check_trigger():\n"
        "            break\n")
    assert [d.code for d in lint_source(source, "train.py", frozenset({"GPU106"})).diagnostics] == []


@pytest.mark.parametrize("count,hot", [("num_attn_heads", False), ("self.num_layers", False), ("depth", False),
                                       ("num_steps", True), ("n", True)])
def test_a_tensor_loop_over_a_models_parts_is_not_hot_by_itself(count, hot):
    """timm's `resize_rel_pos_bias_table` loops `for i in range(num_attn_heads)` doing tensor math once, while a
    checkpoint is resized: a count of heads, layers, blocks or stages is a handful, not a stream of batches."""
    from gpulint.runner import lint_source

    source = (
        "import torch\n\n\ndef resize(self, n, num_steps, depth, num_attn_heads):\n"
        "    x = torch.ones(10, device=\"cuda\")\n    out = []\n"
        f"    for i in range({count}):\n        out.append((x * i).sum().cpu())\n"
        "    return out\n")
    codes = [d.code for d in lint_source(source, "pos.py", frozenset({"GPU104"})).diagnostics]
    assert codes == (["GPU104"] if hot else [])
