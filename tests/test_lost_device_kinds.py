"""Device kinds that used to be lost on the way to a sync (branch recall79): a model package under a `lib/`
whose `setup.py` builds extensions and that the scripts above put on `sys.path`, a base class's `forward` run
through a subclass defined in another module, `torch.from_numpy(<random draw>).type_as(device_tensor)`, a name
rebound after an unpacking (`_, preds = torch.max(...)`, `preds = preds.tolist()`), a model's `forward`
parameter its callers pass device copies, and `named_parameters()` of `list(net.children())[-1]`."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

INIT_PATHS = """import os.path as osp
import sys

def add_path(path):
    if path not in sys.path:
        sys.path.insert(0, path)

this_dir = osp.dirname(__file__)
add_path(osp.join(this_dir, 'lib'))
"""

SETUP = """from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

ext_modules = [CUDAExtension('model._C', ['model/csrc/nms.cu'])]
setup(name='det', ext_modules=ext_modules, cmdclass={'build_ext': BuildExtension})
"""

BASE = """import numpy as np
import torch
import torch.nn as nn


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def forward(self, x, boxes):
        out = self.head(x)
        keep = torch.nonzero(out.sum(1) > 0).view(-1)
        order = torch.from_numpy(np.random.permutation(keep.size(0))).type_as(boxes).long()
        return out[keep[order]]
"""

VGG = """from model.detector import Detector


class vgg(Detector):
    def __init__(self):
        Detector.__init__(self)
"""

TRAIN = """import _init_paths
import torch
from torch.utils.data import DataLoader
from model.vgg import vgg

net = vgg().cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, boxes in DataLoader(torch.randn(64, 2, 4), batch_size=8):
    out = net(x.cuda(), boxes.cuda())
    out.sum().backward()
    opt.step()
"""


def _findings(root: Path) -> set:
    return {(path.replace("\\\\", "/").split("/")[-1], row, code) for path, row, code in
            found(check(root, "--no-cache", "."))}


def test_a_lib_with_an_extension_setup_is_part_of_the_project_above(tmp_path: Path) -> None:
    root = write_project(tmp_path / "det", {"_init_paths.py": INIT_PATHS, "lib/setup.py": SETUP,
                                            "lib/model/__init__.py": "", "lib/model/detector.py": BASE,
                                            "lib/model/vgg.py": VGG, "trainval.py": TRAIN})
    got = _findings(root)
    # the base's forward runs every step through the subclass the script builds, from a `lib` it imports
    assert ("detector.py", 13, "GPU111") in got
    # a random permutation drawn on the host and cast to where `boxes` lives
    assert ("detector.py", 14, "GPU203") in got


def test_a_lib_no_script_puts_on_the_path_stays_its_own_project(tmp_path: Path) -> None:
    root = write_project(tmp_path / "det", {"_init_paths.py": "import sys\n", "lib/setup.py": SETUP,
                                            "lib/model/__init__.py": "", "lib/model/detector.py": BASE,
                                            "lib/model/vgg.py": VGG, "trainval.py": TRAIN})
    assert not {f for f in _findings(root) if f[0] == "detector.py"}


def test_a_base_forward_run_through_a_subclass_of_another_module(tmp_path: Path) -> None:
    root = write_project(tmp_path / "sub", {"detector.py": BASE, "vgg.py": VGG.replace("model.detector", "detector"),
                                            "train.py": TRAIN.replace("import _init_paths\n", "").replace(
                                                "model.vgg", "vgg")})
    got = _findings(root)
    assert ("detector.py", 13, "GPU111") in got


STATIC = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    @staticmethod
    def reshape(x, d):
        shape = x.size()
        return x.view(shape[0], int(d), int(float(shape[1] * shape[2]) / float(d)), shape[3])

    def forward(self, x):
        return self.reshape(self.conv(x), 2)


net = Net().cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x in DataLoader(torch.randn(64, 3, 8, 8), batch_size=8):
    net(x.cuda()).sum().backward()
    opt.step()
"""


def test_a_static_method_called_through_self_skips_no_self(tmp_path: Path) -> None:
    root = write_project(tmp_path / "static", {"train.py": STATIC})
    got = _findings(root)
    # `d` is the Python int 2, not the feature map: neither `int(d)` nor the call syncs
    assert not {f for f in got if f[2] in ("GPU105", "GPU112")}, got


CAPTION_MODEL = """import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 10)

    def forward(self, feats, lengths):
        lengths, order = lengths.squeeze(1).sort(dim=0, descending=True)
        decode_lengths = (lengths - 1).tolist()
        return self.fc(feats[order]), decode_lengths
"""

CAPTION_TRAIN = """import torch
from torch.utils.data import DataLoader
from models import Decoder

device = torch.device("cuda")


def validate(loader, decoder):
    hypotheses = []
    for feats, lengths in loader:
        feats = feats.to(device)
        lengths = lengths.to(device)
        scores, decode_lengths = decoder(feats, lengths)
        _, preds = torch.max(scores, dim=1)
        preds = preds.tolist()
        kept = []
        for j, p in enumerate(preds):
            kept.append(p)
        preds = kept
        hypotheses.extend(preds)
    return hypotheses


def main(checkpoint=None):
    if checkpoint is None:
        decoder = Decoder()
    else:
        decoder = torch.load(checkpoint)["decoder"]
    decoder = decoder.to(device)
    loader = DataLoader(list(zip(torch.randn(64, 4), torch.randint(2, 9, (64, 1)))), batch_size=8)
    validate(loader, decoder)


main()
"""


def test_a_model_parameter_its_callers_move_and_a_name_rebound_after_an_unpacking(tmp_path: Path) -> None:
    root = write_project(tmp_path / "cap", {"models.py": CAPTION_MODEL, "train.py": CAPTION_TRAIN})
    got = _findings(root)
    assert ("models.py", 12, "GPU102") in got  # `(lengths - 1).tolist()` of the device copy the loop passes
    assert ("train.py", 15, "GPU102") in got  # `preds.tolist()` of the argmax, before `preds` becomes a list


def test_a_model_parameter_given_host_values_stays_quiet(tmp_path: Path) -> None:
    train = CAPTION_TRAIN.replace("lengths = lengths.to(device)", "lengths = lengths.cpu()")
    root = write_project(tmp_path / "cap", {"models.py": CAPTION_MODEL, "train.py": train})
    assert ("models.py", 12, "GPU102") not in _findings(root)


GRADS = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter

net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
writer = SummaryWriter()
for i, x in enumerate(DataLoader(torch.randn(64, 4), batch_size=8)):
    net(x.cuda()).sum().backward()
    opt.step()
    last_layer = list(net.children())[-1]
    for name, para in last_layer.named_parameters():
        if 'weight' in name:
            writer.add_scalar('grad_norm', para.grad.norm(), i)
"""


def test_parameters_of_a_module_child_keep_their_device(tmp_path: Path) -> None:
    root = write_project(tmp_path / "grads", {"train.py": GRADS})
    assert ("train.py", 15, "GPU112") in _findings(root)
