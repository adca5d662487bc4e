"""Following the names an optimizer's parameters come from (`TrainingFacts.parameter_owners`, GPU402's
`fused=True`) costs one visit per binding, not one per path through a chain of rebindings: an unrolled
`x = torch.relu(model(x) + x)` thirty times made every call's first argument walk 60^4 paths (pytorch/examples
spent a third of a cold lint there; this module took minutes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHAIN = "\n".join(
    ["import torch", "from torch.utils.data import DataLoader", "", "from models import Net", "", "",
     "def main(dataset):", "    device = torch.device('cuda')", "    model = Net().to(device)",
     "    x = torch.randn(8, 512, device=device)"]
    + ["    x = torch.relu(model(x) + x)"] * 30
    + ["    params = model.parameters()", "    params = list(params)",
       "    opt = torch.optim.AdamW(params, lr=1e-3)",
       "    loader = DataLoader(dataset, batch_size=64, pin_memory=True)", "    for batch in loader:",
       "        loss = model(batch.to(device, non_blocking=True)).sum()", "        opt.zero_grad(set_to_none=True)",
       "        loss.backward()", "        opt.step()", ""])


def test_a_chain_of_rebindings_lints_quickly_and_still_finds_the_unfused_optimizer(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "chain.py").write_text(CHAIN)
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--jobs", "1", "--select",
                          "GPU402", "--output-format", "json", "chain.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1, out.stderr
    found = [(d["code"], d["location"]["row"]) for d in json.loads(out.stdout)]
    assert found == [("GPU402", 43)]  # the owner is followed through `params = list(params)`
