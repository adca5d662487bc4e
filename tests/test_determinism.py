"""Findings never depend on the number of workers, on which files a worker linted before, or on the order the
files are given in.

A helper module's finding depends on another module's caller: `pkg/lib_K.py`'s `log_K` reads `.item()`, and
`train_K.py` calls it every step, so the read is per-step code (`via train_K.py:12`). Each helper's question
(which hot loop runs `log_K`?) reads a different caller. gpulint used to bound the callers parsed per process
(8): the helpers a worker reached after its eighth question lost their findings, so `--jobs 1` missed the last
two and `--jobs 2` missed whichever ones its scheduling gave to a worker that had asked enough already
(torchtune's `generate`, reached from the GRPO and PPO recipes, came and went from run to run).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from projects import check

HELPERS = 10  # more than the callers gpulint analyses per question: the bound must not add up across questions

LIB = textwrap.dedent("""\
    import torch


    def log_{k}(loss):
        total = torch.zeros(1, device="cuda") + loss
        print(total.item())
""")

TRAIN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    from pkg.lib_{k} import log_{k}


    def main(model, dataset):
        loader = DataLoader(dataset, batch_size=32, pin_memory=True)
        opt = torch.optim.AdamW(model.parameters(), fused=True)
        for batch in loader:
            loss = model(batch.cuda(non_blocking=True)).mean()
            log_{k}({{"loss": loss.detach()}})
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
""")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for k in range(HELPERS):
        (tmp_path / "pkg" / f"lib_{k}.py").write_text(LIB.format(k=k))
        (tmp_path / f"train_{k}.py").write_text(TRAIN.format(k=k))
    return tmp_path


def findings(items) -> set:
    """(file, line, code, message, the related locations: `via` the caller) of each finding."""
    return {(Path(d["filename"]).as_posix(), d["location"]["row"], d["code"], d["message"],
             tuple((Path(r["filename"]).name, r["location"]["row"]) for r in d.get("related") or ()))
            for d in items}


def helper_findings(found: set) -> set:
    return {(name, row, code) for name, row, code, _, _ in found if name.startswith("pkg/")}


EXPECTED_HELPERS = {(f"pkg/lib_{k}.py", 6, "GPU101") for k in range(HELPERS)}


def test_every_helper_called_every_step_elsewhere_is_reported_in_one_process(project: Path):
    found = findings(check(project, "--no-cache", "--jobs", "1", "."))
    assert helper_findings(found) == EXPECTED_HELPERS
    related = next(r for name, _, _, _, r in found if name == f"pkg/lib_{HELPERS - 1}.py")
    assert related == ((f"train_{HELPERS - 1}.py", 12),)


def test_workers_and_file_order_give_the_same_findings(project: Path):
    files = sorted(p.relative_to(project).as_posix() for p in project.rglob("*.py"))
    one = findings(check(project, "--no-cache", "--jobs", "1", *files))
    assert helper_findings(one) == EXPECTED_HELPERS
    assert findings(check(project, "--no-cache", "--jobs", "2", *files)) == one
    assert findings(check(project, "--no-cache", "--jobs", "2", *reversed(files))) == one
    assert findings(check(project, "--no-cache", "--jobs", "1", *reversed(files))) == one
    # the cache gives back what a cold run found
    assert findings(check(project, "--jobs", "2", ".")) == one
    assert findings(check(project, "--jobs", "2", ".")) == one
