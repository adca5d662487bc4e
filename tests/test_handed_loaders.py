"""Loaders kept by a trainer class whose loop copies their batches to the GPU (branch recall85, GPU201).

A script builds `DataLoader(...)`s and hands them to a project trainer's constructor, which keeps them
(`self.train_data = train_dataloader`) and iterates them in a method it hands them to (`self.iteration(epoch,
self.train_data)`, `for i, data in tqdm.tqdm(enumerate(data_loader))`) moving each batch in a dict comprehension;
or a base class's method stores them in a dict attribute (`self.data_loader['train'] = DataLoader(...)`) and a
subclass in another module iterates `self.data_loader['train']` moving the batch with `.to(self.dev)`, the device
set in a base class's module. GPU201 reports the `DataLoader(...)` where it is built
(`analysis/handed_loaders.py`); a trainer whose loop moves nothing, and a pinned loader, stay quiet.
"""

from __future__ import annotations

from projects import lint_files

MAIN = """\
    import torch
    from torch.utils.data import DataLoader
    from trainer import Trainer


    def train():
        train_loader = DataLoader(torch.randn(64, 4), batch_size=8, num_workers=2)
        test_loader = DataLoader(torch.randn(64, 4), batch_size=8) if torch.randn(1) is not None else None
        trainer = Trainer(torch.nn.Linear(4, 4), train_dataloader=train_loader, test_dataloader=test_loader)
        for epoch in range(10):
            trainer.train(epoch)
"""

TRAINER = """\
    import torch
    import tqdm


    class Trainer:
        def __init__(self, model, train_dataloader, test_dataloader=None, with_cuda=True):
            self.device = torch.device("cuda:0" if torch.cuda.is_available() and with_cuda else "cpu")
            self.model = model.to(self.device)
            self.train_data = train_dataloader
            self.test_data = test_dataloader
            self.optim = torch.optim.Adam(self.model.parameters())

        def train(self, epoch):
            self.iteration(epoch, self.train_data)

        def test(self, epoch):
            self.iteration(epoch, self.test_data, train=False)

        def iteration(self, epoch, data_loader, train=True):
            for i, data in tqdm.tqdm(enumerate(data_loader)):
                data = {key: value.to(self.device) for key, value in data.items()}
                loss = self.model(data["x"]).sum()
                loss.backward()
                self.optim.step()
"""

BASE = """\
    import torch


    class IO:
        def __init__(self):
            self.dev = "cuda:0"


    class Processor(IO):
        def __init__(self, phase):
            super().__init__()
            self.phase = phase
            self.load_data()

        def load_data(self):
            self.data_loader = dict()
            if self.phase == "train":
                self.data_loader["train"] = torch.utils.data.DataLoader(
                    dataset=torch.randn(64, 4), batch_size=8, shuffle=True, num_workers=4)
            self.data_loader["test"] = torch.utils.data.DataLoader(
                dataset=torch.randn(64, 4), batch_size=8, pin_memory=True)
"""

RECOGNITION = """\
    import torch
    from processor import Processor


    class Recognition(Processor):
        def train(self):
            loader = self.data_loader["train"]
            for data, label in loader:
                data = data.float().to(self.dev)
                label = label.long().to(self.dev)
                self.model(data).sum().backward()
"""


SCRIPT = """\
    import torch
    from torch.utils.data import DataLoader
    from trainer import Trainer

    train_loader = DataLoader(torch.randn(64, 4), batch_size=8)
    trainer = Trainer(torch.nn.Linear(4, 4), train_loader)
    for epoch in range(10):
        trainer.train(epoch)
"""


def _gpu201(findings: set) -> set:
    return {(f, row) for f, row, code in findings if code == "GPU201"}


def test_loaders_handed_to_a_trainer_constructor(tmp_path):
    found = _gpu201(lint_files(tmp_path, {"main.py": MAIN, "trainer.py": TRAINER}, "GPU201"))
    assert found == {("main.py", 7), ("main.py", 8)}


def test_a_trainer_whose_loop_moves_nothing_is_quiet(tmp_path):
    trainer = TRAINER.replace("data = {key: value.to(self.device) for key, value in data.items()}",
                              "data = dict(data)")
    found = _gpu201(lint_files(tmp_path, {"main.py": MAIN, "trainer.py": trainer}, "GPU201"))
    assert found == set()


def test_loaders_kept_in_a_dict_attribute_by_a_base_class(tmp_path):
    found = _gpu201(lint_files(tmp_path, {"processor.py": BASE, "recognition.py": RECOGNITION}, "GPU201"))
    assert found == {("processor.py", 18)}  # the pinned test loader stays quiet


def test_a_scripts_top_level_loader_passed_by_position(tmp_path):
    found = _gpu201(lint_files(tmp_path, {"main.py": SCRIPT, "trainer.py": TRAINER}, "GPU201"))
    assert found == {("main.py", 5)}
