"""GPU402 where the script builds the optimizer and an engine module trains with it: `main.py` moves the model to
CUDA, builds `torch.optim.AdamW` over its parameters (through `model_without_ddp = model`, the name DETR-style
scripts keep beside the DDP wrapper) and hands both to `train_one_epoch(model, criterion, loader, optimizer,
device)`, whose loop runs `.backward()` and `optimizer.step()`. Silent where the function handed the optimizer
never steps it in a loop (an evaluation), where the device is the CPU, and where the aliased model is never moved.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

ENGINE = textwrap.dedent("""\
    def train_one_epoch(model, criterion, data_loader, optimizer, device):
        model.train()
        for samples, targets in data_loader:
            loss = criterion(model(samples.to(device)), targets.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def evaluate(model, criterion, data_loader, optimizer, device):
        for samples, targets in data_loader:
            criterion(model(samples.to(device)), targets.to(device))
""")

MAIN = textwrap.dedent("""\
    import torch
    from engine import train_one_epoch


    def main(loader, epochs):
        device = torch.device("cuda")
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
        model.to(device)
        model_without_ddp = model
        criterion = torch.nn.CrossEntropyLoss()
        optimizer = torch.optim.AdamW(model_without_ddp.parameters(), lr=1e-4)
        for epoch in range(epochs):
            train_one_epoch(model, criterion, loader, optimizer, device)


    if __name__ == "__main__":
        main(None, 10)
""")


def _hits(tmp_path, main: str) -> set:
    root = write_project(tmp_path, {"engine.py": ENGINE, "main.py": main})
    return {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU402"}


def test_optimizer_handed_to_an_engine_that_steps_it(tmp_path):
    assert ("main.py", 11) in _hits(tmp_path, MAIN)


def test_keyword_argument_too(tmp_path):
    text = MAIN.replace("train_one_epoch(model, criterion, loader, optimizer, device)",
                        "train_one_epoch(model, criterion, loader, device=device, optimizer=optimizer)")
    assert text != MAIN
    assert ("main.py", 11) in _hits(tmp_path, text)


def test_function_that_never_steps_it(tmp_path):
    text = MAIN.replace("from engine import train_one_epoch", "from engine import evaluate").replace(
        "train_one_epoch(model,", "evaluate(model,")
    assert ("main.py", 11) not in _hits(tmp_path, text)


def test_cpu_device(tmp_path):
    assert ("main.py", 11) not in _hits(tmp_path, MAIN.replace('torch.device("cuda")', 'torch.device("cpu")'))


def test_alias_of_a_model_never_moved(tmp_path):
    text = MAIN.replace("    model.to(device)\n", "    torch.cuda.set_device(0)\n")
    assert text != MAIN
    assert ("main.py", 11) not in _hits(tmp_path, text)


PROBE = textwrap.dedent("""\
    import torch


    class LinearClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2048, 1000)

        def forward(self, x):
            return self.fc(x)


    def main(loader):
        probe = LinearClassifier().cuda()
        probe_without_ddp = probe
        optimizer = torch.optim.SGD(probe_without_ddp.parameters(), lr=0.1)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(probe(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")


def test_second_name_of_a_linear_probe_stays_a_probe(tmp_path):
    root = write_project(tmp_path, {"probe.py": PROBE})
    assert not {row for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU402"}
    moved = PROBE.replace("self.fc = torch.nn.Linear(2048, 1000)",
                          "self.fc = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.Linear(2048, 1000))")
    root = write_project(tmp_path / "b", {"probe.py": moved})
    assert ("probe.py", 16) in {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero"))
                                if code == "GPU402"}


def test_optimizer_rebound_before_the_call_is_not_the_one_trained(tmp_path):
    text = MAIN.replace("    for epoch in range(epochs):\n",
                        "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)\n"
                        "    for epoch in range(epochs):\n")
    assert text != MAIN
    assert ("main.py", 11) not in _hits(tmp_path, text)
