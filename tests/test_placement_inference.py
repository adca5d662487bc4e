"""Where data lives, inferred in less common shapes (branch recall71):

- a loss accumulator started at a number literal (`gen_loss = 0.0`), augmented with losses of unknown kind (a
  criterion held in a dict or passed in) and backpropagated, is a tensor: `+= gen_loss.item()` syncs every step;
- a causal mask built on the host through `torch.tril(torch.ones(n, n)).type(torch.ByteTensor)` and copied to
  the device in a model's `forward` (GPU203, no fix: the cast to a CPU type would bring a device tensor back);
- a buffer allocated by a legacy constructor (`torch.LongTensor(n, m)`), filled on the host, then `.cuda()`d in
  the same step (GPU203, reported once, at the first copy);
- a host factory handed to a project helper that copies its argument whenever it is a tensor
  (`if torch.is_tensor(obj): return obj.cuda(dev, non_blocking=True)`: `FunctionSummary.moves_tensor_params`).

Each has a quiet twin.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found


def _write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _lint(root: Path, target: str = "train.py") -> list[dict]:
    return check(root, "--no-cache", "--exit-zero", target)


# -- an accumulator started at a literal -----------------------------------------------------------------------
ACCUMULATOR = """\
from collections import defaultdict

import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, criterion, optimizer, loader, device):
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer
        self.loader = loader
        self.device = device
        self.total_train_loss = defaultdict(float)

    def run(self):
        for batch in self.loader:
            self._train_step(batch)

    def _train_step(self, batch):
        x, y = batch
        x = x.to(self.device, non_blocking=True)
        y = y.to(self.device, non_blocking=True)
        y_ = self.model(x)
        gen_loss = 0.0
        mel_loss = self.criterion["mel"](y_, y)
        gen_loss += mel_loss
        self.total_train_loss["train/generator_loss"] += gen_loss.item()
        self.optimizer.zero_grad()
        {backward}
        self.optimizer.step()


def main():
    device = torch.device("cuda")
    model = nn.Linear(8, 8).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(range(10), batch_size=2, pin_memory=True)
    Trainer(model, {{"mel": nn.MSELoss()}}, opt, loader, device).run()


if __name__ == "__main__":
    main()
"""


def test_an_accumulator_started_at_a_literal_and_backpropagated_is_a_tensor(tmp_path):
    root = _write(tmp_path, {"train.py": ACCUMULATOR.format(backward="gen_loss.backward()")})
    items = _lint(root)
    assert ("train.py", 29, "GPU302") in found(items)


def test_a_number_never_backpropagated_stays_a_number(tmp_path):
    # without `gen_loss.backward()` nothing says the sum is a tensor: `gen_loss` may be a float
    root = _write(tmp_path, {"train.py": ACCUMULATOR.format(backward="pass")})
    assert ("train.py", 29, "GPU302") not in found(_lint(root))


# -- host tensors built in less common ways ------------------------------------------------------------------------
MODEL = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Loss(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.LongTensor(4, 8)

    def forward(self, pred, targets):
        num = pred.size(0)
        conf_t = torch.LongTensor(num, 8)
        loc_t = torch.Tensor(num, 8, 4)
        for idx in range(num):
            fill(conf_t, idx)
        if pred.is_cuda:
            conf_t = conf_t.cuda()
            loc_t = loc_t.cuda()
        conf_t = conf_t.long()
        table = self.table.cuda()
        return (pred - conf_t).sum() + loc_t.sum() + table.sum()


def fill(buffer, idx):
    buffer[idx] = idx


class Net(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        n = x.shape[1]
        mask = torch.tril(torch.ones(n, n)).type(torch.ByteTensor).to(self.device)
        causal = torch.tril(torch.ones(n, n, device=x.device))
        return self.lin(x) * mask * causal


def main():
    device = torch.device("cuda")
    model = Net(device).to(device)
    crit = Loss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(range(10), batch_size=2, pin_memory=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        loss = crit(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def _gpu203(items) -> dict:
    return {d["location"]["row"]: d for d in items if d["code"] == "GPU203"}


def test_host_masks_and_legacy_buffers_copied_in_the_step(tmp_path):
    root = _write(tmp_path, {"train.py": MODEL})
    reported = _gpu203(_lint(root))
    # the legacy buffers, each at its copy (filled on the host in between), no fix offered
    assert "`conf_t` is built on the host by the legacy constructor `torch.LongTensor(...)`" in reported[18]["message"]
    assert "`loc_t` is built on the host by the legacy constructor `torch.Tensor(...)`" in reported[19]["message"]
    assert reported[18].get("fix") is None
    # the causal mask: built on the host through tril and a CPU type cast; no `device=` fix (the cast would undo it)
    assert "`torch.ones` builds a tensor on the host, the arithmetic on it runs on the host" in reported[37]["message"]
    assert reported[37].get("fix") is None
    # the table built once in __init__ by a legacy constructor, a plain attribute copied every forward
    # (analysis/host_attributes.py, since the thirty-seventh landing); quiet: the mask built on the device
    assert "`self.table` is a plain tensor attribute built on the host" in reported[21]["message"]
    assert set(reported) == {18, 19, 21, 37}


# -- a project helper that copies what it is handed ----------------------------------------------------------------
PARALLEL = """\
import torch


