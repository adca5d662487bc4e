"""Models built by a project factory and moved to a device named by the script's options (issue 11, recall):

- a top-level function of the model's module that builds the class and returns it (`def blip_decoder(**kw):
  model = BLIP_Decoder(**kw); ...; return model`) builds the class for a training file that calls it, so the
  model's `forward` is per-step code when that file's hot loop calls the instance (through a parameter of the
  step function, `.to(device)` and a DDP wrap on the way);
- `device = torch.device(args.device)` with the script's own `add_argument('--device', default='cuda')` is a CUDA
  device, so an optimizer over the model's parameters is over CUDA parameters (GPU402).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

MODEL = textwrap.dedent("""\
    import torch
    from torch import nn


    class Decoder(nn.Module):
        def __init__(self, dim=8):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, image):
            atts = torch.ones(image.size()[:-1], dtype=torch.long).to(image.device)
            return self.proj(image).sum() + atts.sum()


    def decoder(pretrained="", **kwargs):
        model = Decoder(**kwargs)
        if pretrained:
            model.load_state_dict(torch.load(pretrained))
        return model
""")

TRAIN = textwrap.dedent("""\
    import argparse
    import torch
    from model import decoder


    def train(model, data_loader, optimizer, device):
        for image in data_loader:
            image = image.to(device, non_blocking=True)
            loss = model(image)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def main(args):
        device = torch.device(args.device)
        model = decoder(pretrained=args.pretrained)
        model = model.to(device)
        if args.distributed:
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
        optimizer = torch.optim.AdamW(params=model.parameters(), lr=1e-4)
        loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2, pin_memory=True, num_workers=2)
        for epoch in range(10):
            train(model, loader, optimizer, device)


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cuda")
        parser.add_argument("--pretrained", default="")
        main(parser.parse_args())
""")

FORWARD = ("model.py", 11, "GPU203")  # `torch.ones(...).to(image.device)` in the forward, every step
ADAMW = ("train.py", 21, "GPU402")


def _project(root: Path, model: str = MODEL, train: str = TRAIN) -> Path:
    return write_project(root, {"model.py": model, "train.py": train})


def test_a_factorys_model_runs_its_forward_every_step(tmp_path: Path):
    assert FORWARD in found(check(_project(tmp_path), "--no-cache", "."))
    assert FORWARD in found(check(_project(tmp_path), "--no-cache", "model.py"))


def test_a_device_option_defaulting_to_cuda_is_cuda(tmp_path: Path):
    assert ADAMW in found(check(_project(tmp_path), "--no-cache", "."))


def test_a_device_option_defaulting_to_the_cpu_is_not(tmp_path: Path):
    train = TRAIN.replace('default="cuda"', 'default="cpu"')
    assert train != TRAIN
    assert ADAMW not in found(check(_project(tmp_path, train=train), "--no-cache", "."))


def test_a_factory_returning_another_class_builds_nothing_here(tmp_path: Path):
    model = MODEL.replace("    model = Decoder(**kwargs)", "    model = Decoder(**kwargs).half_copy()")
    assert model != MODEL
    assert FORWARD not in found(check(_project(tmp_path, model=model), "--no-cache", "."))


def test_a_forward_flag_the_hot_call_leaves_at_false_keeps_its_block_quiet(tmp_path: Path):
    """`def forward(self, image, report=False): ... if report: print(image.sum().item())`, called every step as
    `model(image)`: the block runs only when a caller asks for the report."""
    model = MODEL.replace("    def forward(self, image):\n",
                          "    def forward(self, image, report=False):\n"
                          "        if report:\n            print(image.sum().item())\n")
    assert model != MODEL
    results = found(check(_project(tmp_path, model=model), "--no-cache", "."))
    assert ("model.py", 13, "GPU203") in results  # the forward is per-step code (lines moved down by two)
    assert ("model.py", 12, "GPU101") not in results
    train = TRAIN.replace("loss = model(image)", "loss = model(image, report=True)")
    results = found(check(_project(tmp_path, model=model, train=train), "--no-cache", "."))
    assert ("model.py", 12, "GPU101") in results


def test_an_accumulation_flag_passed_periodically_keeps_the_optimizer_step_hot(tmp_path: Path):
    """`loss_scaler(loss, optimizer, update_grad=(i + 1) % accum == 0)` with `if update_grad:
    self._scaler.step(optimizer)`: the block runs on every optimizer step (gradient accumulation), so
    GradScaler.step's read stays a per-step cost (GPU112), unlike a logging flag passed the same way."""
    utils = textwrap.dedent("""\
        import torch


        class NativeScaler:
            def __init__(self):
                self._scaler = torch.cuda.amp.GradScaler()

            def __call__(self, loss, optimizer, update_grad=True):
                self._scaler.scale(loss).backward()
                if update_grad:
                    self._scaler.step(optimizer)
                    self._scaler.update()
    """)
    train = textwrap.dedent("""\
        import torch
        from utils import NativeScaler


        def train(model, loader, optimizer, accum):
            loss_scaler = NativeScaler()
            for i, (x, y) in enumerate(loader):
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = torch.nn.functional.mse_loss(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                loss_scaler(loss, optimizer, update_grad=(i + 1) % accum == 0)
    """)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "utils.py").write_text(utils)
    (tmp_path / "train.py").write_text(train)
    assert ("utils.py", 11, "GPU112") in found(check(tmp_path, "--no-cache", "."))
