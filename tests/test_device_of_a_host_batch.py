"""`.to(x.device)` where `x` is a loader's batch element that the loop never moves copies nothing to the GPU
(data_facts.device_of: the `.device` of a host value is the CPU): `torch.zeros(...).to(batch_y.device)` stays on the
host when `batch_y` is left there while its sibling `batch_x.float().to(device)` is moved (a conversion before the
move still counts as the sibling's move, unmoved._past_conversions). Without that evidence (no sibling moved, so the
loader may yield device batches) or where `x` is the moved element, the copy is still reported."""

from __future__ import annotations

from tests.projects import lint_script

PREDICT = '''import torch
from torch.utils.data import DataLoader


def predict(model, dataset, device, pred_len):
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    preds = []
    with torch.no_grad():
        for i, (batch_x, batch_y) in enumerate(loader):
            batch_x = {move_x}
            dec = torch.zeros([batch_y.shape[0], pred_len, batch_y.shape[2]]).float().to({like}.device)
            preds.append(model(batch_x, dec).cpu())
    return preds


def main(model, dataset):
    predict(model.cuda(), dataset, torch.device("cuda"), 24)
'''

ZEROS = (11, "GPU203")


def _lint(tmp_path, move_x="batch_x.float().to(device, non_blocking=True)", like="batch_y") -> set:
    return lint_script(tmp_path, PREDICT.format(move_x=move_x, like=like))


def test_zeros_placed_on_a_host_batch_are_not_copied(tmp_path):
    assert ZEROS not in _lint(tmp_path)


def test_placed_on_the_moved_element_they_are(tmp_path):
    assert ZEROS in _lint(tmp_path, like="batch_x")


def test_no_sibling_moved_no_evidence(tmp_path):
    assert ZEROS in _lint(tmp_path, move_x="batch_x.float()")


EVALUATE = '''import torch
from backend import Backend


def run(weights, dataloader, model=None, device=""):
    if model is not None:
        device = next(model.parameters()).device
    else:
        model = Backend(weights, device=device)
        device = model.device
    for im, targets in dataloader:
        im = im.to(device, non_blocking=True)
        targets = targets.to(device)
        preds = model(im)
        print(preds.cpu())
'''


def test_a_device_read_from_a_model_built_on_that_device_is_answered(tmp_path):
    """`device = model.device` where `model = Backend(..., device=device)`: whether the model is a host value asks
    where `device` is, which asks where `model.device` is again. The question is answered once (no error from
    an endless recursion, which left GPU202, GPU203, GPU104 and GPU410 unchecked on the whole module)."""
    from tests.projects import check, found, write_project

    root = write_project(tmp_path, {"val.py": EVALUATE, "backend.py": "class Backend:\n    pass\n"})
    keys = found(check(root, "--no-cache", "--exit-zero", "val.py"))
    assert ("val.py", 13, "GPU202") in keys  # the blocking copy beside the non-blocking one
    assert ("val.py", 15, "GPU104") in keys
