"""Syncs of helpers and decoding loops that earlier sets missed (branch recall68, heldout20):

- an `assert` on a tensor computed from a parameter (`assert labels.max() < n_classes`) converts it with
  `bool()` every call, so a loop calling the helper with a device tensor pays it (GPU112), and the helper's own
  assert is reported where a training file hands it a name bound only to a copy to the device (GPU106);
- a helper that loops over its parameter and looks every element up in a list (`for i in x: vocab.itos[i]`)
  reads each element with `__index__` (GPU112 at a call given a device tensor);
- a decoding loop that runs the network through a helper method of its class and keeps its state in a strategy
  object (`log_probs = self._decode(strategy.current_predictions)`, `strategy.advance(log_probs)`) is a hot loop,
  and the strategy's methods (handed to the method as a parameter, one of two classes) run every decoding step.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

TRAIN_ONE_HOT = """\
import torch
import net

model = torch.nn.Linear(4, 10).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(range(10), pin_memory=True)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    t = net.one_hot(y, 10)
    x, t = net.mix(x, t)
    loss = torch.nn.functional.mse_loss(model(x), t)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

NET_ASSERT = """\
import torch


def one_hot(labels, n_classes):
    assert labels.ndim == 1 and labels.max() < n_classes, "bad labels"
    out = torch.zeros(labels.shape[0], n_classes, device=labels.device)
    return out.scatter_(1, labels.view(-1, 1), 1.0)


def mix(x, t):
    assert x.ndim == 2, "shape"
    return x, t
"""


def test_assert_on_a_parameter_tensor_is_a_read_of_the_call_and_of_the_helper(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"train.py": TRAIN_ONE_HOT, "net.py": NET_ASSERT})
    items = check(root, "--no-cache", "--exit-zero")
    keys = found(items)
    # the call pays the helper's `bool()` of `labels.max() < n_classes`
    assert ("train.py", 9, "GPU112") in keys
    call = next(d for d in items if d["location"]["row"] == 9 and d["code"] == "GPU112")
    assert "`one_hot` calls `bool()` on what it is given" in call["message"]
    # the helper's own assert, its `labels` given a copy to the device by the only call site
    assert ("net.py", 5, "GPU106") in keys
    # an assert on metadata (`x.ndim == 2`) reads nothing
    assert ("train.py", 10, "GPU112") not in keys and not any(k[0] == "net.py" and k[1] == 11 for k in keys)


def test_assert_on_a_host_argument_stays_quiet(tmp_path: Path) -> None:
    text = TRAIN_ONE_HOT.replace("    t = net.one_hot(y, 10)", "    t = net.one_hot(torch.arange(4), 10)")
    root = write_project(tmp_path, {"train.py": text, "net.py": NET_ASSERT})
    keys = found(check(root, "--no-cache", "--exit-zero"))
    assert ("train.py", 9, "GPU112") not in keys and ("net.py", 5, "GPU106") not in keys


TRAIN_WORDS = """\
import torch
from util import idx_to_word

model = torch.nn.Linear(8, 8).cuda()
loader = torch.utils.data.DataLoader(range(10), pin_memory=True)
vocab = ["<pad>", "a", "b", "c", "d", "e", "f", "g"]
model.eval()
with torch.no_grad():
    for x in loader:
        out = model(x.cuda(non_blocking=True))
        words = idx_to_word(out.argmax(dim=1), vocab)
        names = idx_to_word([1, 2, 3], vocab)
"""

UTIL_WORDS = """\
def idx_to_word(x, vocab):
    words = []
    for i in x:
        word = vocab[i]
        if "<" not in word:
            words.append(word)
    return " ".join(words)
"""


def test_a_list_lookup_per_element_of_the_parameter_is_a_read_per_element(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"train.py": TRAIN_WORDS, "util.py": UTIL_WORDS})
    items = check(root, "--no-cache", "--exit-zero")
    keys = found(items)
    assert ("train.py", 11, "GPU112") in keys
    call = next(d for d in items if d["location"]["row"] == 11 and d["code"] == "GPU112")
    assert "used as an index" in call["message"]
    assert ("train.py", 12, "GPU112") not in keys  # a list of ints: no device read


