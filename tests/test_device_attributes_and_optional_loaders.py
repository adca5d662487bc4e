"""Two routes to a fact the rules already use, found on heldout28's ViT script (thirty-fourth landing):

- a model moved with `model.to(args.device)` where the script sets `args.device = device` of
  `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` is on CUDA (GPU402 over its
  parameters); an `args.device` the script sets to the CPU, or never sets, says nothing;
- a loader factory returning `train_loader, test_loader` with `test_loader = DataLoader(...) if testset is not
  None else None`: the test loader is a loader too, so the evaluation loop over the caller's second element copies
  pinned batches (GPU202); when the two loaders pin differently, the second element's pinning is not known.
"""

from __future__ import annotations

from projects import lint_files

DEVICE = """\
    import argparse

    import torch


    def setup(args):
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10))
        model.to(args.device)
        return args, model


    def train(args, model, loader):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for x, y in loader:
            x, y = x.to(args.device), y.to(args.device)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def main():
        parser = argparse.ArgumentParser()
        args = parser.parse_args()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        args.device = device
        args, model = setup(args)
        train(args, model, loader)


    if __name__ == "__main__":
        main()
"""


def test_a_model_moved_to_an_args_device_the_script_sets_to_cuda_is_on_cuda(tmp_path):
    assert ("train.py", 13, "GPU402") in lint_files(tmp_path, {"train.py": DEVICE}, "GPU402")


def test_an_args_device_set_to_the_cpu_keeps_the_optimizer_quiet(tmp_path):
    text = DEVICE.replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'torch.device("cpu")')
    assert not lint_files(tmp_path, {"train.py": text}, "GPU402")


def test_an_args_device_the_script_never_sets_keeps_the_optimizer_quiet(tmp_path):
    text = DEVICE.replace("        args.device = device\n", "")
    assert not lint_files(tmp_path, {"train.py": text}, "GPU402")


DATA = """\
    from torch.utils.data import DataLoader


    def get_loader(trainset, testset, batch_size):
        train_loader = DataLoader(trainset, batch_size=batch_size, num_workers=4, pin_memory=True)
        test_loader = DataLoader(testset, batch_size=batch_size, num_workers=4,
                                 pin_memory=True) if testset is not None else None
        return train_loader, test_loader
"""

EVAL = """\
    import torch

    from data import get_loader


    def valid(model, test_loader, device):
        correct = 0
        for x, y in test_loader:
            x, y = x.to(device), y.to(device)
            with torch.no_grad():
                correct += (model(x).argmax(-1) == y).sum()
        return correct


    def main(model, trainset, testset):
        device = torch.device("cuda")
        model = model.to(device)
        train_loader, test_loader = get_loader(trainset, testset, 64)
        for epoch in range(10):
            print(valid(model, test_loader, device))
"""


def test_an_optional_test_loader_returned_second_is_a_pinned_loader(tmp_path):
    found = lint_files(tmp_path, {"data.py": DATA, "eval.py": EVAL}, "GPU202")
    assert ("eval.py", 9, "GPU202") in found


def test_loaders_that_pin_differently_leave_the_second_one_unknown(tmp_path):
    data = DATA.replace("num_workers=4,\n                                 pin_memory=True)",
                        "num_workers=4)")
    assert "pin_memory" in data.split("test_loader =")[0] and "pin_memory" not in data.split("test_loader =")[1]
    assert not lint_files(tmp_path, {"data.py": data, "eval.py": EVAL}, "GPU202")


PROBE = """\
    import torch
    from modules import LogisticRegression

    args.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    model = LogisticRegression(2048, 10)
    model = model.to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    for epoch in range(500):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.to(args.device)), y.to(args.device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

ONE_LAYER = """\
    import torch.nn as nn


    class LogisticRegression(nn.Module):
        def __init__(self, n_features, n_classes):
            super().__init__()
            self.model = nn.Linear(n_features, n_classes)

        def forward(self, x):
            return self.model(x)
"""


def test_a_linear_probe_class_of_another_module_on_an_args_device_stays_quiet(tmp_path):
    assert not lint_files(tmp_path, {"train.py": PROBE, "modules.py": ONE_LAYER}, "GPU402")


def test_a_deeper_class_of_another_module_on_an_args_device_is_on_cuda(tmp_path):
    deeper = ONE_LAYER.replace("self.model = nn.Linear(n_features, n_classes)",
                               "self.model = nn.Sequential(nn.Linear(n_features, 512), nn.Linear(512, n_classes))")
    assert ("train.py", 7, "GPU402") in lint_files(tmp_path, {"train.py": PROBE, "modules.py": deeper}, "GPU402")
