"""Library facts read from torchmetrics' and torchvision's sources (gpulint/analysis/libraries.py): aggregation
metrics test their input for NaN on the host at every `update`, and CUDA NMS copies its mask to the host.
Labelled misses of the fifth blind set (litgpt's RunningMean, OLMo's MeanMetric, PyTorch-YOLOv3's NMS)."""

from __future__ import annotations

import textwrap

import pytest

from gpulint.runner import lint_source

PROGRAM = """\
import torch
import torchvision
from torchmetrics import RunningMean
from torchmetrics.aggregation import MeanMetric


def train(model, loader, optimizer, device):
    metric = {metric}
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        {line}
"""


def _codes(metric: str, line: str) -> list[str]:
    source = PROGRAM.format(metric=metric, line=line)
    return [d.code for d in lint_source(source, "train.py", frozenset({"GPU112"})).diagnostics]


@pytest.mark.parametrize("metric", ["RunningMean(window=4).to(device)", "MeanMetric()", "MeanMetric().cuda()"])
def test_an_aggregation_metric_updated_with_a_device_tensor_every_step_syncs(metric):
    assert _codes(metric, "metric.update(loss.detach())") == ["GPU112"]


@pytest.mark.parametrize("metric,line", [
    ('MeanMetric(nan_strategy="disable").to(device)', "metric.update(loss.detach())"),  # no NaN test
    ("MeanMetric()", "metric.update(1.0)"),  # a Python number: nothing read back
    ("MeanMetric()", "if optimizer.step_count % 100 == 0:\n            metric.update(loss.detach())"),
])
def test_an_aggregation_metric_without_the_host_test_or_updated_periodically_is_fine(metric, line):
    assert _codes(metric, line) == []


@pytest.mark.parametrize("call", ["torchvision.ops.nms(x[:, :4], x[:, 4], 0.5)",
                                  "torchvision.ops.batched_nms(x[:, :4], x[:, 4], y, 0.5)"])
def test_nms_on_device_tensors_every_step_syncs(call):
    assert _codes("None", f"keep = {call}") == ["GPU112"]


SCALER = """\
import torch
from timm.utils import NativeScaler

model = torch.nn.Linear(8, 2).cuda()
optimizer = torch.optim.AdamW(model.parameters(), {kind}=True)
loss_scaler = NativeScaler()
for step, x in enumerate(loader):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x.cuda(non_blocking=True)).sum()
    {line}
"""


@pytest.mark.parametrize("kind,line,expected", [
    # timm's NativeScaler.__call__ runs GradScaler.step(optimizer): found_inf read with .item() each call
    ("foreach", "loss_scaler(loss, optimizer, clip_grad=1.0, parameters=model.parameters())", ["GPU112"]),
    ("foreach", "loss_scaler(loss, optimizer, need_update=True)", ["GPU112"]),
    # a fused optimizer takes the scale and found_inf on the device: no read
    ("fused", "loss_scaler(loss, optimizer)", []),
    # gradient accumulation: the step runs only when the flag says so, which is not told here
    ("foreach", "loss_scaler(loss, optimizer, need_update=(step + 1) % 4 == 0)", []),
])
def test_timm_native_scaler_called_every_step(kind, line, expected):
    source = "loader = []\n" + SCALER.format(kind=kind, line=line)
    assert [d.code for d in lint_source(source, "train.py", frozenset({"GPU112"})).diagnostics] == expected


EMA = """\
import torch
{imports}

model = torch.nn.Linear(8, 2).cuda()
optimizer = torch.optim.AdamW(model.parameters(), fused=True)


def train_epoch(model, loader, optimizer, model_ema=None):
    for x in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
        optimizer.step()
        if model_ema is not None:
            model_ema.update(model)


model_ema = None
if use_ema:
    model_ema = {ema}(model, decay=0.999)
train_epoch(model, loader, optimizer, model_ema=model_ema)
"""


@pytest.mark.parametrize("imports,ema,expected", [
    ("from timm.utils import ModelEmaV2", "ModelEmaV2", ["GPU411"]),
    ("from timm.utils import *", "ModelEma", ["GPU411"]),  # T2T-ViT's star import
    ("import timm.utils", "timm.utils.ModelEmaV2", ["GPU411"]),
    ("from timm.utils import ModelEmaV3", "ModelEmaV3", []),  # foreach by default
    ("from my_ema import ModelEmaV2", "ModelEmaV2", []),  # not timm's: unknown
])
def test_timm_model_ema_updated_every_step_loops_over_the_tensors(imports, ema, expected):
    source = "loader = []\nuse_ema = True\n" + EMA.format(imports=imports, ema=ema)
    assert [d.code for d in lint_source(source, "train.py", frozenset({"GPU411"})).diagnostics] == expected


def test_the_receiver_of_a_method_called_with_keywords_only_is_no_library_object():
    """guided-diffusion's `self._vb_terms_bpd(model=..., x_start=...)`: asking what `self` was passed as, for a
    method whose calls pass no positional argument, must not look one up (it crashed GPU112 once)."""
    import libcst as cst

    from gpulint.analysis import ModuleAnalysis
    from gpulint.analysis.calls import module_calls
    from gpulint.analysis.node_types import of_types

    source = textwrap.dedent("""\
        class Diffusion:
            def terms(self, model, x):
                return self.posterior(x=x)

            def losses(self, model, x):
                return self.terms(model=model, x=x)

        def train(ema, x):
            ema.update(x)

        train(ema=None, x=1)
        """)
    analysis = ModuleAnalysis(cst.parse_module(source))
    calls = module_calls(analysis)
    receivers = [c.func.value for c in of_types(analysis.index, cst.Call) if isinstance(c.func, cst.Attribute)]
    assert [calls.constructor(r) for r in receivers] == [None, None, None]


@pytest.mark.parametrize("line,expected", [
    ("text = tokenizer.decode(ids[0])", ["GPU112"]),
    ("texts = tokenizer.batch_decode(ids, skip_special_tokens=True)", ["GPU112"]),
    ("texts = tokenizer.batch_decode(ids.cpu().tolist())", []),  # already host lists (its own finding)
])
def test_a_tokenizer_decoding_device_ids_every_batch_copies_them(line, expected):
    """transformers' decode/batch_decode turn token ids into lists with to_py_obj (.detach().cpu().tolist())."""
    source = ("import torch\nfrom transformers import AutoTokenizer\n"
              "tokenizer = AutoTokenizer.from_pretrained('gpt2')\nmodel = torch.nn.Linear(8, 8).cuda()\n"
              "for x in loader:\n    ids = model(x.cuda(non_blocking=True)).argmax(-1)\n    " + line + "\n")
    assert [d.code for d in lint_source("loader = []\n" + source, "eval.py",
                                        frozenset({"GPU112"})).diagnostics] == expected
