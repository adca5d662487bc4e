"""A generation loop that runs a network through a method by another name is a step loop (issue 11, recall): SiT's
`sample_ddp.py` draws latents, runs its sampler and decodes them with `vae.decode(...)` (diffusers'
`AutoencoderKL.from_pretrained(...)`), then copies every batch to the host (`.to("cpu", dtype=torch.uint8).numpy()`)
and waits at `dist.barrier()` each iteration. A diffusers network class built with `from_pretrained` is a model, and
`encode`/`decode` of a model run its network like `forward` (`generate` keeps nanoGPT's stance: test_loop_analysis).
"""

from __future__ import annotations

from pathlib import Path

from projects import lint_files

SAMPLE = """\
    import torch
    import torch.distributed as dist
    from diffusers.models import AutoencoderKL
    from PIL import Image


    def main(args, model, sample_fn, device, rank):
        vae = AutoencoderKL.from_pretrained(f"stabilityai/sd-vae-ft-{args.vae}").to(device)
        total = 0
        for i in range(args.iterations):
            z = torch.randn(args.n, 4, 32, 32, device=device)
            samples = sample_fn(z, model.forward)[-1]
            samples = vae.decode(samples / 0.18215).sample
            samples = torch.clamp(127.5 * samples + 128.0, 0, 255).permute(0, 2, 3, 1).to("cpu", dtype=torch.uint8).numpy()
            for j, sample in enumerate(samples):
                Image.fromarray(sample).save(f"{args.out}/{j + total:06d}.png")
            total += args.n
            dist.barrier()
"""


def test_a_decoding_loop_pays_its_copies_and_barriers_every_iteration(tmp_path: Path):
    found = lint_files(tmp_path, {"sample_ddp.py": SAMPLE}, "GPU104", "GPU112")
    assert {("sample_ddp.py", 14, "GPU104"), ("sample_ddp.py", 18, "GPU112")} <= found


def test_a_scheduler_from_the_same_library_is_no_network(tmp_path: Path):
    """`DDPMScheduler.from_pretrained(...)` builds no network: its `decode` would run nothing on the GPU."""
    sample = SAMPLE.replace("from diffusers.models import AutoencoderKL", "from diffusers import DDPMScheduler")
    sample = sample.replace("AutoencoderKL.from_pretrained", "DDPMScheduler.from_pretrained")
    assert lint_files(tmp_path, {"sample_ddp.py": sample}, "GPU104", "GPU112") == set()
