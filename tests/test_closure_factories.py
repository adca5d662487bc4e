"""Closures handed back by project factories, and host tensors they copy (branch recall70).

`train_step_fn = losses.get_step_fn(sde, ...)` returns a `step_fn(state, batch)` closure; the training loop
calls `train_step_fn(state, batch)` every step, so the closure's body, and the loss closure it calls through a
name of its factory (`loss_fn = get_ddpm_loss_fn(...)`), run every step (analysis/closure_factories.py). What
they copy per call: a schedule a project class builds on the host in `__init__` (`torch.linspace`, then
`1. - betas`, `torch.cumprod`, `torch.sqrt`), read through an object (`vpsde.sqrt_alphas_cumprod.to(x.device)`,
the class from `assert isinstance(vpsde, VPSDE)` or an `isinstance` branch), and a host tensor the factory
built once and the closure copies on every call (analysis/host_attributes.py). Each shape has a quiet twin.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

SDE_LIB = textwrap.dedent("""\
    import torch


    class VPSDE:
        def __init__(self, beta_min=0.1, beta_max=20, N=1000):
            self.N = N
            self.discrete_betas = torch.linspace(beta_min / N, beta_max / N, N)
            self.alphas = 1. - self.discrete_betas
            self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
            self.sqrt_alphas_cumprod = torch.sqrt(self.alphas_cumprod)


    class VESDE:
        def __init__(self, sigma_min=0.01, sigma_max=50, N=1000):
            self.N = N
            self.discrete_sigmas = torch.exp(torch.linspace(sigma_min, sigma_max, N))
""")

LOSSES = textwrap.dedent("""\
    import torch
    from sde_lib import VESDE, VPSDE


    def get_smld_loss_fn(vesde):
        assert isinstance(vesde, VESDE), "SMLD training needs a VESDE"
        sigmas_desc = torch.flip(vesde.discrete_sigmas, dims=(0,))

        def loss_fn(model, batch):
            labels = torch.randint(0, vesde.N, (batch.shape[0],), device=batch.device)
            sigmas = sigmas_desc.to(batch.device)[labels]
            noise = torch.randn_like(batch) * sigmas[:, None]
            return torch.mean(torch.square(model(batch + noise) + noise))

        return loss_fn


    def get_ddpm_loss_fn(vpsde):
        assert isinstance(vpsde, VPSDE), "DDPM training needs a VPSDE"

        def loss_fn(model, batch):
            labels = torch.randint(0, vpsde.N, (batch.shape[0],), device=batch.device)
            scale = vpsde.sqrt_alphas_cumprod.to(batch.device)
            noise = torch.randn_like(batch)
            return torch.mean(torch.square(model(scale[labels, None] * batch + noise) - noise))

        return loss_fn


    def get_step_fn(sde):
        if isinstance(sde, VESDE):
            loss_fn = get_smld_loss_fn(sde)
        else:
            loss_fn = get_ddpm_loss_fn(sde)

        def step_fn(state, batch):
            optimizer = state["optimizer"]
            optimizer.zero_grad()
            loss = loss_fn(state["model"], batch)
            loss.backward()
            optimizer.step()
            return loss

        return step_fn
""")

RUN_LIB = textwrap.dedent("""\
    import torch
    import losses
    import sde_lib


    def train(model, train_iter, n_iters):
        model = model.to("cuda")
        optimizer = torch.optim.Adam(model.parameters())
        state = dict(optimizer=optimizer, model=model)
        sde = sde_lib.VPSDE()
        train_step_fn = losses.get_step_fn(sde)
        for step in range(n_iters):
            batch = torch.from_numpy(next(train_iter)).to("cuda")
            loss = train_step_fn(state, batch)
            print(loss.item())
