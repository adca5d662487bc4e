"""Shape (d), optimised by hand: the tokenized dataset is uploaded once and batches are indexed with a device
randperm; fused AdamW, TF32 on, loss and accuracy summed on the device and read once per log interval. Same model,
same "pretrained" weights, same data, same schedule, same number of steps.

bf16 autocast is left off: at this size (32 x 128 tokens, d_model 512) the step is bound by kernel launches on the
host, and autocast's casts add kernels. Up to the seventh landing the twin had autocast and ran 0.94-1.00x the
program as written, never faster than gpulint's fixed copy (which has none); `hand_bf16` in
benchmarks/shapes_speed.py puts it back to show what it costs."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import Dataset

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
    vocab_size, max_length, d_model, n_heads, n_layers, n_examples, batch_size = 512, 32, 32, 2, 2, 256, 8
else:
    vocab_size, max_length, d_model, n_heads, n_layers, n_examples, batch_size = 8192, 128, 512, 8, 6, 8192, 32
num_labels = 4


class TokenizedDataset(Dataset):
    """Pre-tokenized examples, padded to max_length, as `tokenizer(..., padding="max_length")` returns them."""

    def __init__(self, n, seed=0):
        generator = torch.Generator().manual_seed(seed)
        lengths = torch.randint(max_length // 4, max_length + 1, (n,), generator=generator)
        self.labels = torch.randint(0, num_labels, (n,), generator=generator)
        self.input_ids = torch.zeros(n, max_length, dtype=torch.long)
        self.attention_mask = torch.zeros(n, max_length, dtype=torch.long)
        for i in range(n):
            tokens = torch.randint(4, vocab_size, (int(lengths[i]),), generator=generator)
            tokens[::7] = self.labels[i]  # a learnable signal: the label token recurs
            self.input_ids[i, : len(tokens)] = tokens
            self.attention_mask[i, : len(tokens)] = 1

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.input_ids[i], "attention_mask": self.attention_mask[i], "labels": self.labels[i]}


class EncoderClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, d_model)
        self.position_embeddings = nn.Embedding(max_length, d_model)
        self.embed_norm = nn.LayerNorm(d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.1, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.classifier = nn.Linear(d_model, num_labels)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        h = self.embed_norm(self.embeddings(input_ids) + self.position_embeddings(positions))
        h = self.encoder(h, src_key_padding_mask=attention_mask == 0)
        mask = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * mask).sum(1) / mask.sum(1)
        return self.classifier(pooled)


def now():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


pretrained_state = EncoderClassifier().state_dict()  # stands in for from_pretrained(...)
model = EncoderClassifier()
model.load_state_dict(pretrained_state)
model.to(device)

train_dataset = TokenizedDataset(n_examples)
columns = {"input_ids": train_dataset.input_ids.to(device), "attention_mask": train_dataset.attention_mask.to(device),
           "labels": train_dataset.labels.to(device)}
no_decay = ["bias", "norm"]
grouped_parameters = [
    {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
    {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
]
optimizer = torch.optim.AdamW(grouped_parameters, lr=5e-5, fused=use_cuda)
num_warmup_steps = args.steps // 10


def lr_lambda(current_step):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    return max(0.0, float(args.steps - current_step) / float(max(1, args.steps - num_warmup_steps)))


lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
loss_fn = nn.CrossEntropyLoss()

warmup = min(args.warmup, args.steps // 2)
step = 0
start = now()
total_loss = torch.zeros((), device=device)
correct = torch.zeros((), device=device, dtype=torch.long)
seen = 0
model.train()
while step < args.steps:
    perm = torch.randperm(n_examples, device=device)
    for first in range(0, n_examples, batch_size):
        if step == warmup:
            start = now()
        index = perm[first:first + batch_size]
        batch = {k: v[index] for k, v in columns.items()}
        with torch.autocast(device, dtype=torch.bfloat16, enabled=False):  # bf16 measured slower here
            logits = model(batch["input_ids"], batch["attention_mask"])
            loss = loss_fn(logits, batch["labels"])
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        total_loss += loss.detach()
        correct += (logits.argmax(-1) == batch["labels"]).sum()
        seen += batch["labels"].size(0)
        step += 1
        if step % 50 == 0:
            print(f"step {step} loss {total_loss.item() / 50:.4f} acc {100 * correct.item() / seen:.1f}")
            total_loss.zero_()
        if step == args.steps:
            break
elapsed = now() - start
print(f"STEP_MS {1000 * elapsed / max(1, args.steps - warmup):.4f}")
checksum = sum(p.double().sum().item() for p in model.parameters())
print(f"FINAL {loss.item():.6f} {checksum:.6f}")