def test_a_parameter_rebound_before_its_loop_is_not_iterated(tmp_path: Path) -> None:
    # `text = list(t)` rebinds the parameter: the loop walks characters of a string, not the tensor passed
    util = UTIL_WORDS + """

def encode(text, table):
    out = []
    for i, t in enumerate(text):
        text = list(t)
        out.append([table[c] for c in text])
    return out
"""
    train = TRAIN_WORDS.replace("        names = idx_to_word([1, 2, 3], vocab)", "        ids = encode(out.argmax(dim=1), vocab)")
    train = train.replace("from util import idx_to_word", "from util import encode, idx_to_word")
    root = write_project(tmp_path, {"train.py": train, "util.py": util})
    keys = found(check(root, "--no-cache", "--exit-zero"))
    assert ("train.py", 11, "GPU112") in keys and ("train.py", 12, "GPU112") not in keys


TRANSLATOR = """\
import torch
from strategies import Beam, Greedy


class Translator:
    def __init__(self, model, beam_size):
        self.model = model
        self.beam_size = beam_size

    def translate(self, batch):
        if self.beam_size == 1:
            strategy = Greedy(batch.size(0))
        else:
            strategy = Beam(batch.size(0), self.beam_size)
        return self._translate_with(batch, strategy)

    def _step(self, decoder_input, memory):
        out = self.model.decoder(decoder_input, memory)
        return torch.log_softmax(self.model.generator(out), dim=-1)

    def _translate_with(self, batch, strategy):
        memory = batch.cuda(non_blocking=True)
        for step in range(strategy.max_length):
            decoder_input = strategy.current_predictions.view(-1, 1)
            log_probs = self._step(decoder_input, memory)
            strategy.advance(log_probs)
            if strategy.done:
                break
        return strategy.predictions
"""

STRATEGIES = """\
import torch


class Greedy:
    max_length = 100

    def __init__(self, n):
        self.alive = torch.zeros(n, 1, dtype=torch.long, device="cuda")
        self.done = False

    @property
    def current_predictions(self):
        return self.alive[:, -1]

    def advance(self, log_probs):
        ids = log_probs.argmax(dim=-1, keepdim=True)
        self.alive = torch.cat([self.alive, ids], -1)
        self.done = bool(ids.eq(2).all().item())

    @property
    def predictions(self):
        return self.alive


class Beam(Greedy):
    def __init__(self, n, k):
        super().__init__(n * k)
        self.k = k
"""


def test_a_decoding_loop_through_a_helper_and_a_strategy_object_is_hot(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"translate.py": TRANSLATOR, "strategies.py": STRATEGIES})
    items = check(root, "--no-cache", "--exit-zero")
    keys = found(items)
    # the strategy's `advance` runs once per decoding step, called on the object the method is handed
    assert ("strategies.py", 18, "GPU101") in keys
    finding = next(d for d in items if d["location"]["row"] == 18 and d["code"] == "GPU101")
    assert "strategy.advance(...)" in finding["message"]


def test_a_loop_over_a_helper_without_carried_state_is_not_a_decoding_loop(tmp_path: Path) -> None:
    # the object is never handed what the network returned: nothing carries one step's output to the next input
    text = TRANSLATOR.replace("            strategy.advance(log_probs)\n", "            scores.append(log_probs)\n").replace(
        "        for step in range(strategy.max_length):\n",
        "        scores = []\n        for step in range(strategy.max_length):\n            strategy.advance(step)\n")
    root = write_project(tmp_path, {"translate.py": text, "strategies.py": STRATEGIES})
    keys = found(check(root, "--no-cache", "--exit-zero"))
    assert ("strategies.py", 18, "GPU101") not in keys
