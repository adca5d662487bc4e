"""Batches copied to the GPU inside a function of the training script (recall22; DLRM's `dlrm_wrap`): the loop
splits its batch with a helper (`dense, offsets, ids, y = split_batch(batch)`) and hands the parts to a wrapper
that moves them (`def forward_on_device(dense, offsets, ids, device): ... dense.to(device)`). Every call of the
wrapper passes the loop's batch, so its copies run every step on that batch: GPU202 judges them by the loop's
loader as it judges a copy written in the loop (here a factory's unpinned loader, which GPU201 reports at its
call), and reports the per-step call of the wrapper too. A wrapper also called with something that is not a
batch, a copy that already passes `non_blocking=True`, and a same-module `pin_memory=False` loader (a choice
written out next to the loop, reported by GPU201 alone) stay quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

DATA = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def build_loaders(train_set, test_set, workers):
        train_loader = DataLoader(train_set, batch_size=128, num_workers=workers, pin_memory=False)
        test_loader = DataLoader(test_set, batch_size=512, num_workers=workers, pin_memory=False)
        return train_loader, test_loader
""")

TRAIN = textwrap.dedent("""\
    import torch
    import data


    def split_batch(batch):
        return batch[0], batch[1], batch[2], batch[3]


    def forward_on_device(net, dense, offsets, ids, device):
        ids = [i.to(device) for i in ids]
        offsets = offsets.to(device)
        return net(dense.to(device), offsets, ids)


    def run(net, train_set, test_set, device):
        train_loader, test_loader = data.build_loaders(train_set, test_set, 4)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for batch in train_loader:
            dense, offsets, ids, y = split_batch(batch)
            scores = forward_on_device(net, dense, offsets, ids, device)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(scores, y.to(device, non_blocking=True))
            opt.zero_grad()
            loss.backward()
            opt.step()
""")

COPIES = {("train.py", 10, "GPU202"), ("train.py", 11, "GPU202"), ("train.py", 12, "GPU202")}
CALL = ("train.py", 20, "GPU202")


def _lint(root: Path, train: str = TRAIN, data: str = DATA) -> set:
    return found(check(write_project(root, {"data.py": data, "train.py": train}), "--no-cache", "."))


def test_copies_in_a_wrapper_handed_the_batch_every_step_are_reported(tmp_path: Path):
    got = _lint(tmp_path)
    assert COPIES | {CALL} <= got
    assert ("train.py", 16, "GPU201") in got  # the factory's unpinned loader, at its call


def test_the_call_names_the_copy(tmp_path: Path):
    root = write_project(tmp_path, {"data.py": DATA, "train.py": TRAIN})
    [call] = [d for d in check(root, "--no-cache", ".") if d["location"]["row"] == 20]
    assert "forward_on_device(...)" in call["message"] and "in `forward_on_device`" in call["message"]


def test_the_fix_adds_non_blocking_in_the_wrapper(tmp_path: Path):
    root = write_project(tmp_path, {"data.py": DATA, "train.py": TRAIN})
    check(root, "--no-cache", "--fix", ".")
    fixed = (root / "train.py").read_text()
    assert "offsets.to(device, non_blocking=True)" in fixed and "dense.to(device, non_blocking=True)" in fixed
    compile(fixed, "train.py", "exec")


def test_a_wrapper_also_called_with_other_values_is_quiet(tmp_path: Path):
    train = TRAIN + "\n\ndef warm_up(net, device):\n    forward_on_device(net, torch.zeros(1, 4), torch.zeros(2), [], device)\n"
    assert not (COPIES | {CALL}) & _lint(tmp_path, train=train)


def test_copies_that_pass_non_blocking_are_quiet(tmp_path: Path):
    train = TRAIN.replace(".to(device)", ".to(device, non_blocking=True)")
    assert not (COPIES | {CALL}) & _lint(tmp_path, train=train)


def test_a_same_module_loader_written_unpinned_is_left_to_gpu201(tmp_path: Path):
    train = TRAIN.replace("import data\n", "from torch.utils.data import DataLoader\n").replace(
        "train_loader, test_loader = data.build_loaders(train_set, test_set, 4)",
        "train_loader = DataLoader(train_set, batch_size=128, pin_memory=False)")
    got = _lint(tmp_path, train=train)
    assert not (COPIES | {CALL}) & got
    assert ("train.py", 16, "GPU201") in got  # the split batch still counts as moved to the GPU


def test_parts_of_a_split_batch_count_as_the_batch(tmp_path: Path):
    # without the wrapper: the loop copies a part it got from `split_batch` itself
    train = TRAIN.replace("scores = forward_on_device(net, dense, offsets, ids, device)",
                          "scores = net(dense.to(device), offsets, ids)")
    got = _lint(tmp_path, train=train)
    assert ("train.py", 20, "GPU202") in got
