"""Project helpers that copy a host (numpy) array to the device on every call, reported at the per-step call
(gpulint/analysis/host_copies.py `host_copy`, GPU410; heldout10's tianshou `to_torch_as`, heldout8's SB3 `obs_as_tensor`).

A replay buffer kept in numpy is converted batch by batch in a helper module: `torch.from_numpy(x)` then
`x.to(device)`, or `torch.as_tensor(obs, device=device)` of an `np.ndarray` parameter. The step loop calls the
helper every iteration: each call is a blocking copy from pageable memory, reported at the call with the copy as
related location. A helper called with its device left at `"cpu"`, a copy to `"cpu"`, a call under a periodic
guard and a helper that never copies stay quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

CONVERT = textwrap.dedent("""\
    import numpy as np
    import torch


    def to_tensor(x, dtype=None, device="cpu"):
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(x)
            if dtype is not None:
                x = x.type(dtype)
            return x.to(device)
        return torch.as_tensor(x)


    def to_tensor_like(x, y):
        return to_tensor(x, dtype=y.dtype, device=y.device)


    def obs_tensor(obs: np.ndarray, device):
        return torch.as_tensor(obs, device=device)


    def to_host(x: np.ndarray):
        return torch.as_tensor(x, device="cpu")


    def evaluate(model, clips, device):
        for clip in clips:
            model(torch.from_numpy(clip).to(device))


    class Backend(torch.nn.Module):
        def forward(self, im):
            out = self.session.run(im)
            return to_tensor(out, device=im.device)


    _FILTERS = {}


    def filtered(x, bank: np.ndarray):
        if x.device not in _FILTERS:
            _FILTERS[x.device] = torch.from_numpy(bank).to(x.device)
        return x @ _FILTERS[x.device]


    def misfiled(x, bank: np.ndarray):
        if x.device not in _FILTERS:  # filled under another key below: the cache never hits
            _FILTERS[str(x.device) + "_bank"] = torch.from_numpy(bank).to(x.device)
        return x @ _FILTERS[str(x.device) + "_bank"]
""")

TRAIN = textwrap.dedent("""\
    import torch
    from convert import Backend, evaluate, filtered, misfiled, obs_tensor, to_host, to_tensor, to_tensor_like


    def train(model, buffer, opt, device):
        for step in range(10000):
            obs, returns = buffer.sample(64)
            q = model(obs_tensor(obs, device))
            target = to_tensor_like(returns, q)
            plain = to_tensor(returns)
            kept = to_host(returns)
            if step % 1000 == 0:
                print(to_tensor_like(returns, q).sum())
            smooth = filtered(q, returns)
            evaluate(model, obs, device)
            net = Backend()
            pred = net(q)
            again = misfiled(q, returns)
            loss = (q - target).pow(2).mean()
            loss.backward()
            opt.step()
""")


def _findings(tmp_path):
    items = check(write_project(tmp_path / "p", {"convert.py": CONVERT, "train.py": TRAIN}))
    return items, found(items)


def test_per_step_calls_of_copying_helpers_are_reported(tmp_path):
    items, findings = _findings(tmp_path)
    assert ("train.py", 8, "GPU410") in findings  # obs_tensor: as_tensor of an ndarray parameter, device given
    assert ("train.py", 9, "GPU410") in findings  # to_tensor_like -> to_tensor(..., device=y.device)
    item = next(d for d in items if d["location"]["row"] == 9 and d["code"] == "GPU410")
    assert "to_tensor" in item["message"]
    assert ("train.py", 18, "GPU410") in findings  # a cache tested under one key and filled under another


def test_host_targets_and_periodic_calls_stay_quiet(tmp_path):
    _, findings = _findings(tmp_path)
    assert ("train.py", 10, "GPU410") not in findings  # device left at its "cpu" default
    assert ("train.py", 11, "GPU410") not in findings  # a copy to "cpu"
    assert ("train.py", 13, "GPU410") not in findings  # every 1000 steps
    assert ("train.py", 14, "GPU410") not in findings  # the copy fills a cache once
    assert ("train.py", 15, "GPU410") not in findings  # copies inside the helper's own loop
    assert ("train.py", 17, "GPU410") not in findings  # a network's forward: model code, not a copying helper


def test_device_parameters_defaulting_to_none_or_cpu_count_only_where_passed(tmp_path):
    # the default is read as GPU112's summaries read it (host_copies._constant_default): None, "cpu" or
    # "cpu:0" by position or keyword-only; a call that leaves the device out keeps the copy on the host
    convert = textwrap.dedent("""\
        import torch


        def by_none(x, device=None):
            return torch.from_numpy(x).to(device)


        def by_keyword(x, *, device="cpu:0"):
            return torch.from_numpy(x).float().to(device)
    """)
    train = textwrap.dedent("""\
        from convert import by_keyword, by_none


        def train(model, buffer, opt, device):
            for step in range(10000):
                obs = buffer.sample(64)
                a = model(by_none(obs))
                b = model(by_none(obs, device))
                c = model(by_keyword(obs))
                d = model(by_keyword(obs, device=device))
                (a + b + c + d).sum().backward()
                opt.step()
    """)
    findings = found(check(write_project(tmp_path / "p", {"convert.py": convert, "train.py": train})))
    assert ("train.py", 7, "GPU410") not in findings and ("train.py", 9, "GPU410") not in findings
    assert ("train.py", 8, "GPU410") in findings and ("train.py", 10, "GPU410") in findings
