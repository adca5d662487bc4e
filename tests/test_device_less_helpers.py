"""Helper modules that name no device, run every step by a GPU training loop (issue 11, heldout7:
guided-diffusion's `fp16_util.py`, a mixed-precision trainer class whose `optimize` reads every parameter's norm
with `.item()`).

A module with no `.cuda()`, `device` or `.to(` in its text was treated as CPU code unless it held `nn.Module`
classes or optimizers stepped by a GPU loop. A plain helper class (or a top-level function) whose method a hot
loop of a file that names the device calls every iteration handles that loop's tensors, so its host reads are
per-step syncs. The same module linted with no such caller stays quiet. A loop over fp16 master parameters built
with `_flatten_dense_tensors` (a few flat tensors, not one per parameter) is no per-parameter loop (GPU411).
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

HELPERS = textwrap.dedent("""\
    import torch
    from torch._utils import _flatten_dense_tensors


    def make_flat(params):
        return [torch.nn.Parameter(_flatten_dense_tensors([p.detach().float() for p in params]))]


    class PrecisionHelper:
        def __init__(self, model, flat=False):
            self.model_params = list(model.parameters())
            self.master_params = self.model_params
            if flat:
                self.master_params = make_flat(self.model_params)

        def optimize(self, opt):
            total = 0.0
            for p in self.model_params:
                total += torch.norm(p.grad).item() ** 2
            for p in self.master_params:
                p.grad.mul_(0.5)
            opt.step()
            return total
""")

TRAIN = textwrap.dedent("""\
    import torch
    from helpers import PrecisionHelper


    def main(model, loader):
        model = model.cuda()
        helper = PrecisionHelper(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            x = x.cuda(non_blocking=True)
            loss = model(x).sum()
            loss.backward()
            helper.optimize(opt)
""")


def test_helper_class_stepped_by_a_gpu_loop_reports_its_reads(tmp_path):
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": TRAIN})
    findings = found(check(root))
    assert ("helpers.py", 19, "GPU101") in findings


def test_flattened_master_parameters_are_no_per_parameter_loop(tmp_path):
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": TRAIN})
    findings = found(check(root))
    assert ("helpers.py", 20, "GPU411") not in findings
    # the same loop over a list of every parameter is one
    plain = HELPERS.replace("self.master_params = make_flat(self.model_params)", "pass")
    root = write_project(tmp_path / "q", {"helpers.py": plain, "train.py": TRAIN})
    assert ("helpers.py", 20, "GPU411") in found(check(root))


def test_helper_module_without_a_gpu_caller_stays_quiet(tmp_path):
    cpu = TRAIN.replace("model = model.cuda()", "model = model").replace(
        "x = x.cuda(non_blocking=True)", "x = x")
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": cpu})
    assert not any(path == "helpers.py" for path, _, _ in found(check(root)))


def test_helper_handed_tensors_keeps_the_module_off_the_gpu(tmp_path):
    """What a helper is handed may be a host copy (SlowFast's visualizers get `preds.cpu()`): a module whose
    per-step calls pass tensors is not taken for GPU code on that ground."""
    helpers = "import torch\n\n\ndef summarize(values):\n    return torch.argmax(values).item()\n"
    train = TRAIN.replace("from helpers import PrecisionHelper", "from helpers import summarize").replace(
        "        helper = PrecisionHelper(model)\n", "").replace(
        "            helper.optimize(opt)", "            summarize(loss.detach().cpu())\n            opt.step()")
    root = write_project(tmp_path / "p", {"helpers.py": helpers, "train.py": train})
    assert not any(path == "helpers.py" for path, _, _ in found(check(root)))
