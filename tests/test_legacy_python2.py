"""Training scripts written for Python 2 (`print loss.data[0]`, `except IOError, e:`) are checked as Python 2 ran
them (gpulint/legacy_syntax.py): GPU001 is still reported, and the rest of the file is linted with those statements
read as Python 3's; no fix is applied to such a file. heldout33a's wgan-gp (`gan_mnist.py`, 12 labelled per-step
costs) had GPU001 alone before.
"""

from __future__ import annotations

import subprocess
import sys

from tests.projects import check, found, write_project

TRAIN = """\
import torch
from torch.utils.data import DataLoader

from meters import log_loss

loader = DataLoader(torch.randn(64, 8), batch_size=4, num_workers=4, pin_memory=True)
print "batches:", len(loader)


def train(model, opt, criterion):
    model.train()
    for i, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print "step", i, loss.data[0]
        log_loss(loss)
        if i % 100 == 0:
            print 'loss %.3f' % loss.item(),
    try:
        torch.save(model.state_dict(), "ckpt")
    except IOError, e:
        print e
"""

# a helper module of the same era: summarised for the step loop that calls it
METERS = """\
def log_loss(loss):
    total = loss.cpu().numpy()
    print total
    return total
"""


def codes_by_row(items, name: str = "train.py") -> set:
    return {(row, code) for path, row, code in found(items) if path.endswith(name)}


def test_a_python2_script_is_checked_beyond_its_syntax_error(tmp_path):
    root = write_project(tmp_path, {"train.py": TRAIN, "meters.py": METERS})
    items = check(root, "--no-cache", "--exit-zero", "train.py")
    by_row = codes_by_row(items)
    assert (7, "GPU001") in by_row  # still a syntax error on Python 3, at the parser's position
    assert (18, "GPU101") in by_row  # `print "step", i, loss.data[0]` every step
    assert (19, "GPU112") in by_row  # the Python 2 helper module's `.cpu().numpy()`, one call away
    assert not any(row == 21 for row, _ in by_row)  # periodic logging stays quiet
    gpu001 = next(d for d in items if d["code"] == "GPU001")
    assert "Python 2" in gpu001["message"]
    assert all(d["fix"] is None for d in items)  # no fix is offered on a Python 2 file
    # the finding's column is the original's: `loss.data[0]` where it is written
    legacy_read = next(d for d in items if d["code"] == "GPU101")
    assert legacy_read["location"]["column"] == TRAIN.splitlines()[17].index("loss.data") + 1


def test_fix_leaves_a_python2_file_as_it_was(tmp_path):
    root = write_project(tmp_path, {"train.py": TRAIN, "meters.py": METERS})
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--fix", "--unsafe-fixes",
                          "train.py"], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert (root / "train.py").read_text() == TRAIN
    assert "GPU001" in out.stdout and "GPU101" in out.stdout


def test_a_print_to_a_file_is_read_as_written(tmp_path):
    # `print >>sys.stderr, x` parses on Python 3 (a tuple of a shift): left as it is, the rest read as before
    text = TRAIN.replace('print "batches:", len(loader)', 'print >>sys.stderr, "batches:", len(loader)')
    root = write_project(tmp_path, {"train.py": text, "meters.py": METERS})
    by_row = codes_by_row(check(root, "--no-cache", "--exit-zero", "train.py"))
    assert (18, "GPU001") in by_row and (18, "GPU101") in by_row


def test_another_python2_construct_leaves_the_file_to_gpu001(tmp_path):
    text = TRAIN.replace("        print e\n", "        raise ValueError, 'cannot save'\n")
    root = write_project(tmp_path, {"train.py": text, "meters.py": METERS})
    items = check(root, "--no-cache", "--exit-zero", "train.py")
    assert {code for _, code in codes_by_row(items)} == {"GPU001"}
