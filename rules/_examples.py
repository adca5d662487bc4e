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
# The head of a script that feeds a TensorDataset to the GPU (GPU2xx): loader code is appended to it.
DATASET_HEAD = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda")
model = nn.Linear(8, 2).to(device)
dataset = TensorDataset(torch.randn(64, 8), torch.randn(64, 2))
"""
# Scripts that never touch a GPU: no transfer rule reports in them.
CPU_ONLY_SCRIPTS = (
    """\
import torch
from torch.utils.data import DataLoader, TensorDataset
model = torch.nn.Linear(8, 2)
loader = DataLoader(TensorDataset(torch.randn(8, 8)), batch_size=2)
for (x,) in loader:
    model(x).sum().backward()
""",
    # a device variable that is the CPU
    """\
import torch
from torch.utils.data import DataLoader
dev = "cpu"
loader = DataLoader([1, 2], batch_size=1)
for x in loader:
    x = x.to(dev)
    model(x).sum().backward()
""",
)
# An explicitly unpinned loader: neither pinning (GPU201) nor non_blocking copies (GPU202) are asked for.
UNPINNED_LOADER = DATASET_HEAD + """\
loader = DataLoader(dataset, batch_size=8, pin_memory=False)
for x, y in loader:
    model(x.to(device)).sum().backward()
"""
