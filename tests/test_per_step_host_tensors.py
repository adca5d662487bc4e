"""Host-built tensors copied to the GPU every step one call away from the loop (recall64; heldout19's biggest
group of misses): few-shot methods that rebuild their episode labels from numpy in every `set_forward_loss`, a
helper's host one-hot copied later in the step, an STFT helper kept on `self` by `partial` that builds its Hann
window on the host each call, model forwards that copy targets built on the host (tuple-unpacked, converted with
`.to(dtype=...)`), and a reward from numpy cast to a model output's device.

- GPU203: `torch.from_numpy(<numpy array of Python sizes>)` (`np.repeat(range(n_way), n_query)`) moved in the
  same per-step function, in one expression or later, through `Variable(...)`: "build it once and keep it on the
  device", naming the per-step caller; a helper's host result bound and copied later (`y_oh = one_hot(y, n)`).
- `analysis/stored_callables.py`: `self.f = partial(f, ...)` in a class, `self.f(x)` in a hot loop of it or a
  subclass, makes `f` per-step code (related location: that call).
- GPU410: `a, b = torch.from_numpy(x).to(dtype=torch.long), torch.tensor(y)` then `a.to(dev)`;
  `torch.from_numpy(r).to(model_output)`.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

TEMPLATE = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class MetaTemplate(nn.Module):
        def __init__(self, n_way, n_support):
            super().__init__()
            self.n_way = n_way
            self.n_support = n_support
            self.n_query = -1
            self.feature = nn.Linear(8, 8)

        def set_forward_loss(self, x):
            raise NotImplementedError

        def train_loop(self, loader, optimizer):
            for x, _ in loader:
                self.n_query = x.size(1) - self.n_support
                optimizer.zero_grad()
                loss = self.set_forward_loss(x)
                loss.backward()
                optimizer.step()
""")

PROTONET = textwrap.dedent("""\
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.autograd import Variable
    from template import MetaTemplate
    from utils import one_hot


    class ProtoNet(MetaTemplate):
        def __init__(self, n_way, n_support):
            super().__init__(n_way, n_support)
            self.loss_fn = nn.CrossEntropyLoss()
            self.support = torch.from_numpy(np.repeat(range(n_way), n_support)).cuda()

        def set_forward(self, x):
            return self.feature(x.cuda().view(-1, 8))

        def set_forward_loss(self, x):
            y_query = torch.from_numpy(np.repeat(range(self.n_way), self.n_query))
            y_query = Variable(y_query.cuda())
            y_s = Variable(torch.from_numpy(np.repeat(range(self.n_way), self.n_support))).cuda()
            y_oh = one_hot(y_query.cpu(), self.n_way)
            y_oh = Variable(y_oh.cuda())
            scores = self.set_forward(x)
            return self.loss_fn(scores, y_query) + (scores[: len(y_s)] * y_oh[: len(y_s)]).sum()
""")

UTILS = textwrap.dedent("""\
    import torch


    def one_hot(y, num_class):
        return torch.zeros((len(y), num_class)).scatter_(1, y.unsqueeze(1), 1)
""")

TRAIN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from protonet import ProtoNet

    model = ProtoNet(5, 1).cuda()
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    loader = DataLoader(torch.randn(64, 5, 3, 8), batch_size=None, pin_memory=True)
    for epoch in range(10):
        model.train_loop(loader, optimizer)
