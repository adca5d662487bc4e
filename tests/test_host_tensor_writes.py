"""Writing a GPU tensor into a CPU tensor allocated before the loop (`losses = torch.zeros(n)` then
`losses[k] = loss` every evaluation batch, litgpt's `validate`) copies it to the host and waits for the GPU
every iteration (GPU104). Quiet twins: the buffer allocated with `device=`, a list of device tensors, a host
value written, the write under a periodic test.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found

VALIDATE = """\
import torch
from losses import chunked_cross_entropy


def validate(model, val_dataloader, max_iters):
    model.eval()
    losses = {alloc}
    kept = []
    for k, batch in enumerate(val_dataloader):
        input_ids = batch["input_ids"].cuda(non_blocking=True)
        logits = model(input_ids)
        losses[k] = chunked_cross_entropy(logits, input_ids)
        kept.append(model(input_ids).sum())
    return losses.mean(), torch.stack(kept).mean()
"""

LOSSES = """\
import torch.nn.functional as F


def chunked_cross_entropy(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())
"""


def _lint(root: Path, alloc: str) -> set:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    (root / "losses.py").write_text(LOSSES)
    (root / "evaluate.py").write_text(textwrap.dedent(VALIDATE.format(alloc=alloc)))
    return {(line, code) for _, line, code in found(check(root, "--no-cache", "evaluate.py"))}


def test_a_gpu_value_written_into_a_cpu_buffer_every_batch_is_a_copy(tmp_path):
    assert (12, "GPU104") in _lint(tmp_path, "torch.zeros(max_iters)")


def test_a_buffer_on_the_device_is_fine(tmp_path):
    assert (12, "GPU104") not in _lint(tmp_path, "torch.zeros(max_iters, device='cuda')")
    assert (12, "GPU104") not in _lint(tmp_path / "b", "torch.zeros(max_iters).cuda()")


def test_host_values_written_into_a_cpu_buffer_are_fine(tmp_path):
    text = textwrap.dedent("""\
        import torch


        mask = torch.tril(torch.ones((8, 8)), diagonal=-1)


        def collate(model, rows, loader):
            model = model.cuda()
            for x in loader:
                model(x.cuda(non_blocking=True)).sum().backward()
                tokens = torch.zeros((4, 8), dtype=torch.long)
                buffer = torch.zeros((4, 8))
                for i, row in enumerate(rows):
                    buffer[i, :len(row)] = torch.tensor(row)
                    buffer[i, 0] = torch.zeros(1)
                    tokens[i] = mask[i]  # a host table indexed: host to host
        """)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(text)
    assert not any(code == "GPU104" for _, _, code in found(check(tmp_path, "--no-cache", "train.py")))
