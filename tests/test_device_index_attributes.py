"""A device given as a CUDA index held in an attribute (`.to(self.gpu_id)` of an `mp.spawn` rank handed to a DDP
trainer, `.to(args.local_rank)`) is an accelerator (data_facts.device_of, as it already was for a name such as
`rank` or `gpu_id`): a host window built and moved every step is reported. An attribute every assignment of which
names the CPU (`self.dev = "cpu"`) stays the CPU."""

from __future__ import annotations

from tests.projects import lint_script

TRAINER = '''import torch
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, loader, {param}):
        self.model = DDP(model.to({param}), device_ids=[{param}])
        self.loader = loader
        self.{attr} = {value}
        self.optimizer = torch.optim.Adam(self.model.parameters(), fused=True)

    def train_step(self, batch):
        noisy = batch.to(self.{attr}, non_blocking=True)
        spec = torch.stft(noisy, 400, window=torch.hamming_window(400).to(self.{attr}), return_complex=True)
        loss = self.model(spec.abs()).mean()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def train(self):
        for batch in self.loader:
            self.train_step(batch)


def main(rank, world_size, model, loader):
    torch.distributed.init_process_group(backend="nccl", rank=rank, world_size=world_size)
    Trainer(model, loader, rank).train()


if __name__ == "__main__":
    mp.spawn(main, args=(2, None, None), nprocs=2)
'''

WINDOW = (15, "GPU203")


def _lint(tmp_path, param="gpu_id", attr="gpu_id", value="gpu_id") -> set:
    return lint_script(tmp_path, TRAINER.format(param=param, attr=attr, value=value))


def test_a_rank_kept_as_gpu_id(tmp_path):
    assert WINDOW in _lint(tmp_path)


def test_a_local_rank_attribute(tmp_path):
    assert WINDOW in _lint(tmp_path, param="local_rank", attr="local_rank", value="local_rank")


def test_an_attribute_that_names_the_cpu(tmp_path):
    assert WINDOW not in _lint(tmp_path, attr="dev", value='"cpu"')
