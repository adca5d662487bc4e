"""Lightning Fabric, from the reviewed library table (analysis/libraries.py): loaders passed through
`fabric.setup_dataloaders(...)` yield batches already on the device (no GPU201/GPU202 on them, as with
Accelerate's `prepare`); `fabric.clip_gradients(model, optimizer, max_norm=...)` tests the gradient norm for
NaN/inf on the host on every call (`error_if_nonfinite=True` by default) unless `error_if_nonfinite=False`; a
`fabric` parameter annotated `L.Fabric` is known as a Fabric object. A validation pass called every N steps
from the step loop does not make the step loop an epoch loop.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from gpulint.analysis.libraries import Effect, fact_for_method
from projects import check, found

SCRIPT = """\
import lightning as L
import torch
from torch.utils.data import DataLoader


def validate(fabric: L.Fabric, model, val_dataloader):
    losses = []
    for batch in val_dataloader:
        losses.append(model(batch["x"]).sum())
    return torch.stack(losses).mean()


def fit(fabric: L.Fabric, model, optimizer, train_dataloader, val_dataloader):
    step = 0
    for batch in train_dataloader:
        step += 1
        x = batch["x"].to(fabric.device)
        loss = model(x).sum()
        fabric.backward(loss)
        fabric.clip_gradients(model, optimizer, max_norm=1.0{clip})
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0:
            val_loss = validate(fabric, model, val_dataloader)
            fabric.print(val_loss.item())


def main(fabric: L.Fabric, dataset, model, optimizer):
    train_dataloader = DataLoader(dataset, batch_size=8)
    val_dataloader = DataLoader(dataset, batch_size=8)
    train_dataloader, val_dataloader = fabric.setup_dataloaders(train_dataloader, val_dataloader)
    model, optimizer = fabric.setup(model, optimizer)
    fit(fabric, model, optimizer, train_dataloader, val_dataloader)


if __name__ == "__main__":
    main(L.Fabric(accelerator="cuda"), None, torch.nn.Linear(2, 2), None)
"""


def _lint(root: Path, clip: str = "") -> tuple[set, list]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    (root / "train.py").write_text(textwrap.dedent(SCRIPT.format(clip=clip)))
    items = check(root, "--no-cache", "train.py")
    return {(line, code) for _, line, code in found(items)}, items


def test_fabric_facts_are_in_the_table():
    for cls in ("lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric",
                "lightning.fabric.fabric.Fabric"):
        assert fact_for_method(cls, "setup_dataloaders").effect is Effect.DEVICE_BATCHES
        assert fact_for_method(cls, "clip_gradients").effect is Effect.SYNCS
    assert "fabric.py" in fact_for_method("lightning.Fabric", "clip_gradients").source


def test_clip_gradients_every_step_is_reported_and_prepared_loaders_are_not(tmp_path):
    got, items = _lint(tmp_path)
    assert (20, "GPU112") in got
    message = next(d["message"] for d in items if d["location"]["row"] == 20 and d["code"] == "GPU112")
    assert "Fabric.clip_gradients" in message and "error_if_nonfinite" in message
    # the loaders go through fabric.setup_dataloaders: their batches arrive on the device
    assert not {code for _, code in got} & {"GPU201", "GPU202"}


def test_clip_gradients_without_the_nonfinite_check_is_fine(tmp_path):
    got, _ = _lint(tmp_path, clip=", error_if_nonfinite=False")
    assert (20, "GPU112") not in got


METER = """\
import torch
from torchmetrics import RunningMean
from losses import chunked_loss


def fit(model, optimizer, loader):
    model = model.cuda()
    running_loss = RunningMean(window=4).to("cuda")
    for step, x in enumerate(loader):
        logits = model(x.cuda(non_blocking=True))
        loss = chunked_loss(logits, x)
        (loss / 2).backward()
        optimizer.step()
        running_loss.update(loss.detach())
        if step % 100 == 0:
            loss = running_loss.compute().item()
            print(loss)
"""


def test_a_detached_loss_is_a_tensor_even_where_the_name_is_rebound_to_a_number(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(METER)
    got = {(line, code) for _, line, code in found(check(tmp_path, "--no-cache", "train.py"))}
    assert (14, "GPU112") in got  # RunningMean.update's NaN check reads the detached loss every step
    assert not any(line == 16 for line, _ in got)  # the periodic read is fine
