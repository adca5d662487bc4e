"""The `fit_one_epoch` shape of a large family of detection and segmentation projects (heldout30b's YOLOv4, and
many copies of it), and a pre-0.4 CIFAR script (thirty-fourth landing):

- the loss is summed over the heads from a literal (`loss_value_all = 0; loss_value_all += yolo_loss(...)`), given
  another name (`loss_value = loss_value_all`) and backpropagated under that name: both names hold a tensor, so
  `loss += loss_value.item()` is a per-step read (GPU302);
- the validation pass after the step loop, capped by `if iteration >= epoch_step_val: break` (every batch of the
  epoch), is a per-batch loop, not a one-off dump before training; the capped pass *before* the step loop
  still is one;
- the loaders come from the script, built again when the backbone unfreezes (two `DataLoader(...)` lines, both
  pinned): the helper's parameter is a loader, so its blocking `images.cuda(local_rank)` copies are per step
  (GPU202);
- `train_loss += loss.data[0]` reads the loss (GPU101's legacy form; the augmented assignment reads it, it does not
  write it), and so does `test_loss += loss.data[0]` of `loss = criterion(outputs, targets)` in an evaluation
  loop that runs no backward pass; `first = out.data[0]` of a model's output stays quiet.
"""

from __future__ import annotations

from projects import check, lint_files, write_project

FIT = """\
    import torch


    def fit_one_epoch(model_train, yolo_loss, optimizer, epoch_step, epoch_step_val, gen, gen_val, cuda):
        loss = 0
        val_loss = 0
        model_train.train()
        for iteration, batch in enumerate(gen):
            if iteration >= epoch_step:
                break
            images, targets = batch[0], batch[1]
            with torch.no_grad():
                if cuda:
                    images = images.cuda(0)
            optimizer.zero_grad()
            outputs = model_train(images)
            loss_value_all = 0
            for l in range(len(outputs)):
                loss_value_all += yolo_loss(l, outputs[l], targets)
            loss_value = loss_value_all
            loss_value.backward()
            optimizer.step()
            loss += loss_value.item()

        model_train.eval()
        for iteration, batch in enumerate(gen_val):
            if iteration >= epoch_step_val:
                break
            images, targets = batch[0], batch[1]
            with torch.no_grad():
                if cuda:
                    images = images.cuda(0)
                outputs = model_train(images)
                loss_value_all = 0
                for l in range(len(outputs)):
                    loss_value_all += yolo_loss(l, outputs[l], targets)
                loss_value = loss_value_all
            val_loss += loss_value.item()
        return loss / epoch_step, val_loss / epoch_step_val
"""

TRAIN = """\
    import torch
    from torch.utils.data import DataLoader

    from utils_fit import fit_one_epoch

    if __name__ == "__main__":
        model = torch.nn.Conv2d(3, 255, 1)
        model_train = model.train().cuda()
        optimizer = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9, fused=True)
        gen = DataLoader(train_dataset, batch_size=16, num_workers=4, pin_memory=True)
        gen_val = DataLoader(val_dataset, batch_size=16, num_workers=4, pin_memory=True)
        for epoch in range(100):
            if epoch >= 50 and not unfrozen:
                gen = DataLoader(train_dataset, batch_size=8, num_workers=4, pin_memory=True)
                gen_val = DataLoader(val_dataset, batch_size=8, num_workers=4, pin_memory=True)
                unfrozen = True
            fit_one_epoch(model_train, yolo_loss, optimizer, 100, 10, gen, gen_val, True)
"""


def _fit(tmp_path, fit=FIT, train=TRAIN):
    return lint_files(tmp_path, {"utils_fit.py": fit, "train.py": train}, "GPU302", "GPU101", "GPU202")


def test_a_loss_summed_from_a_literal_and_backpropagated_under_another_name_is_read_every_step(tmp_path):
    assert ("utils_fit.py", 23, "GPU302") in _fit(tmp_path)


def test_the_capped_validation_pass_after_the_step_loop_reads_every_batch(tmp_path):
    assert ("utils_fit.py", 38, "GPU302") in _fit(tmp_path)


def test_a_capped_pass_before_the_step_loop_is_still_a_one_off(tmp_path):
    lines = FIT.splitlines(keepends=True)
    head, step_loop, val_loop, tail = lines[:6], lines[6:23], lines[23:38], lines[38:]
    before = "".join(head + val_loop + step_loop + tail)
    found = _fit(tmp_path, fit=before)
    reads = [row for path, row, code in found if code == "GPU302"]
    assert reads == [6 + 15 + 17], found  # the step loop's read only: the capped pass before it is a one-off


def test_loaders_built_twice_by_the_script_make_the_helpers_copies_blocking_copies_of_pinned_batches(tmp_path):
    found = _fit(tmp_path)
    assert ("utils_fit.py", 14, "GPU202") in found and ("utils_fit.py", 32, "GPU202") in found


