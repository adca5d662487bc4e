"""Shape (c): a 6-layer GPT trained nanoGPT style. `get_batch` picks random windows of a numpy token array on the
host, stacks them and copies them to the GPU with `.to(device)` (pageable memory) every step; AdamW (default, not
fused), fp32 matmuls, gradient clipping, the loss read with `.item()` every step."""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--warmup", type=int, default=50, help="steps run before the timing starts")
parser.add_argument("--tiny", action="store_true", help="small sizes for a CPU smoke test")
args = parser.parse_args()

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
if args.tiny:
    vocab_size, block_size, batch_size, n_layer, n_head, n_embd = 256, 32, 4, 2, 2, 32
else:
    vocab_size, block_size, batch_size, n_layer, n_head, n_embd = 4096, 256, 32, 6, 6, 384

# a synthetic corpus with some structure: a noisy arithmetic progression of token ids
rng = np.random.default_rng(0)
steps_between = rng.integers(1, 8, size=1_000_000)
train_data = (np.cumsum(steps_between) % vocab_size).astype(np.uint16)


def get_batch():
    ix = torch.randint(len(train_data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy((train_data[i:i + block_size]).astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy((train_data[i + 1:i + 1 + block_size]).astype(np.int64)) for i in ix])
    x, y = x.to(device), y.to(device)
    return x, y


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        q = q.view(b, t, n_head, c // n_head).transpose(1, 2)
        k = k.view(b, t, n_head, c // n_head).transpose(1, 2)
        v = v.view(b, t, n_head, c // n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def now():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)

warmup = min(args.warmup, args.steps // 2)
start = now()
running_loss = 0.0
for step in range(args.steps):
    if step == warmup:
        start = now()
    lr = 6e-4 * min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
    for group in optimizer.param_groups:
        group["lr"] = lr
    x, y = get_batch()
    loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    running_loss += loss.item()
    if (step + 1) % 50 == 0:
        print(f"step {step + 1} loss {running_loss / 50:.4f}")
        running_loss = 0.0
elapsed = now() - start
print(f"STEP_MS {1000 * elapsed / max(1, args.steps - warmup):.4f}")
checksum = sum(p.double().sum().item() for p in model.parameters())
print(f"FINAL {loss.item():.6f} {checksum:.6f}")
