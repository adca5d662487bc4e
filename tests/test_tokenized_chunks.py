"""Token ids a tokenizer builds on the host, cut into chunks and joined again in per-step code (kohya-ss
sd-scripts `library/strategy_base.py:264,267`, GPU106 on host tensors): `KindInference.on_host` follows
- a `return_tensors="pt"` call (host_values.host_call; analysis/tokenizers.py),
- element i of what a function of the module returns (`ids, weights = weighted_ids(...)`),
- only the bindings that may run before the read (`x = x.squeeze(0)` binds after its own read; a binding
  after the read, outside any loop around it, never reaches it),
- a literal tuple or list of host tensors (`torch.cat((ids[0:1], ids[i:j], ids[-1:]))`),
- `a and b` of host values,
- a tokenizer's special-token ids (`tokenizer.eos_token_id`), Python ints.
A comparison of a device tensor with `tokenizer.eos_token_id` is still a wait."""

from __future__ import annotations

from tests.projects import check, found, write_project

TRAIN = '''import torch


def weighted_ids(tokenizer, text):
    tokens = tokenizer(text).input_ids
    return torch.tensor(tokens).unsqueeze(0), torch.tensor([1.0] * len(tokens)).unsqueeze(0)


def tokenize(tokenizer, text, weighted=False):
    if weighted:
        input_ids, weights = weighted_ids(tokenizer, text)
    else:
        input_ids = tokenizer(text, padding="max_length", return_tensors="pt").input_ids
    input_ids = input_ids.squeeze(0)
    chunks = []
    for i in range(1, 150, 75):
        chunk = (input_ids[0].unsqueeze(0), input_ids[i:i + 75], input_ids[-1].unsqueeze(0))
        chunk = torch.cat(chunk)
        if chunk[-2] != tokenizer.eos_token_id and chunk[-2] != tokenizer.pad_token_id:
            chunk[-1] = tokenizer.eos_token_id
        if chunk[1] == tokenizer.pad_token_id:
            chunk[1] = tokenizer.eos_token_id
        chunks.append(chunk)
    input_ids = torch.stack(chunks)
    return input_ids


def train(model, loader, tokenizer, opt, device):
    for images, captions in loader:
        ids = tokenize(tokenizer, captions[0]).to(device, non_blocking=True)
        loss = model(images.to(device, non_blocking=True), ids)
        if loss.argmax(-1)[0] != tokenizer.eos_token_id:
            print("eos")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
'''

BOTH = ("train.py", 19, "GPU106")
ONE = ("train.py", 21, "GPU106")
DEVICE = ("train.py", 32, "GPU106")

LATER = '''import torch


def count(y, device):
    for k in range(2):
        if y.shape[0] > k:
            counts = torch.zeros(4)
        else:
            counts = torch.ones(4)
        if counts[0] > 0:
            print("empty")
        {inside}
    {after}
    return counts


def train(model, loader, opt, device):
    for x, y in loader:
        counts = count(y, device)
        loss = model(x.to(device, non_blocking=True), counts)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
'''


def _lint(tmp_path, text: str) -> set:
    return found(check(write_project(tmp_path / "p", {"train.py": text}), "--no-cache"))


def test_tokenized_chunks_are_read_on_the_host(tmp_path):
    got = _lint(tmp_path, TRAIN)
    assert BOTH not in got and ONE not in got
    assert DEVICE in got  # the model's output is on the GPU: comparing it with a token id waits


def test_an_unpacked_element_the_function_builds_on_the_device_is_not_host(tmp_path):
    text = TRAIN.replace("torch.tensor(tokens).unsqueeze(0), torch.tensor", "torch.tensor(tokens).cuda(), torch.tensor")
    assert ONE in _lint(tmp_path, text)


def test_a_tuple_holding_a_device_tensor_is_not_host(tmp_path):
    text = TRAIN.replace("input_ids[-1].unsqueeze(0))", "input_ids[-1].unsqueeze(0).cuda())")
    assert ONE in _lint(tmp_path, text)


def test_a_move_after_the_loop_does_not_reach_the_read(tmp_path):
    got = _lint(tmp_path, LATER.format(inside="pass", after="counts = torch.ones(4, device=device)"))
    assert ("train.py", 10, "GPU106") not in got


def test_a_move_later_in_the_same_loop_reaches_the_next_read(tmp_path):
    got = _lint(tmp_path, LATER.format(inside="counts = torch.ones(4, device=device)", after="pass"))
    assert ("train.py", 10, "GPU106") in got


PARAM = '''import torch


def count(counts, fresh):
    if fresh:
        counts = torch.zeros(4)
    if counts[0] > 0:
        print("empty")
    return counts


def train(model, loader, opt, device):
    for x, y in loader:
        counts = count(y.to(device, non_blocking=True), x.shape[0] > 1)
        loss = model(x.to(device, non_blocking=True), counts)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
'''


def test_a_parameter_reaches_the_reads_of_its_function(tmp_path):
    # the `def` holds the read, and binds before it: the device tensor passed in may be what is read
    assert ("train.py", 7, "GPU106") in _lint(tmp_path, PARAM)
