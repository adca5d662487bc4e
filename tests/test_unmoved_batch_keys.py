"""An element of a loader's batch taken by a constant key, never moved, while the loop moves another key of the
same batch where it reads it (`batch["input_ids"].to(device)`), is still a host tensor (analysis/unmoved.py
`_sibling_moved_in_place`): DLE BART's `run_eval.py` reads `ids[i].item()` of `ids = batch["ids"]`, no wait."""

from __future__ import annotations

from tests.projects import check, found, write_project

EVAL = '''import torch


def run(model, data_loader, device, results):
    with torch.no_grad():
        for {loop}:
            summaries = model.generate(input_ids=batch["input_ids"]{move}, attention_mask=batch["attention_mask"]{move})
            ids = batch["ids"]
            for i, pred in enumerate(summaries):
                results.append(dict(pred=pred, id=ids[i].item()))


def main(model):
    loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2, num_workers=2, pin_memory=True)
    run(model.cuda(), loader, torch.device("cuda"), [])
'''

READ = ("eval.py", 10, "GPU101")


def _lint(tmp_path, move: str, loop: str = "batch in data_loader") -> set:
    return found(check(write_project(tmp_path / "p", {"eval.py": EVAL.format(move=move, loop=loop)}), "--no-cache"))


def test_a_key_the_loop_never_moves_stays_on_the_host(tmp_path):
    assert READ not in _lint(tmp_path, ".to(device)")


def test_without_a_sibling_moved_the_batch_may_be_on_the_device(tmp_path):
    assert READ in _lint(tmp_path, "")


def test_a_key_of_an_enumerated_batch_stays_on_the_host(tmp_path):
    # `for step, batch in enumerate(loader):` binds the whole batch as `for batch in loader:` does
    enumerated = "step, batch in enumerate(data_loader)"
    assert READ not in _lint(tmp_path, ".to(device)", loop=enumerated)
    assert READ in _lint(tmp_path / "unmoved", "", loop=enumerated)


GT = '''import torch


def run(model, data_loader, device, results):
    model = model.cuda()
    with torch.no_grad():
        for batch in data_loader:
            out = model(batch["L"].to(device))
            gt = batch["H"] if "H" in batch else None
            if gt is not None:
                results.append(gt[0].float().cpu().numpy())
'''


def test_a_key_taken_only_when_present_stays_on_the_host(tmp_path):
    # `gt = batch["H"] if "H" in batch else None`: the element or nothing; its `.cpu()` copies nothing from a GPU
    assert ("eval.py", 11, "GPU104") not in found(check(write_project(tmp_path, {"eval.py": GT}), "--no-cache"))
    moved = GT.replace('batch["H"] if', 'batch["H"].to(device) if')
    assert ("eval.py", 11, "GPU104") in found(check(write_project(tmp_path / "moved", {"eval.py": moved}),
                                                    "--no-cache"))
