"""Fine code the precision10 sample of unlabelled findings caught gpulint flagging (issue 11): each quiet, each
costly neighbour still reported.

- A loader batch element whose name says it is a file path or name (`imgs, labels, img_paths = data`,
  `input_file = batch["input"][0]`) holds text: formatting or writing it copies nothing from the GPU.
- The loops of a collate function (`collate_fn=...`, a function or class whose name says it collates) and of a
  Dataset class's helpers run on the host, in loader workers, over CPU tensors: not a per-step GPU loop.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

PATHS = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).cuda()
loader = DataLoader(list(range(64)), batch_size=8, pin_memory=True)
out_file = open("pred.txt", "w")
for data in loader:
    imgs, labels, img_paths = data
    input_file = data[2][0]
    out = model(imgs.cuda(non_blocking=True))
    for i in range(len(img_paths)):
        out_file.write("{}\\n".format(img_paths[i]))
        print(f"{img_paths[i]} done")
    print("Video {} error.".format(input_file))
    print(f"labels {labels}")
    print(f"out {out}")
"""


def test_batch_elements_named_as_paths_are_text(tmp_path: Path):
    keys = found(check(write_project(tmp_path, {"infer.py": PATHS}), "--no-cache", "--select", "GPU107", "."))
    # the paths are text; `labels` is a batch element the loop never moves (a host tensor: printing it costs no
    # sync, recall34); the model's output is a device tensor
    assert keys == {("infer.py", 16, "GPU107")}


COLLATE = """\
import torch
from torch.utils.data import DataLoader, Dataset

from mylib import Collator


def collate_and_mask(samples, n_tokens):
    probs = torch.linspace(0.1, 0.5, len(samples) + 1)
    upper = 0
    masks = []
    for i in range(len(samples)):
        masks.append(torch.rand(n_tokens) < probs[i + 1])
        upper += int(n_tokens * probs[i + 1])
    return torch.stack(samples), torch.stack(masks), upper


class PackedCollator(Collator):
    def _positions(self, tokens):
        batch_size, seq_len = tokens.shape
        positions = torch.zeros(batch_size, seq_len, device=tokens.device)
        marks = tokens == 3
        for i in range(batch_size):
            starts = torch.where(marks[i])[0].tolist()
            positions[i, : len(starts)] = tokens[i, : len(starts)] * 2
        return positions


class ShardDataset(Dataset):
    def _index(self, table):
        out = []
        for row in range(table.size(0)):
            out.append(table[row][table[row] > 0])
        return out


model = torch.nn.Linear(4, 2).cuda()
loader = DataLoader(list(range(64)), batch_size=8, pin_memory=True, collate_fn=PackedCollator())
for batch in loader:
    model(torch.randn(8, 4, device="cuda")).sum().backward()
    w = model.weight
    for i in range(w.size(0)):
        print(w[i].sum().item())
"""


def test_collate_and_dataset_code_runs_on_the_host(tmp_path: Path):
    keys = found(check(write_project(tmp_path, {"train.py": COLLATE}), "--no-cache", "--select",
                       "GPU101,GPU102,GPU105,GPU106,GPU111,GPU302", "."))
    assert {k for k in keys if k[1] < 35} == set()
    assert ("train.py", 42, "GPU101") in keys  # a loop of the training step still reads the GPU every time


NO_GRAD_OUTPUT = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).cuda()
loader = DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
losses = []
kept = []
for x in loader:
    x = x.cuda(non_blocking=True)
    with torch.no_grad():
        out = model(x)
    loss = out.sum()
    losses.append(loss)
    graph = model(x).sum()
    kept.append(graph)
"""


def test_values_computed_under_no_grad_carry_no_history(tmp_path: Path):
    keys = found(check(write_project(tmp_path, {"eval.py": NO_GRAD_OUTPUT}), "--no-cache", "--select", "GPU301",
                       "."))
    assert keys == {("eval.py", 15, "GPU301")}  # the output computed with autograd on still keeps its graph


GPU_GUARDED_COPY = """\
import torch
from torch.utils.data import DataLoader

use_gpu = torch.cuda.is_available()
model = torch.nn.Linear(4, 2)
if use_gpu:
    model = model.cuda()
loader = DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
for x in loader:
    if use_gpu:
        x = x.cuda(non_blocking=True)
    outputs = model(x)
    scores = model(x) * 2
    if use_gpu:
        x, outputs = x.cpu(), outputs.cpu()
    if x.sum() > 0:
        scores = scores.cpu()
    for j in range(outputs.size(0)):
        am = outputs[j].numpy()
        sc = scores[j].numpy(force=True)
"""


def test_a_copy_to_the_host_on_the_gpu_path_leaves_a_host_tensor(tmp_path: Path):
    keys = found(check(write_project(tmp_path, {"vis.py": GPU_GUARDED_COPY}), "--no-cache", "--select",
                       "GPU103", "."))
    assert keys == {("vis.py", 20, "GPU103")}  # copied only under a test of the data: still maybe on the GPU


TRAIN_AND_EVAL = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 4), batch_size=8, pin_memory=True)
for epoch in range(3):
    loss_sum = 0
    for x in loader:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        opt.step()
        loss_sum += loss
    losses = []
    with torch.no_grad():
        for x in loader:
            loss = model(x.cuda(non_blocking=True)).sum()
            losses.append(loss)
"""


def test_a_training_loss_sharing_its_name_with_an_eval_loss_still_keeps_its_graph(tmp_path: Path):
    keys = found(check(write_project(tmp_path, {"train.py": TRAIN_AND_EVAL}), "--no-cache", "--select", "GPU301",
                       "."))
    assert keys == {("train.py", 13, "GPU301")}
