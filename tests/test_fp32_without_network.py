"""GPU403 asks for autocast around a training step's forward pass. Where the step has no network (no module call;
the forward pass is only read back from the loss), two shapes are no fp32 network either: a fit of bare tensors
(`optim.Adam([self.means, self.scales], lr)`) through custom kernels (a rasterizer), and a harness timing the
callables it is given (`for func, inputs, name in zip(funcs, ...): out = func(*args); out.backward()`). The same
fit calling a module in its step still reports."""

from __future__ import annotations

from tests.projects import lint_script

FIT = """import torch
from splat import rasterization


class Trainer:
    def __init__(self, n):
        self.means = torch.randn(n, 3, device="cuda", requires_grad=True)
        self.scales = torch.randn(n, 3, device="cuda", requires_grad=True)
        self.gt = torch.rand(64, 64, 3, device="cuda")

    def train(self, iterations):
        optimizer = torch.optim.Adam([self.means, self.scales], 0.01)
        for it in range(iterations):
            renders = rasterization(self.means, self.scales)[0]
            loss = ((renders - self.gt) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

MODEL = FIT.replace("renders = rasterization(self.means, self.scales)[0]",
                    "renders = rasterization(self.net(self.means), self.scales)[0]").replace(
    "        self.gt = torch", "        self.net = Encoder().cuda()\n        self.gt = torch").replace(
    "from splat import rasterization", "from splat import Encoder, rasterization")

HARNESS = """import time
import torch


def benchmark(funcs, args, num_steps=10):
    for func, inputs in zip(funcs, [args] * len(funcs)):
        for i in range(num_steps):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = func(*inputs)
            out.sum().backward()
            torch.cuda.synchronize()
            print(time.perf_counter() - start)
"""


def _codes(tmp_path, text):
    return {row for row, code in lint_script(tmp_path, text) if code == "GPU403"}


def test_a_fit_of_bare_tensors_is_not_asked_for_autocast(tmp_path):
    assert _codes(tmp_path / "fit", FIT) == set()
    assert _codes(tmp_path / "model", MODEL)  # a module called in the step: a network's forward pass


def test_a_harness_timing_given_callables_is_not_asked_for_autocast(tmp_path):
    assert _codes(tmp_path, HARNESS) == set()
