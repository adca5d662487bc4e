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
