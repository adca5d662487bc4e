"""Sampling and evaluation loops that reach the network through a project helper (issue 11, recall):
`for _ in range(n_batches): images = sampler.sample_loop(net, shape)` runs the network many times in every
iteration, through the project's sampler, which calls the callable it is given (directly, or by handing it on
to another of its methods). Such a loop is a hot loop: a read it makes each iteration (`.cpu().numpy()` of the
samples, `.item()` of a metric) is paid once per batch. An epoch loop handing the model to a function that
trains it, or that runs it over a loader, stays an epoch loop.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

SAMPLER = textwrap.dedent("""\
    import torch


    class Sampler:
        def __init__(self, steps):
            self.steps = steps

        def denoise(self, net, x, t):
            return x - net(x, t)

        def sample_loop(self, net, shape, device="cuda"):
            x = torch.randn(*shape, device=device)
            for i in reversed(range(self.steps)):
                t = torch.full((shape[0],), i, device=device)
                x = self.denoise(net, x, t)
            return x

        def fast_loop(self, net, shape):
            return self.sample_loop(net, shape)


    def make_sampler(steps):
        return Sampler(steps)


    def make_both(steps):
        net = Net()
        sampler = Sampler(steps)
        return net, sampler


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, t):
            return self.lin(x)
""")

SAMPLE = textwrap.dedent("""\
    import numpy as np
    import torch
    from sampler import Net, make_sampler


    def main(args):
        model = Net().cuda()
        model.eval()
        sampler = make_sampler(args.steps)
        images = []
        for _ in range(args.batches):
            out = sampler.sample_loop(model, (args.batch_size, 4))
            images.append(out.cpu().numpy())
        np.save("samples.npy", np.concatenate(images))
""")

READ = ("sample.py", 13, "GPU104")


def _project(root: Path, sample: str = SAMPLE, sampler: str = SAMPLER) -> Path:
    return write_project(root, {"sampler.py": sampler, "sample.py": sample})


def test_a_loop_handing_the_model_to_a_sampler_is_hot(tmp_path: Path):
    assert READ in found(check(_project(tmp_path), "--no-cache", "."))


def test_the_model_handed_on_through_several_methods(tmp_path: Path):
    sample = SAMPLE.replace("sampler.sample_loop(model,", "sampler.fast_loop(model,")
    assert sample != SAMPLE
    assert READ in found(check(_project(tmp_path, sample=sample), "--no-cache", "."))


def test_a_name_choosing_the_sampler_and_an_unpacked_factory_result(tmp_path: Path):
    """`model, sampler = make_both(...)`; `fn = sampler.sample_loop if c else sampler.fast_loop`; `fn(model,
    ...)` in a `while` loop."""
    sample = textwrap.dedent("""\
        import torch
        from sampler import make_both


        def main(args):
            model, sampler = make_both(args.steps)
            model.cuda()
            done, scores = 0, []
            while done < args.n:
                fn = sampler.sample_loop if not args.fast else sampler.fast_loop
                out = fn(model, (args.batch_size, 4))
                scores.append(out.item())
                done += args.batch_size
    """)
    assert ("sample.py", 12, "GPU101") in found(check(_project(tmp_path, sample=sample), "--no-cache", "."))


def test_a_method_of_the_model_chosen_on_a_branch(tmp_path: Path):
    """`sample_fn = model.forward` on one branch, `model.forward_guided` on the other, handed to the sampler."""
    sample = SAMPLE.replace("        out = sampler.sample_loop(model, (args.batch_size, 4))\n",
                            "        if args.guided:\n            fn = model.forward_guided\n"
                            "        else:\n            fn = model.forward\n"
                            "        out = sampler.sample_loop(fn, (args.batch_size, 4))\n")
    assert sample != SAMPLE
    assert ("sample.py", 17, "GPU104") in found(check(_project(tmp_path, sample=sample), "--no-cache", "."))


def test_a_helper_that_does_not_run_the_model_keeps_the_loop_cold(tmp_path: Path):
    sampler = SAMPLER.replace("        return x - net(x, t)", "        return x - t.float().unsqueeze(1)")
    assert sampler != SAMPLER
    assert READ not in found(check(_project(tmp_path, sampler=sampler), "--no-cache", "."))


def test_an_epoch_loop_handing_the_model_to_a_training_function_stays_an_epoch_loop(tmp_path: Path):
    """`train_epoch(model)` runs the model over its own loader and steps: the caller's loop runs per epoch,
    so its `.item()` of the epoch's loss is no per-step read."""
    helpers = textwrap.dedent("""\
        import torch


        def train_epoch(net, opt, batches):
            total = 0.0
            for x in batches:
                loss = net(x.cuda()).sum()
                loss.backward()
                opt.step()
                total = total + loss.detach()
            return total


        def evaluate(net, examples):
            out = None
            for x in examples:
                out = net(x.cuda())
            return out
    """)
    train = textwrap.dedent("""\
        import torch
        from helpers import train_epoch, evaluate


        def main(args, data):
            model = torch.nn.Linear(4, 4).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(args.epochs):
                total = train_epoch(model, opt, data)
                out = evaluate(model, data)
                print(epoch, total.item(), out.sum().item())
    """)
    root = write_project(tmp_path, {"helpers.py": helpers, "train.py": train})
    assert not {f for f in found(check(root, "--no-cache", ".")) if f[0] == "train.py"}


