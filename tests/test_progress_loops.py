"""Loops gpulint did not see as per-batch (branch recall87): a `for` over a progress-bar wrapper other than tqdm
(`progressbar(loader, max_value=...)`), an evaluator running a network it is handed under any name
(`retinanet.eval()` then `retinanet(img)`), a comprehension over a loader calling a nested function; and, once such
a loop is seen, the loader's host-side metadata (`info = data["info"]`) must stay quiet.
"""

from __future__ import annotations

from projects import lint_files, lint_script

PROGRESSBAR = """\
import time
import torch
from torch.utils.data import DataLoader
from progressbar import progressbar
from model import Net

loader = DataLoader(dataset, batch_size=1, shuffle=False, num_workers=4)
model = Net().cuda().eval()

for data in progressbar(loader, max_value=len(loader), redirect_stdout=True):
    rgb = data["rgb"].cuda()
    info = data["info"]
    torch.cuda.synchronize()
    out = model(rgb)
    masks = out.cpu().numpy()
    back = info["label_backward"][1].item()
"""


def test_a_loop_over_a_progressbar_of_a_loader_is_per_batch(tmp_path):
    found = lint_script(tmp_path, PROGRESSBAR)
    assert (13, "GPU109") in found  # torch.cuda.synchronize() every video
    assert (15, "GPU104") in found  # out.cpu() every video
    assert (11, "GPU202") in found  # the blocking copy of the batch
    assert (16, "GPU101") not in found  # `info` is never moved: a host tensor of the loader's metadata


def test_a_progressbar_loop_in_a_cpu_script_stays_quiet(tmp_path):
    text = PROGRESSBAR.replace("from model import Net\n", "").replace("model = Net().cuda().eval()\n", "") \
        .replace('data["rgb"].cuda()', 'data["rgb"]').replace("    torch.cuda.synchronize()\n", "") \
        .replace("    out = model(rgb)\n", "    out = rgb.sum()\n")
    assert not {code for _, code in lint_script(tmp_path, text)} & {"GPU101", "GPU104", "GPU109", "GPU202"}


MOVED_PIECEWISE = """\
import torch
from torch.utils.data import DataLoader
from progressbar import progressbar
from model import Net

loader = DataLoader(dataset, batch_size=1, shuffle=False, num_workers=4)
model = Net().cuda().eval()

for data in progressbar(loader, max_value=len(loader)):
    with torch.cuda.amp.autocast(enabled=True):
        rgb = data["rgb"]
        msk = data["gt"][0]
        info = data["info"]
        gt_obj = info["gt_obj"]
        for i, frame_idx in enumerate(sorted(gt_obj.keys())):
            obj_idx = gt_obj[frame_idx][0].tolist()
            obj_idx = [info["label_convert"][o].item() for o in obj_idx]
            m = torch.cat([1 - torch.sum(msk[:, frame_idx], dim=0, keepdim=True), msk[:, frame_idx]], 0).cuda()
            out = model(rgb, m)
        masks = out.cpu().numpy()
        back = info["label_backward"][1].item()
"""


def test_metadata_beside_a_part_moved_through_torch_cat_stays_quiet(tmp_path):
    found = lint_script(tmp_path, MOVED_PIECEWISE)
    assert (20, "GPU104") in found
    assert (6, "GPU201") in found  # the batch goes to the GPU (piece by piece): still worth pinning
    assert {(16, "GPU102"), (17, "GPU101"), (21, "GPU101")}.isdisjoint(found)


EVALUATOR = """\
import torch


def get_detections(dataset, retinanet):
    retinanet.eval()
    results = []
    with torch.no_grad():
        for index in range(len(dataset)):
            data = dataset[index]
            scores, labels, boxes = retinanet(data["img"].permute(2, 0, 1).cuda().float().unsqueeze(dim=0))
            scores = scores.cpu().numpy()
            results.append(scores)
    return results
"""


def test_a_parameter_put_in_eval_mode_and_called_is_a_network(tmp_path):
    assert (11, "GPU104") in lint_script(tmp_path, EVALUATOR)


def test_a_parameter_only_called_is_not_taken_for_a_network(tmp_path):
    assert (11, "GPU104") not in lint_script(tmp_path, EVALUATOR.replace("    retinanet.eval()\n", "    pass\n"))


COMPREHENSION = """\
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm


def rollout(model, dataset, opts):
    model.eval()

    def eval_model_bat(bat):
        with torch.no_grad():
            cost, _ = model(bat.to(opts.device))
        return cost.data.cpu()

    return torch.cat([eval_model_bat(bat) for bat in tqdm(DataLoader(dataset, batch_size=opts.eval_batch_size))], 0)


def train_epoch(model, optimizer, loader, opts):
    for batch in loader:
        cost, _ = model(batch.to(opts.device))
        optimizer.zero_grad()
        cost.mean().backward()
        optimizer.step()
    print(rollout(model, opts.val_dataset, opts))
"""


def test_a_function_called_in_a_comprehension_over_a_loader_runs_every_batch(tmp_path):
    assert (12, "GPU104") in lint_script(tmp_path, COMPREHENSION)


def test_a_comprehension_over_a_list_is_not_per_batch(tmp_path):
    text = COMPREHENSION.replace("tqdm(DataLoader(dataset, batch_size=opts.eval_batch_size))", "opts.items")
    assert (12, "GPU104") not in lint_script(tmp_path, text)
