"""tensorboardX's `SummaryWriter` reads a tensor it is given back to the host (`make_np`: `.cpu().numpy()`), as
torch's own writer does: a device loss handed to `add_scalar` every step is a sync at the call (TransUNet's
`writer.add_scalar('info/total_loss', loss, iter_num)`, heldout15). A host number, or a periodic call, costs
nothing."""

from __future__ import annotations

import pytest

from gpulint.runner import lint_source

PROGRAM = """\
import torch
{imports}


def train(model, loader, optimizer):
    writer = {writer}
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        {line}
"""


def _codes(imports: str, writer: str, line: str) -> list[str]:
    source = PROGRAM.format(imports=imports, writer=writer, line=line)
    return [d.code for d in lint_source(source, "train.py", frozenset({"GPU112"})).diagnostics]


SPELLINGS = [
    ("from tensorboardX import SummaryWriter", 'SummaryWriter("runs")'),
    ("import tensorboardX", 'tensorboardX.SummaryWriter("runs")'),
    ("from tensorboardX.writer import SummaryWriter", 'SummaryWriter("runs")'),
    ("from torch.utils.tensorboard.writer import SummaryWriter", 'SummaryWriter("runs")'),
]


@pytest.mark.parametrize("imports,writer", SPELLINGS)
@pytest.mark.parametrize("line", ['writer.add_scalar("loss", loss, step)',
                                  'writer.add_scalars("losses", {"ce": loss}, step)',
                                  'writer.add_histogram("logits", loss, step)'])
def test_a_device_tensor_logged_every_step_syncs(imports, writer, line):
    assert _codes(imports, writer, line) == ["GPU112"]


@pytest.mark.parametrize("line", [
    'writer.add_scalar("lr", optimizer.param_groups[0]["lr"], step)',  # a host number
    'if step % 100 == 0:\n            writer.add_scalar("loss", loss, step)',  # periodic logging
])
def test_a_host_number_or_a_periodic_call_is_fine(line):
    assert _codes("from tensorboardX import SummaryWriter", 'SummaryWriter("runs")', line) == []


def test_a_project_subclass_of_the_writer_reads_what_its_method_is_given(tmp_path):
    from tests.projects import check, found, write_project

    write_project(tmp_path, {
        "logger.py": "from tensorboardX import SummaryWriter\n\n\n"
                     "class TrainLogger(SummaryWriter):\n"
                     "    def log_training(self, loss, grad_norm, step):\n"
                     "        self.add_scalar('training.loss', loss, step)\n"
                     "        self.add_scalar('grad.norm', grad_norm, step)\n",
        "train.py": "import torch\nfrom logger import TrainLogger\n\n\n"
                    "def train(model, loader, optimizer):\n"
                    "    logger = TrainLogger('runs')\n"
                    "    for step, (x, y) in enumerate(loader):\n"
                    "        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)\n"
                    "        loss = torch.nn.functional.cross_entropy(model(x), y)\n"
                    "        optimizer.zero_grad()\n"
                    "        loss.backward()\n"
                    "        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                    "        optimizer.step()\n"
                    "        logger.log_training(1.0, grad_norm, step)\n",
    })
    assert ("train.py", 14, "GPU112") in found(check(tmp_path, "--select", "GPU112", "--no-cache"))
