"""Per-step costs behind evaluation passes and project helpers that earlier sets missed (branch recall72,
heldout20):

- an evaluation pass run every N training steps (`if self.steps % eval_interval == 0: self._eval_epoch()`)
  whose own loop draws from one entry of a dict of loaders (`self.data_loader["dev"]`): that loop is a pass
  over batches, and what runs per evaluation batch (`self.total_eval_loss[k] += loss.item()` in the
  `_eval_step` it calls) is a per-step cost of it, not periodic logging;
- a script that names no device (an environment loop, `policy.select_action(np.array(state))`) calling a
  project helper of another module that copies host data to the GPU on every call: reported at the call;
- a helper given `batch.trg[j]`, where the function hands `batch.trg` (through `trg = batch.trg`) to the
  network: a device tensor, so the helper's per-element lookups (`vocab.itos[i]`) are paid at the call.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

TRAINER = """\
from collections import defaultdict

import torch


class Trainer:
    def __init__(self, model, data_loader, criterion, optimizer, config, device):
        self.model = model
        self.data_loader = data_loader
        self.criterion = criterion
        self.optimizer = optimizer
        self.config = config
        self.device = device
        self.steps = 0
        self.total_eval_loss = defaultdict(float)

    def run(self):
        while True:
            self._train_epoch()

    def _train_step(self, batch):
        x, y = self._parse_batch(batch)
        loss = self.criterion["mse"](self.model["generator"](*x), y)
        self.optimizer["generator"].zero_grad()
        loss.backward()
        self.optimizer["generator"].step()
        self.steps += 1

    def _train_epoch(self):
        for steps_per_epoch, batch in enumerate(self.data_loader["train"], 1):
            self._train_step(batch)
            if self.config["rank"] == 0:
                self._check_eval_interval()

    @torch.no_grad()
    def _eval_step(self, batch):
        x, y = self._parse_batch(batch)
        y_ = self.model["generator"](*x)
        loss = self.criterion["mse"](y_, y)
        self.total_eval_loss["eval/loss"] += loss.item()

    def _eval_epoch(self):
        for key in self.model.keys():
            self.model[key].eval()
        for eval_steps_per_epoch, batch in enumerate(self.data_loader["dev"], 1):
            self._eval_step(batch)
        for key in self.total_eval_loss.keys():
            self.total_eval_loss[key] /= eval_steps_per_epoch
        self.total_eval_loss = defaultdict(float)

    def _parse_batch(self, batch):
        x, y = batch
        return [x.to(self.device)], y.to(self.device)

    def _check_eval_interval(self):
        if self.steps % self.config["eval_interval_steps"] == 0:
            self._eval_epoch()
"""


def test_an_eval_pass_run_periodically_pays_its_per_batch_reads(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"trainer.py": TRAINER})
    items = check(root, "--no-cache", "--exit-zero")
    keys = found(items)
    # the eval step's accumulator, once per evaluation batch
    assert ("trainer.py", 40, "GPU302") in keys
    # and the call of the step in the pass's loop, once per evaluation batch
    assert ("trainer.py", 46, "GPU112") in keys
    # the once-per-pass division after the loop is not a per-step cost
    assert not any(row == 48 for _, row, _ in keys)


def test_a_loader_dict_entry_is_a_loader_but_a_batch_dict_entry_is_not(tmp_path: Path) -> None:
    text = TRAINER.replace('self.data_loader["dev"]', 'self.batches["dev"]')
    root = write_project(tmp_path, {"trainer.py": text})
    keys = found(check(root, "--no-cache", "--exit-zero"))
    assert ("trainer.py", 40, "GPU302") not in keys


AGENT = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Actor(nn.Module):
    def __init__(self, n, m):
        super().__init__()
        self.l1 = nn.Linear(n, m)

    def forward(self, state):
        return torch.tanh(self.l1(state))


class Agent(object):
    def __init__(self, n, m):
        self.actor = Actor(n, m).to(device)
        self.opt = torch.optim.Adam(self.actor.parameters())

    def select_action(self, state):
        state = torch.FloatTensor(state.reshape(1, -1)).to(device)
        return self.actor(state).cpu().data.numpy().flatten()

    def act_host(self, state):
        return state * 2

    def train(self, buf):
        x = buf.sample()
        loss = self.actor(x).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
"""

