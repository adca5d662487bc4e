"""Code that is fine and that gpulint flagged (branch precision20; heldout19's flagged ACCEPTABLE lines and wrong
findings, benchmarks/labels/README.md "Branch precision20"). Each test lints a small project as a user does and
checks the fine line is quiet, and (where the shape has a costly twin) that the twin is still reported.
"""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, lint_script, write_project

# -- comprehension variables and host values of a collate function (YOLOP `lib/core/function.py`) ----------------

VALIDATE = """import torch
from torch.utils.data import DataLoader


def collate_fn(batch):
    img, label, paths, shapes = zip(*batch)
    return torch.stack(img, 0), torch.cat(label, 0), paths, shapes


def validate(model, loader, device):
    for batch_i, (img, target, paths, shapes) in enumerate(loader):
        img = img.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        with torch.no_grad():
            pad_w, pad_h = shapes[0][1][1]
            pad_w = int(pad_w)
            pad_h = int(pad_h)
            out = model(img)
        for si, pred in enumerate(out):
            for cls in torch.unique(pred[:, 5]):
                n = int(cls)
            boxes = [{{"class_id": int(cls), "conf": conf}} for *xyxy, conf, cls in pred.tolist()]
            {twin}


def main():
    device = torch.device("cuda")
    model = torch.nn.Linear(3, 3).to(device)
    loader = DataLoader(range(8), batch_size=4, collate_fn=collate_fn, pin_memory=True)
    for epoch in range(3):
        validate(model, loader, device)


main()
"""


def test_int_of_collated_host_values_and_comprehension_variables_are_quiet(tmp_path: Path) -> None:
    found_ = lint_script(tmp_path, VALIDATE.format(twin="pass"))
    assert (16, "GPU105") not in found_ and (17, "GPU105") not in found_  # `int(pad_w)` of the collate's shapes
    assert (22, "GPU105") not in found_  # `int(cls)` of an element of `pred.tolist()`
    assert (21, "GPU105") in found_  # `int(cls)` of the `torch.unique` loop's device tensor: still reported


def test_a_moved_element_indexed_the_same_way_is_still_reported(tmp_path: Path) -> None:
    found_ = lint_script(tmp_path / "b", VALIDATE.format(twin="w = int(target[0][1])"))
    assert (23, "GPU105") in found_  # `target` was moved: a device read


# -- `.item()` and sums of tensors copied to the host (continual-learning `eval/evaluate.py`) ---------------------

EVALUATE = """import torch


def test_acc(model, data_loader, device, label_correction):
    total_correct = 0
    for x, y in data_loader:
        with torch.no_grad():
            scores = model(x.to(device))
        _, predicted = torch.max(scores{copy}, 1)
        if max(predicted).item() >= 10:
            predicted = predicted % 10
        y = y - label_correction
        total_correct += (predicted == y).sum().item()
    return total_correct


model = torch.nn.Linear(3, 3).cuda()
print(test_acc(model, torch.utils.data.DataLoader(range(4)), "cuda", 0))
"""


def test_reads_of_a_prediction_copied_to_the_host_are_quiet(tmp_path: Path) -> None:
    found_ = lint_script(tmp_path, EVALUATE.format(copy=".cpu()"))
    assert (10, "GPU101") not in found_  # `max(predicted).item()` of a host tensor
    assert (13, "GPU303") not in found_  # `(predicted == y).sum().item()` of a host tensor
    kept = lint_script(tmp_path / "b", EVALUATE.format(copy=""))
    assert (10, "GPU101") in kept and (13, "GPU303") in kept  # on the device: both wait


# -- a method the project calls every N steps (torch-ngp `update_extra_state`) ------------------------------------

RENDERER = """import torch


class Renderer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = torch.nn.Parameter(torch.zeros(3, 64))
        self.net = torch.nn.Linear(64, 64)

    def forward(self, x):
        return self.net(x)

    @torch.no_grad()
    def update_extra_state(self):
        for cas in range(3):
            occ = torch.nonzero(self.grid[cas] > 0).squeeze(-1)
            self.grid[cas] = self.grid[cas] * 0.9 + occ.float().mean()
"""

TRAINER = """import torch
from renderer import Renderer

model = Renderer().cuda()
optimizer = torch.optim.Adam(model.parameters(), fused=True)
loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
step = 0
for x in loader:
    x = x.cuda(non_blocking=True)
    if {test}:
        model.update_extra_state()
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    step += 1
"""


