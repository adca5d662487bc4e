"""A script's function that nothing calls is dead code, not per-step code (heldout14's one wrong-finding cause):
`def eval(...)` with a per-batch `.cpu()` that `main()` never calls is not reported; the same function called from
`main()`, named in a dict, exported through `fire.Fire()`, imported by another module, decorated, or defined in a
module without a `__main__` guard (a library) is still reported.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

SCRIPT = '''\
import torch
from torch.utils.data import DataLoader


def train(model, loader, optimizer):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def eval(model, loader):
    model.eval()
    preds = []
    for x, y in loader:
        with torch.no_grad():
            preds.append(model(x.cuda(non_blocking=True)).cpu())
    return torch.cat(preds)


def main():
    model = torch.nn.Linear(4, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8,
                        pin_memory=True, num_workers=2)
    for epoch in range(10):
        train(model, loader, optimizer)
        torch.save(model.state_dict(), "m.pt")
CALLED_HERE


if __name__ == "__main__":
    main()
'''

EVAL_READ = ("train.py", 18, "GPU104")  # the per-batch `.cpu()` in eval()'s loop


def _findings(tmp_path: Path, called_here: str = "", others: dict | None = None, script: str = SCRIPT,
              pyproject: str | None = None) -> set:
    modules = {"train.py": script.replace("CALLED_HERE", called_here), **(others or {})}
    root = write_project(tmp_path, modules, **({"pyproject": pyproject} if pyproject else {}))
    return found(check(root, "--no-cache", "--select", "GPU104", "."))


def test_the_read_is_reported_where_main_calls_eval(tmp_path: Path):
    assert EVAL_READ in _findings(tmp_path, "        eval(model, loader)")


def test_a_function_the_script_never_calls_runs_no_step(tmp_path: Path):
    assert EVAL_READ not in _findings(tmp_path)


def test_a_function_named_in_a_registry_is_called(tmp_path: Path):
    assert EVAL_READ in _findings(tmp_path, "    steps = {'eval': None}")
    assert EVAL_READ in _findings(tmp_path / "b", "    steps = [eval]")


def test_a_module_exposing_every_function_on_its_command_line_calls_them(tmp_path: Path):
    script = SCRIPT.replace("    main()\n", "    import fire\n    fire.Fire()\n")
    assert EVAL_READ in _findings(tmp_path, script=script)


def test_a_function_another_module_imports_is_called(tmp_path: Path):
    other = {"evaluate.py": "from train import eval\n\neval(None, [])\n"}
    assert EVAL_READ in _findings(tmp_path, others=other)


def test_a_console_script_entry_point_is_called(tmp_path: Path):
    pyproject = "[project]\nname = 'p'\n\n[project.scripts]\np-eval = \"train:eval\"\n"
    assert EVAL_READ in _findings(tmp_path, pyproject=pyproject)


def test_a_decorated_function_is_called(tmp_path: Path):
    script = SCRIPT.replace("def eval(model, loader):", "@torch.no_grad()\ndef eval(model, loader):")
    assert ("train.py", 19, "GPU104") in _findings(tmp_path, script=script)


def test_a_library_module_without_a_main_guard_exports_its_functions(tmp_path: Path):
    script = SCRIPT.replace('if __name__ == "__main__":\n    main()\n', "")
    assert EVAL_READ in _findings(tmp_path, script=script)