MAIN = """\
import numpy as np
import torch
import gym
import agent

if __name__ == "__main__":
    env = gym.make("Pendulum-v1")
    torch.manual_seed(0)
    policy = agent.Agent(3, 1)
    state, done = env.reset(), False
    for t in range(1000000):
        action = policy.select_action(np.array(state))
        other = policy.act_host(np.array(state))
        state, reward, done, _ = env.step(action)
        policy.train(None)
        if done:
            state, done = env.reset(), False
"""


def test_a_device_free_script_reports_a_helper_that_copies_to_the_gpu_every_step(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"agent.py": AGENT, "main.py": MAIN})
    items = check(root, "--no-cache", "--exit-zero")
    keys = found(items)
    assert ("main.py", 12, "GPU112") in keys
    call = next(d for d in items if d["location"]["row"] == 12 and d["code"] == "GPU112")
    assert "copies host data to the GPU every step" in call["message"]
    assert "`Agent.select_action`" in call["message"]
    # a helper with no GPU work of its own is no finding
    assert not any(path == "main.py" and row == 13 for path, row, _ in keys)


def test_a_device_free_script_whose_helper_module_names_no_device_is_quiet(tmp_path: Path) -> None:
    cpu_agent = AGENT.replace('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                              'where = "cpu"').replace(".to(device)", "")
    root = write_project(tmp_path, {"agent.py": cpu_agent, "main.py": MAIN})
    keys = found(check(root, "--no-cache", "--exit-zero"))
    assert not any(path == "main.py" for path, _, _ in keys)


BLEU = """\
def idx_to_word(x, vocab):
    words = []
    for i in x:
        word = vocab.itos[i]
        if '<' not in word:
            words.append(word)
    return " ".join(words)
"""

EVAL = """\
import torch
from bleu import idx_to_word

device = torch.device("cuda")
model = torch.nn.Transformer().to(device)


def evaluate(model, iterator, vocab, batch_size):
    model.eval()
    total = []
    with torch.no_grad():
        for i, batch in enumerate(iterator):
            src = batch.src
            trg = batch.trg
            output = model(src, trg[:, :-1])
            trg = trg[:, 1:].contiguous().view(-1)
            for j in range(batch_size):
                words = idx_to_word(batch.trg[j], vocab)
                names = idx_to_word(batch.names[j], vocab)
                total.append(words + names)
    return total
"""


def test_a_batch_attribute_fed_to_the_network_is_a_device_tensor_at_a_helper_call(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"bleu.py": BLEU, "evaluate.py": EVAL})
    items = check(root, "--no-cache", "--exit-zero")
    keys = found(items)
    assert ("evaluate.py", 18, "GPU112") in keys
    call = next(d for d in items if d["location"]["row"] == 18 and d["code"] == "GPU112")
    assert "used as an index" in call["message"]
    # an attribute of the batch the network never sees (a list of names) is not known to be a device tensor
    assert ("evaluate.py", 19, "GPU112") not in keys


def test_which_loader_named_entries_are_loaders() -> None:
    import libcst as cst

    from gpulint.analysis import Kind, ModuleAnalysis

    source = (
        "import numpy as np\n"
        "def f(self, dataloaders, phase, path, loader_kwargs):\n"
        "    a = self.data_loader['dev']\n"
        "    b = dataloaders[phase]\n"
        "    archive = np.load(path)\n"
        "    loader = archive\n"
        "    data_loader = np.load(path)\n"
        "    c = data_loader['x']\n"
        "    d = loader_kwargs['batch_size']\n"
        "    e = self.loaders[0:2]\n"
    )
    module = cst.parse_module(source)
    analysis = ModuleAnalysis(module)
    values = {}
    for statement in module.body[1].body.body:
        target = statement.body[0].targets[0].target.value
        values[target] = statement.body[0].value
    assert analysis.kinds.of(values["a"]) is Kind.LOADER
    assert analysis.kinds.of(values["b"]) is Kind.LOADER
    assert analysis.kinds.of(values["c"]) is not Kind.LOADER  # an archive `np.load` opened
    assert analysis.kinds.of(values["d"]) is not Kind.LOADER  # the loaders' settings
    assert analysis.kinds.of(values["e"]) is not Kind.LOADER  # a slice


def test_another_objects_loader_dict_is_not_followed() -> None:
    import libcst as cst

    from gpulint.analysis import Kind, ModuleAnalysis

    # an export tool peeking at one batch of a solver's loaders, once per checkpoint: no pass over batches
    source = "def f(solver):\n    a = solver.loaders['train']\n"
    module = cst.parse_module(source)
    value = module.body[0].body.body[0].body[0].value
    assert ModuleAnalysis(module).kinds.of(value) is not Kind.LOADER
