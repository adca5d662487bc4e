"""`target.new_tensor([n], dtype=torch.long)` of Python numbers on a device tensor every step builds the tensor on
the host and copies it (GPU203; thirty-fourth landing, heldout30a's semseg: the per-step count it all-reduces). A
`new_tensor` on a tensor that stays on the host, or of another tensor's values, is not this copy."""

from __future__ import annotations

from projects import lint_files

TRAIN = """\
    import torch
    import torch.distributed as dist


    def train(train_loader, model, optimizer):
        for i, (input, target) in enumerate(train_loader):
            input = input.cuda(non_blocking=True)
            target = target.cuda(non_blocking=True)
            loss = model(input, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            n = input.size(0)
            count = target.new_tensor([n], dtype=torch.long)
            dist.all_reduce(count)
"""


def test_a_count_made_a_tensor_on_the_device_every_step_is_a_host_copy(tmp_path):
    assert ("train.py", 14, "GPU203") in lint_files(tmp_path, {"train.py": TRAIN}, "GPU203")


def test_new_tensor_on_a_host_tensor_copies_nothing(tmp_path):
    text = TRAIN.replace("            target = target.cuda(non_blocking=True)\n", "")
    assert ("train.py", 13, "GPU203") not in lint_files(tmp_path, {"train.py": text}, "GPU203")


def test_new_tensor_of_another_tensors_values_is_not_a_host_build(tmp_path):
    text = TRAIN.replace("target.new_tensor([n], dtype=torch.long)", "target.new_tensor(loss.detach())")
    assert ("train.py", 14, "GPU203") not in lint_files(tmp_path, {"train.py": text}, "GPU203")
