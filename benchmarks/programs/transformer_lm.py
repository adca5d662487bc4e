"""A small causal transformer language model trained on random windows of a synthetic token stream, nanoGPT
style: `get_batch` slices windows on the host, the loop checks the loss is finite every step, sums the loss with
`.item()` and clips gradients."""
import math

import torch
from torch import nn

vocab, block, batch_size, width, layers = 2048, 128, 32, 256, 4
device = "cuda" if torch.cuda.is_available() else "cpu"
generator = torch.Generator().manual_seed(0)
data = torch.randint(0, vocab, (200_000,), generator=generator)


def get_batch():
    ix = torch.randint(len(data) - block - 1, (batch_size,))
    x = torch.stack([data[i:i + block] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block] for i in ix])
    return x.to(device), y.to(device)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(1, block, width))
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(width, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(block))

    def forward(self, idx):
        h = self.embed(idx) * math.sqrt(width) + self.pos
        return self.head(self.blocks(h, mask=self.mask, is_causal=True))


model = TinyLM().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
total_loss = 0.0
for step in range(200):
    x, y = get_batch()
    logits = model(x)
    loss = nn.functional.cross_entropy(logits.view(-1, vocab), y.view(-1))
    if not torch.isfinite(loss).all():
        raise RuntimeError(f"loss diverged at step {step}")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    total_loss += loss.item()
    if step % 25 == 24:
        print(f"step {step + 1}: mean loss {total_loss / 25:.4f}")
        total_loss = 0.0