""")


def _items(tmp_path, protonet=PROTONET, train=TRAIN):
    root = write_project(tmp_path / "p", {"template.py": TEMPLATE, "protonet.py": protonet, "utils.py": UTILS,
                                          "train.py": train})
    return check(root, "--no-cache", "--exit-zero")


def _at(items, path, row, code="GPU203"):
    return [d for d in items if d["code"] == code and d["filename"].endswith(path) and d["location"]["row"] == row]


def test_episode_labels_from_numpy_moved_later_in_a_per_step_method_are_reported(tmp_path):
    items = _items(tmp_path)
    reported = _at(items, "protonet.py", 20)
    assert reported, found(items)
    message = reported[0]["message"]
    assert "`y_query` is built on the host from a numpy array of sizes" in message
    assert "build it once and keep it on the device" in message
    assert "`self.set_forward_loss(...)` runs every step" in message  # the per-step caller is named


def test_episode_labels_moved_in_one_expression_through_variable_are_reported(tmp_path):
    reported = _at(_items(tmp_path), "protonet.py", 21)
    assert reported and "`torch.from_numpy(...)` is built on the host" in reported[0]["message"]


def test_a_helpers_host_one_hot_bound_and_copied_later_is_reported(tmp_path):
    reported = _at(_items(tmp_path), "protonet.py", 23)
    assert reported and "`one_hot(...)` builds the tensor it returns on the host" in reported[0]["message"]


def test_labels_built_once_in_init_stay_quiet(tmp_path):
    assert not _at(_items(tmp_path), "protonet.py", 13)


def test_numpy_array_of_data_is_no_array_of_sizes(tmp_path):
    data = PROTONET.replace("np.repeat(range(self.n_way), self.n_query)", "np.repeat(x.numpy(), self.n_query)")
    assert data != PROTONET
    assert not [d for d in _at(_items(tmp_path, protonet=data), "protonet.py", 20)
                if "numpy array of sizes" in d["message"]]


def test_a_cpu_only_project_stays_quiet(tmp_path):
    cpu = PROTONET.replace(".cuda()", "")
    train = TRAIN.replace(".cuda()", "").replace(", pin_memory=True", "")
    assert ".cuda(" not in cpu + train
    items = _items(tmp_path, protonet=cpu, train=train)
    assert not [d for d in items if d["code"] == "GPU203"]


FEATURE = textwrap.dedent("""\
    import torch


    def stft(y, n_fft, hop_length):
        return torch.stft(y, n_fft, hop_length, window=torch.hann_window(n_fft).to(y.device), return_complex=True)


    def unused(y, n_fft):
        return torch.hann_window(n_fft).to(y.device)
""")

BASE_TRAINER = textwrap.dedent("""\
    from functools import partial

    import torch
    from audio.feature import stft


    class BaseTrainer:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer
            self.torch_stft = partial(stft, n_fft=512, hop_length=256)

        def train(self, epochs):
            for epoch in range(epochs):
                self._train_epoch(epoch)
""")

TRAINER = textwrap.dedent("""\
    import torch
    from audio.base_trainer import BaseTrainer


    class Trainer(BaseTrainer):
        def __init__(self, model, optimizer, loader):
            super().__init__(model, optimizer)
            self.loader = loader

        def _train_epoch(self, epoch):
            for noisy in self.loader:
                noisy = noisy.to("cuda", non_blocking=True)
                self.optimizer.zero_grad()
                spec = self.torch_stft(noisy)
                loss = self.model(spec.abs()).mean()
                loss.backward()
                self.optimizer.step()
""")

RUN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from trainer import Trainer

    model = torch.nn.Linear(257, 1).cuda()
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    loader = DataLoader(torch.randn(64, 4096), batch_size=4, pin_memory=True)
    Trainer(model, optimizer, loader).train(10)
""")


def _audio(tmp_path, trainer=TRAINER, base=BASE_TRAINER):
    root = write_project(tmp_path / "a", {"audio/__init__.py": "", "audio/feature.py": FEATURE,
                                          "audio/base_trainer.py": base, "trainer.py": trainer, "run.py": RUN})
    return check(root, "--no-cache", "--exit-zero")


def test_a_function_kept_on_self_by_partial_runs_every_step_where_the_loop_calls_the_attribute(tmp_path):
    items = _audio(tmp_path)
    reported = _at(items, "feature.py", 5)
    assert reported, found(items)
    message = reported[0]["message"]
    assert "`torch.hann_window`" in message and "build it once and keep it on the device" in message
    assert "`self.torch_stft(...)` runs every step" in message
    assert [(r["filename"].rsplit("/", 1)[-1], r["location"]["row"]) for r in reported[0]["related"]] == \
        [("trainer.py", 14)]
    assert not _at(items, "feature.py", 9)  # a function nobody calls every step


