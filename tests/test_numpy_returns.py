"""A project function every `return` of which is a NumPy call (`return np.uint8((img * 255.0).round())`) hands back a
host value (project summary `returns_host_copy`): a metric helper given that value (`psnr(to_uint8(out), ref)`)
waits for no GPU, so GPU112 does not report the call. Given the model's output itself, it still does."""

from __future__ import annotations

from tests.projects import check, found, write_project

UTILS = '''import math

import numpy as np


def to_uint8(img):
    img = img.data.squeeze().float().clamp_(0, 1).cpu().numpy()
    return np.uint8((img * 255.0).round())


def psnr(a, b):
    mse = float(((a - b) ** 2).mean())
    return 20 * math.log10(255.0 / math.sqrt(mse))
'''

TEST = '''import torch

import utils


def run(model, images, refs):
    model = model.cuda()
    scores = []
    for image, ref in zip(images, refs):
        out = model(image.cuda())
        out = {convert}
        scores.append(utils.psnr(out, ref))
    return scores
'''

CALL = ("test.py", 12, "GPU112")


def _lint(tmp_path, convert: str) -> set:
    root = write_project(tmp_path, {"utils.py": UTILS, "test.py": TEST.format(convert=convert)})
    return found(check(root, "--no-cache", "--exit-zero", "test.py"))


def test_a_metric_of_a_numpy_image_waits_for_no_gpu(tmp_path):
    assert CALL not in _lint(tmp_path, "utils.to_uint8(out)")


def test_a_metric_of_the_model_output_still_syncs(tmp_path):
    assert CALL in _lint(tmp_path, "out * 255")
