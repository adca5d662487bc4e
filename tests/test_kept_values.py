"""A meter that keeps what it is handed (branch recall57, analysis/kept_values.py): `AverageMeter.update(self,
val, n=1)` stores `val` and arithmetic of it (`self.sum += val * n; self.avg = self.sum / self.count`), so after
`meter.update(<device tensor>, n)` the object's `avg` is a device tensor, and formatting it every step
(`"{:.3f}".format(meters["top1"].avg)`, mdistiller's trainer, heldout15) or `float()` of it waits for the GPU.
Silent for a meter handed host numbers (`loss.item()`), one that converts what it is given itself, another
meter of a dict, and a read that is periodic."""

from __future__ import annotations

import pytest

from tests.projects import check, found, write_project

METERS = """\
import torch


class AverageMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class ScalarMeter:
    def __init__(self):
        self.avg = 0.0
        self.count = 0

    def update(self, val, n=1):
        value = float(val)
        self.count += n
        self.avg += (value - self.avg) * n / self.count
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from meters import AverageMeter{extra}


def train(model, dataset, optimizer):
    loader = DataLoader(dataset, batch_size=32, pin_memory=True, num_workers=4)
    meter = {meter}()
    meters = {{"loss": AverageMeter(), "time": AverageMeter()}}
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        {lines}
"""


def _found(tmp_path, lines: str, meter: str = "AverageMeter") -> set:
    extra = "" if meter == "AverageMeter" else f", {meter}"
    write_project(tmp_path, {"meters.py": METERS, "train.py": TRAIN.format(meter=meter, lines=lines, extra=extra)})
    return {(row, code) for path, row, code in found(check(tmp_path, "--select", "GPU1", "--no-cache"))
            if path == "train.py"}


@pytest.mark.parametrize("lines,code", [
    ('meter.update(loss.detach(), x.size(0))\n        print("loss {:.4f}".format(meter.avg))', "GPU107"),
    ('meter.update(loss.detach())\n        text = f"{meter.val:.4f} ({meter.avg:.4f})"', "GPU107"),
    ("meters['loss'].update(loss.detach(), x.size(0))\n        total = float(meters[\"loss\"].avg)", "GPU105"),
])
def test_a_device_tensor_kept_by_a_meter_then_read_every_step_syncs(tmp_path, lines, code):
    assert (17, code) in _found(tmp_path, lines)


@pytest.mark.parametrize("lines,meter", [
    ('meter.update(loss.item(), x.size(0))\n        print("loss {:.4f}".format(meter.avg))', "AverageMeter"),
    # the meter converts what it is given itself (a sink of its own, reported at the update call by GPU112)
    ('meter.update(loss.detach(), x.size(0))\n        print("loss {:.4f}".format(meter.avg))', "ScalarMeter"),
    # another meter of the dict holds host numbers
    ("meters['loss'].update(loss.detach())\n        meters['time'].update(0.1)\n"
     "        print('{:.3f}'.format(meters['time'].avg))", "AverageMeter"),
    # the dict's meters are not resolved, and of the meter classes the module imports one keeps, one does not
    ("meters['loss'].update(loss.detach(), x.size(0))\n        total = float(meters['loss'].avg)", "ScalarMeter"),
    # read only every 100 steps
    ('meter.update(loss.detach(), x.size(0))\n        if step % 100 == 0:\n'
     '            print("loss {:.4f}".format(meter.avg))', "AverageMeter"),
])
def test_host_values_other_meters_and_periodic_reads_are_fine(tmp_path, lines, meter):
    assert {f for f in _found(tmp_path, lines, meter) if f[1] in ("GPU105", "GPU107")} == set()


@pytest.mark.parametrize("lines,expected", [
    # the string's fields read the meter's attributes (`{top1.avg:.3f}`): reported once, at the call
    ('meter.update(loss.detach(), x.size(0))\n'
     '        msg = "loss {m.val:.4f} ({m.avg:.4f})".format(m=meter)', {(17, "GPU107")}),
    ('meter.update(loss.detach(), x.size(0))\n        msg = "loss {0.avg:.4f}".format(meter)', {(17, "GPU107")}),
    ('meter.update(loss.item(), x.size(0))\n        msg = "loss {m.avg:.4f}".format(m=meter)', set()),
    ('meter.update(loss.detach(), x.size(0))\n        msg = "loss {m.count}".format(m=meter)', set()),
])
def test_format_fields_reading_a_kept_attribute(tmp_path, lines, expected):
    assert {f for f in _found(tmp_path, lines) if f[1] == "GPU107"} == expected


@pytest.mark.parametrize("lines", [
    # the read is the call's own argument (Rainbow's `self.transitions.append(x, self.transitions.max)`)
    "meter.update(meter.avg)\n        msg = f'{meter.avg:.3f}'",
    # `a.update(b.avg)` and `b.update(a.avg)`: deciding `a.avg` asks about `b.avg`, which asks about `a.avg`
    "meter.update(meters['loss'].avg)\n        meters['loss'].update(meter.avg)\n        msg = f'{meter.avg:.3f}'",
])
def test_a_meter_handed_its_own_or_another_s_attribute_is_linted(tmp_path, lines):
    assert {f for f in _found(tmp_path, lines) if f[1] == "GPU107"} == set()


REPEATED = """\
import torch
from meters import AverageMeter


def train(model, loader, optimizer, names):
    logs = {name: AverageMeter() for name in names}
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
""" + "".join(f"        logs[names[{i % 3}] + 's'].update(loss.detach())\n" for i in range(12)) + \
    "".join(f"        print(float(logs[names[{i % 3}] + 's'].avg))\n" for i in range(12))


def test_each_receiver_is_spelt_once_for_all_the_reads_asked_about(tmp_path, monkeypatch):
    """speed17: the object a receiver names (`_key`) was worked out for every method call before a read, for
    each read asked about: LibCST code generation of a receiver that is not a plain name (here 12 reads after
    12 `update` calls: 36 codegens). It is kept per node now (15, each node once), with the same findings."""
    from gpulint import runtime
    from gpulint.analysis import ModuleAnalysis
    from gpulint.rule import all_rules
    from gpulint.runner import lint_source

    write_project(tmp_path, {"meters.py": METERS, "train.py": REPEATED})
    spelt = []
    code = ModuleAnalysis.code

    def counted(self, node):
        import sys
        if sys._getframe(1).f_code.co_name in ("_key", "_key_of"):
            spelt.append(node)
        return code(self, node)

    monkeypatch.setattr(ModuleAnalysis, "code", counted)
    path = (tmp_path / "train.py").resolve()
    codes = frozenset(c for c, rule in all_rules().items() if not rule.preview)
    with runtime.batch():
        result = lint_source(path.read_text(), "train.py", codes, path=path)
    rows = sorted(d.location.row for d in result.diagnostics if d.code == "GPU105")
    assert rows == list(range(24, 36))  # every `float(...avg)` of a meter handed a device tensor
    assert len(spelt) == len({id(n) for n in spelt}) == 15  # each node spelt once (36 codegens before)
