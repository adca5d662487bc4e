"""GPU403 where the training step is a method that a loop of another module runs every step: a trainer's
`forward_backward(data)` called by its engine's batch loop, an algorithm's `update(minibatches)` called by the
training script. The step is reported where its forward pass is written, also when that forward is a method of
the class (`self.predict(x)`), with the loop's call as related location; not when the loop's module chooses a
precision (autocast around the call) or when neither module names CUDA.
"""

from __future__ import annotations

from projects import check, found, write_project

ENGINE = """\
class Engine:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def run(self, loader, epochs):
        for epoch in range(epochs):
            for data in loader:
                {call}

    def forward_backward(self, data):
        raise NotImplementedError
"""

SOFTMAX = """\
import torch.nn.functional as F

from engine import Engine


class SoftmaxEngine(Engine):
    def forward_backward(self, data):
        imgs, pids = data
        imgs, pids = imgs.{move}(), pids.{move}()
        outputs = self.model(imgs)
        loss = F.cross_entropy(outputs, pids)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
"""

MAIN = """\
import torch
import torchvision

from softmax import SoftmaxEngine


def main(loader):
    model = torchvision.models.resnet50().{move}()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
    SoftmaxEngine(model, optimizer).run(loader, 10)


if __name__ == "__main__":
    main(torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True))
"""


def _engine(tmp_path, call="self.forward_backward(data)", move="cuda"):
    root = write_project(tmp_path, {"engine.py": ENGINE.format(call=call), "softmax.py": SOFTMAX.format(move=move),
                                    "main.py": MAIN.format(move=move)})
    return check(root, "--no-cache", "--exit-zero", "--select", "GPU403", ".")


def test_a_step_method_run_by_an_engine_loop_elsewhere_is_reported_at_its_forward(tmp_path):
    items = _engine(tmp_path)
    assert found(items) == {("softmax.py", 10, "GPU403")}
    (item,) = items
    assert "engine.py:9" in item["message"] or "engine.py" in str(item)  # the loop's call is named


def test_autocast_around_the_loop_call_keeps_it_silent(tmp_path):
    call = "with torch.autocast('cuda', dtype=torch.bfloat16):\n                    self.forward_backward(data)"
    assert found(_engine(tmp_path, call=call)) == set()


def test_no_cuda_in_either_module_keeps_it_silent(tmp_path):
    assert found(_engine(tmp_path, move="cpu")) == set()


ALGORITHMS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class ERM(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.network = torchvision.models.resnet50(num_classes=num_classes)
        self.optimizer = torch.optim.SGD(self.network.parameters(), lr=0.1, foreach=True)

    def update(self, minibatches):
        all_x = torch.cat([x for x, y in minibatches]).cuda(non_blocking=True)
        all_y = torch.cat([y for x, y in minibatches]).cuda(non_blocking=True)
        loss = F.cross_entropy(self.predict(all_x), all_y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"loss": loss}

    def predict(self, x):
        return self.network(x)
"""

TRAIN = """\
import torch

from algorithms import ERM

device = "cuda" if torch.cuda.is_available() else "cpu"
algorithm = ERM(10)
algorithm.to(device)
train_iterator = zip(*loaders)
for step in range(5000):
    minibatches = [(x.to(device), y.to(device)) for x, y in next(train_iterator)]
    step_vals = algorithm.update(minibatches)
"""


def test_an_algorithm_update_run_by_a_script_loop_is_reported_at_the_method_running_the_model(tmp_path):
    root = write_project(tmp_path, {"algorithms.py": ALGORITHMS, "train.py": TRAIN})
    assert found(check(root, "--no-cache", "--exit-zero", "--select", "GPU403", ".")) == {
        ("algorithms.py", 16, "GPU403")}


def test_a_script_that_chooses_a_precision_keeps_the_algorithm_silent(tmp_path):
    train = TRAIN.replace("    step_vals = algorithm.update(minibatches)",
                          "    with torch.autocast(device, dtype=torch.bfloat16):\n"
                          "        step_vals = algorithm.update(minibatches)")
    root = write_project(tmp_path, {"algorithms.py": ALGORITHMS, "train.py": train})
    assert found(check(root, "--no-cache", "--exit-zero", "--select", "GPU403", ".")) == set()


GRADCAM = """\
import torch


class GradCAM:
    def __init__(self, model):
        self.model = model

    def __call__(self, inputs, labels):
        preds = self.model(inputs.cuda())
        score = torch.gather(preds, dim=1, index=labels.cuda().unsqueeze(-1))
        self.model.zero_grad()
        score.sum().backward()
        return preds
"""

VISUALIZE = """\
import torch
import torchvision

from gradcam import GradCAM

model = torchvision.models.resnet50().cuda()
gradcam = GradCAM(model)
for inputs, labels in loader:
    preds = gradcam(inputs, labels)
"""


def test_gradients_taken_for_a_saliency_map_are_no_training_step(tmp_path):
    root = write_project(tmp_path, {"gradcam.py": GRADCAM, "visualize.py": VISUALIZE})
    assert found(check(root, "--no-cache", "--exit-zero", "--select", "GPU403", ".")) == set()
