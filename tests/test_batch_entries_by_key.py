"""Entries a tester takes out of a collated batch dict by their key (`data_name = data_dict.pop("name")`,
`batch.get("path")`) are parts of the batch like `batch["name"]`: a name that says it holds text (a file or sample
name) is text, so formatting it into a log line or a file name reads no tensor (analysis/kinds.py
`_part_of_a_value`). An uncalled `.size` is a NumPy array's element count, never a tensor's (`Tensor.size` is a
method): `torch.zeros((segment.size, k))` reads no device value (`KindInference._attribute`). A point-cloud
tester of this shape got 25 wrong GPU107 and 4 wrong GPU105 findings."""

from __future__ import annotations

from tests.projects import check, found, write_project

TESTER = '''import os

import torch


def evaluate(model, loader, logger, save_dir):
    model = model.cuda()
    for idx, data_dict in enumerate(loader):
        data_dict = data_dict[0]
        parts = data_dict.pop("parts")
        segment = data_dict.pop("segment")
        data_name = data_dict{take}
        score = data_dict.pop("score")
        pred = torch.zeros((segment.size, 10), device="cuda")
        counts = torch.zeros((parts.max(), 10), device="cuda")
        for part in parts:
            pred += model(part.cuda(non_blocking=True))
        logger.info("{{}} {{}}".format(data_name, idx))
        logger.info("{{}}".format(score))
        torch.save(pred, os.path.join(save_dir, "{{}}_pred.pt".format(data_name)))
    return counts
'''


def _lint(tmp_path, take: str) -> set:
    return found(check(write_project(tmp_path / "p", {"test.py": TESTER.format(take=take)}), "--no-cache"))


def test_a_name_taken_out_of_the_batch_by_its_key_is_text(tmp_path):
    for take in ('.pop("name")', '.get("name")'):
        got = _lint(tmp_path / take[1:4], take)
        assert ("test.py", 18, "GPU107") not in got and ("test.py", 20, "GPU107") not in got, take


def test_entries_whose_name_says_nothing_are_still_read(tmp_path):
    got = _lint(tmp_path, '.pop("name")')
    assert ("test.py", 19, "GPU107") in got  # `score`: a tensor for all the analysis knows
    assert ("test.py", 15, "GPU105") in got  # `parts.max()` as a size


def test_an_uncalled_size_is_no_tensor_read(tmp_path):
    assert ("test.py", 14, "GPU105") not in _lint(tmp_path, '.pop("name")')