def test_loaders_that_pin_differently_leave_the_helpers_copies_alone(tmp_path):
    train = TRAIN.replace("gen = DataLoader(train_dataset, batch_size=8, num_workers=4, pin_memory=True)",
                          "gen = DataLoader(train_dataset, batch_size=8, num_workers=4)")
    assert ("utils_fit.py", 14, "GPU202") not in _fit(tmp_path, train=train)


LEGACY = """\
    import torch
    from torch.autograd import Variable

    net = Net().cuda()
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)


    def train(epoch):
        train_loss = 0
        for batch_idx, (inputs, targets) in enumerate(trainloader):
            inputs, targets = Variable(inputs.cuda()), Variable(targets.cuda())
            outputs = net(inputs)
            loss = criterion(outputs, targets)
            train_loss += loss.data[0]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return train_loss


    def test(epoch):
        test_loss = 0
        for batch_idx, (inputs, targets) in enumerate(testloader):
            inputs, targets = Variable(inputs.cuda(), volatile=True), Variable(targets.cuda())
            outputs = net(inputs)
            loss = criterion(outputs, targets)
            test_loss += loss.data[0]
            first = outputs.data[0]
        return test_loss


    for epoch in range(200):
        train(epoch)
        test(epoch)
"""


def test_a_summed_legacy_loss_read_is_a_read(tmp_path):
    found = lint_files(tmp_path, {"train.py": LEGACY}, "GPU101")
    assert ("train.py", 15, "GPU101") in found


def test_a_criterions_value_read_the_legacy_way_in_an_evaluation_loop_is_a_read(tmp_path):
    found = lint_files(tmp_path, {"train.py": LEGACY}, "GPU101")
    assert ("train.py", 28, "GPU101") in found and ("train.py", 29, "GPU101") not in found


LOSS = """\
    import torch
    import torch.nn as nn


    class YOLOLoss(nn.Module):
        def __init__(self, anchors, num_classes):
            super().__init__()
            self.anchors = anchors
            self.num_classes = num_classes

        def forward(self, l, input, targets=None):
            bs, _, in_h, in_w = input.shape
            x = torch.sigmoid(input[:, 0])
            grid_x = torch.linspace(0, in_w - 1, in_w).repeat(in_h, 1).view(x.shape).type_as(x)
            best_ns = torch.argmax(self.calculate_iou(targets[0].cpu(), torch.FloatTensor(self.anchors)), dim=-1)
            for t, best_n in enumerate(best_ns):
                if best_n not in [0, 1, 2]:
                    continue
            return ((x - grid_x) ** 2).mean()

        def calculate_iou(self, _box_a, _box_b):
            inter = torch.min(_box_a[:, 2:].unsqueeze(1), _box_b[:, 2:].unsqueeze(0)).clamp(min=0).prod(2)
            area_a = ((_box_a[:, 2] - _box_a[:, 0]) * (_box_a[:, 3] - _box_a[:, 1])).unsqueeze(1)
            return inter / area_a
"""

SCRIPT = TRAIN.replace("from utils_fit import fit_one_epoch\n",
                       "from utils_fit import fit_one_epoch\n    from yolo_training import YOLOLoss\n")
SCRIPT = SCRIPT.replace("        gen = DataLoader(train_dataset, batch_size=16",
                        "        yolo_loss = YOLOLoss(anchors, 80)\n        gen = DataLoader(train_dataset, batch_size=16")


def _loss(tmp_path, loss=LOSS, fit=FIT):
    return lint_files(tmp_path, {"utils_fit.py": fit, "train.py": SCRIPT, "yolo_training.py": loss},
                      "GPU203", "GPU105")


def test_a_loss_instance_handed_to_a_helper_that_calls_it_every_step_runs_its_forward_every_step(tmp_path):
    write_project(tmp_path, {"utils_fit.py": FIT, "train.py": SCRIPT, "yolo_training.py": LOSS}, dedent=True)
    items = check(tmp_path, "--no-cache", "--exit-zero", "--select", "GPU203", ".")
    copy = [d for d in items if d["filename"].endswith("yolo_training.py") and d["location"]["row"] == 14]
    # the call in the helper's step loop is named, not an assumed forward pass
    assert copy and "which `yolo_loss(...)` runs every step" in copy[0]["message"], items


def test_a_method_that_never_reads_self_computes_where_its_host_arguments_are(tmp_path):
    assert ("yolo_training.py", 17, "GPU105") not in _loss(tmp_path)


def test_a_method_reading_self_may_compute_on_the_device(tmp_path):
    loss = LOSS.replace("            return inter / area_a\n", "            return inter / area_a * self.scale\n")
    assert ("yolo_training.py", 17, "GPU105") in _loss(tmp_path, loss=loss)
