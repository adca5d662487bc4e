"""Per-step host-to-device copies of shapes GPU203 learnt on branch recall37 (heldout12's x-transformers and YOLOX):

- a module generator drawn with `next(gen)` every step (`train_dl = cycle(n)` ... `next(train_dl)`) runs its body up
  to the next `yield` every step, so `torch.randint(...).cuda()` there is built on the host each step;
- a map-style dataset's `__getitem__` that returns a sample copied to the GPU (`return seq.cuda()`), drawn by a
  `DataLoader` in a hot loop: one small pageable copy per sample, every step;
- a host factory cast with `.type_as(x)` or `.type(torch.cuda.FloatTensor)` in per-step code copies it to the GPU.

And where each stays quiet: a generator drawn once before the loop, a dataset no hot loop draws from, a dataset built
from device data, `.type_as` of a host tensor.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, lint_script as lint, write_project
from window_datasets import HOST_DATA, RETURN, windows

GENERATOR = '''
import torch

model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def cycle(length):
    while True:
        seq = torch.randint(0, 2, (4, length)).cuda()
        yield seq


train_dl = cycle(8)
DRAW
'''
EVERY_STEP = '''for i in range(1000):
    seq = next(train_dl)
    model(seq.float()).sum().backward()
    opt.step()
'''
ONCE = '''fixed = next(train_dl)
for i in range(1000):
    model(fixed.float()).sum().backward()
    opt.step()
'''

CAST = '''
import torch
from torch.utils.data import DataLoader


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        stride = CAST
        return self.fc(x) * stride


model = Head().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 8), batch_size=8, pin_memory=True)
for x in loader:
    model(x.cuda(non_blocking=True)).sum().backward()
    opt.step()
'''


def test_a_generator_drawn_every_step_builds_its_host_tensor_every_step(tmp_path: Path):
    assert (10, "GPU203") in lint(tmp_path, GENERATOR.replace("DRAW", EVERY_STEP))


def test_a_generator_drawn_once_before_the_loop_is_setup(tmp_path: Path):
    assert (10, "GPU203") not in lint(tmp_path, GENERATOR.replace("DRAW", ONCE))


def test_setup_code_before_a_generators_loop_runs_once(tmp_path: Path):
    text = GENERATOR.replace("DRAW", EVERY_STEP).replace(
        "def cycle(length):\n", "def cycle(length):\n    offsets = torch.arange(length).cuda()\n")
    found = lint(tmp_path, text)
    assert (9, "GPU203") not in found, found


def test_a_sample_copied_to_the_gpu_in_getitem_is_a_copy_per_sample(tmp_path: Path):
    text = windows()
    assert (RETURN, "GPU203") in lint(tmp_path, text)
    # bound to a name that is returned: the same copy
    moved = text.replace("        return seq.to(device)", "        seq = seq.to(device)\n        return seq")
    assert (RETURN, "GPU203") in lint(tmp_path, moved)


def test_a_periodic_draw_beside_an_every_step_draw(tmp_path: Path):
    loop = '''val_it = iter(DataLoader(Windows(torch.randint(0, 256, (100,))), batch_size=8))
train_it = iter(loader)
for step in range(1000):
    if step % 100 == 0:
        val = next(val_it)
    seq = next(train_it)
    model(seq).sum().backward()
    opt.step()
'''
    assert (RETURN, "GPU203") in lint(tmp_path, windows(loop=loop))


def test_getitem_copies_stay_quiet_without_a_hot_loop_or_on_device_data(tmp_path: Path):
    # no loop draws from the loader: the dataset may never be used per step
    assert not {f for f in lint(tmp_path, windows(loop="print(len(loader))")) if f[1] == "GPU203"}
    # the data is on the device already: the copy copies nothing
    on_device = windows(data=HOST_DATA + ".to(device)")
    assert not {f for f in lint(tmp_path, on_device) if f[1] == "GPU203"}
    # no DataLoader: the dataset is indexed once, outside a training loop
    once = windows(loop="model(sample).sum().backward()").replace(
        f"loader = DataLoader(Windows({HOST_DATA}), batch_size=8)", f"sample = Windows({HOST_DATA})[0]")
    assert not {f for f in lint(tmp_path, once) if f[1] == "GPU203"}


def test_a_host_factory_cast_to_a_device_tensor_every_step(tmp_path: Path):
    for cast in ("torch.zeros(1, 8).fill_(2.0).type_as(x)", "torch.ones(1, 8).type(torch.cuda.FloatTensor)"):
        assert (12, "GPU203") in lint(tmp_path, CAST.replace("CAST", cast)), cast


def test_a_cast_to_a_host_tensor_or_a_device_factory_copies_nothing(tmp_path: Path):
    for cast in ("torch.zeros(1, 8).type_as(torch.ones(3))", "torch.zeros(1, 8).type_as(x.cpu())",
                 "torch.zeros(1, 8, device=x.device).type_as(x)", "torch.zeros(1, 8).type(torch.float16)"):
        assert (12, "GPU203") not in lint(tmp_path, CAST.replace("CAST", cast)), cast


# GPU411: a per-parameter loop writing each gradient through `out=` (EDM's NaN clean-up) or `nan_to_num_`
NAN_CLEANUP = '''
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 8), batch_size=8, pin_memory=True)
for x in loader:
    model(x.cuda(non_blocking=True)).sum().backward()
    for param in model.parameters():
        if param.grad is not None:
            CLEAN
    opt.step()
'''


def test_gradients_cleaned_one_parameter_at_a_time_every_step(tmp_path: Path):
    for clean in ("torch.nan_to_num(param.grad, nan=0, posinf=1e5, neginf=-1e5, out=param.grad)",
                  "param.grad.nan_to_num_(nan=0)"):
        assert (10, "GPU411") in lint(tmp_path, NAN_CLEANUP.replace("CLEAN", clean)), clean
    # `out=` a fresh tensor is no update of the parameter
    assert (10, "GPU411") not in lint(tmp_path, NAN_CLEANUP.replace("CLEAN", "torch.nan_to_num(param.grad)"))


def test_a_helper_cleaning_gradients_is_reported_at_its_per_step_call(tmp_path: Path):
    helper = ("import torch\n\n\ndef clean(model):\n    for p in model.parameters():\n"
              "        torch.nan_to_num(p.grad, nan=0, out=p.grad)\n")
    train = NAN_CLEANUP.replace("import torch\n", "import torch\nfrom utils import clean\n", 1).replace(
        "    for param in model.parameters():\n        if param.grad is not None:\n            CLEAN\n",
        "    clean(model)\n")
    items = check(write_project(tmp_path, {"utils.py": helper, "train.py": train}), "--no-cache", "--exit-zero")
    assert ("train.py", 11, "GPU411") in found(items) and ("utils.py", 5, "GPU411") in found(items), found(items)


# GPU202: `pin_memory=True` set in another file's dict of options, handed down as `**loader_kwargs` (EDM)
LOOP_MODULE = '''
import torch


def training_loop(dataset=None, loader_kwargs={}, device=torch.device("cuda")):
    model = torch.nn.Linear(8, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    it = iter(torch.utils.data.DataLoader(dataset, batch_size=8, **loader_kwargs))
    while True:
        x = next(it)
        x = x.to(device)
        model(x).sum().backward()
        opt.step()
'''
MAIN = '''
import torch
from training import loop


class EasyDict(dict):
    pass


def main():
    c = EasyDict()
    c.dataset = torch.randn(64, 8)
    c.loader_kwargs = EasyDict(pin_memory=PIN, num_workers=2)
    loop.training_loop(**c)
'''


def test_pinning_set_in_a_callers_options_dict_reaches_the_loader(tmp_path: Path):
    def lint_pin(pin: str) -> set:
        root = write_project(tmp_path / pin, {"training/__init__.py": "", "training/loop.py": LOOP_MODULE,
                                              "train.py": MAIN.replace("PIN", pin)})
        return found(check(root, "--no-cache", "--exit-zero"))

    assert ("training/loop.py", 11, "GPU202") in lint_pin("True")
    # pinning off (or not a literal): no pinned batch, nothing to ask of the copy
    assert ("training/loop.py", 11, "GPU202") not in lint_pin("False")
    assert ("training/loop.py", 11, "GPU202") not in lint_pin("c.dataset is None")
