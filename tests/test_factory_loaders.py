"""GPU201 at a loader factory's own `DataLoader(...)` (recall22; DLRM's `make_random_data_and_loader`): the
training script's call of the factory is reported already ("returns a `DataLoader` without `pin_memory=True`"),
but the fix belongs in the factory module, and a lint of that module alone (an editor, pre-commit naming only
`loaders.py`) said nothing. Now each unpinned `DataLoader(...)` the factory returns (alone, or in a tuple) is
reported where it is built when a project script calling the factory gets the call-site finding, with that call
as the related location. A factory no GPU script calls, one whose `pin_memory` is its own parameter, and a
loader the factory does not return stay quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

LOADERS = textwrap.dedent("""\
    from torch.utils.data import DataLoader


    def make_loaders(train_set, eval_set, batch):
        fit = DataLoader(train_set, batch_size=batch, shuffle=True, pin_memory=False)
        held_out = DataLoader(eval_set, batch_size=batch)
        return train_set, fit, eval_set, held_out


    def peek(train_set):
        probe = DataLoader(train_set, batch_size=2)
        return len(probe)
""")

TRAIN = textwrap.dedent("""\
    import torch
    import loaders


    def main(net, train_set, eval_set):
        device = torch.device("cuda")
        _, fit, _, held_out = loaders.make_loaders(train_set, eval_set, 64)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in fit:
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")

AT_FACTORY = {("loaders.py", 5, "GPU201"), ("loaders.py", 6, "GPU201")}


def _lint(root: Path, *args: str, loaders: str = LOADERS, train: str = TRAIN) -> list:
    write_project(root, {"loaders.py": loaders, "train.py": train})
    return check(root, "--no-cache", *args)


def test_the_factorys_loaders_are_reported_where_they_are_built(tmp_path: Path):
    got = found(_lint(tmp_path, "."))
    assert AT_FACTORY <= got
    assert ("train.py", 7, "GPU201") in got  # the call keeps its own finding
    assert ("loaders.py", 11, "GPU201") not in got  # `peek`'s loader is never returned


def test_linting_the_factory_module_alone_reports_them(tmp_path: Path):
    items = _lint(tmp_path, "loaders.py")
    assert found(items) == AT_FACTORY
    [first] = [d for d in items if d["location"]["row"] == 5]
    assert "pin_memory=False" in first["message"]
    assert [r["location"]["row"] for r in first["related"]] == [7]


def test_the_unsafe_fix_pins_at_the_factory(tmp_path: Path):
    _lint(tmp_path, "--fix", "--unsafe-fixes", "loaders.py")
    text = (tmp_path / "loaders.py").read_text()
    assert "shuffle=True, pin_memory=True)" in text and "DataLoader(eval_set, batch_size=batch, pin_memory=True)" in text


def test_a_factory_no_gpu_script_calls_is_quiet(tmp_path: Path):
    train = TRAIN.replace('torch.device("cuda")', 'torch.device("cpu")').replace(".to(device)", "")
    assert not AT_FACTORY & found(_lint(tmp_path, ".", train=train))


def test_a_factory_taking_pin_memory_as_a_parameter_is_judged_at_the_call(tmp_path: Path):
    loaders = LOADERS.replace("def make_loaders(train_set, eval_set, batch):",
                              "def make_loaders(train_set, eval_set, batch, pin=False):").replace(
        "shuffle=True, pin_memory=False)", "shuffle=True, pin_memory=pin)")
    assert ("loaders.py", 5, "GPU201") not in found(_lint(tmp_path, ".", loaders=loaders))


def test_the_cached_result_of_the_factory_follows_its_callers(tmp_path: Path):
    write_project(tmp_path, {"loaders.py": LOADERS, "train.py": TRAIN})
    assert AT_FACTORY <= found(check(tmp_path, "loaders.py"))  # the results cache is on (`.gpulint_cache/`)
    (tmp_path / "train.py").write_text(TRAIN.replace('torch.device("cuda")', 'torch.device("cpu")').replace(
        ".to(device)", ""))
    assert not AT_FACTORY & found(check(tmp_path, "loaders.py"))