""")


def _project(tmp_path, run_lib=RUN_LIB, losses=LOSSES, sde_lib=SDE_LIB):
    return write_project(tmp_path / "p", {"sde_lib.py": sde_lib, "losses.py": losses, "run_lib.py": run_lib})


def test_step_closure_makes_the_loop_a_step_loop(tmp_path):
    # one fixed batch: only the closure's training step makes the loop a step loop
    fixed = RUN_LIB.replace('        batch = torch.from_numpy(next(train_iter)).to("cuda")\n', "").replace(
        "    for step in range(n_iters):\n", '    batch = torch.from_numpy(next(train_iter)).to("cuda")\n'
        "    for step in range(n_iters):\n")
    assert fixed != RUN_LIB
    findings = found(check(_project(tmp_path, run_lib=fixed)))
    assert ("run_lib.py", 15, "GPU101") in findings  # `loss.item()` every step of the closure's loop


def test_host_schedule_copied_in_a_loss_closure_is_reported(tmp_path):
    results = check(_project(tmp_path))
    assert ("losses.py", 23, "GPU203") in found(results)
    message = next(r["message"] for r in results if r["code"] == "GPU203" and r["location"]["row"] == 23)
    assert "`vpsde.sqrt_alphas_cumprod` is a tensor its class builds on the host" in message
    assert "train_step_fn(...)" in message


def test_host_tensor_the_factory_built_and_its_closure_copies(tmp_path):
    results = check(_project(tmp_path))
    assert ("losses.py", 11, "GPU203") in found(results)
    message = next(r["message"] for r in results if r["code"] == "GPU203" and r["location"]["row"] == 11)
    assert "`sigmas_desc` is a host tensor the enclosing factory built once" in message


def test_closure_called_periodically_is_quiet(tmp_path):
    periodic = RUN_LIB.replace("        loss = train_step_fn(state, batch)\n        print(loss.item())\n",
                               "        if step % 100 == 0:\n            loss = train_step_fn(state, batch)\n"
                               "        model(batch).sum().backward()\n")
    assert periodic != RUN_LIB
    findings = found(check(_project(tmp_path, run_lib=periodic)))
    assert not any(f[0] == "losses.py" and f[2] == "GPU203" for f in findings)


def test_closure_nobody_calls_in_a_loop_is_quiet(tmp_path):
    once = RUN_LIB.replace("        loss = train_step_fn(state, batch)\n        print(loss.item())\n",
                           "        model(batch).sum().backward()\n    train_step_fn(state, batch)\n")
    assert once != RUN_LIB
    findings = found(check(_project(tmp_path, run_lib=once)))
    assert not any(f[0] == "losses.py" for f in findings)


def test_schedule_built_on_the_device_is_quiet(tmp_path):
    on_device = SDE_LIB.replace("torch.linspace(beta_min / N, beta_max / N, N)",
                                "torch.linspace(beta_min / N, beta_max / N, N, device='cuda')")
    assert on_device != SDE_LIB
    findings = found(check(_project(tmp_path, sde_lib=on_device)))
    assert ("losses.py", 23, "GPU203") not in findings


def test_attribute_of_an_unknown_object_is_quiet(tmp_path):
    unknown = LOSSES.replace('    assert isinstance(vpsde, VPSDE), "DDPM training needs a VPSDE"\n', "")
    unknown = unknown.replace('    assert isinstance(vesde, VESDE), "SMLD training needs a VESDE"\n', "")
    unknown = unknown.replace("    if isinstance(sde, VESDE):\n        loss_fn = get_smld_loss_fn(sde)\n"
                              "    else:\n        loss_fn = get_ddpm_loss_fn(sde)\n",
                              "    loss_fn = get_ddpm_loss_fn(sde.inner)\n")
    assert unknown.count("isinstance") == 0
    findings = found(check(_project(tmp_path, losses=unknown)))
    assert not any(f[0] == "losses.py" and f[2] == "GPU203" for f in findings)


SAMPLING = textwrap.dedent("""\
    import functools
    import torch


    def shared_update_fn(x, t, sde, model):
        score = model(x, t)
        scale = torch.norm(score).item()
        return x + sde.dt * score / scale


    def get_sampler(sde, shape, device="cuda"):
        update_fn = functools.partial(shared_update_fn, sde=sde)

        def sampler(model):
            with torch.no_grad():
                x = torch.randn(shape, device=device)
                timesteps = torch.linspace(1.0, 1e-3, sde.N, device=device)
                for i in range(sde.N):
                    vec_t = torch.ones(shape[0], device=device) * timesteps[i]
                    x = update_fn(x, vec_t, model=model)
                return x

        return sampler
""")

SAMPLE_SCRIPT = textwrap.dedent("""\
    import torch
    import sampling
    from net import ScoreNet


    def main(sde):
        model = ScoreNet().to("cuda")
        sampler = sampling.get_sampler(sde, (8, 3, 32, 32))
        return sampler(model)
""")

NET = textwrap.dedent("""\
    import torch


    class ScoreNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)

        def forward(self, x, t):
            return self.conv(x)
""")


def test_sampler_loop_through_a_partial_update_function(tmp_path):
    root = write_project(tmp_path / "p", {"sampling.py": SAMPLING, "sample.py": SAMPLE_SCRIPT, "net.py": NET})
    assert ("sampling.py", 7, "GPU101") in found(check(root))


def test_sampler_loop_whose_result_is_not_fed_back_is_quiet(tmp_path):
    unfed = SAMPLING.replace("                x = update_fn(x, vec_t, model=model)\n",
                             "                y = update_fn(x, vec_t, model=model)\n")
    assert unfed != SAMPLING
    root = write_project(tmp_path / "p", {"sampling.py": unfed, "sample.py": SAMPLE_SCRIPT, "net.py": NET})
    assert ("sampling.py", 7, "GPU101") not in found(check(root))
