"""Library facts read from torchmetrics' and torchvision's sources (gpulint/analysis/libraries.py): aggregation
metrics test their input for NaN on the host at every `update`, and CUDA NMS copies its mask to the host.
Labelled misses of the fifth blind set (litgpt's RunningMean, OLMo's MeanMetric, PyTorch-YOLOv3's NMS)."""

from __future__ import annotations

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