LOOPS = textwrap.dedent("""\
    import torch


    def train(epoch, loader, net, opt):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")

MAIN = textwrap.dedent("""\
    import torch
    import loaders
    from loops import train


    def main(net, train_set, eval_set):
        _, fit, _, held_out = loaders.make_loaders(train_set, eval_set, 64)
        net = net.cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for epoch in range(10):
            train(epoch, fit, net, opt)
""")


def test_a_script_whose_loop_is_in_a_helper_module_reports_at_the_factory(tmp_path: Path):
    """recall41 (RepDistiller's `train_student.py`): the script calling the factory has no loop text of its own
    (its batches are moved in `loops.train`), yet gets the call-site finding; the factory's loaders were left
    quiet because only files that look like training were asked, and only through their per-step calls."""
    write_project(tmp_path, {"loaders.py": LOADERS, "loops.py": LOOPS, "main.py": MAIN})
    got = found(check(tmp_path, "--no-cache", "."))
    assert ("main.py", 7, "GPU201") in got
    assert AT_FACTORY <= got
    assert AT_FACTORY <= found(check(tmp_path, "--no-cache", "loaders.py"))


def test_a_helper_loop_on_the_host_keeps_the_factory_quiet(tmp_path: Path):
    loops = LOOPS.replace("x, y = x.cuda(), y.cuda()", "pass")
    main = MAIN.replace("net = net.cuda()\n", "")
    write_project(tmp_path, {"loaders.py": LOADERS, "loops.py": loops, "main.py": main})
    assert not AT_FACTORY & found(check(tmp_path, "--no-cache", "."))


SCRIPT = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def prepare_dataloaders(train_set, batch):
        train_loader = DataLoader(train_set, batch_size=batch, shuffle=True, pin_memory=False)
        return train_loader, len(train_set)


    def train(net, train_set):
        train_loader, n = prepare_dataloaders(train_set, 64)
        net = net.cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in train_loader:
            x, y = x.cuda(), y.cuda()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")


def test_a_scripts_own_factory_is_reported_where_it_builds_the_loader(tmp_path: Path):
    """recall41 (tacotron2 `train.py`: `prepare_dataloaders` and its caller `train` in one module): the call had
    the finding, the `DataLoader(...)` where the fix goes had none, as only other modules' callers were asked."""
    write_project(tmp_path, {"train.py": SCRIPT})
    items = check(tmp_path, "--no-cache", "train.py")
    assert {("train.py", 6, "GPU201"), ("train.py", 11, "GPU201")} <= found(items)
    [at_factory] = [d for d in items if d["location"]["row"] == 6]
    assert [r["location"]["row"] for r in at_factory["related"]] == [11]


def test_a_scripts_own_factory_on_the_host_is_quiet(tmp_path: Path):
    write_project(tmp_path, {"train.py": SCRIPT.replace("x, y = x.cuda(), y.cuda()\n", "").replace(
        "net = net.cuda()\n", "")})
    assert not {f for f in found(check(tmp_path, "--no-cache", "train.py")) if f[2] == "GPU201"}


DEVICE_FACTORY = """\
from torch.utils.data import DataLoader


def build_dataloader(path_list, batch_size=4, num_workers=1, device="cpu"):
    dataset = FilePathDataset(path_list)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      pin_memory=(device != "cpu"))
"""

DEVICE_SCRIPT = """\
import torch
from meldataset import build_dataloader


def main():
    device = "cuda"
    model = build_model().to(device)
    loader = build_dataloader(train_list, batch_size=8{device})
    for epoch in range(10):
        for i, batch in enumerate(loader):
            batch = [b.to(device) for b in batch[1:]]
            model(*batch).sum().backward()
"""


def _device_factory(tmp_path: Path, device: str) -> set:
    root = write_project(tmp_path, {"meldataset.py": DEVICE_FACTORY, "train.py": DEVICE_SCRIPT.format(device=device)})
    out = check(root, "--no-cache", "--select", "GPU201,GPU202", "train.py")
    return {(d["location"]["row"], d["code"], "pinned batch" in d["message"]) for d in out}


def test_a_factory_pinning_when_its_device_is_not_the_cpu_is_judged_by_the_device_passed(tmp_path: Path):
    # `pin_memory=(device != "cpu")` with `device="cuda"` passed: a pinned loader, whose copies lack non_blocking
    assert _device_factory(tmp_path / "a", ", device=device") == {(11, "GPU202", True)}
    # the default device, "cpu": not pinned, while the script copies its batches to the GPU every step
    assert _device_factory(tmp_path / "b", "") == {(8, "GPU201", False), (11, "GPU202", False)}
