"""Sampler and solver loops (recall32): a loop whose body runs a network on the value it updates from what the
network returned (`denoised = net(x_hat, t_hat)`, `x_next = x_hat + (t_next - t_hat) * d_cur` with `d_cur` from
`denoised`) makes one network evaluation per sampling step, so it is a hot loop wherever its function is called
from (NVlabs/edm `edm_sampler`). The network is a module or a callable parameter of the sampler. A loop over a
handful of literal items, a loop binding the callee itself (`for blk in blocks: x = blk(x)`), a loop that runs
once, and a read of the final sample after the loop stay quiet. GPU106 also reports a chained comparison on a
device tensor (`S_min <= t_cur <= S_max` calls `bool()` on `S_min <= t_cur`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

SAMPLER = textwrap.dedent("""\
    import torch


    def sampler(net, latents, num_steps=18, s_min=0.0, s_max=80.0):
        steps = torch.linspace(80.0, 0.002, num_steps, dtype=torch.float64, device=latents.device)
        t_steps = torch.cat([steps, torch.zeros_like(steps[:1])])
        x_next = latents.to(torch.float64) * t_steps[0]
        for i, (t_cur, t_next) in enumerate(zip(t_steps[:-1], t_steps[1:])):
            x_cur = x_next
            gamma = 0.1 if s_min <= t_cur <= s_max else 0.0
            t_hat = t_cur + gamma * t_cur
            denoised = net(x_cur, t_hat).to(torch.float64)
            d_cur = (x_cur - denoised) / t_hat
            x_next = x_cur + (t_next - t_hat) * d_cur
            print(d_cur.abs().max().item())
        return x_next.cpu()
""")

MAIN = textwrap.dedent("""

    def main(net, batches):
        for latents in batches:
            images = sampler(net, latents.cuda())
""")


def _lint(tmp_path: Path, text: str) -> set:
    return found(check(write_project(tmp_path, {"gen.py": text}), "--no-cache", "."))


def test_a_sampler_loop_carrying_the_network_output_is_hot(tmp_path: Path):
    """Called once per batch by a script's loop (which alone would not make it hot: its function is called
    from a loop), the sampler's loop is still the step."""
    results = _lint(tmp_path, SAMPLER + MAIN)
    assert ("gen.py", 10, "GPU106") in results  # the chained comparison on a CUDA step value, every step
    assert ("gen.py", 15, "GPU101") in results  # a read every sampling step


def test_a_loop_generating_one_batch_per_iteration_is_per_item(tmp_path: Path):
    """`for latents in batches: images = sampler(net, latents)`: each iteration is a full sampling pass, so
    the sampler's copy of its result to the host (after its own loop) is paid once per generated batch; also
    through a name choosing between two samplers (`sampler_fn = a if c else b`)."""
    assert ("gen.py", 16, "GPU104") in _lint(tmp_path, SAMPLER + MAIN)
    chosen = SAMPLER + SAMPLER.replace("def sampler(", "def other_sampler(").split("import torch\n", 1)[1] + \
        MAIN.replace("images = sampler(net,", "sampler_fn = sampler if len(batches) > 2 else other_sampler\n"
                     "        images = sampler_fn(net,")
    assert ("gen.py", 16, "GPU104") in _lint(tmp_path / "chosen", chosen)


def test_the_final_sample_read_once_after_the_loop_stays_quiet(tmp_path: Path):
    """Not called from a loop: the sampler runs once, and its read of the final sample is paid once."""
    results = _lint(tmp_path, SAMPLER)
    assert ("gen.py", 15, "GPU101") in results
    assert not any(line == 16 for _, line, _ in results)


def test_a_module_method_run_on_the_updated_value_in_a_while_loop(tmp_path: Path):
    """`x = x - lr * model.velocity(x)` with `model` a module built in the function, in a `while` loop."""
    text = textwrap.dedent("""\
        import torch


        class Flow(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)

            def velocity(self, x):
                return self.lin(x)


        def solve(x, tol):
            model = Flow().cuda()
            err = 1.0
            while err > tol:
                update = model.velocity(x)
                x = x - 0.1 * update
                err = update.norm().item()
            return x
    """)
    assert ("gen.py", 19, "GPU101") in _lint(tmp_path, text)


def test_a_loop_over_blocks_applying_each_is_not_a_sampler(tmp_path: Path):
    text = textwrap.dedent("""\
        import torch


        def run(blocks, x):
            for blk in blocks:
                x = blk(x)
                print(x.mean().item())
            return x
    """)
    assert ("gen.py", 7, "GPU101") not in _lint(tmp_path, text)