LOSSES = textwrap.dedent("""\
    import torch


    class Wrapped:
        def __init__(self, net, scale):
            self.net = net
            self.scale = scale

        def __call__(self, x, t):
            return self.net(x, t * self.scale)


    class Base:
        def losses(self, net, x):
            t = torch.randint(0, 10, (x.shape[0],), device=x.device)
            return (net(x, t) - x).pow(2).mean()


    class Respaced(Base):
        def wrap(self, net):
            return Wrapped(net, 2)

        def losses(self, net, *args):
            return super().losses(self.wrap(net), *args)


    def make_losses():
        return Respaced()
""")

NETWORK = textwrap.dedent("""\
    import math
    import torch


    class Embed(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim
            self.lin = torch.nn.Linear(dim, dim)

        def forward(self, x, t):
            freqs = torch.exp(-math.log(100.0) * torch.arange(self.dim, dtype=torch.float32) / self.dim).to(x.device)
            return self.lin(x * freqs[None] + t[:, None].float())
""")

TRAIN = textwrap.dedent("""\
    import torch
    from network import Embed
    from losses import make_losses


    def main(loader):
        model = Embed(8).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
        diffusion = make_losses()
        for x in loader:
            loss = diffusion.losses(model, x.cuda(non_blocking=True))
            opt.zero_grad()
            loss.backward()
            opt.step()
""")


def test_a_model_handed_to_a_project_loss_runs_its_forward_every_step(tmp_path: Path):
    """`diffusion.losses(model, x)` in the training loop, where the loss (through `super()` and a wrapper
    object) calls the model: the model's `forward` is per-step code, so its host-built `torch.arange` copied
    to the GPU is reported there."""
    root = write_project(tmp_path, {"losses.py": LOSSES, "network.py": NETWORK, "train.py": TRAIN})
    assert ("network.py", 12, "GPU203") in found(check(root, "--no-cache", "."))


