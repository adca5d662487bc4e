"""GPU203 on tokenizer outputs (issue 11, sixth set: a captioning model tokenizes its captions in `forward`):
`self.tokenizer(captions, return_tensors="pt")` builds CPU tensors in pageable memory, and `.to(device)` of the
result (of a field of it, or of a name bound to it) copies them to the GPU every step, waiting for it. Copies
outside the step, results without `return_tensors="pt"` (lists of ids) and copies to the CPU stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

MODEL = """\
import torch


class Captioner(torch.nn.Module):
    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, image, caption):
        enc = self.tokenizer(caption, padding="longest", return_tensors="pt").to(image.device)
        ids = self.tokenizer(caption, return_tensors="pt")["input_ids"].to(image.device)
        plain = self.tokenizer(caption)
        mask = self.tokenizer(caption, return_tensors="pt").attention_mask.to("cpu")
        return self.proj(image).sum() + enc.input_ids.sum() + ids.sum() + len(plain) + mask.sum()
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoTokenizer
from model import Captioner

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
device = torch.device("cuda")
model = Captioner(tokenizer).to(device)
opt = torch.optim.AdamW(model.parameters(), fused=True)
loader = DataLoader(make_dataset(), batch_size=8, pin_memory=True)
header = tokenizer(["a photo of"], return_tensors="pt").to(device)

for image, caption in loader:
    image = image.to(device, non_blocking=True)
    loss = model(image, caption)
    prompt = tokenizer(caption, return_tensors="pt")
    prompt = prompt
    batch = tokenizer(caption, truncation=True, return_tensors="pt")
    batch = batch.to(device)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss + model.proj(batch["input_ids"].float()).sum()
    loss.backward()
    opt.step()
"""


def _keys(tmp_path: Path) -> set:
    root = write_project(tmp_path, {"model.py": MODEL, "train.py": TRAIN})
    return found(check(root, "--no-cache", "--select", "GPU203", "."))


def test_tokenizer_outputs_copied_every_step_are_reported(tmp_path: Path):
    keys = _keys(tmp_path)
    assert ("model.py", 11, "GPU203") in keys  # the encoding moved in forward, which the loop runs every step
    assert ("model.py", 12, "GPU203") in keys  # a field of the encoding, by key
    assert ("train.py", 19, "GPU203") in keys  # a name bound to the encoding in the step, moved later


def test_tokenizer_outputs_not_copied_each_step_stay_quiet(tmp_path: Path):
    keys = _keys(tmp_path)
    assert ("model.py", 14, "GPU203") not in keys  # copied to the CPU: no host-to-device copy
    assert ("train.py", 11, "GPU203") not in keys  # before the loop: once
    assert ("train.py", 16, "GPU203") not in keys  # never moved


def test_the_message_names_the_call_and_the_remedy(tmp_path: Path):
    root = write_project(tmp_path, {"model.py": MODEL, "train.py": TRAIN})
    items = [d for d in check(root, "--no-cache", "--select", "GPU203", ".") if d["filename"].endswith("model.py")]
    assert items and all('`self.tokenizer(..., return_tensors="pt")`' in d["message"] for d in items)
    assert all("collate_fn" in d["message"] for d in items)



TOKENIZER_TEST = """\
import torch
from transformers import AutoTokenizer


def test_every_tokenizer_runs_the_model():
    model = torch.nn.Linear(8, 8).cuda()
    for name in tokenizer_names():
        tokenizer = AutoTokenizer.from_pretrained(name)
        encoded = tokenizer("a b c", return_tensors="pt")
        encoded.to("cuda")
        with torch.no_grad():
            model(**encoded)
"""


def test_a_tokenizer_test_moving_one_encoding_per_case_stays_quiet(tmp_path: Path):
    """A unit test's loop over tokenizer classes moves one encoding per class to the model's device: not a step."""
    root = write_project(tmp_path, {"tests/test_tok.py": TOKENIZER_TEST, "tok_loop.py": TOKENIZER_TEST})
    keys = found(check(root, "--no-cache", "--select", "GPU203", "."))
    assert ("tok_loop.py", 10, "GPU203") in keys  # the same loop outside a test module is reported
    assert ("tests/test_tok.py", 10, "GPU203") not in keys
