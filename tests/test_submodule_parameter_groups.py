"""GPU402 on parameter groups built from a model's submodules (`list(model.module.layer1.parameters()) + ...`,
DeepLabv3's backbone and ASPP groups, heldout31b; thirty-fifth landing): the submodules move with their model.
Freezing batch-norm weights under `if isinstance(m, nn.BatchNorm2d):` (`--freeze_bn`) with a `requires_grad`
filter is no linear probe; freezing a backbone's parameters is, and stays quiet.
"""

from __future__ import annotations

from projects import lint_files

MAIN = """\
    import torch
    import torch.nn as nn
    import torch.optim as optim
    import deeplab


    def main(args, loader):
        model = deeplab.resnet101(num_classes=21)
        criterion = nn.CrossEntropyLoss(ignore_index=255)
        model = nn.DataParallel(model).cuda()
        model.train()
        if args.freeze_bn:
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
                    m.weight.requires_grad = False
                    m.bias.requires_grad = False
        backbone_params = (
            list(model.module.conv1.parameters()) +
            list(model.module.layer1.parameters()))
        last_params = list(model.module.aspp.parameters())
        optimizer = optim.SGD([
            {'params': filter(lambda p: p.requires_grad, backbone_params)},
            {'params': filter(lambda p: p.requires_grad, last_params)}],
            lr=args.base_lr, momentum=0.9, weight_decay=0.0001)
        for epoch in range(args.epochs):
            for inputs, target in loader:
                outputs = model(inputs.cuda(non_blocking=True))
                loss = criterion(outputs, target.cuda(non_blocking=True))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""

DEEPLAB = """\
    import torch.nn as nn


    class ResNet(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3)
            self.layer1 = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU())
            self.aspp = nn.Conv2d(64, num_classes, 1)

        def forward(self, x):
            return self.aspp(self.layer1(self.conv1(x)))


    def resnet101(num_classes):
        return ResNet(num_classes)
"""


def test_groups_of_a_cuda_models_submodules_with_frozen_batch_norms_are_a_non_fused_optimizer(tmp_path):
    found = lint_files(tmp_path, {"main.py": MAIN, "deeplab.py": DEEPLAB}, "GPU402")
    assert found == {("main.py", 22, "GPU402")}


def test_a_frozen_backbone_with_a_requires_grad_filter_is_still_a_probe(tmp_path):
    probe = MAIN.replace("""        if args.freeze_bn:
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
                    m.weight.requires_grad = False
                    m.bias.requires_grad = False
""", """        for p in model.module.layer1.parameters():
            p.requires_grad = False
""")
    assert not lint_files(tmp_path, {"main.py": probe, "deeplab.py": DEEPLAB}, "GPU402")
