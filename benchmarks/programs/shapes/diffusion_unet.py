"""Shape (e): a DDPM-style denoising loop with a small UNet (GroupNorm, SiLU, a sinusoidal time embedding) on
synthetic 32x32 images. The images come from a TensorDataset loader (num_workers=0, pageable); the timesteps and
the noise schedule live on the host and are copied each step; an EMA of the weights is updated with a Python loop
over the parameters; Adam, fp32; the loss is read with `.item()` every step."""
import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--warmup", type=int, default=50, help="steps run before the timing starts")
parser.add_argument("--tiny", action="store_true", help="small sizes for a CPU smoke test")
args = parser.parse_args()

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
n_images, size, base, batch_size = (128, 16, 8, 16) if args.tiny else (4096, 32, 64, 64)
num_timesteps = 1000


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
    args_ = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args_), torch.sin(args_)], dim=1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(8, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(temb)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class UNet(nn.Module):
    def __init__(self, base):
        super().__init__()
        self.base = base
        tdim = 4 * base
        self.time_mlp = nn.Sequential(nn.Linear(base, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inc = nn.Conv2d(3, base, 3, padding=1)
        self.down1 = ResBlock(base, base, tdim)
        self.pool1 = nn.Conv2d(base, base, 3, stride=2, padding=1)
        self.down2 = ResBlock(base, 2 * base, tdim)
        self.pool2 = nn.Conv2d(2 * base, 2 * base, 3, stride=2, padding=1)
        self.mid = ResBlock(2 * base, 2 * base, tdim)
        self.up2 = ResBlock(4 * base, base, tdim)
        self.up1 = ResBlock(2 * base, base, tdim)
        self.out = nn.Sequential(nn.GroupNorm(8, base), nn.SiLU(), nn.Conv2d(base, 3, 3, padding=1))

    def forward(self, x, t):
        temb = self.time_mlp(timestep_embedding(t, self.base))
        h0 = self.down1(self.inc(x), temb)
        h1 = self.down2(self.pool1(h0), temb)
        h = self.mid(self.pool2(h1), temb)
        h = self.up2(torch.cat([F.interpolate(h, scale_factor=2.0), h1], 1), temb)
        h = self.up1(torch.cat([F.interpolate(h, scale_factor=2.0), h0], 1), temb)
        return self.out(h)


def now():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


generator = torch.Generator().manual_seed(0)
coarse = torch.rand(n_images, 3, size // 4, size // 4, generator=generator)
images = F.interpolate(coarse, size=(size, size), mode="bilinear", align_corners=False) * 2 - 1
loader = DataLoader(TensorDataset(images), batch_size=batch_size, shuffle=True, drop_last=True)

betas = torch.linspace(1e-4, 0.02, num_timesteps)
alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)

model = UNet(base).to(device)
ema_model = UNet(base).to(device)
ema_model.load_state_dict(model.state_dict())
ema_decay = 0.999
optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)

warmup = min(args.warmup, args.steps // 2)
step = 0
start = now()
running_loss = 0.0
while step < args.steps:
    for (x0,) in loader:
        if step == warmup:
            start = now()
        x0 = x0.to(device)
        t = torch.randint(0, num_timesteps, (x0.shape[0],))
        noise = torch.randn_like(x0)
        a = alphas_cumprod[t].view(-1, 1, 1, 1).to(device)
        x_t = a.sqrt() * x0 + (1 - a).sqrt() * noise
        pred = model(x_t, t.to(device))
        loss = F.mse_loss(pred, noise)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            for p_ema, p in zip(ema_model.parameters(), model.parameters()):
                p_ema.mul_(ema_decay).add_(p, alpha=1 - ema_decay)
        running_loss += loss.item()
        step += 1
        if step % 50 == 0:
            print(f"step {step} loss {running_loss / 50:.4f}")
            running_loss = 0.0
        if step == args.steps:
            break
elapsed = now() - start
print(f"STEP_MS {1000 * elapsed / max(1, args.steps - warmup):.4f}")
checksum = sum(p.double().sum().item() for p in model.parameters())
print(f"FINAL {loss.item():.6f} {checksum:.6f}")
