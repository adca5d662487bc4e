"""GPU402 where the optimizer's parameters are on CUDA by routes the module model did not follow (branch recall86):

- a device string built by concatenation (`torch.device("cuda:" + str(args.dev))`), full-batch trainers whose only
  loop is the epoch loop calling a step function;
- a parameter list the model keeps on itself (`{'params': model.params1}`);
- a trainer class that builds the optimizer over `self.model`, moved in its own `__init__` with
  `torch.device("cuda:0" if c else "cpu")`, or in a base class's `gpu()` method with `self.dev = "cuda:0"`;
- an optimizer handed to a method of a project trainer instance (`trainer.train(epoch, loader, optimizer)`).

Each has a quiet twin: the CPU, a member never moved, a method that does not step the optimizer.
"""

from __future__ import annotations

from projects import lint_files

FULL_BATCH = """\
    import torch
    import torch.nn.functional as F
    from model import Net

    dev = 0
    device = torch.device("cuda:" + str(dev))
    features = torch.randn(2708, 1433).to(device)
    labels = torch.randint(0, 7, (2708,)).to(device)
    model = Net().to(device)
    optimizer = torch.optim.Adam(PARAMS, lr=0.01)


    def train_step():
        model.train()
        optimizer.zero_grad()
        loss = F.nll_loss(model(features), labels)
        loss.backward()
        optimizer.step()
        return loss


    for epoch in range(1500):
        train_step()
"""

NET = """\
    import torch


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList([torch.nn.Linear(1433, 64), torch.nn.Linear(64, 64)])
            self.fc = torch.nn.Linear(64, 7)
            self.params1 = list(self.convs.parameters())
            self.params2 = list(self.fc.parameters())

        def forward(self, x):
            for conv in self.convs:
                x = conv(x).relu()
            return self.fc(x).log_softmax(-1)
"""


def _full_batch(tmp_path, params: str, device: str = '"cuda:" + str(dev)') -> set:
    text = FULL_BATCH.replace("PARAMS", params).replace('"cuda:" + str(dev)', device)
    return lint_files(tmp_path, {"train.py": text, "model.py": NET}, "GPU402")


def test_a_concatenated_cuda_device_string_puts_the_model_on_cuda(tmp_path):
    assert ("train.py", 10, "GPU402") in _full_batch(tmp_path, "model.parameters()")


def test_a_concatenated_cpu_device_string_stays_quiet(tmp_path):
    assert not _full_batch(tmp_path, "model.parameters()", device='"cpu" + ""')


def test_parameter_groups_of_lists_the_model_keeps(tmp_path):
    groups = "[{'params': model.params1, 'weight_decay': 0.01}, {'params': model.params2, 'weight_decay': 5e-4}]"
    assert ("train.py", 10, "GPU402") in _full_batch(tmp_path, groups, device='"cuda:0"')


def test_parameter_groups_of_a_model_on_the_cpu_stay_quiet(tmp_path):
    groups = "[{'params': model.params1, 'weight_decay': 0.01}]"
    assert not _full_batch(tmp_path, groups, device='"cpu"')


TRAINER = """\
    import torch
    from torch.optim import Adam


    class Trainer:
        def __init__(self, net, loader, with_cuda=True):
            cuda_condition = torch.cuda.is_available() and with_cuda
            self.device = torch.device("cuda:0" if cuda_condition else "cpu")
            self.model = net.to(self.device)
            self.optim = Adam(self.model.parameters(), lr=1e-4)
            self.loader = loader

        def train(self):
            for x, y in self.loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = torch.nn.functional.cross_entropy(self.model(x), y)
                self.optim.zero_grad()
                loss.backward()
                self.optim.step()
"""


def test_an_optimizer_over_the_model_a_trainer_moves(tmp_path):
    assert ("trainer.py", 10, "GPU402") in lint_files(tmp_path, {"trainer.py": TRAINER}, "GPU402")


def test_an_optimizer_over_a_trainer_model_never_moved_stays_quiet(tmp_path):
    text = TRAINER.replace("net.to(self.device)", "net")
    assert not lint_files(tmp_path, {"trainer.py": text}, "GPU402")


def test_an_optimizer_over_a_trainer_model_moved_to_the_cpu_stays_quiet(tmp_path):
    text = TRAINER.replace('"cuda:0" if cuda_condition else "cpu"', '"cpu"')
    assert not lint_files(tmp_path, {"trainer.py": text}, "GPU402")


BASE = """\
    import torch


    class IO:
        def __init__(self, arg):
            self.arg = arg
            self.init_environment()
            self.load_model()
            self.gpu()
            self.load_optimizer()

        def init_environment(self):
            if self.arg.use_gpu:
                self.dev = "cuda:0"
            else:
                self.dev = "cpu"

        def load_model(self):
            self.model = torch.nn.Linear(8, 8)

        def gpu(self):
            self.model = self.model.to(self.dev)
"""

PROCESSOR = """\
    import torch.optim as optim
    from io_base import IO


    class Processor(IO):
        def load_optimizer(self):
            self.optimizer = optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)

        def train(self, loader):
            for data, label in loader:
                data = data.float().to(self.dev)
                loss = self.model(data).sum()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""


def test_an_optimizer_over_a_model_a_base_class_method_moves(tmp_path):
    hits = lint_files(tmp_path, {"io_base.py": BASE, "processor.py": PROCESSOR}, "GPU402")
    assert ("processor.py", 7, "GPU402") in hits


def test_a_base_class_that_moves_to_an_unknown_device_stays_quiet(tmp_path):
    base = BASE.replace('self.dev = "cuda:0"', "self.dev = self.arg.device")
    assert not lint_files(tmp_path, {"io_base.py": base, "processor.py": PROCESSOR}, "GPU402")


TRAINERS = """\
    class BaseTrainer(object):
        def __init__(self, model, criterion):
            self.model = model
            self.criterion = criterion

        def train(self, epoch, data_loader, optimizer, print_freq=1):
            for i, (x, y) in enumerate(data_loader):
                loss = self.criterion(self.model(x.cuda()), y.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

        def evaluate(self, data_loader, optimizer):
            for x, y in data_loader:
                self.model(x.cuda())


    class Trainer(BaseTrainer):
        pass
"""

EXAMPLE = """\
    import torch
    from trainers import Trainer


    def main(loader):
        model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
        model = torch.nn.DataParallel(model).cuda()
        criterion = torch.nn.CrossEntropyLoss().cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        trainer = Trainer(model, criterion)
        for epoch in range(10):
            trainer.train(epoch, loader, optimizer)
"""


def test_an_optimizer_handed_to_a_trainer_method_that_steps_it(tmp_path):
    hits = lint_files(tmp_path, {"trainers.py": TRAINERS, "example.py": EXAMPLE}, "GPU402")
    assert ("example.py", 9, "GPU402") in hits


def test_an_optimizer_handed_to_a_trainer_method_that_never_steps_it_stays_quiet(tmp_path):
    text = EXAMPLE.replace("trainer.train(epoch, loader, optimizer)", "trainer.evaluate(loader, optimizer)")
    assert ("example.py", 9, "GPU402") not in lint_files(tmp_path, {"trainers.py": TRAINERS, "example.py": text},
                                                         "GPU402")
