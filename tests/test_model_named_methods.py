"""A runner method named like a model is a function, not a forward pass (issue 11, precision): LAVIS's
`RunnerBase.train` loops over epochs, hands each epoch to `self.train_epoch(epoch)` (which hands the loader to a task
object of another module) and saves a checkpoint through `self._save_checkpoint(epoch)`, whose first line is
`model_no_ddp = self.unwrap_dist_model(self.model)`. The kinds go by name (`..._model` is a module), so that call
read as a forward pass, the checkpoint helper as a training step and the epoch loop as a step loop: its
`dist.barrier()` was reported as a per-step sync. The method's own body decides whether it trains.
"""

from __future__ import annotations

from pathlib import Path

from projects import lint_files

RUNNER = """\
    import torch
    import torch.distributed as dist


    class Runner:
        def __init__(self, model, task, loader, optimizer, max_epoch):
            self.model = model.cuda()
            self.task = task
            self.loader = loader
            self.optimizer = optimizer
            self.max_epoch = max_epoch

        def unwrap_dist_model(self, model):
            return model.module if hasattr(model, "module") else model

        def train(self):
            for cur_epoch in range(self.max_epoch):
                self.train_epoch(cur_epoch)
                self._save_checkpoint(cur_epoch)
                dist.barrier()

        def train_epoch(self, epoch):
            self.model.train()
            return self.task.train_epoch(epoch=epoch, model=self.model, data_loader=self.loader,
                                         optimizer=self.optimizer)

        def _save_checkpoint(self, cur_epoch):
            model_no_ddp = self.unwrap_dist_model(self.model)
            torch.save({"model": model_no_ddp.state_dict(), "epoch": cur_epoch}, f"checkpoint_{cur_epoch}.pth")
"""


def test_a_barrier_in_an_epoch_loop_around_a_checkpoint_helper_is_not_per_step(tmp_path: Path):
    assert ("runner.py", 20, "GPU112") not in lint_files(tmp_path, {"runner.py": RUNNER})


def test_a_model_named_method_that_runs_the_network_still_makes_a_step(tmp_path: Path):
    """The same loop whose method of that name runs the network on a batch (`self.run_model(batch)` returning
    `self.model(batch)`, then `.backward()`): one step per iteration, the barrier after it is per step."""
    step = ("                batch = next(self.loader)\n"
            "                loss = self.run_model(batch)\n"
            "                loss.backward()\n")
    runner = RUNNER.replace("                self.train_epoch(cur_epoch)\n", step) + (
        "\n"
        "        def run_model(self, batch):\n"
        "            return self.model(batch.cuda()).sum()\n")
    assert ("runner.py", 22, "GPU112") in lint_files(tmp_path, {"runner.py": runner})