def async_copy_to(obj, dev, main_stream=None):
    if torch.is_tensor(obj):
        v = obj.cuda(dev, non_blocking=True)
        return v
    elif isinstance(obj, dict):
        return {k: async_copy_to(o, dev) for k, o in obj.items()}
    return obj


def describe(obj):
    return obj.shape
"""

EVAL = """\
import torch
from torch.utils.data import DataLoader

from lib.parallel import async_copy_to, describe


def evaluate(model, loader, gpu):
    model.eval()
    once = torch.zeros(4)
    once = async_copy_to(once, gpu)
    for batch in loader:
        with torch.no_grad():
            scores = torch.zeros(1, 8, 32, 32)
            scores = async_copy_to(scores, gpu)
            ones = async_copy_to(torch.ones(3), gpu)
            ok = torch.zeros(2, device="cuda")
            ok = async_copy_to(ok, gpu)
            describe(torch.zeros(3))
            batch = async_copy_to(batch, gpu)
            scores = scores + model(batch) + ones + ok + once
        print(scores.sum().item())


def main():
    model = torch.nn.Linear(32, 32).cuda()
    loader = DataLoader(range(10), batch_size=2, pin_memory=True)
    evaluate(model, loader, 0)


if __name__ == "__main__":
    main()
"""


def test_host_factory_copied_by_a_project_helper(tmp_path):
    root = _write(tmp_path, {"eval.py": EVAL, "lib/__init__.py": "", "lib/parallel.py": PARALLEL})
    reported = _gpu203(_lint(root, "eval.py"))
    assert set(reported) == {14, 15}  # not `once` (before the loop), `ok` (on the device), `describe(...)`
    assert "`scores` is built on the host by `torch.zeros` each step and `async_copy_to(...)` copies it" in \
        reported[14]["message"]
    assert "the tensor is built on the host by `torch.ones` each step" in reported[15]["message"]


def test_a_helper_that_copies_only_other_things_is_quiet(tmp_path):
    # the copy is under a test of another parameter: a tensor handed as `obj` is not known to be copied
    parallel = PARALLEL.replace("if torch.is_tensor(obj):", "if torch.is_tensor(main_stream):")
    root = _write(tmp_path, {"eval.py": EVAL, "lib/__init__.py": "", "lib/parallel.py": parallel})
    assert _gpu203(_lint(root, "eval.py")) == {}


# -- an item method of a dataset, called directly per test image ---------------------------------------------------
DATASET = """\
import numpy as np
import torch
from torch.utils.data import Dataset


class Detection(Dataset):
    def __init__(self, root):
        self.ids = list(range(10))

    def __getitem__(self, index):
        im, gt, h, w = self.pull_item(index)
        return im, gt

    def __len__(self):
        return len(self.ids)

    def pull_item(self, index):
        img = np.zeros((300, 300, 3), dtype=np.float32)
        return torch.from_numpy(img).permute(2, 0, 1), [], 300, 300

    def pull_anno(self, index):
        return torch.zeros(4)
"""

EVAL_ITEMS = """\
import torch
from torch.autograd import Variable

from data import Detection


def test_net(net, dataset, num_images, cuda):
    for i in range(num_images):
        im, gt, h, w = dataset.pull_item(i)
        x = Variable(im.unsqueeze(0))
        if cuda:
            x = x.cuda()
        anno = dataset.pull_anno(i).cuda()
        detections = net(x).data
        print(detections[0, 1, :].cpu().numpy(), anno)


if __name__ == "__main__":
    net = torch.nn.Conv2d(3, 8, 3).cuda().eval()
    test_net(net, Detection("voc"), 10, True)
"""


def test_item_method_of_a_dataset_copied_per_image(tmp_path):
    root = _write(tmp_path, {"eval.py": EVAL_ITEMS, "data.py": DATASET})
    items = [d for d in _lint(root, "eval.py") if d["code"] == "GPU410"]
    rows = {d["location"]["row"]: d["message"] for d in items}
    # `pull_item` serves `__getitem__`: its image is a host item, copied per test image; `pull_anno` serves nothing
    assert set(rows) == {12}
    assert "`dataset.pull_item(...)` (an item of a dataset, built on the host)" in rows[12]
