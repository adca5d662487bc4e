"""False positives found by running gpulint on public repositories (docs/field-trials.md), pinned as tests."""

from __future__ import annotations

import textwrap

from gpulint.rule import all_rules
from gpulint.runner import lint_source

ALL = frozenset(c for c, rule in all_rules().items() if not rule.preview)  # the default rule set


def codes(source: str) -> list[str]:
    return [d.code for d in lint_source(textwrap.dedent(source), "t.py", ALL).diagnostics]


def test_cpu_only_module_mentioning_a_gpu_id_is_quiet():
    # timm's onnx_validate.py: an ONNX Runtime loop over CPU tensors; `args.gpu_id` is no GPU evidence.
    assert codes("""
        import torch
        def main(args, loader, session):
            args.gpu_id = 0
            for i, (inputs, target) in enumerate(loader):
                output = session.run([], {"x": inputs.data.numpy()})
                top1 = torch.tensor(output[0]).mean().item()
    """) == []


def test_words_containing_npu_are_not_gpu_evidence():
    # pytorch/examples time_sequence_prediction: "inputs" contains "npu".
    assert codes("""
        import torch
        model = torch.nn.LSTM(1, 8)
        inputs = torch.randn(3, 1, 1)
        for i in range(10):
            out, _ = model(inputs)
            out.sum().backward()
            print(out.sum().item())
    """) == []


def test_cpu_of_a_model_used_as_a_model_is_not_a_tensor_copy():
    # pytorch/examples rpc/batch/parameter_server.py
    assert "GPU104" not in codes("""
        import torch
        def run(m, rref, loader, device):
            for inputs, labels in loader:
                loss_fn(m(inputs.to(device)), labels).backward()
                grads = [p.grad for p in m.cpu().parameters()]
    """)


def test_work_after_the_batch_loop_of_an_epoch_function_runs_once_per_epoch():
    # pytorch/examples vae/main.py and timm train.py: `for epoch ...: train(epoch)`.
    assert codes("""
        import torch
        model = torch.nn.Linear(2, 2).cuda()
        def train(epoch, loader):
            for x in loader:
                model(x.cuda(non_blocking=True)).sum().backward()
            return model.weight.sum().item()
        for epoch in range(3):
            train(epoch, loader)
            sample = model(torch.randn(2, 2, device="cuda")).cpu()
    """) == []