def test_a_loop_of_a_method_called_every_n_steps_is_not_a_step_loop(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"renderer.py": RENDERER, "train.py": TRAINER.format(test="step % 16 == 0")})
    assert ("renderer.py", 16, "GPU111") not in found(check(root, "--no-cache", "--exit-zero"))
    root = write_project(tmp_path / "b", {"renderer.py": RENDERER, "train.py": TRAINER.format(test="step > 0")})
    assert ("renderer.py", 16, "GPU111") in found(check(root, "--no-cache", "--exit-zero"))


# -- a float64 model (mace: `tools.set_default_dtype(args.default_dtype)`) ----------------------------------------

TRAIN_STEP = """import torch


def take_step(model, batch, optimizer):
    optimizer.zero_grad()
    loss = model(batch).sum()
    loss.backward()
    optimizer.step()


def train(model, loader, optimizer):
    for batch in loader:
        take_step(model, batch.cuda(non_blocking=True), optimizer)
"""

RUN = """import argparse

import torch
from tools import set_default_dtype
from train import train

parser = argparse.ArgumentParser()
parser.add_argument("--default_dtype", default="float64", choices=["float32", "float64"])
args = parser.parse_args()
{line}
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 1)).cuda()
train(model, torch.utils.data.DataLoader(range(8), pin_memory=True), torch.optim.Adam(model.parameters(), fused=True))
"""

TOOLS = """import torch


def set_default_dtype(dtype: str) -> None:
    torch.set_default_dtype({{"float32": torch.float32, "float64": torch.float64}}[dtype])
"""


def test_a_project_that_sets_its_default_dtype_chose_its_precision(tmp_path: Path) -> None:
    modules = {"train.py": TRAIN_STEP, "tools.py": TOOLS.format(), "run.py": RUN.format(
        line="set_default_dtype(args.default_dtype)")}
    codes = {code for _, _, code in found(check(write_project(tmp_path, modules), "--no-cache", "--exit-zero"))}
    assert "GPU403" not in codes
    modules = {"train.py": TRAIN_STEP, "run.py": RUN.replace("from tools import set_default_dtype\n", "").format(
        line="")}
    codes = {code for _, _, code in found(check(write_project(tmp_path / "b", modules), "--no-cache", "--exit-zero"))}
    assert "GPU403" in codes  # no dtype chosen: fp32 training, still reported


# -- options off by default: a constant switch, a verbose option read from the options dict ----------------------

BASELINE = """import torch


class BaselineTrain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.feature = torch.nn.Linear(4, 4)
        self.DBval = {value}  # only set True for one dataset

    def test_loop(self, val_loader):
        if self.DBval:
            return self.analysis_loop(val_loader)
        return -1

    def analysis_loop(self, val_loader):
        feats = []
        for x, y in val_loader:
            x = x.cuda()
            feats.append(self.feature(x).cpu().numpy())
        return feats


model = BaselineTrain().cuda()
model.test_loop(torch.utils.data.DataLoader(range(4)))
"""


def test_a_loop_only_a_switch_turned_off_in_init_reaches_is_quiet(tmp_path: Path) -> None:
    assert (19, "GPU104") not in lint_script(tmp_path, BASELINE.format(value="False"))
    assert (19, "GPU104") in lint_script(tmp_path / "b", BASELINE.format(value="True"))


EVAL_SPLIT = """import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--verbose_loss", type=int, default={default})
opt = parser.parse_args()


def eval_split(model, crit, loader, eval_kwargs):
    verbose_loss = eval_kwargs.get("verbose_loss", 1)
    loss_sum = 0
    for data in loader:
        labels = data.cuda(non_blocking=True)
        if labels is not None and verbose_loss:
            with torch.no_grad():
                loss = crit(model(labels), labels).item()
            loss_sum = loss_sum + loss
    return loss_sum


model = torch.nn.Linear(4, 4).cuda()
eval_kwargs = {{}}
eval_kwargs.update(vars(opt))
eval_split(model, torch.nn.MSELoss(), torch.utils.data.DataLoader(range(4), pin_memory=True), eval_kwargs)
"""


def test_a_verbose_option_off_by_default_read_from_the_options_dict_is_quiet(tmp_path: Path) -> None:
    assert (17, "GPU101") not in lint_script(tmp_path, EVAL_SPLIT.format(default="0"))
    assert (17, "GPU101") in lint_script(tmp_path / "b", EVAL_SPLIT.format(default="1"))


