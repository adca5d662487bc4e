"""GPU402 over parameters a training script gathers in ways the rule did not follow (thirty-fourth landing, from
heldout30a's misses; each has a quiet twin):

- `model = torch.nn.DataParallel(resnet.__dict__[args.arch]())`: a wrapper of a model built elsewhere is no
  one-layer linear probe (the wrapper alone used to read as one);
- `policies = model.get_optim_policies()` (the TSN/TSM family, `optim_parameters`, `get_param_groups`): the
  model hands out its own parameters in groups;
- `params_list = []`, then `for module in modules_ori: params_list.append(dict(params=module.parameters(), ...))`
  over `modules_ori = [model.layer0, model.layer1, ...]` (semseg's backbone and head learning rates).
"""

from __future__ import annotations

from projects import lint_files

WRAPPED = """\
    import argparse

    import torch
    import resnet

    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="resnet56")
    args = parser.parse_args()

    model = torch.nn.DataParallel(resnet.__dict__[args.arch]())
    model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
    for epoch in range(200):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_a_data_parallel_model_built_elsewhere_is_no_linear_probe(tmp_path):
    assert ("train.py", 12, "GPU402") in lint_files(tmp_path, {"train.py": WRAPPED}, "GPU402")


def test_a_data_parallel_linear_probe_stays_quiet(tmp_path):
    text = WRAPPED.replace("torch.nn.DataParallel(resnet.__dict__[args.arch]())",
                           "torch.nn.DataParallel(torch.nn.Linear(2048, 1000))")
    assert not lint_files(tmp_path, {"train.py": text}, "GPU402")


POLICIES = """\
    import torch
    from models import TSN

    model = TSN(400, 8, "RGB", base_model="resnet50")
    policies = model.get_optim_policies()
    model = torch.nn.DataParallel(model).cuda()
    optimizer = torch.optim.SGD(policies, 0.01, momentum=0.9)
    for epoch in range(50):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

MODELS = """\
    import torch


    class TSN(torch.nn.Module):
        def __init__(self, num_class, num_segments, modality, base_model="resnet50"):
            super().__init__()
            self.base = torch.nn.Conv2d(3, 64, 3)
            self.fc = torch.nn.Linear(64, num_class)

        def get_optim_policies(self):
            return [{"params": self.base.parameters(), "lr_mult": 1},
                    {"params": self.fc.parameters(), "lr_mult": 5}]

        def forward(self, x):
            return self.fc(self.base(x).mean((2, 3)))
"""


def test_parameter_groups_a_model_hands_out_are_its_parameters(tmp_path):
    found = lint_files(tmp_path, {"train.py": POLICIES, "models.py": MODELS}, "GPU402")
    assert ("train.py", 7, "GPU402") in found


def test_parameter_groups_of_a_model_kept_on_the_host_stay_quiet(tmp_path):
    text = POLICIES.replace("torch.nn.DataParallel(model).cuda()", "torch.nn.DataParallel(model)")
    text = text.replace("model(x.cuda()), y.cuda()", "model(x), y")
    assert not lint_files(tmp_path, {"train.py": text, "models.py": MODELS}, "GPU402")


