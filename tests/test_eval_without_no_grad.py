"""GPU421: a model put in eval mode and run over a loader without `torch.no_grad()` records the autograd graph of
every evaluation batch (thirty-fifth landing; heldout31's Image_Segmentation and DeepLabv3, heldout30's U-2-Net:
seven labelled per-batch costs across five repositories that no rule reported). Quiet where gradients are
turned off around the loop by its caller (in the same module or another), where the loop needs the graph, or
where the model is frozen.
"""

from __future__ import annotations

import textwrap

from projects import lint_files

SOLVER = """\
    import torch
    import torch.nn.functional as F
    from network import U_Net


    class Solver:
        def __init__(self, train_loader, valid_loader):
            self.train_loader = train_loader
            self.valid_loader = valid_loader
            self.device = torch.device("cuda")
            self.unet = U_Net().to(self.device)
            self.optimizer = torch.optim.Adam(self.unet.parameters(), fused=True)

        def train(self, epochs):
            for epoch in range(epochs):
                self.unet.train(True)
                for images, gt in self.train_loader:
                    images = images.to(self.device, non_blocking=True)
                    gt = gt.to(self.device, non_blocking=True)
                    loss = F.binary_cross_entropy_with_logits(self.unet(images), gt)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                self.unet.eval()
                scores = []
                for images, gt in self.valid_loader:
                    images = images.to(self.device, non_blocking=True)
                    sr = torch.sigmoid(self.unet(images))
                    scores.append(sr)
                torch.save(self.unet.state_dict(), "unet.pth")
"""

NETWORK = """\
    import torch.nn as nn


    class U_Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 1, 1))

        def forward(self, x):
            return self.conv(x)
"""

EVALUATE = """\
    import torch
    from network import U_Net


    def evaluate(net, loader):
        net.eval()
        preds = []
        for x, y in loader:
            preds.append(net(x.cuda(non_blocking=True)).argmax(1))
        return preds
"""

MAIN = """\
    import torch
    from torch.utils.data import DataLoader
    from evaluate import evaluate
    from network import U_Net

    net = U_Net().cuda()
    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
    preds = evaluate(net, loader)
"""


def test_an_eval_loop_after_the_training_loop_without_no_grad_is_reported_with_a_fix(tmp_path):
    found = lint_files(tmp_path, {"solver.py": SOLVER, "network.py": NETWORK}, "GPU421")
    assert found == {("solver.py", 28, "GPU421")}  # not the training loop's forward (line 20)


def test_the_fix_wraps_the_evaluation_loop_in_no_grad(tmp_path):
    from click.testing import CliRunner

    from gpulint.cli import main

    (tmp_path / "solver.py").write_text(textwrap.dedent(SOLVER))
    (tmp_path / "network.py").write_text(textwrap.dedent(NETWORK))
    result = CliRunner().invoke(main, ["check", str(tmp_path / "solver.py"), "--select", "GPU421", "--fix",
                                       "--unsafe-fixes", "--no-cache"], catch_exceptions=False)
    fixed = (tmp_path / "solver.py").read_text()
    assert "            with torch.no_grad():\n                for images, gt in self.valid_loader:\n" \
        in fixed, result.output
    assert fixed.count("no_grad") == 1
    compile(fixed, "solver.py", "exec")


def test_an_evaluation_function_is_quiet_when_its_caller_in_another_module_turns_gradients_off(tmp_path):
    files = {"network.py": NETWORK, "evaluate.py": EVALUATE, "main.py": MAIN}
    assert lint_files(tmp_path, files, "GPU421") == {("evaluate.py", 9, "GPU421")}
    wrapped = MAIN.replace("preds = evaluate(net, loader)", "with torch.no_grad():\n        preds = evaluate(net, loader)")
    assert not lint_files(tmp_path, {**files, "main.py": wrapped}, "GPU421")


def test_loops_that_need_the_graph_and_frozen_models_are_quiet(tmp_path):
    saliency = EVALUATE.replace("preds.append(net(x.cuda(non_blocking=True)).argmax(1))",
                                "x = x.cuda(non_blocking=True).requires_grad_()\n"
                                "            net(x).max().backward()\n            preds.append(x.grad)")
    assert not lint_files(tmp_path, {"network.py": NETWORK, "evaluate.py": saliency, "main.py": MAIN}, "GPU421")
    frozen_here = EVALUATE.replace("    net.eval()\n", "    net.eval()\n    net.requires_grad_(False)\n")
    assert not lint_files(tmp_path, {"network.py": NETWORK, "evaluate.py": frozen_here, "main.py": MAIN}, "GPU421")


def test_a_decorated_function_or_a_model_never_put_in_eval_mode_is_quiet(tmp_path):
    decorated = EVALUATE.replace("def evaluate(", "@torch.no_grad()\n    def evaluate(")
    assert not lint_files(tmp_path, {"network.py": NETWORK, "evaluate.py": decorated, "main.py": MAIN}, "GPU421")
    # no `eval()`: a loop that may keep the graph on purpose (a policy's rollout whose log-probs train later)
    rollout = EVALUATE.replace("    net.eval()\n", "")
    assert not lint_files(tmp_path, {"network.py": NETWORK, "evaluate.py": rollout, "main.py": MAIN}, "GPU421")


def test_a_caller_file_that_turns_gradients_off_elsewhere_does_not_cover_the_call(tmp_path):
    """knowledge-distillation-pytorch's train.py wraps its teacher's forward in `no_grad` but calls `evaluate`
    outside it: the file mentioning `no_grad` is no longer enough, the call itself must be covered (thirty-sixth
    landing)."""
    elsewhere = MAIN + "    with torch.no_grad():\n        teacher_preds = net(next(iter(loader))[0].cuda())\n"
    files = {"network.py": NETWORK, "evaluate.py": EVALUATE}
    assert lint_files(tmp_path, {**files, "main.py": elsewhere}, "GPU421") == {("evaluate.py", 9, "GPU421")}
    # covered through a function of the caller's file that runs under no_grad
    through = MAIN.replace("preds = evaluate(net, loader)",
                           "def validate():\n        return evaluate(net, loader)\n\n\n"
                           "    with torch.no_grad():\n        preds = validate()")
    assert not lint_files(tmp_path, {**files, "main.py": through}, "GPU421")
    # `torch.set_grad_enabled(phase == "train")` turns them off for the evaluation phase
    phased = MAIN.replace("preds = evaluate(net, loader)",
                          "for phase in ['train', 'val']:\n        with torch.set_grad_enabled(phase == 'train'):\n"
                          "            preds = evaluate(net, loader)")
    assert not lint_files(tmp_path, {**files, "main.py": phased}, "GPU421")


def test_volatile_variables_are_the_no_grad_of_pytorch_before_0_4(tmp_path):
    volatile = EVALUATE.replace("    import torch\n", "    import torch\n    from torch.autograd import Variable\n") \
        .replace("preds.append(net(x.cuda(non_blocking=True)).argmax(1))",
                 "x = Variable(x.cuda(non_blocking=True), volatile=True)\n            preds.append(net(x).argmax(1))")
    assert not lint_files(tmp_path, {"network.py": NETWORK, "evaluate.py": volatile, "main.py": MAIN}, "GPU421")
    plain = volatile.replace(", volatile=True", "")
    assert lint_files(tmp_path, {"network.py": NETWORK, "evaluate.py": plain, "main.py": MAIN}, "GPU421") == \
        {("evaluate.py", 11, "GPU421")}
