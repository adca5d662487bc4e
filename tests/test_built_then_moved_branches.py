"""GPU203's built-then-moved shape through a CUDA branch and a name drawn twice per step (heldout33a's wgan-gp:
`noise = torch.randn(B, 128)`, then `if use_cuda: noise = noise.cuda(gpu)`, once for the critic and once for the
generator). The read in the branch sees the draw just before it alone; the finding carries no fix there (building
the tensor on the device would skip the branch's test)."""

from __future__ import annotations

from projects import check, write_project

TRAIN = """\
    import torch

    use_cuda = torch.cuda.is_available()
    netD, netG = Critic(), Gen()
    if use_cuda:
        netD, netG = netD.cuda(), netG.cuda()
    optD = torch.optim.Adam(netD.parameters(), fused=True)
    optG = torch.optim.Adam(netG.parameters(), fused=True)
    for it in range(100000):
        for _ in range(5):
            noise = torch.randn(64, 128)
            if use_cuda:
                noise = noise.cuda()
            netD(netG(noise).detach()).mean().backward()
            optD.step()
        noise = torch.randn(64, 128)
        if use_cuda:
            noise = noise.cuda()
        netD(netG(noise)).mean().backward()
        optG.step()
"""


def _found(tmp_path, text):
    write_project(tmp_path, {"train.py": text}, dedent=True)
    return check(tmp_path, "--no-cache", "--exit-zero", "--select", "GPU203", ".")


def test_each_draw_moved_under_a_cuda_branch_is_reported_without_a_fix(tmp_path):
    found = _found(tmp_path, TRAIN)
    assert sorted(d["location"]["row"] for d in found) == [13, 18], found
    assert all(d["fix"] is None for d in found), found


def test_a_draw_read_on_the_host_before_its_copy_belongs_there(tmp_path):
    text = TRAIN.replace("            if use_cuda:\n                noise = noise.cuda()\n",
                         "            stats.append(noise.std())\n            if use_cuda:\n"
                         "                noise = noise.cuda()\n")
    assert sorted(d["location"]["row"] for d in _found(tmp_path, text)) == [19]


def test_without_the_branch_the_fix_builds_it_on_the_device(tmp_path):
    text = TRAIN.replace("        if use_cuda:\n            noise = noise.cuda()\n", "        noise = noise.cuda()\n")
    found = [d for d in _found(tmp_path, text) if d["location"]["row"] == 17]
    assert found and found[0]["fix"] is not None, found


def test_a_copy_in_an_elif_branch_is_no_internal_error():
    from gpulint.runner import lint_source

    text = (
        "import torch\n"
        "model = Net().cuda()\n"
        "for x in loader:\n"
        "    t = torch.rand(4)\n"
        "    if mode == 'a':\n"
        "        pass\n"
        "    elif torch.cuda.is_available():\n"
        "        t = t.cuda()\n"
        "    model(x.cuda(), t).sum().backward()\n")
    result = lint_source(text, "train.py", frozenset({"GPU203"}))
    assert result.errors == []


SCRIPT_LEVEL = """\
    import torch

    use_cuda = torch.cuda.is_available()
    netD = Critic()
    if use_cuda:
        netD = netD.cuda()
    optD = torch.optim.Adam(netD.parameters(), fused=True)
    data = inf_train_gen()
    for it in range(100000):
        _data = next(data)
        real_data = torch.Tensor(_data)
        if use_cuda:
            real_data = real_data.cuda()
        netD(real_data).mean().backward()
        optD.step()
"""


def test_a_legacy_constructor_of_host_data_at_a_scripts_top_level_is_reported(tmp_path):
    # the loop at the module's top level (no function around it): built every step all the same
    found = _found(tmp_path, SCRIPT_LEVEL)
    assert [d["location"]["row"] for d in found] == [13], found
    assert "from host data" in found[0]["message"] and found[0]["fix"] is None, found


PENALTY = """\
    import torch

    use_cuda = torch.cuda.is_available()
    netD = Critic().cuda()
    optD = torch.optim.Adam(netD.parameters(), fused=True)


    def calc_gradient_penalty(netD, real_data, fake_data):
        alpha = torch.rand(64, 1)
        alpha = alpha.expand(real_data.size())
        alpha = {copy}
        interpolates = alpha * real_data + ((1 - alpha) * fake_data)
        return netD(interpolates).mean()


    for it in range(100000):
        real = next(data).cuda()
        (netD(real).mean() + calc_gradient_penalty(netD, real, real)).backward()
        optD.step()
"""


def test_a_draw_rebound_by_a_view_then_copied_is_the_draw_copied(tmp_path):
    # `alpha = torch.rand(...)`, `alpha = alpha.expand(...)`, `alpha = alpha.cuda() if use_cuda else alpha`: the
    # copy reads the view of the draw; the else branch runs only without a GPU
    found = _found(tmp_path, PENALTY.format(copy="alpha.cuda() if use_cuda else alpha"))
    assert [d["location"]["row"] for d in found] == [11] and found[0]["fix"] is None, found
    fixed = _found(tmp_path / "plain", PENALTY.format(copy="alpha.cuda()"))
    assert [d["location"]["row"] for d in fixed] == [11] and fixed[0]["fix"] is not None, fixed


def test_a_view_read_on_the_host_keeps_the_draw_there(tmp_path):
    text = PENALTY.format(copy="alpha.cuda()").replace(
        "        alpha = alpha.expand(real_data.size())\n",
        "        alpha = alpha.expand(real_data.size())\n        print(alpha.sum())\n")
    assert _found(tmp_path, text) == []


def test_a_like_factory_of_a_tensor_of_unknown_place_is_not_a_host_draw(tmp_path):
    # `O = torch.zeros_like(Q)` is built where `Q` lives (a forward's argument: the GPU); `.to('cuda')` copies
    # nothing there. `l = torch.zeros(...)` is on the host and is copied every forward.
    text = """\
    import torch


    class FlashAttention(torch.nn.Module):
        def forward(self, Q):
            O = torch.zeros_like(Q, requires_grad=True)
            l = torch.zeros(Q.shape[:-1])[..., None]
            O = O.to(device='cuda')
            l = l.to(device='cuda')
            return O + l


    attn = FlashAttention().cuda()
    opt = torch.optim.Adam(attn.parameters(), fused=True)
    for x in loader:
        attn(x.cuda(non_blocking=True)).sum().backward()
        opt.step()
"""
    assert [d["location"]["row"] for d in _found(tmp_path, text)] == [9]
