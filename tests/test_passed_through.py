"""Objects reassigned through calls that hand back their argument keep their class (issue 11, recall):
`model = load_model(h)` then `model = apply_gradient_allreduce(model)`, `model, optimizer =
amp.initialize(model, optimizer)`, `model, optimizer, lr = load_checkpoint(path, model, optimizer)`,
`model = DDP(model)`: a method the model's class defines is still resolved every step (GPU112 at the call, the
read inside it as per-step model code), the optimizer over its parameters is still over CUDA parameters (GPU402),
and a function receiving the reassigned model as a parameter still knows its class.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

DIST = textwrap.dedent("""\
    def apply_gradient_allreduce(module):
        for p in module.parameters():
            p.register_hook(lambda *unused: None)
        return module


    def warm_start_model(path, model, ignore_layers):
        model.load_state_dict(path)
        return model


    def load_checkpoint(path, model, optimizer):
        learning_rate = 1e-3
        return model, optimizer, learning_rate, 0


    def rebuild(path, model):
        return type(model)()
""")

MODEL = textwrap.dedent("""\
    import torch
    from torch import nn
    from dist import apply_gradient_allreduce


    class Tacotron(nn.Module):
        def parse_batch(self, batch):
            x, lengths = batch
            lengths = lengths.cuda()
            max_len = torch.max(lengths).item()
            return x.cuda(), max_len


    def load_model(hparams):
        model = Tacotron().cuda()
        if hparams.distributed_run:
            model = apply_gradient_allreduce(model)
        return model
""")

TRAIN = textwrap.dedent("""\
    import torch
    from model import load_model
    from dist import apply_gradient_allreduce, warm_start_model, load_checkpoint, rebuild


    def validate(model, loader):
        for batch in loader:
            x, n = model.parse_batch(batch)
            print(model(x).sum())


    def train(hparams, loader, path):
        torch.cuda.manual_seed(0)
        model = load_model(hparams)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        if hparams.fp16_run:
            from apex import amp
            model, optimizer = amp.initialize(model, optimizer, opt_level="O2")
        if hparams.distributed_run:
            model = apply_gradient_allreduce(model)
        if path is not None:
            if hparams.warm_start:
                model = warm_start_model(path, model, [])
            else:
                model, optimizer, lr, iteration = load_checkpoint(path, model, optimizer)
        for batch in loader:
            x, n = model.parse_batch(batch)
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            validate(model, loader)
""")

SINK = ("model.py", 10, "GPU101")  # `.item()` in parse_batch, run every step
CALL = ("train.py", 27, "GPU112")  # `model.parse_batch(batch)` in the training loop
VALIDATION_CALL = ("train.py", 8, "GPU112")  # the same call in `validate(model, loader)`
ADAM = ("train.py", 15, "GPU402")  # Adam over the CUDA model's parameters, not fused


def _project(root: Path, dist: str = DIST, model: str = MODEL, train: str = TRAIN) -> Path:
    return write_project(root, {"dist.py": dist, "model.py": model, "train.py": train})


def test_reassignments_through_functions_that_return_their_argument_keep_the_class(tmp_path: Path):
    results = found(check(_project(tmp_path), "--no-cache", "."))
    assert {SINK, CALL, VALIDATION_CALL, ADAM} <= results


def test_the_model_file_named_alone_finds_its_per_step_caller(tmp_path: Path):
    assert SINK in found(check(_project(tmp_path), "--no-cache", "model.py"))


def test_library_wrappers_keep_the_class(tmp_path: Path):
    train = TRAIN.replace("model = apply_gradient_allreduce(model)",
                          "model = torch.nn.parallel.DistributedDataParallel(model)")
    assert {CALL, ADAM} <= found(check(_project(tmp_path, train=train), "--no-cache", "."))


def test_a_function_returning_something_else_makes_the_class_unknown(tmp_path: Path):
    """`rebuild(path, model)` returns a new object: nothing is known of it, so nothing is reported."""
    train = TRAIN.replace("model = warm_start_model(path, model, [])", "model = rebuild(path, model)")
    results = found(check(_project(tmp_path, train=train), "--no-cache", "."))
    assert CALL not in results and VALIDATION_CALL not in results


def test_a_function_returning_its_argument_only_on_some_paths_is_not_a_pass_through(tmp_path: Path):
    dist = DIST.replace("    model.load_state_dict(path)\n    return model",
                        "    if path:\n        return model\n    return make_model()")
    assert dist != DIST
    results = found(check(_project(tmp_path, dist=dist), "--no-cache", "."))
    assert CALL not in results


def test_a_factory_that_wraps_its_cuda_model_still_returns_a_cuda_model(tmp_path: Path):
    """`load_model` moves the model to CUDA, then maybe wraps it: GPU402 needs the model on CUDA. Without the
    distributed wrap in `train`, only the factory's own wrap is in the way."""
    train = TRAIN.replace("    if hparams.distributed_run:\n        model = apply_gradient_allreduce(model)\n", "")
    assert train != TRAIN
    assert ADAM in found(check(_project(tmp_path, train=train), "--no-cache", "."))


