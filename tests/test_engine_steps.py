"""Functions an engine library runs once per batch (analysis/engine_steps.py): PyTorch-Ignite's process function
(`Engine(update)`) and its per-iteration event handlers, torchnet's network closure (`engine.train(h, ...)`) and
per-batch hooks. The module has no loop of its own; the library's loop makes the handed function per-step code.
Handlers that run every N iterations, once per epoch or once per run are not per-step, and a project's own
`Engine`/`Events` are not the library's."""

from __future__ import annotations

from projects import check, write_project

IGNITE = """\
    import torch
    from torch.utils.data import DataLoader
    from ignite.engine import Engine, Events


    def run(model, criterion, train_ds, device="cuda"):
        loader = DataLoader(train_ds, batch_size=64, shuffle=True, pin_memory=True)
        model = model.to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)

        def update(engine, batch):
            x, y = batch[0].to(device, non_blocking=True), batch[1].to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()

        trainer = Engine(update)

        @trainer.on(Events.ITERATION_COMPLETED)
        def log_every_step(engine):
            print(model.weight.norm().item())

        @trainer.on(Events.ITERATION_COMPLETED(every=100))
        def log_now_and_then(engine):
            print(model.weight.sum().item())

        @trainer.on(Events.EPOCH_COMPLETED)
        def log_epoch(engine):
            print(model.weight.mean().item())

        def track(engine):
            print(model.weight.max().item())

        trainer.add_event_handler(Events.ITERATION_COMPLETED | Events.COMPLETED, track)
        trainer.run(loader, max_epochs=10)
"""


def _lines(tmp_path, text, *select):
    write_project(tmp_path, {"train.py": text}, dedent=True)
    found = check(tmp_path, "--no-cache", "--exit-zero", *(("--select", *select) if select else ()), ".")
    return sorted({(d["location"]["row"], d["code"]) for d in found})


def test_the_process_function_and_per_iteration_handlers_are_per_step_code(tmp_path):
    found = _lines(tmp_path, IGNITE, "GPU101")
    # `return loss.item()` in `update`, the two handlers of ITERATION_COMPLETED; not the every-100, not the epoch
    assert found == [(17, "GPU101"), (23, "GPU101"), (34, "GPU101")], found


def test_the_finding_names_the_registration_that_runs_it(tmp_path):
    write_project(tmp_path, {"train.py": IGNITE}, dedent=True)
    found = [d for d in check(tmp_path, "--no-cache", "--exit-zero", "--select", "GPU101", ".")
             if d["location"]["row"] == 17]
    assert "`Engine(update)` runs every step" in found[0]["message"], found


def test_periodic_handlers_are_reported_as_periodic_when_asked(tmp_path):
    write_project(tmp_path, {"train.py": IGNITE}, dedent=True)
    found = check(tmp_path, "--no-cache", "--exit-zero", "--select", "GPU101", "--report-periodic", ".")
    periodic = {d["location"]["row"]: d["message"] for d in found if "runs periodically" in d["message"]}
    assert set(periodic) == {27, 31}, periodic
    assert "every=100" in periodic[27] and "once per epoch" in periodic[31], periodic


def test_a_project_engine_of_the_same_name_is_not_the_library(tmp_path):
    text = IGNITE.replace("from ignite.engine import Engine, Events", "from mylib import Engine, Events")
    assert _lines(tmp_path, text, "GPU101") == []


def test_a_handler_that_runs_once_is_not_per_step(tmp_path):
    text = IGNITE.replace("Events.ITERATION_COMPLETED)\n", "Events.ITERATION_COMPLETED(once=1))\n", 1)
    assert _lines(tmp_path, text, "GPU101") == [(17, "GPU101"), (34, "GPU101")]


def test_a_training_step_run_by_the_engine_is_a_training_step(tmp_path):
    # fp32 forward and loss of a CUDA training step, run by the engine every batch (no loop in the module)
    assert (14, "GPU403") in _lines(tmp_path, IGNITE, "GPU403")


TORCHNET = """\
    import torch
    import torchnet as tnt
    from torchnet.engine import Engine
    from torch.utils.data import DataLoader


    def main(model, ds):
        model = model.cuda()
        meter_loss = tnt.meter.AverageValueMeter()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)

        def h(sample):
            y = model(sample[0].cuda(non_blocking=True))
            return torch.nn.functional.cross_entropy(y, sample[1].cuda(non_blocking=True)), y

        def on_forward(state):
            meter_loss.add(state['loss'].item())

        def on_end_epoch(state):
            print(state['loss'].item())

        engine = Engine()
        engine.hooks['on_forward'] = on_forward
        engine.hooks['on_end_epoch'] = on_end_epoch
        loader = DataLoader(ds, batch_size=128, shuffle=True, num_workers=4, pin_memory=True)
        engine.train(h, loader, maxepoch=10, optimizer=optimizer)
"""


def test_torchnet_hooks_run_per_batch_or_per_epoch(tmp_path):
    assert _lines(tmp_path, TORCHNET, "GPU101") == [(17, "GPU101")]


def test_torchnet_network_closure_runs_every_batch(tmp_path):
    text = TORCHNET.replace("            return torch.nn", "            print(y.sum().item())\n            return torch.nn")
    assert (14, "GPU101") in _lines(tmp_path, text, "GPU101")


def test_hooks_of_a_dict_that_is_not_a_torchnet_engine_are_not_per_step(tmp_path):
    text = TORCHNET.replace("engine = Engine()", "engine = object()")
    assert _lines(tmp_path, text, "GPU101") == []
