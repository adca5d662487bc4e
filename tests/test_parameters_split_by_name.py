"""GPU402: an optimizer over parameter groups split by name in a loop (`for name, param in
model.named_parameters(): biases.append(param) if name.endswith('.bias') else not_biases.append(param)`, the SSD
tutorial's twice-the-learning-rate biases, heldout32b) is over the model's parameters: moved to CUDA with it and
stepped every step, not fused. A loop over another list of tensors is not the model's parameters.
"""

from __future__ import annotations

from projects import lint_files

MODEL = """\
    import torch.nn as nn


    class SSD300(nn.Module):
        def __init__(self, n_classes):
            super().__init__()
            self.base = nn.Sequential(nn.Conv2d(3, 64, 3), nn.ReLU(), nn.Conv2d(64, 128, 3), nn.ReLU())
            self.head = nn.Conv2d(128, n_classes, 3)

        def forward(self, x):
            return self.head(self.base(x))
"""

TRAIN = """\
    import torch
    from model import SSD300

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    def main(loader):
        model = SSD300(n_classes=21)
        biases = list()
        not_biases = list()
        for param_name, param in model.named_parameters():
            if param.requires_grad:
                if param_name.endswith(".bias"):
                    biases.append(param)
                else:
                    not_biases.append(param)
        optimizer = torch.optim.SGD(params=[{"params": biases, "lr": 0.2}, {"params": not_biases}], lr=0.1,
                                    momentum=0.9)
        model = model.to(device)
        for x, y in loader:
            loss = model(x.to(device)).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_groups_split_by_parameter_name_are_the_models_parameters(tmp_path):
    assert lint_files(tmp_path, {"model.py": MODEL, "train.py": TRAIN}, "GPU402") == {("train.py", 17, "GPU402")}
    plain = TRAIN.replace("for p in model.parameters():", "").replace(
        "for param_name, param in model.named_parameters():", "for param in model.parameters():").replace(
        'if param_name.endswith(".bias"):', "if param.dim() == 1:")
    assert lint_files(tmp_path, {"model.py": MODEL, "train.py": plain}, "GPU402") == {("train.py", 17, "GPU402")}


def test_a_loop_over_other_tensors_is_not_the_models_parameters(tmp_path):
    other = TRAIN.replace("for param_name, param in model.named_parameters():",
                          "for param_name, param in extra_tensors.items():")
    assert not lint_files(tmp_path, {"model.py": MODEL, "train.py": other}, "GPU402")
