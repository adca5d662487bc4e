"""Programs the rules' VALID/INVALID examples start from (one copy of each, shared by the rule classes)."""

# A training step on the GPU: the loop every GPU1xx example adds its line to.
TRAIN_STEP = """\
import torch
model = torch.nn.Linear(2, 2).cuda()
for x in loader:
    loss = model(x).sum()
    loss.backward()
"""
# A training step with a running total (GPU3xx).
ACCUMULATING_STEP = """\
import torch
model = torch.nn.Linear(2, 2).cuda()
total = 0
for x, y in loader:
    out = model(x)
    loss = out.sum()
    loss.backward()
"""
# A DataLoader whose batches go to the GPU (GPU2xx): fill in `{pin}` and `{non_blocking}`.
LOADER_TO_GPU = """\
import torch
loader = torch.utils.data.DataLoader(dataset, batch_size=8{pin})
model = torch.nn.Linear(2, 2).cuda()
for x in loader:
    x = x.cuda({non_blocking})
    model(x).sum().backward()
"""
# The head of a training script (model, criterion, loader on the GPU): loop bodies are appended to it.
SCRIPT_HEAD = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
device = torch.device("cuda")
model = nn.Linear(8, 2).to(device)
criterion = nn.CrossEntropyLoss()
loader = DataLoader([1, 2], batch_size=1, pin_memory=True)
"""
