"""Syncs and copies whose shape no rule knew (branch recall80): Python iterating or comparing device values
(a comprehension's `if` filter, `max()` over collected device tensors), boolean masks made through
`triu`/`logical_not`/`view` in a project helper, and a tensor moved onto the GPU in place before the loop
(`x = x.cuda()` under a CUDA test) indexed by a numpy array each step. Each has its quiet twin."""

from __future__ import annotations

from projects import lint_files

HEAD = """\
import numpy as np
import torch
model = torch.nn.Linear(4, 4).cuda()
"""


def test_comprehension_filter_on_device_elements(tmp_path):
    found = lint_files(tmp_path, {"train.py": HEAD + """\
for x, y in loader:
    out = model(x.cuda(non_blocking=True))
    words = out.argmax(1)
    keep = [i for i, w in enumerate(words)
            if w != 3]
    sizes = [int(s) for s in y.shape]
    fine = [i for i, n in enumerate(sizes) if n > 0]
    out.sum().backward()
"""}, "GPU106")
    assert found == {("train.py", 7, "GPU106")}  # reported where the comprehension starts; host sizes quiet


def test_max_of_collected_device_tensors(tmp_path):
    found = lint_files(tmp_path, {"train.py": HEAD + """\
for x, y in loader:
    out = model(x.cuda(non_blocking=True))
    scores = list()
    scores.extend(out.max(1)[0])
    best = max(scores)
    host = []
    host.append(out.sum().item())
    top = max(host)
    longest = max([out, out], key=len)
    lower = min(out.sum(), 1.0)
    out.sum().backward()
"""}, "GPU106")
    assert found == {("train.py", 8, "GPU106"), ("train.py", 13, "GPU106")}


def test_max_once_after_the_loop_is_quiet(tmp_path):
    found = lint_files(tmp_path, {"train.py": HEAD + """\
scores = []
for x, y in loader:
    loss = model(x.cuda(non_blocking=True)).sum()
    loss.backward()
    scores.append(loss.detach())
best = max(scores)
"""}, "GPU106")
    assert found == set()


def test_mask_through_triu_and_logical_not_in_a_helper(tmp_path):
    found = lint_files(tmp_path, {
        "losses.py": """\
            def pairs(feats, labels):
                sim = feats @ feats.t()
                same = labels.unsqueeze(1) == labels.unsqueeze(0)
                pos = same.triu(diagonal=1).view(-1)
                neg = same.logical_not().triu(diagonal=1).view(-1)
                sim = sim.view(-1)
                return sim[pos], sim[neg]

            def rows(feats, labels):
                picked = labels.eq(0)
                return feats[picked]

            def shifted(feats, labels):
                return feats[labels.float()]
            """,
        "train.py": HEAD + """\
from losses import pairs, rows, shifted
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    f = model(x)
    sp, sn = pairs(f, y)
    r = rows(f, y)
    s = shifted(f, y)
    (sp.sum() + sn.sum() + r.sum() + s.sum()).backward()
"""}, "GPU112")
    assert found == {("train.py", 8, "GPU112"), ("train.py", 9, "GPU112")}


def test_numpy_index_of_a_tensor_moved_in_place_before_the_loop(tmp_path):
    found = lint_files(tmp_path, {"train.py": HEAD + """\
features = torch.FloatTensor(np.zeros((1, 64, 4)))
if torch.cuda.is_available():
    features = features.cuda()
host = torch.FloatTensor(np.zeros((1, 64, 4)))
for epoch in range(100):
    idx = np.random.permutation(64)
    shuffled = features[:, idx, :]
    on_host = host[:, idx, :]
    model(shuffled).sum().backward()
    features = features
"""}, "GPU203")
    assert found == set()  # a binding of the name inside the loop: not certainly the moved tensor
    found = lint_files(tmp_path, {"train.py": HEAD + """\
features = torch.FloatTensor(np.zeros((1, 64, 4)))
if torch.cuda.is_available():
    features = features.cuda()
host = torch.FloatTensor(np.zeros((1, 64, 4)))
for epoch in range(100):
    idx = np.random.permutation(64)
    shuffled = features[:, idx, :]
    on_host = host[:, idx, :]
    model(shuffled.cuda()).sum().backward()
"""}, "GPU203")
    assert found == {("train.py", 10, "GPU203")}


def test_moved_after_the_loop_is_not_on_the_device_in_it(tmp_path):
    found = lint_files(tmp_path, {"train.py": HEAD + """\
features = torch.FloatTensor(np.zeros((1, 64, 4)))
for epoch in range(100):
    idx = np.random.permutation(64)
    model(features[:, idx, :].cuda()).sum().backward()
features = features.cuda()
"""}, "GPU203")
    assert ("train.py", 7, "GPU203") not in found


EXTRACT = HEAD + """\
loaders = {x: torch.utils.data.DataLoader(sets[x], batch_size=32) for x in ['gallery', 'query']}


def extract(net, loader):
    for it, (img, label) in enumerate(loader):
        ff = torch.FloatTensor(img.size(0), 4).zero_().cuda()
        ff += net(img.cuda())
        ff = ff.div(ff.norm(dim=1, keepdim=True))
        if it == 0:
            feats = torch.FloatTensor(len(loader.dataset), 4)
        feats[it * 32:(it + 1) * 32, :] = ff
        keep = torch.FloatTensor(len(loader.dataset), 4)
        keep[it] = ff[0]
    return feats


with torch.no_grad():
    g = extract(model, loaders['gallery'])
"""


