"""A value moved to a device and then called is a module (thirty-fourth landing; StyleGAN's
`G = legacy.load_network_pkl(f)['G_ema'].to(device)`, then `img = G(z, label)`): a tensor is not callable, so the
call is a forward pass. GPU403 then knows the forward it would wrap in autocast and offers its fix; a loaded value
that is never moved stays unknown (no fix)."""

from __future__ import annotations

from projects import check, write_project

TRAIN = """\
    import pickle

    import torch


    def main(path):
        device = torch.device("cuda")
        with open(path, "rb") as f:
            G = pickle.load(f)["G_ema"].to(device)
        opt = torch.optim.Adam(G.parameters(), lr=1e-4, fused=True)
        for step in range(100000):
            z = torch.randn(32, 512, device=device)
            img = G(z)
            loss = img.square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def _autocast(tmp_path, text):
    write_project(tmp_path, {"train.py": text}, dedent=True)
    return [d for d in check(tmp_path, "--no-cache", "--exit-zero", "--select", "GPU403", ".")
            if d["location"]["row"] == 13]


def test_a_value_moved_to_the_device_and_called_is_a_forward_pass(tmp_path):
    found = _autocast(tmp_path, TRAIN)
    assert found and found[0]["fix"] is not None, found


def test_a_loaded_value_never_moved_is_not_known_to_be_a_module(tmp_path):
    found = _autocast(tmp_path, TRAIN.replace('pickle.load(f)["G_ema"].to(device)', 'pickle.load(f)["G_ema"]'))
    assert not found or found[0]["fix"] is None, found
