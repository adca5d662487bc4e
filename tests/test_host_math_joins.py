"""GPU203: host tensors joined or computed before a copy (branch recall45; heldout6's BLIP `itm_labels`, heldout11's
Informer attention weights).

`torch.cat([torch.ones(bs), torch.zeros(2 * bs)]).to(x.device)` in a model's `forward` builds both parts on the
host, joins them there and copies the result every step; `(torch.ones(n, n) / n).type_as(x)` computes on the host
and the cast copies it. Created on the device (`device=`), nothing crosses. Joins of tensors that are not all host
factories (a batch, a device tensor), factories that already name a device, code run once (`__init__`) and a
CPU-only program stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, write_project

PROGRAM = '''
import torch
from torch.utils.data import DataLoader


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)
        self.init_labels = INIT

    def forward(self, x):
        bs = x.shape[0]
        labels = EXPR
        return torch.nn.functional.cross_entropy(self.fc(x), labels[:bs])


model = Head().DEVICE
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 8), batch_size=8, pin_memory=True)
for x in loader:
    x = x.DEVICE
    model(x).backward()
    opt.step()
'''


def lint(root: Path, expr: str, init: str = "None", device: str = "cuda()") -> dict:
    text = PROGRAM.replace("EXPR", expr).replace("INIT", init).replace("DEVICE", device)
    if device == "cpu()":  # a CPU-only program pins nothing
        text = text.replace(", pin_memory=True", "")
    items = check(write_project(root, {"train.py": text}), "--no-cache", "--exit-zero", "--select", "GPU203")
    return {d["location"]["row"]: d["message"] for d in items}


def test_a_join_of_host_factories_copied_every_step(tmp_path: Path):
    for expr in ("torch.cat([torch.ones(bs, dtype=torch.long), torch.zeros(2 * bs, dtype=torch.long)], dim=0)"
                 ".to(x.device)",
                 "torch.stack((torch.zeros(bs), torch.ones(bs))).long().cuda()",
                 "torch.cat([torch.arange(bs) for _ in range(2)]).to(x.device)"):
        got = lint(tmp_path, expr)
        assert 14 in got and "runs on the host" in got[14], expr


def test_host_arithmetic_cast_to_a_device_tensor_every_step(tmp_path: Path):
    got = lint(tmp_path, "(torch.ones(bs, 3) / 3).type_as(x).argmax(1)")
    assert 14 in got and "`.type_as(...)` copies it" in got[14]


def test_joins_that_are_not_all_host_factories_stay_quiet(tmp_path: Path):
    for expr in ("torch.cat([x[:, 0].long(), torch.zeros(bs, dtype=torch.long)]).to(x.device)",
                 "torch.cat([torch.ones(bs, device=x.device), torch.zeros(bs, device=x.device)]).long().to(x.device)",
                 "(torch.ones(bs, 3, device=x.device) / 3).type_as(x).argmax(1)",
                 "(x.new_ones(bs, 3) / 3).type_as(x).argmax(1)"):
        got = lint(tmp_path, expr)
        assert 14 not in got, (expr, got)


def test_built_once_or_on_the_cpu_stays_quiet(tmp_path: Path):
    join = "torch.cat([torch.ones(4, dtype=torch.long), torch.zeros(4, dtype=torch.long)]).to('cuda')"
    assert not lint(tmp_path, "self.init_labels.to(x.device)", init=join)
    assert not lint(tmp_path, "torch.cat([torch.ones(bs), torch.zeros(bs)]).long().to(torch.device('cpu'))",
                    device="cpu()")


SINUSOID = '''
import math
import torch
from torch.utils.data import DataLoader


def sin_embedding(n, d, device, rows=None):
    pe = torch.zeros(n, d)
    pos = torch.arange(0.0, n).unsqueeze(1)
    div = torch.exp(torch.arange(0.0, d, 2) * -(math.log(10000.0) / d))
    pe[:, 0::2] = FILL
    pe[:, 1::2] = torch.cos(pos * div).transpose(0, 1).t()
    return pe[None, :].to(device)


device = torch.device("cuda")
model = torch.nn.Linear(8, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 4, 8), batch_size=8, pin_memory=True)
WHERE
for x in loader:
    x = x.to(device, non_blocking=True)
    model(x + EMB).sum().backward()
    opt.step()
'''


def lint_sinusoid(root: Path, fill: str = "torch.sin(pos * div)", where: str = "",
                  emb: str = "sin_embedding(4, 8, x.device)") -> dict:
    text = SINUSOID.replace("FILL", fill).replace("WHERE", where).replace("EMB", emb)
    items = check(write_project(root, {"train.py": text}), "--no-cache", "--exit-zero", "--select", "GPU203")
    return {d["location"]["row"]: (d["message"], d.get("fix")) for d in items}


def test_a_table_filled_on_the_host_then_copied_every_step(tmp_path: Path):
    # a sinusoid table rebuilt in every step: zeros filled with host arithmetic, then viewed and copied whole
    got = lint_sinusoid(tmp_path)
    assert 13 in got and "`pe` is built on the host by `torch.zeros` each step" in got[13][0]
    assert got[13][1] is None  # the writes would still be computed on the host: no one-place fix
    assert 13 in lint_sinusoid(tmp_path, fill="0.5")


def test_host_arithmetic_through_names_then_copied(tmp_path: Path):
    emb = "torch.exp(pos * div).to(x.device)"
    got = lint_sinusoid(tmp_path, emb="helper(x)", where='''
def helper(x):
    pos = torch.arange(0.0, 4).unsqueeze(1)
    div = torch.arange(0.0, 8) / 8
    return EXPR
'''.replace("EXPR", emb))
    assert 24 in got and "the arithmetic on it runs on the host" in got[24][0] and got[24][1] is None, got


def test_data_written_into_the_table_or_built_once_stays_quiet(tmp_path: Path):
    # data (a host batch, values of a list) written in: a host buffer the data needs, GPU410's question
    assert 13 not in lint_sinusoid(tmp_path, fill="rows")
    assert 13 not in lint_sinusoid(tmp_path, fill="torch.tensor(rows)")
    # built once before the loop
    assert not lint_sinusoid(tmp_path, where="emb = sin_embedding(4, 8, device)\n", emb="emb")


INDEXED = '''
import torch

device = torch.device("cuda")
table = torch.randn(4, 3, 16).to(device)
for step in range(100):
    b = torch.arange(4)
    rows = table[INDEX]
    rows.sum().backward()
'''


def test_a_device_tensor_indexed_by_a_view_of_a_host_index_tensor(tmp_path: Path):
    # broadcast indexing with new axes of a host `torch.arange`: the index is copied to the GPU every step
    for index in ("torch.arange(4)[:, None], torch.arange(3)[None, :]", "b[:, None], 0", "torch.arange(3).unsqueeze(1)",
                  "b.view(2, 2), 1"):
        items = check(write_project(tmp_path, {"train.py": INDEXED.replace("INDEX", index)}), "--no-cache",
                      "--exit-zero", "--select", "GPU203")
        assert [d["location"]["row"] for d in items] == [8], index
    # the same indices built on the device, or an integer taken from one, stay quiet
    for index in ("torch.arange(4, device=device)[:, None], 0", "b[0]", "b.view(2, 2)[0, 0]"):
        items = check(write_project(tmp_path, {"train.py": INDEXED.replace("INDEX", index)}), "--no-cache",
                      "--exit-zero", "--select", "GPU203")
        assert not items, index
