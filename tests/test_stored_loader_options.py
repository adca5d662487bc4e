"""Loader options a config object carries under a key (branch recall62; heldout17's SimSiam: the argument parser's
helper stores `vars(args)['dataloader_kwargs'] = {..., 'pin_memory': True}` and the evaluation script builds
`DataLoader(ds, **args.dataloader_kwargs)`). Where every assignment of that key in the project stores options
with `pin_memory=True`, the loader is pinned: its batches copied without `non_blocking=True` are GPU202's "add
non_blocking=True", and GPU201 does not ask to pin it. An assignment that leaves the option out or changes it
later keeps the pinning unknown.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, write_project

ARGUMENTS = """\
import argparse


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    vars(args)["loader_options"] = {{
        "drop_last": True,
        {pin}"num_workers": args.workers,
    }}
{extra}    return args
"""

EVALUATE = """\
import torch
import torch.nn.functional as F

from arguments import get_args


def main(args, model, train_set):
    loader = torch.utils.data.DataLoader(train_set, batch_size=256, shuffle=True, **args.loader_options)
    classifier = torch.nn.Linear(512, 10).to(args.device)
    optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1)
    for images, labels in loader:
        with torch.no_grad():
            feature = model(images.to(args.device))
        loss = F.cross_entropy(classifier(feature), labels.to(args.device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main(get_args(), None, None)
"""


def _messages(tmp_path: Path, pin: str = '"pin_memory": True, ', extra: str = "") -> dict:
    root = write_project(tmp_path, {"arguments.py": ARGUMENTS.format(pin=pin, extra=extra),
                                    "linear.py": EVALUATE})
    return {(d["filename"], d["location"]["row"], d["code"]): d["message"]
            for d in check(root, "--no-cache", ".")}


def test_copies_of_a_loader_pinned_by_stored_options_block(tmp_path: Path):
    found = _messages(tmp_path)
    for line in (13, 14):
        assert "pinned batch" in found.get(("linear.py", line, "GPU202"), "")
    assert not any(code == "GPU201" for _, _, code in found)


def test_options_without_pinning_are_not_taken_for_pinned(tmp_path: Path):
    found = _messages(tmp_path, pin="")
    assert not any("pinned batch" in message for message in found.values())


def test_options_changed_after_they_are_stored_are_not_trusted(tmp_path: Path):
    found = _messages(tmp_path, extra='    args.loader_options["pin_memory"] = args.workers > 0\n')
    assert not any("pinned batch" in message for message in found.values())
