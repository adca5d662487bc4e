"""A loop over a collection of loaders that draws one batch from each (`for length, dl in eval_dls.items():
seq, labels = next(dl)`) runs as many times as there are loaders: how often its body runs is decided by the code
around it (issue 11, precision; x-transformers `train_parity.py`, an evaluation per length every EVAL_EVERY steps).
Under `if last_step or (i + 1) % EVAL_EVERY == 0:` of the training loop its `.item()` is periodic and not reported;
the same loop run on every training step is still reported, and so is a loop that draws many batches of one loader.
"""

from __future__ import annotations

from pathlib import Path

from tests.projects import lint_script

HEAD = """import torch
import torch.nn.functional as F

model = torch.nn.Linear(8, 2).cuda()
optimizer = torch.optim.Adam(model.parameters())


def cycle(n):
    while True:
        yield torch.randn(4, n, device="cuda"), torch.randint(0, 2, (4,), device="cuda")


train_dl = cycle(8)
eval_dls = {n: cycle(n) for n in (8, 16, 32)}
i = 0
seq_len = 1
while seq_len < 64:
    seq, labels = next(train_dl)
    loss = F.cross_entropy(model(seq), labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    last_step = seq_len == 63
"""

PERIODIC = HEAD + """    if last_step or (i + 1) % 100 == 0:
        for n, eval_dl in eval_dls.items():
            seq, labels = next(eval_dl)
            pred = model(seq).argmax(dim=-1)
            wrong = (pred != labels).sum().item()
            print(n, wrong)
    i += 1
"""

EVERY_STEP = HEAD + """    for n, eval_dl in eval_dls.items():
        seq, labels = next(eval_dl)
        pred = model(seq).argmax(dim=-1)
        wrong = (pred != labels).sum().item()
        print(n, wrong)
    i += 1
"""

ONE_LOADER = HEAD + """    if last_step or (i + 1) % 100 == 0:
        eval_dl = eval_dls[8]
        for _ in range(200):
            seq, labels = next(eval_dl)
            pred = model(seq).argmax(dim=-1)
            wrong = (pred != labels).sum().item()
            print(wrong)
    i += 1
"""


def test_one_batch_per_loader_under_a_periodic_test_is_periodic(tmp_path: Path):
    assert not any(code == "GPU101" for _, code in lint_script(tmp_path, PERIODIC))


def test_one_batch_per_loader_every_step_is_reported(tmp_path: Path):
    assert (27, "GPU101") in lint_script(tmp_path, EVERY_STEP)


def test_many_batches_of_one_loader_under_a_periodic_test_is_reported(tmp_path: Path):
    assert (29, "GPU101") in lint_script(tmp_path, ONE_LOADER)
