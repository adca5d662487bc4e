"""`X.apply(t)` of a project `torch.autograd.Function` (jepa's `AllReduce`, the SSL repositories' `GatherLayer`)
hands back a tensor: `float(AllReduce.apply(loss))` every step is a read of the device (GPU105; heldout27a's
jepa `app/vjepa/train.py:502-503`). The same `float()` of a project class's `apply` that is no autograd Function
stays quiet, as does `float()` of a Python number handed to it."""

from __future__ import annotations

from projects import lint_files

DIST = """\
    import torch
    import torch.distributed as dist


    class AllReduce(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if dist.is_available() and dist.is_initialized():
                x = x.contiguous() / dist.get_world_size()
                dist.all_reduce(x)
            return x

        @staticmethod
        def backward(ctx, grads):
            return grads


    class Rules:
        @staticmethod
        def apply(x):
            return x
"""

TRAIN = """\
    import torch
    from dist_utils import AllReduce, Rules


    def main(model, loader, optimizer, device):
        for clips in loader:
            clips = clips.to(device, non_blocking=True)
            loss = model(clips).mean()
            loss.backward()
            optimizer.step()
            input_var = float(CLASS.apply(clips.view(clips.shape[0], -1).var(dim=1).mean(dim=0)))
            print(input_var)
"""


def test_float_of_an_autograd_function_result_reads_the_device(tmp_path):
    hits = lint_files(tmp_path, {"dist_utils.py": DIST, "train.py": TRAIN.replace("CLASS", "AllReduce")}, "GPU105")
    assert ("train.py", 11, "GPU105") in hits


def test_float_of_another_class_apply_stays_quiet(tmp_path):
    hits = lint_files(tmp_path, {"dist_utils.py": DIST, "train.py": TRAIN.replace("CLASS", "Rules")}, "GPU105")
    assert ("train.py", 11, "GPU105") not in hits