def test_the_attribute_called_outside_the_loop_stays_quiet(tmp_path):
    once = TRAINER.replace("            spec = self.torch_stft(noisy)\n", "            spec = noisy\n") \
        .replace("    def _train_epoch(self, epoch):\n",
                 "    def _train_epoch(self, epoch):\n        self.torch_stft(torch.zeros(4096))\n")
    assert once.count("torch_stft") == 1
    assert once != TRAINER
    assert not _at(_audio(tmp_path, trainer=once), "feature.py", 5)


def test_an_attribute_rebound_elsewhere_is_not_followed(tmp_path):
    rebound = BASE_TRAINER.replace("    def train(self, epochs):\n",
                                   "    def use_numpy(self):\n        self.torch_stft = None\n\n"
                                   "    def train(self, epochs):\n")
    assert rebound != BASE_TRAINER
    assert not _at(_audio(tmp_path, base=rebound), "feature.py", 5)


MODEL = textwrap.dedent("""\
    import numpy as np
    import torch
    import torch.nn as nn


    class Recognizer(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(8, 4)

        def build_target(self, target):
            return np.zeros((len(target), 4), dtype=np.int64), [len(t) for t in target]

        def forward(self, x, target):
            logits = self.head(x)
            _gt, _seq_len = self.build_target(target)
            gt, seq_len = torch.from_numpy(_gt).to(dtype=torch.long), torch.tensor(_seq_len)
            gt, seq_len = gt.to(x.device), seq_len.to(x.device)
            return nn.functional.cross_entropy(logits, gt[:, 0]) + seq_len.float().mean() * 0


    class Critic(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x, target):
            logprobs = self.model(x, target)
            reward = np.ones(4, dtype=np.float32)
            reward = torch.from_numpy(reward).to(logprobs)
            return -(logprobs * reward).mean()
""")

TRAIN_MODEL = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from model import Critic, Recognizer

    device = torch.device("cuda")
    model = Recognizer().to(device)
    critic = Critic(model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    loader = DataLoader(torch.randn(64, 8), batch_size=4, pin_memory=True)
    for x in loader:
        x = x.to(device, non_blocking=True)
        loss = model(x, ["ab", "cd", "ef", "gh"]) + critic(x, ["ab", "cd", "ef", "gh"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")


def test_targets_built_on_the_host_in_a_per_step_forward_unpacked_and_copied_are_reported(tmp_path):
    root = write_project(tmp_path / "m", {"model.py": MODEL, "train.py": TRAIN_MODEL})
    items = check(root, "--no-cache", "--exit-zero")
    rows = sorted(d["location"]["row"] for d in items if d["code"] == "GPU410" and d["filename"].endswith("model.py"))
    assert rows.count(18) == 2, found(items)  # `gt.to(...)` and `seq_len.to(...)`, each built on the host
    cast = _at(items, "model.py", 30, "GPU410")
    assert cast and "`.to(logprobs)` copies it to the GPU from pageable memory" in cast[0]["message"]


def test_the_per_step_call_of_the_stored_helper_is_reported_where_the_cost_is_paid(tmp_path):
    reported = _at(_audio(tmp_path), "trainer.py", 14, "GPU112")
    assert reported and "`self.torch_stft(...)` copies host data to the GPU every step" in reported[0]["message"]
    assert "`stft`" in reported[0]["message"] and "`torch.hann_window(...)" in reported[0]["message"]


def test_a_partial_binding_positional_arguments_is_not_resolved_for_call_costs(tmp_path):
    bound = BASE_TRAINER.replace("partial(stft, n_fft=512, hop_length=256)", "partial(stft, 512, 256)") \
        .replace("def stft(y, n_fft, hop_length)", "def stft(n_fft, hop_length, y)")
    assert bound != BASE_TRAINER
    assert not _at(_audio(tmp_path, base=bound), "trainer.py", 14, "GPU112")
