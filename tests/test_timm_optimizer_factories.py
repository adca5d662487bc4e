"""GPU402 through timm's optimizer factories (issue 12 lever, issue 11 recall): DeiT-style scripts (LeViT,
PoolFormer, ...) build their optimizer with `create_optimizer(args, model_without_ddp)` or
`create_optimizer_v2(model, **optimizer_kwargs(cfg=args))`, and `--opt` defaults to `adamw`: timm then builds
`torch.optim.AdamW` without `fused=`. Reported at the factory's call when the option's literal default names one of
torch's fusable optimizers and the model is on CUDA; an optimizer timm implements itself (`lamb`) or a model never
moved is left alone.
"""

from __future__ import annotations

from pathlib import Path

from projects import lint_files

MAIN = """\
    import argparse

    import torch
    from timm.models import create_model
    from timm.optim import create_optimizer

    parser = argparse.ArgumentParser()
    parser.add_argument('--opt', default='adamw', type=str)
    parser.add_argument('--lr', default=5e-4, type=float)
    parser.add_argument('--device', default='cuda')


    def main(args, loader):
        device = torch.device(args.device)
        model = create_model('levit_256', num_classes=1000)
        model.to(device)
        model_without_ddp = model
        optimizer = create_optimizer(args, model_without_ddp)
        for samples, targets in loader:
            samples = samples.to(device, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(samples), targets.to(device, non_blocking=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    if __name__ == '__main__':
        main(parser.parse_args(), None)
"""

V2 = MAIN.replace("from timm.optim import create_optimizer",
                  "from timm.optim import create_optimizer_v2, optimizer_kwargs").replace(
    "create_optimizer(args, model_without_ddp)", "create_optimizer_v2(model, **optimizer_kwargs(cfg=args))")


def test_create_optimizer_with_the_adamw_default(tmp_path: Path):
    assert ("main.py", 18, "GPU402") in lint_files(tmp_path, {"main.py": MAIN}, "GPU402")


def test_create_optimizer_v2_given_the_options(tmp_path: Path):
    assert ("main.py", 18, "GPU402") in lint_files(tmp_path, {"main.py": V2}, "GPU402")


def test_an_optimizer_timm_implements_itself_is_left_alone(tmp_path: Path):
    assert lint_files(tmp_path, {"main.py": MAIN.replace("default='adamw'", "default='lamb'")}, "GPU402") == set()


def test_a_model_left_on_the_host_is_left_alone(tmp_path: Path):
    assert lint_files(tmp_path, {"main.py": V2.replace("default='cuda'", "default='cpu'")}, "GPU402") == set()
