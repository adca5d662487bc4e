"""A predicate helper that returns True only inside a periodic test (latent-diffusion's `ImageLogger.check_frequency`:
`if ((idx % self.batch_freq) == 0 or idx in self.log_steps) and idx > 0: ...; return True`, then `return False`)
makes the block it guards periodic (issue 11, precision; `main.py:359`, images copied to the host under
`if self.check_frequency(check_idx) and ...:`): neither the copy in the block (GPU104, loops.periodic_test) nor the
call of the logging method every step (GPU112, the project summaries) is reported. A predicate that may return
True on any step still leaves both reported."""

from __future__ import annotations

from pathlib import Path

from tests.projects import lint_script

SCRIPT = """import torch


class ImageLogger:
    def __init__(self, batch_freq, max_images=4):
        self.batch_freq = batch_freq
        self.max_images = max_images
        self.log_steps = [2 ** n for n in range(4)]
        self.images = []

    def log_img(self, model, batch, batch_idx):
        if self.check_frequency(batch_idx) and self.max_images > 0:
            with torch.no_grad():
                images = model(batch)
            images = images.detach().cpu()
            self.images.append(images)

    def check_frequency(self, check_idx):
        if ((check_idx % self.batch_freq) == 0 or (check_idx in self.log_steps)) and check_idx > 0:
            try:
                self.log_steps.pop(0)
            except IndexError:
                pass
            return True
        return False


model = torch.nn.Linear(8, 8).cuda()
optimizer = torch.optim.Adam(model.parameters())
data = torch.utils.data.TensorDataset(torch.randn(64, 8))
loader = torch.utils.data.DataLoader(data, batch_size=8, pin_memory=True)
logger = ImageLogger(100)
for batch_idx, (x,) in enumerate(loader):
    x = x.cuda(non_blocking=True)
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    logger.log_img(model, x, batch_idx)
"""

ALWAYS = SCRIPT.replace("            return True\n        return False", "            return True\n        return self.max_images > 0")


def test_a_periodic_predicate_guards_a_periodic_block(tmp_path: Path):
    found = lint_script(tmp_path, SCRIPT)
    assert (15, "GPU104") not in found and (39, "GPU112") not in found


def test_a_predicate_true_on_any_step_guards_nothing(tmp_path: Path):
    assert ALWAYS != SCRIPT
    found = lint_script(tmp_path, ALWAYS)
    assert (15, "GPU104") in found or (39, "GPU112") in found