# -- a periodic evaluation under `(it % N == 0 and not opt.every_epoch) or (epoch_done and opt.every_epoch)` ------

PERIODIC_EVAL = """import torch


def evaluate(model, loader):
    total = 0
    for x in loader:
        total += model(x.cuda(non_blocking=True)).sum().item()
    return total


def train(model, loader, optimizer, opt):
    iteration = 0
    epoch_done = False
    for x in loader:
        x = x.cuda(non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        iteration += 1
        epoch_done = iteration % len(loader) == 0
        if (iteration % opt.save_every == 0 and not opt.save_every_epoch) or (epoch_done and opt.save_every_epoch):
            evaluate(model, loader)


model = torch.nn.Linear(4, 4).cuda()
loader = torch.utils.data.DataLoader(range(4), pin_memory=True)
train(model, loader, torch.optim.Adam(model.parameters(), fused=True), None)
"""


def test_an_evaluation_every_n_steps_or_at_an_epoch_end_is_periodic(tmp_path: Path) -> None:
    assert (22, "GPU112") not in lint_script(tmp_path, PERIODIC_EVAL)


# -- a metric whose `update` declares NumPy arrays (doctr `LocalizationConfusion.update`) ----------------------------

METRICS = """import numpy as np


class Confusion:
    def __init__(self):
        self.tot = 0.0

    def update(self, gts: {annotation}, preds: {annotation}) -> None:
        if gts.shape[0] > 0:
            self.tot += float(np.abs(gts - preds).max())
"""

EVAL = """import torch
from metrics import Confusion

model = torch.nn.Linear(4, 4).cuda()
metric = Confusion()
for x, y in torch.utils.data.DataLoader(range(4), pin_memory=True):
    out = model(x.cuda(non_blocking=True))
    metric.update(gts=y, preds=out)
"""


def test_a_helper_declaring_numpy_arrays_is_not_a_sync(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"metrics.py": METRICS.format(annotation="np.ndarray"), "eval.py": EVAL})
    assert ("eval.py", 8, "GPU112") not in found(check(root, "--no-cache", "--exit-zero"))
    root = write_project(tmp_path / "b", {"metrics.py": METRICS.format(annotation="object"), "eval.py": EVAL})
    assert ("eval.py", 8, "GPU112") in found(check(root, "--no-cache", "--exit-zero"))


def test_a_readme_that_starts_naming_the_option_is_seen_by_the_next_cached_run(tmp_path: Path) -> None:
    """The option is quiet only while nothing the project ships names it, so a cached result depends on the
    shipped text files: once a README documents `--block_trigrams 1`, a warm run reports what a cold run does."""
    script = EVAL_SPLIT.format(default="0").replace("verbose_loss", "block_trigrams")
    root = write_project(tmp_path, {"train.py": script, "README.md": "# train\n"})
    cached = lambda: {(row, code) for _, row, code in found(check(root, "--exit-zero", "train.py"))}  # noqa: E731
    assert (17, "GPU101") not in cached()
    assert (17, "GPU101") not in cached()  # the warm run: served from the cache
    (root / "README.md").write_text("# train\n\n    python train.py --block_trigrams 1\n")
    assert (17, "GPU101") in {(row, code) for _, row, code in found(check(root, "--no-cache", "--exit-zero",
                                                                          "train.py"))}
    assert (17, "GPU101") in cached()


def test_an_option_a_run_script_passes_with_dashes_is_shipped(tmp_path: Path) -> None:
    """argparse stores `--block-trigrams` as `block_trigrams`: a run script passing the dashed spelling turns the
    option on in a documented run, so its branch is a real run's."""
    script = EVAL_SPLIT.format(default="0").replace('"--verbose_loss"', '"--block-trigrams"').replace(
        "verbose_loss", "block_trigrams")
    root = write_project(tmp_path, {"train.py": script, "run.sh": "python train.py --block-trigrams 1\n"})
    assert (17, "GPU101") in {(row, code) for _, row, code in found(check(root, "--no-cache", "--exit-zero",
                                                                          "train.py"))}
    quiet = write_project(tmp_path / "b", {"train.py": script, "run.sh": "python train.py\n"})
    assert (17, "GPU101") not in {(row, code) for _, row, code in found(check(quiet, "--no-cache", "--exit-zero",
                                                                              "train.py"))}
