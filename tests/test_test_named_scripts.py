"""Training scripts named like tests, and optimizers chosen by a command-line option's default (issue 11, recall).
TCN's training programs are `pmnist_test.py`, `word_cnn_test.py`, ...: each parses its command line on import,
trains on CUDA and has an evaluation function `def test():`. They were read as test modules (a test's toy model is
worth no throughput lever), so their non-fused optimizers went unreported; a module that parses its command line
on import is no test a runner could import. The optimizer there is `getattr(optim, args.optim)(...)` with
`--optim` declared `default='Adam'`: the default run builds `torch.optim.Adam`.
"""

from __future__ import annotations

from pathlib import Path

from projects import lint_files

SCRIPT = """\
    import argparse

    import torch
    import torch.nn as nn
    import torch.optim as optim

    parser = argparse.ArgumentParser()
    parser.add_argument('--optim', type=str, default='Adam')
    parser.add_argument('--lr', type=float, default=2e-3)
    args = parser.parse_args()

    model = nn.Sequential(nn.Conv1d(1, 256, 7), nn.ReLU(), nn.Conv1d(256, 256, 7), nn.Flatten(), nn.LazyLinear(10))
    model.cuda()
    optimizer = getattr(optim, args.optim)(model.parameters(), lr=args.lr)


    def train(loader):
        for data, target in loader:
            data, target = data.cuda(), target.cuda()
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(data), target)
            loss.backward()
            optimizer.step()


    def test(loader):
        with torch.no_grad():
            for data, target in loader:
                model(data.cuda())


    if __name__ == "__main__":
        train(None)
        test(None)
"""


def test_a_training_script_named_like_a_test_gets_its_optimizer_lever(tmp_path: Path):
    assert ("pmnist_test.py", 14, "GPU402") in lint_files(tmp_path, {"pmnist_test.py": SCRIPT}, "GPU402")


def test_an_option_without_a_literal_default_stays_unknown(tmp_path: Path):
    script = SCRIPT.replace("default='Adam'", "default=DEFAULT_OPTIMIZER")
    assert ("pmnist_test.py", 14, "GPU402") not in lint_files(tmp_path, {"pmnist_test.py": script}, "GPU402")


def test_a_test_module_that_does_not_parse_a_command_line_is_still_a_test(tmp_path: Path):
    """No `parse_args()` on import: a runner can import it, and its `def test...` make it a test module."""
    script = SCRIPT.replace("args = parser.parse_args()", "args = parser")
    assert ("pmnist_test.py", 14, "GPU402") not in lint_files(tmp_path, {"pmnist_test.py": script}, "GPU402")
