"""Appends, at each run, whether PyTorch's deterministic algorithms are on to the file its first argument names
(tests/test_verify_evidence.py: round 1 and the noise runs compare outputs in deterministic mode, the timing
rounds run the program with its own settings)."""
import sys

import torch

with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(f"{torch.are_deterministic_algorithms_enabled()} {torch.backends.cudnn.deterministic}\n")
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4)
for step in range(8):
    loss = model(x).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(loss.item())
