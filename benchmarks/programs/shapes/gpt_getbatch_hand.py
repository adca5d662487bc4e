"""Shape (c), optimised by hand: the token array is uploaded once and windows are gathered on the GPU with device
random offsets; fused AdamW, bf16 autocast, TF32 on, the loss summed on the device and read once per log interval.
Same model, same corpus, same schedule, same number of steps."""
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
use_cuda = device == "cuda"
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
if args.tiny:
    vocab_size, block_size, batch_size, n_layer, n_head, n_embd = 256, 32, 4, 2, 2, 32
else:
    vocab_size, block_size, batch_size, n_layer, n_head, n_embd = 4096, 256, 32, 6, 6, 384

# a synthetic corpus with some structure: a noisy arithmetic progression of token ids
rng = np.random.default_rng(0)
steps_between = rng.integers(1, 8, size=1_000_000)
train_data = (np.cumsum(steps_between) % vocab_size).astype(np.uint16)


data_gpu = torch.from_numpy(train_data.astype(np.int64)).to(device)
window = torch.arange(block_size, device=device)


def get_batch():
    ix = torch.randint(len(train_data) - block_size, (batch_size, 1), device=device)
    x = data_gpu[ix + window]
    y = data_gpu[ix + 1 + window]
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
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=use_cuda)

warmup = min(args.warmup, args.steps // 2)
start = now()
running_loss = torch.zeros((), device=device)
for step in range(args.steps):
    if step == warmup:
        start = now()
    lr = 6e-4 * min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
    for group in optimizer.param_groups:
        group["lr"] = lr
    x, y = get_batch()
    with torch.autocast(device, dtype=torch.bfloat16, enabled=use_cuda):
        loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    running_loss += loss.detach()
    if (step + 1) % 50 == 0:
        print(f"step {step + 1} loss {running_loss.item() / 50:.4f}")
        running_loss.zero_()
elapsed = now() - start
print(f"STEP_MS {1000 * elapsed / max(1, args.steps - warmup):.4f}")
checksum = sum(p.double().sum().item() for p in model.parameters())
print(f"FINAL {loss.item():.6f} {checksum:.6f}")
