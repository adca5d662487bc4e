"""An object that is an instance of one of several library classes of the table, each a configuration the script
ships (`loss_scaler = ApexScaler()` for apex AMP, `NativeScaler()` for torch AMP, handed to the training
function), has the cost the table gives every candidate: `loss_scaler(loss, optimizer)` syncs every step in both.
A candidate the table says nothing about keeps the call unreported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = '''
import argparse

import torch
from timm.utils import ApexScaler, NativeScaler
{extra_import}

def train_one_epoch(model, loader, optimizer, loss_scaler=None):
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        if loss_scaler is not None:
            loss_scaler(loss, optimizer, clip_grad=1.0)
        else:
            loss.backward()
            optimizer.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--amp", default="native")
    args = parser.parse_args()
    model = torch.nn.Linear(4, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2, pin_memory=True)
    loss_scaler = None
    if args.amp == "apex":
        loss_scaler = ApexScaler()
    elif args.amp == "native":
        loss_scaler = {other}
    train_one_epoch(model, loader, optimizer, loss_scaler=loss_scaler)


if __name__ == "__main__":
    main()
'''


def lint(tmp_path: Path, extra_import: str, other: str) -> set:
    (tmp_path / "train.py").write_text(textwrap.dedent(SCRIPT).format(extra_import=extra_import, other=other))
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache",
                          "--exit-zero", "--select", "GPU112", "train.py"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {(d["location"]["row"], d["code"]) for d in json.loads(out.stdout)}


def test_either_timm_scaler_passed_to_the_step_function_syncs_every_step(tmp_path: Path):
    assert lint(tmp_path, "", "NativeScaler()") == {(14, "GPU112")}


def test_apex_scaler_alone_syncs_every_step(tmp_path: Path):
    assert lint(tmp_path, "", "ApexScaler()") == {(14, "GPU112")}


def test_a_candidate_the_table_does_not_know_keeps_the_call_unreported(tmp_path: Path):
    assert lint(tmp_path, "from timm.utils import ModelEmaV3", "ModelEmaV3(None)") == set()
