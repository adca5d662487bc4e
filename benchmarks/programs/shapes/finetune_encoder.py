"""Shape (d): fine-tuning a pretrained-style transformer encoder for sequence classification, the way the
Hugging Face tutorials write it: a map-style dataset of tokenized examples (dicts padded to max_length), a
DataLoader with num_workers=0, `{k: v.to(device)}` for every batch, AdamW with weight-decay groups and a linear
warmup/decay schedule, fp32, the loss and the accuracy read with `.item()` every step. The "pretrained" weights are
a seeded random state dict loaded with `load_state_dict`."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--warmup", type=int, default=50, help="steps run before the timing starts")
parser.add_argument("--tiny", action="store_true", help="small sizes for a CPU smoke test")
args = parser.parse_args()

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
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

train_dataloader = DataLoader(TokenizedDataset(n_examples), batch_size=batch_size, shuffle=True)
no_decay = ["bias", "norm"]
grouped_parameters = [
    {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
    {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
]
optimizer = torch.optim.AdamW(grouped_parameters, lr=5e-5)
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
total_loss = 0.0
correct = 0
seen = 0
model.train()
while step < args.steps:
    for batch in train_dataloader:
        if step == warmup:
            start = now()
        batch = {k: v.to(device) for k, v in batch.items()}
        logits = model(batch["input_ids"], batch["attention_mask"])
        loss = loss_fn(logits, batch["labels"])
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        total_loss += loss.item()
        correct += (logits.argmax(-1) == batch["labels"]).sum().item()
        seen += batch["labels"].size(0)
        step += 1
        if step % 50 == 0:
            print(f"step {step} loss {total_loss / 50:.4f} acc {100 * correct / seen:.1f}")
            total_loss = 0.0
        if step == args.steps:
            break
elapsed = now() - start
print(f"STEP_MS {1000 * elapsed / max(1, args.steps - warmup):.4f}")
checksum = sum(p.double().sum().item() for p in model.parameters())
print(f"FINAL {loss.item():.6f} {checksum:.6f}")