def test_loop_over_a_loader_picked_from_a_dict_of_loaders(tmp_path):
    found = lint_files(tmp_path, {"train.py": EXTRACT}, "GPU203", "GPU104")
    # the per-batch host allocation moved to the GPU, and the device features written into the host buffer the
    # first iteration allocated; a buffer allocated every iteration is another cost (not reported here)
    assert found == {("train.py", 9, "GPU203"), ("train.py", 14, "GPU104")}


def test_batch_entry_reduced_with_dim_and_super_generate_in_a_module(tmp_path):
    found = lint_files(tmp_path, {
        "prompts.py": """\
            import torch
            from torch import nn
            from typing import Dict
            from transformers import GenerationMixin


            class Generator(nn.Module, GenerationMixin):
                def generate(self, batch: Dict, **kwargs):
                    start = batch['loss_ids'].argmax(dim=-1)
                    assert start.min() == start.max()
                    batch['decoder_input_ids'] = batch['decoder_input_ids'][:, :start.min() + 1]
                    out = super().generate(**batch, **kwargs)
                    return out.cpu().tolist()
            """,
        "evaluate.py": """\
            import torch
            from prompts import Generator
            from data import PromptLoader
            model = Generator().cuda()
            loader = PromptLoader(dataset, batch_size=8)
            with torch.no_grad():
                for step, inputs in enumerate(loader):
                    inputs = inputs.cuda().to_dict()
                    pred = model.generate(inputs, max_length=10)
            """,
        "data.py": """\
            class PromptLoader:
                def __init__(self, dataset, batch_size):
                    self.dataset, self.batch_size = dataset, batch_size

                def __iter__(self):
                    return iter(self.dataset)
            """}, "GPU104", "GPU105", "GPU106")
    assert found == {("prompts.py", 10, "GPU106"), ("prompts.py", 11, "GPU105"), ("prompts.py", 13, "GPU104")}


def test_batch_copied_into_a_buffer_moved_before_the_loop(tmp_path):
    found = lint_files(tmp_path, {"train.py": HEAD + """\
from torch.autograd import Variable
loader = torch.utils.data.DataLoader(dataset, batch_size=8, pin_memory=True)
im_data = torch.FloatTensor(1)
host_buf = torch.FloatTensor(1)
if args.cuda:
    im_data = im_data.cuda()
im_data = Variable(im_data)
data_iter = iter(loader)
for step in range(1000):
    data = next(data_iter)
    im_data.data.resize_(data[0].size()).copy_(data[0])
    host_buf.resize_(data[0].size()).copy_(data[0])
    im_data.data.resize_(data[0].size()).copy_(data[0], non_blocking=True)
    model(im_data).sum().backward()
"""}, "GPU202")
    assert found == {("train.py", 14, "GPU202")}


EVAL_SCRIPT = """\
import argparse
import numpy as np
import torch
from models import Net
parser = argparse.ArgumentParser()
parser.add_argument('--input', default='blocks.npy')
args = parser.parse_args()
model = Net().cuda().eval()
noisy = np.load(args.input)
with torch.no_grad():
    for i in range(40):
        for k in range(32):
            patch = torch.from_numpy(noisy[i, k]).unsqueeze(0).cuda()
            out = model(patch)
            restored = out.clamp(0, 1).cpu()
"""


def test_evaluation_script_named_like_a_test_is_checked(tmp_path):
    found = lint_files(tmp_path, {"models.py": "import torch\nNet = torch.nn.Identity\n",
                                  "test/test_blocks.py": EVAL_SCRIPT}, "GPU104")
    assert found == {("test_blocks.py", 15, "GPU104")}


def test_unit_test_module_stays_quiet(tmp_path):
    # a pytest import, a test function, or no command line read (a test suite's module-level toy loop)
    toy = "\n".join(line for line in EVAL_SCRIPT.splitlines() if "parse" not in line and "argparse" not in line)
    found = lint_files(tmp_path, {"models.py": "import torch\nNet = torch.nn.Identity\nargs = None\n",
                                  "test/test_blocks.py": "import pytest\n" + EVAL_SCRIPT,
                                  "tests/test_more.py": EVAL_SCRIPT + "\n\ndef test_shape():\n    assert True\n",
                                  "tests/test_toy.py": toy.replace("args.input", "'blocks.npy'") + "\n"},
                       "GPU104")
    assert found == set()


def test_sample_of_a_host_distribution_moved_each_step(tmp_path):
    found = lint_files(tmp_path, {
        "augment.py": """\
            import torch


            class MixUp:
                def __init__(self):
                    self.dist = torch.distributions.beta.Beta(torch.tensor([1.2]), torch.tensor([1.2]))
                    self.near = torch.distributions.Normal(torch.zeros(1, device='cuda'), 1.0)

                def aug(self, a, b):
                    lam = self.dist.rsample((a.size(0), 1)).view(-1, 1, 1, 1).cuda()
                    eps = self.near.sample((a.size(0),)).cuda()
                    return lam * a + (1 - lam) * b + eps
            """,
        "train.py": """\
            import torch
            from torch.utils.data import DataLoader
            from augment import MixUp
            model = torch.nn.Linear(4, 4).cuda()
            loader = DataLoader(dataset, batch_size=4, pin_memory=True)
            for x, y in loader:
                x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                x, y = MixUp().aug(x, y)
                model(x).sum().backward()
            """}, "GPU203")
    assert found == {("augment.py", 10, "GPU203")}  # the device-built distribution's sample copies nothing
