"""A hand-written loader class that keeps a shard of tokens in host memory (`self.tokens = load_tokens(shard)`,
`load_tokens` returning `torch.tensor(np.load(f), dtype=torch.long)`) and hands back slices of it
(`buf = self.tokens[pos:pos + B * T + 1]`, `x = buf[:-1].view(B, T)`): the training loop's `x.to(device)` copies a
view of pageable memory every step, a blocking copy (GPU410; heldout27b's build-nanogpt `train_gpt2.py:488`).
A class that moves its tokens to the device once, or keeps something that is not a host build, stays quiet."""

from __future__ import annotations

from projects import lint_files

TRAIN = """\
    import numpy as np
    import torch
    import torch.nn as nn


    def load_tokens(filename):
        npt = np.load(filename)
        ptt = torch.tensor(npt, dtype=torch.long)
        return ptt


    class DataLoaderLite:
        def __init__(self, B, T):
            self.B = B
            self.T = T
            self.reset()

        def reset(self):
            self.tokens = load_tokens("shard_000.npy")
            self.current_position = 0

        def next_batch(self):
            B, T = self.B, self.T
            buf = self.tokens[self.current_position : self.current_position + B * T + 1]
            x = (buf[:-1]).view(B, T)
            y = (buf[1:]).view(B, T)
            self.current_position += B * T
            return x, y


    device = "cuda"
    model = nn.Sequential(nn.Embedding(50304, 768), nn.Linear(768, 50304))
    model.to(device)
    train_loader = DataLoaderLite(B=16, T=1024)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
    for step in range(1000):
        optimizer.zero_grad()
        for micro_step in range(4):
            x, y = train_loader.next_batch()
            x, y = x.to(device), y.to(device)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                logits = model(x)
                loss = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
            loss.backward()
        optimizer.step()
"""


def test_slices_of_a_host_token_shard_a_loader_class_keeps_are_pageable_copies(tmp_path):
    assert lint_files(tmp_path, {"train.py": TRAIN}, "GPU410") == {("train.py", 40, "GPU410")}


def test_a_shard_moved_to_the_device_once_stays_quiet(tmp_path):
    text = TRAIN.replace('self.tokens = load_tokens("shard_000.npy")',
                         'self.tokens = load_tokens("shard_000.npy").to("cuda")')
    assert not lint_files(tmp_path, {"train.py": text}, "GPU410")


def test_a_shard_of_unknown_origin_stays_quiet(tmp_path):
    text = TRAIN.replace('self.tokens = load_tokens("shard_000.npy")', "self.tokens = self.source.tokens()")
    assert not lint_files(tmp_path, {"train.py": text}, "GPU410")