def test_a_name_rebound_through_its_own_method_is_still_analysed(tmp_path: Path):
    """`y = y.unsqueeze(1)`: resolving what `y.unsqueeze` hands back asks what `y` holds, which asks about the
    same call again; the question ends (no recursion error), and GPU112 still reports the helper call."""
    dist = DIST + textwrap.dedent("""\


        def loss_of(real, fake):
            return real.mean().item() + fake.mean().item()
    """)
    train = TRAIN.replace("        loss = model(x).sum()\n",
                          "        loss = model(x).sum()\n        loss = loss.unsqueeze(0)\n"
                          "        loss = loss.squeeze(0)\n        total = loss_of(loss, loss)\n").replace(
        "from dist import apply_gradient_allreduce,", "from dist import loss_of, apply_gradient_allreduce,")
    assert train.count("loss_of") == 2
    out = check(_project(tmp_path, dist=dist, train=train), "--no-cache", ".")
    assert ("train.py", 31, "GPU112") in found(out)


RF = textwrap.dedent("""\
    import torch


    class RF(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x, cond):
            out = self.model(x, cond)
            per_sample = ((out - x) ** 2).mean(dim=1)
            values = per_sample.detach().cpu().tolist()
            return per_sample.mean(), values
""")

DEEPSPEED_TRAIN = textwrap.dedent("""\
    import deepspeed
    from rf import RF


    def main(args, net, loader, ds_config):
        rf = RF(net)
        engine, optimizer, _, scheduler = deepspeed.initialize(
            args=args, model=rf, model_parameters=rf.parameters(), config=ds_config)
        for x, cond in loader:
            x = x.to(engine.device)
            loss, values = engine(x, cond)
            engine.backward(loss)
            engine.step()
""")

RF_SINK = ("rf.py", 12, "GPU104")  # `.cpu()` in `RF.forward`, which the engine runs every step
ENGINE_CALL = ("train.py", 11, "GPU112")  # `engine(x, cond)`: the engine's call runs `RF.forward`


def test_a_deepspeed_engine_runs_the_forward_of_the_model_it_wraps(tmp_path: Path):
    """`deepspeed.initialize(model=rf, ...)` returns the engine first; calling the engine runs `RF.forward`
    (libraries.HANDS_BACK), so its host copy is per-step model code, reported in the model's module too when that
    module is named alone (as pre-commit does)."""
    root = write_project(tmp_path, {"rf.py": RF, "train.py": DEEPSPEED_TRAIN})
    assert {RF_SINK, ENGINE_CALL} <= found(check(root, "--no-cache", "."))
    assert RF_SINK in found(check(root, "--no-cache", "rf.py"))


def test_only_the_engine_of_deepspeed_initialize_wraps_the_model(tmp_path: Path):
    """The other elements (the optimizer, the loader, the scheduler) are new objects: calling one runs nothing
    of the model's."""
    train = DEEPSPEED_TRAIN.replace("engine, optimizer, _, scheduler =", "optimizer, engine, _, scheduler =")
    assert train != DEEPSPEED_TRAIN
    results = found(check(write_project(tmp_path, {"rf.py": RF, "train.py": train}), "--no-cache", "."))
    assert RF_SINK not in results and ENGINE_CALL not in results