def test_a_warm_up_and_a_loop_that_runs_once_stay_quiet(tmp_path: Path):
    text = textwrap.dedent("""\
        import torch


        def warm_up(net, x):
            for _ in range(3):
                x = net(x)
                print(x.mean().item())
            return x


        def probe(net, x, steps):
            for _ in range(steps):
                x = net(x)
                print(x.mean().item())
                break
            return x
    """)
    results = _lint(tmp_path, text)
    assert ("gen.py", 7, "GPU101") not in results
    assert ("gen.py", 14, "GPU101") not in results


def test_a_network_called_on_a_fresh_value_each_iteration_is_not_a_sampler(tmp_path: Path):
    """No loop-carried value: `net(x0, t)` on the same input each iteration is no sampling chain (kept as it
    was: such a loop is judged by the other mechanisms)."""
    text = textwrap.dedent("""\
        import torch


        def sweep(net, x0, scales):
            for s in scales:
                y = net(x0, s)
                print(y.mean().item())
    """)
    assert ("gen.py", 7, "GPU101") not in _lint(tmp_path, text)


def test_a_chained_comparison_of_host_numbers_is_not_reported(tmp_path: Path):
    text = SAMPLER.replace("if s_min <= t_cur <= s_max", "if s_min <= i <= s_max")
    assert text != SAMPLER
    assert ("gen.py", 10, "GPU106") not in _lint(tmp_path, text)


def test_seeds_split_on_the_host_and_formatted_per_image_are_no_device_read(tmp_path: Path):
    """`torch.as_tensor(seeds).tensor_split(n)` is built in host memory, and so is each seed of `zip(batch_seeds,
    images_np)`: formatting it into a file name in the per-batch loop reads no device value (EDM's PNG names)."""
    text = SAMPLER + textwrap.dedent("""\


        def main(net, seeds, n):
            rank_batches = torch.as_tensor(seeds).tensor_split(n)
            for batch_seeds in rank_batches:
                latents = torch.randn(len(batch_seeds), 4, device="cuda")
                images = sampler(net, latents)
                images_np = images.numpy()
                for seed, image_np in zip(batch_seeds, images_np):
                    print(f"{seed:06d}.png", image_np.shape)
    """)
    results = _lint(tmp_path, text)
    assert ("gen.py", 16, "GPU104") in results  # the loop is per-item
    assert ("gen.py", 26, "GPU107") not in results


def test_an_epoch_loop_calling_an_evaluation_over_its_data_is_not_per_item(tmp_path: Path):
    """`evaluate(model, sequences)` carries a state through the model over the sequences it is given: a pass
    over data, so the epoch loop calling it reads its result once per epoch, not once per generated batch."""
    text = textwrap.dedent("""\
        import torch


        def evaluate(model, sequences):
            h = None
            for x in sequences:
                h = model(x, h)
            return h


        def main(model, seqs, epochs):
            model = model.cuda()
            for epoch in range(epochs):
                h = evaluate(model, seqs)
                print(h.norm().item())
    """)
    assert ("gen.py", 15, "GPU101") not in _lint(tmp_path, text)


def test_a_tokenizer_parameter_is_no_network(tmp_path: Path):
    """`tokenizer(batch_prompts, return_tensors="pt")` is a callable parameter given text: no network, so a
    batch loop re-tokenizing prompts it decoded on a previous iteration is no sampler loop."""
    text = textwrap.dedent("""\
        import torch


        def complete(tokenizer, prompts, rounds):
            batch_prompts = prompts
            for _ in rounds:
                tokens = tokenizer(batch_prompts, return_tensors="pt")
                ids = tokens.input_ids.cuda()
                batch_prompts = tokenizer.batch_decode(ids)
                print(ids.sum().item())


        def main(tokenizer, prompt_sets):
            for prompts in prompt_sets:
                complete(tokenizer, prompts, "abcdefghijklmnop")
    """)
    assert ("gen.py", 10, "GPU101") not in _lint(tmp_path, text)


EVALUATE = textwrap.dedent("""\
    import torch


    def run(images, labels, compute_loss=None):
        model = torch.nn.Conv2d(3, 3, 1).cuda()
        loss = torch.zeros(3, device="cuda")
        for i in range(len(images)):
            im = images[i].cuda()
            train_out = model(im)
            if compute_loss:
                loss += compute_loss(train_out, labels[i])[1]
        return (loss.cpu() / 10).tolist()


    def main(images, labels, weights):
        for w in weights:
            run(images, labels)
""")


def test_a_loss_applied_to_this_iterations_output_is_no_carried_state(tmp_path: Path):
    """yolov5's `val.run`: `loss += compute_loss(train_out, targets)` after `preds, train_out = model(im)` calls a
    callable parameter on the network's result of the same iteration; nothing the network returned feeds the next
    iteration's network call, so `run` is an evaluation, not a sampler: the loop over weight files calling it
    stays an outer loop and the read after its batch loop (once per evaluation) stays quiet."""
    assert not any(row == 12 for _, row, _ in _lint(tmp_path, EVALUATE))
