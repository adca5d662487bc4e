"""A module handed to a helper that runs it and reads its output back (GPU112, recall52).

`test_net(net, image)` called once per image, whose body runs `y = net(x)` and copies `y.cpu().numpy()`, waits
for the GPU on every call: the read is of what the module computed, on the module's device. The helper's summary
records such a read as `Sink.through == "output"`, and a call passing a module for that parameter is reported.
What a helper reads of the module's host attributes (`int(net.num_classes)`, `if net.training:`) is no sync, a
call passing a host value is none, and a helper called once per epoch is not per-step work.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

from gpulint.analysis.project import Project

HELPERS = textwrap.dedent("""\
    import torch


    def predict(net, image):
        with torch.no_grad():
            out = net(image)
        mask = out.argmax(dim=1)
        return mask.cpu().numpy()


    def predict_moved(net, image, device):
        net = net.to(device)
        return net.forward(image.to(device)).max().item()


    def predict_through(net, image):
        return to_numpy(net(image))


    def to_numpy(t):
        return t.detach().cpu().numpy()


    def class_count(net, image):
        n = int(net.num_classes)
        return image[:, :n]


    def scaled(net, image):
        if net.training:
            return image
        return image * float(net.scale)


    def train_one_epoch(model, loader, optimizer):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(loss.item())
""")

MAIN = textwrap.dedent("""\
    import torch
    from helpers import predict, predict_moved, predict_through, class_count, scaled, train_one_epoch

    model = torch.nn.Conv2d(3, 2, 1).cuda()
    device = torch.device("cuda")
    for image in images:
        x = image.cuda()
        pred = predict(model, x)
        other = predict_moved(model, x, device)
        third = predict_through(model, x)
        count = class_count(model, x)
        same = scaled(model, x)

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        train_one_epoch(model, loader, optimizer)
""")


def _gpu112(tmp_path) -> dict:
    root = write_project(tmp_path, {"helpers.py": HELPERS, "main.py": MAIN})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU112")
    return {row: d["message"] for d in items for _, row, _ in [next(iter(found([d])))]}


def test_a_helper_reading_the_output_of_the_module_it_is_given_is_a_per_step_sync(tmp_path):
    rows = _gpu112(tmp_path)
    assert 8 in rows and "on the output of the module it is given" in rows[8]
    assert 9 in rows  # `net = net.to(device)` keeps the parameter's module; `net.forward(...)` runs it
    assert 10 in rows  # the output handed to another helper that copies it to the host


def test_host_attributes_of_the_module_and_per_epoch_helpers_are_not_reported(tmp_path):
    rows = _gpu112(tmp_path)
    assert 11 not in rows  # `int(net.num_classes)`: a Python attribute, no tensor
    assert 12 not in rows  # `if net.training:` and `float(net.scale)`
    assert 16 not in rows  # the epoch loop is not a step loop: the helper's own loop reports its `.item()`


def test_a_host_value_passed_where_the_helper_runs_a_module_is_not_reported(tmp_path):
    main = MAIN.replace("pred = predict(model, x)", "pred = predict(lambda t: t * 2, image.numpy())")
    root = write_project(tmp_path, {"helpers.py": HELPERS, "main.py": main})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU112")
    assert 8 not in {row for _, row, _ in found(items)}


def test_the_summary_says_the_read_is_of_the_modules_output(tmp_path):
    write_project(tmp_path, {"helpers.py": HELPERS, "main.py": MAIN})
    project = Project(tmp_path)
    helper = project.lookup(tmp_path / "main.py", "predict_through")
    sink = helper.sink_for_argument(0, None)
    assert sink is not None and sink.through == "output" and sink.what == ".numpy()"
    counted = project.lookup(tmp_path / "main.py", "class_count").sink_for_argument(0, None)
    assert counted is not None and counted.through == ""  # a host read of an attribute, not of an output


# -- modules handed in as parameters: what calling them returns is a tensor ----------------------------------------
TRAIN_NETS = textwrap.dedent("""\
    import torch


    def accuracy(pred, target):
        return float((pred.argmax(dim=1) == target).sum().item()) / len(pred)


    def train(args, nets, loader, optimizer, device):
        net_g, head = nets
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            rep = net_g(x)
            pred = head(rep)
            loss = torch.nn.functional.cross_entropy(pred, y)
            acc = accuracy(pred, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def main(args, loader):
        device = torch.device("cuda")
        net_g = torch.nn.Linear(4, 4).to(device)
        head = torch.nn.Linear(4, 2)
        head = head.cuda()
        optimizer = torch.optim.SGD(list(net_g.parameters()) + list(head.parameters()), lr=0.1)
        nets = [net_g, head]
        train(args, NETS, loader, optimizer, device)
""")


def _rows(tmp_path, nets: str, head: str = "head = torch.nn.Linear(4, 2)") -> set:
    text = TRAIN_NETS.replace("NETS", nets).replace("head = torch.nn.Linear(4, 2)", head)
    root = write_project(tmp_path, {"train.py": text})
    return {row for _, row, _ in found(check(root, "--no-cache", "--exit-zero", "--select", "GPU112"))}


def test_an_element_of_a_list_of_modules_the_callers_pass_returns_tensors(tmp_path):
    assert 15 in _rows(tmp_path / "literal", "[net_g, head]")
    assert 15 in _rows(tmp_path / "named", "nets")  # `nets = [net_g, head]` bound once in the caller
    assert 15 in _rows(tmp_path / "wrapped", "[net_g, head]",
                       "head = torch.nn.DataParallel(torch.nn.Linear(4, 2))")


def test_an_element_the_callers_pass_as_something_else_stays_unknown(tmp_path):
    assert 15 not in _rows(tmp_path / "function", "[net_g, head]", "head = lambda t: t.sum(dim=1).tolist()")
    assert 15 not in _rows(tmp_path / "unknown", "[net_g, make_head()]")