def test_a_loop_over_calls_of_a_local_decoding_function_is_not_a_sampling_loop(tmp_path: Path):
    """`generate(model, ...)` of the same module runs its own decoding loop over tokens (the step); the loop
    over prompts that calls it runs once per generated sequence, so its setup of each generation (the
    prefill position built once per call, the generated sequence copied to the host once per call) is not
    reported as a per-step cost."""
    script = textwrap.dedent("""\
        import torch


        def next_token(model, pos, x):
            return model(x).argmax(-1)


        def decode(model, prompt, steps):
            token = prompt
            prefill = True
            pos = torch.arange(0, prompt.size(0), device=prompt.device)
            for _ in range(steps):
                token = next_token(model, pos, token)
                last = token.item()
                yield token
                if prefill:
                    prefill = False
                    pos = torch.tensor([prompt.size(0)], device=prompt.device)


        def generate(model, prompt, steps):
            return torch.stack(list(decode(model, prompt, steps)))


        def main(prompts, model, n):
            model = model.cuda()
            for i in range(n):
                out = generate(model, prompts[i].cuda(), 100)
                print(out.cpu())
    """)
    root = write_project(tmp_path, {"gen.py": script})
    results = found(check(root, "--no-cache", "."))
    assert ("gen.py", 14, "GPU101") in results  # the decoding loop is the step
    assert ("gen.py", 18, "GPU203") not in results
    assert ("gen.py", 29, "GPU104") not in results


GUIDED = textwrap.dedent("""\
    import numpy as np
    import torch
    from sampler import Net, make_sampler


    def main(args, classifier):
        model = Net().cuda()
        sampler = make_sampler(args.steps)

        def guide(x, t):
            score = classifier(x, t)
            if score.max().item() > args.limit:
                return x
            return score

        def model_fn(x, t):
            return model(x, t) + guide(x, t)

        images = []
        while len(images) < args.n:
            out = sampler.guided_loop(model_fn, (args.batch_size, 4), guide=guide)
            images.append(out.cpu().numpy())
        np.save("samples.npy", np.concatenate(images))
""")

GUIDED_SAMPLER = (SAMPLER + textwrap.dedent("""\


    def guided_step(net, x, t, guide=None):
        if guide is not None:
            x = x + guide(x, t)
        return net(x, t)


    class Guided(Sampler):
        def guided_loop(self, net, shape, guide=None):
            x = torch.randn(*shape, device="cuda")
            for i in range(self.steps):
                t = torch.full((shape[0],), i, device="cuda")
                x = guided_step(net, x, t, guide=guide)
            return x
""")).replace("def make_sampler(steps):\n    return Sampler(steps)", "def make_sampler(steps):\n    return Guided(steps)")


def test_a_local_wrapper_of_the_model_and_a_guide_handed_on(tmp_path: Path):
    """`model_fn` (a local function running the model) handed to the sampler makes the loop a sampling loop;
    `guide`, handed on from the sampler's method to a function that calls it, runs every iteration too."""
    root = write_project(tmp_path, {"sampler.py": GUIDED_SAMPLER, "sample.py": GUIDED})
    results = found(check(root, "--no-cache", "."))
    assert ("sample.py", 22, "GPU104") in results
    assert ("sample.py", 12, "GPU101") in results


def test_an_epoch_function_iterating_a_wrapped_loader_keeps_the_epoch_loop(tmp_path: Path):
    """`train_one_epoch(model, ..., data_loader, ...)` runs the model over `log.every(data_loader)` and steps
    through a scaler object (no `.backward()` of its own): an epoch function, so its end-of-epoch
    `torch.cuda.synchronize()` is not a per-step cost at the call."""
    engine = textwrap.dedent("""\
        import torch


        def train_one_epoch(model, criterion, data_loader, optimizer, scaler, log):
            for x, y in log.every(data_loader, 10):
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
                scaler(loss, optimizer)
            torch.cuda.synchronize()
            return loss
    """)
    main = textwrap.dedent("""\
        import torch
        from engine import train_one_epoch


        def main(args, criterion, train_set, scaler, log):
            model = torch.nn.Linear(4, 4).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
            data_loader_train = make_loader(train_set)
            for epoch in range(args.epochs):
                stats = train_one_epoch(model, criterion, data_loader_train, optimizer, scaler, log)
                print(epoch, stats)
    """)
    root = write_project(tmp_path, {"engine.py": engine, "main.py": main})
    assert not {f for f in found(check(root, "--no-cache", ".")) if f[0] == "main.py"}
