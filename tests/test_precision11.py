"""Fine code the precision11 sample of unlabelled findings caught gpulint flagging: each quiet, each costly
neighbour still reported.

- `.numpy()` without `force=True` raises on a CUDA tensor, so where it runs it reads a host tensor (a loader's
  labels never moved): no copy, no wait. `.numpy(force=True)` of a device tensor still copies and is reported.
- An except handler runs only when its exception is raised: `torch.cuda.empty_cache()` after an out-of-memory
  batch is an error path, not a per-step call. The same call outside the handler is still reported.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

LABELS = """\
import numpy as np
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).cuda()
loader = DataLoader(list(range(64)), batch_size=8, pin_memory=True)
hits = []
for (imgs, labels), (imgs_b, labels_b) in zip(loader, loader):
    imgs, imgs_b = parse(imgs), parse(imgs_b)
    out = model(imgs.cuda(non_blocking=True))
    hits.append(labels_b.numpy())
    hits.append(labels.data.numpy())
    hits.append(out.detach().numpy(force=True))
"""


def test_numpy_without_force_reads_a_host_tensor(tmp_path: Path):
    keys = found(check(write_project(tmp_path, {"eval.py": LABELS}), "--no-cache", "--select", "GPU103", "."))
    assert keys == {("eval.py", 13, "GPU103")}


OOM = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(64)), batch_size=8, pin_memory=True)
for step, x in enumerate(loader):
    try:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        opt.step()
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        continue
    except RuntimeError as e:
        if "out of memory" in str(e):
            torch.cuda.empty_cache()
    torch.cuda.empty_cache()
"""


def test_empty_cache_in_an_except_handler_is_an_error_path(tmp_path: Path):
    keys = found(check(write_project(tmp_path, {"train.py": OOM}), "--no-cache", "--select", "GPU110", "."))
    assert keys == {("train.py", 18, "GPU110")}


INDEXED = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).cuda()
loader = DataLoader(list(range(64)), batch_size=8, pin_memory=True)
result = []
for batch in metric_logger.log_every(loader, 10, "Test:"):
    videos = batch[0]
    target = batch[1]
    chunk_nb = batch[3]
    videos = videos.to("cuda", non_blocking=True)
    target = target.to("cuda", non_blocking=True)
    output = model(videos)
    for i in range(output.size(0)):
        result.append(int(target[i].cpu().numpy()))
        result.append(int(chunk_nb[i].cpu().numpy()))
"""


def test_a_batch_element_taken_by_index_and_never_moved_is_on_the_host(tmp_path: Path):
    """`chunk_nb = batch[3]` next to `videos = batch[0]` ... `videos.to(device)`: the loop moves its siblings, the
    loader yields host batches (a MetricLogger's `log_every` passes them through), so `chunk_nb[i].cpu()` waits
    for nothing; the moved `target[i].cpu()` is still reported."""
    keys = found(check(write_project(tmp_path, {"test.py": INDEXED}), "--no-cache", "--select", "GPU104", "."))
    assert keys == {("test.py", 15, "GPU104")}
    moved = INDEXED.replace('    output = model(videos)', '    chunk_nb = chunk_nb.cuda()\n    output = model(videos)')
    keys = found(check(write_project(tmp_path / "moved", {"test.py": moved}), "--no-cache", "--select", "GPU104", "."))
    assert keys == {("test.py", 16, "GPU104"), ("test.py", 17, "GPU104")}


GLUON = """\
import mxnet as mx
from mxnet import autograd as ag


def train(net, loss, trainer, train_data, epochs, device):
    for epoch in range(epochs):
        outputs = []
        for i, batches in enumerate(train_data):
            data = [b.data[0] for b in batches]
            label = [b.label[0].as_in_context(b.data[0].context) for b in batches]
            outputs = []
            Ls = []
            with ag.record():
                for x, y in zip(data, label):
                    z = net(x)
                    L = loss(z, y)
                    Ls.append(L)
                    outputs.append(z)
                ag.backward(Ls)
            trainer.step(len(batches))
"""


def test_mxnet_code_is_not_pytorch(tmp_path: Path):
    """An MXNet/Gluon training loop (no torch import) has its own autograd and devices: nothing to say about it.
    The same loop in a module that imports torch is still read as PyTorch."""
    root = write_project(tmp_path, {"fit.py": GLUON, "torch_fit.py": GLUON.replace("import mxnet as mx", "import torch")})
    keys = found(check(root, "--no-cache", "--select", "GPU301", "."))
    assert keys == {("torch_fit.py", 18, "GPU301")}