APPENDED = """\
    import torch
    from model.pspnet import PSPNet


    def main_worker(gpu, args):
        model = PSPNet(layers=50, classes=21)
        modules_ori = [model.layer0, model.layer1, model.layer2]
        modules_new = [model.ppm, model.cls]
        params_list = []
        for module in modules_ori:
            params_list.append(dict(params=module.parameters(), lr=args.base_lr))
        for module in modules_new:
            params_list.append(dict(params=module.parameters(), lr=args.base_lr * 10))
        optimizer = torch.optim.SGD(params_list, lr=args.base_lr, momentum=0.9)
        model = torch.nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[gpu])
        for epoch in range(50):
            for x, y in loader:
                loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""


def test_parameter_groups_appended_from_a_models_submodules_are_its_parameters(tmp_path):
    assert ("train.py", 14, "GPU402") in lint_files(tmp_path, {"train.py": APPENDED}, "GPU402")


def test_parameter_groups_of_submodules_of_two_models_are_not_followed(tmp_path):
    text = APPENDED.replace("modules_new = [model.ppm, model.cls]", "modules_new = [head.ppm, head.cls]")
    text = text.replace("        model = PSPNet(layers=50, classes=21)\n",
                        "        model = PSPNet(layers=50, classes=21)\n        head = PSPNet(layers=50, classes=21)\n")
    assert not lint_files(tmp_path, {"train.py": text}, "GPU402")


TRAINER = """\
    import argparse

    import torch
    from models import get_segmentation_model


    class Trainer(object):
        def __init__(self, args):
            self.args = args
            self.device = torch.device(args.device)
            self.model = get_segmentation_model(args.model).to(self.device)
            params_list = list()
            if hasattr(self.model, "pretrained"):
                params_list.append({"params": self.model.pretrained.parameters(), "lr": args.lr})
            if hasattr(self.model, "exclusive"):
                for module in self.model.exclusive:
                    params_list.append({"params": getattr(self.model, module).parameters(), "lr": args.lr * 10})
            self.optimizer = torch.optim.SGD(params_list, lr=args.lr, momentum=0.9)

        def train(self):
            for images, targets in self.train_loader:
                images = images.to(self.device)
                targets = targets.to(self.device)
                loss = self.model(images, targets)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()


    if __name__ == "__main__":
        args = argparse.ArgumentParser().parse_args()
        if not args.no_cuda and torch.cuda.is_available():
            args.device = "cuda"
        else:
            args.device = "cpu"
        Trainer(args).train()
"""


def test_a_trainers_parameter_groups_of_its_models_submodules_on_the_scripts_cuda_device(tmp_path):
    assert ("train.py", 18, "GPU402") in lint_files(tmp_path, {"train.py": TRAINER}, "GPU402")


def test_a_trainers_parameter_groups_on_a_device_the_script_does_not_set_stay_quiet(tmp_path):
    text = TRAINER.replace('            args.device = "cuda"\n', '            args.device = args.gpu_name\n')
    assert not lint_files(tmp_path, {"train.py": text}, "GPU402")


CHOSEN = """\
    import torch
    import torch.nn as nn
    import torch.optim as optim
    from nets.yolo import YoloBody
    from utils.utils_fit import fit_one_epoch

    if __name__ == "__main__":
        optimizer_type = "sgd"
        model = YoloBody(80)
        model_train = model.train()
        model_train = torch.nn.DataParallel(model_train)
        model_train = model_train.cuda()
        pg0, pg1, pg2 = [], [], []
        for k, v in model.named_modules():
            if hasattr(v, "bias") and isinstance(v.bias, nn.Parameter):
                pg2.append(v.bias)
            if isinstance(v, nn.BatchNorm2d) or "bn" in k:
                pg0.append(v.weight)
            elif hasattr(v, "weight") and isinstance(v.weight, nn.Parameter):
                pg1.append(v.weight)
        optimizer = {
            "adam": optim.Adam(pg0, 1e-3, betas=(0.937, 0.999)),
            "sgd": optim.SGD(pg0, 1e-2, momentum=0.937, nesterov=True),
        }[optimizer_type]
        optimizer.add_param_group({"params": pg1, "weight_decay": 5e-4})
        optimizer.add_param_group({"params": pg2})
        for epoch in range(300):
            fit_one_epoch(model_train, optimizer, gen)
"""

FIT = """\
    def fit_one_epoch(model_train, optimizer, gen):
        for iteration, (images, targets) in enumerate(gen):
            images = images.cuda(non_blocking=True)
            optimizer.zero_grad()
            loss = model_train(images).mean()
            loss.backward()
            optimizer.step()
"""


def test_the_optimizer_a_literal_option_picks_from_a_dict_over_the_models_named_modules(tmp_path):
    found = lint_files(tmp_path, {"train.py": CHOSEN, "utils/utils_fit.py": FIT}, "GPU402")
    assert found == {("train.py", 23, "GPU402")}, found  # the `sgd` entry only: the option picks it


def test_a_model_never_moved_under_any_of_its_names_keeps_the_dict_quiet(tmp_path):
    text = CHOSEN.replace("        model_train = model_train.cuda()\n", "")
    fit = FIT.replace("images.cuda(non_blocking=True)", "images")
    assert not lint_files(tmp_path, {"train.py": text, "utils/utils_fit.py": fit}, "GPU402")
