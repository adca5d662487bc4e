"""GPU101 at `loss.data[0]`: the `.item()` of PyTorch before 0.4 (a loss was a 1-element tensor; indexing it
returned a Python number), in old training loops feeding a meter every step (`losses.update(loss.data[0], n)`).
Only the tensor the function calls `.backward()` on (a one-number loss) counts: the first row of an output
(`out.data[0]`) is a tensor, a loss read under `if i % print_freq == 0:` is periodic, and the `else` of a test of
the torch version (`loss.item()` beside it) is the old release's branch."""

from __future__ import annotations

from projects import lint_files

TRAIN = """\
    import torch


    class AverageMeter:
        def __init__(self):
            self.sum, self.count = 0, 0

        def update(self, val, n=1):
            self.sum += val * n
            self.count += n


    def train(model, loader, optimizer, print_freq):
        losses = AverageMeter()
        for i, (x, y) in enumerate(loader):
            out = model(x.cuda())
            loss = torch.nn.functional.cross_entropy(out, y.cuda())
            losses.update(loss.data[0], x.size(0))
            first = out.data[0]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if i % print_freq == 0:
                print(loss.data[0])
            if int(torch.__version__[0]) > 0:
                total = loss.item()
            else:
                total = loss.data[0]
"""


def test_the_legacy_read_of_a_loss_every_step(tmp_path):
    hits = lint_files(tmp_path, {"train.py": TRAIN}, "GPU101")
    assert ("train.py", 18, "GPU101") in hits
    assert ("train.py", 19, "GPU101") not in hits  # a row of the output, not a one-number read
    assert ("train.py", 24, "GPU101") not in hits  # periodic logging
    assert ("train.py", 26, "GPU101") in hits and ("train.py", 28, "GPU101") not in hits  # the old release's branch


def test_the_legacy_read_of_a_host_loss_stays_quiet(tmp_path):
    text = TRAIN.replace("model(x.cuda())", "model(x)").replace("y.cuda()", "y")
    assert not lint_files(tmp_path, {"train.py": text}, "GPU101")


VALIDATE = """\
    from torch.autograd import Variable


    def validate(net, val_loader, criterion, val_loss):
        net.eval()
        for vi, (inputs, gts) in enumerate(val_loader):
            inputs = Variable(inputs, volatile=True).cuda()
            gts = Variable(gts, volatile=True).cuda()
            outputs = net(inputs)
            val_loss.update(criterion(outputs, gts).data[0] / inputs.size(0), inputs.size(0))
            first = net(inputs).data[0]
"""


def test_a_criterion_calls_loss_read_at_once_in_a_validation_loop(tmp_path):
    """`criterion(outputs, gts).data[0]` (pytorch-semantic-segmentation's validation, heldout32b): the loss is
    never bound, so no `.backward()` names it; a criterion's value on device tensors is one number all the same.
    A model's output row (`net(inputs).data[0]`) is not."""
    assert lint_files(tmp_path, {"validate.py": VALIDATE}, "GPU101") == {("validate.py", 10, "GPU101")}
    host = VALIDATE.replace(").cuda()", ")")
    assert not lint_files(tmp_path, {"validate.py": host}, "GPU101")
