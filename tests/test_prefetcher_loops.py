"""BasicSR's training loop and the restoration projects built on it (issue 11, recall): the batch loop is
`while train_data is not None:` over a prefetcher (`train_data = prefetcher.next()` before it and at the end of
its body), the model class is picked by name (`create_model(opt)`: `getattr(module, opt['model_type'])` over the
modules of `basicsr.models`), and each step runs `model.feed_data(train_data)` then
`model.optimize_parameters(current_iter)`. That loop is a step loop: the model's per-step methods are per-step
code. Its validation loop deals images among processes (`if idx % world_size != rank: continue`): a share of
the images, each of them on one process, not a periodic test.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

MODELS_INIT = textwrap.dedent("""\
    import importlib
    from os import path as osp

    from basicsr.utils import scandir

    model_folder = osp.dirname(osp.abspath(__file__))
    model_filenames = [osp.splitext(osp.basename(v))[0] for v in scandir(model_folder) if v.endswith('_model.py')]
    _model_modules = [importlib.import_module(f'basicsr.models.{file_name}') for file_name in model_filenames]


    def create_model(opt):
        model_type = opt['model_type']
        for module in _model_modules:
            model_cls = getattr(module, model_type, None)
            if model_cls is not None:
                break
        model = model_cls(opt)
        return model
""")

BASE_MODEL = textwrap.dedent("""\
    import torch


    class BaseModel():
        def __init__(self, opt):
            self.opt = opt
            self.device = torch.device('cuda')

        def feed_data(self, data):
            pass

        def optimize_parameters(self):
            pass

        def reduce_loss_dict(self, loss_dict):
            log_dict = {}
            for name, value in loss_dict.items():
                log_dict[name] = value.mean().item()
            return log_dict
""")

SR_MODEL = textwrap.dedent("""\
    import torch
    from basicsr.models.base_model import BaseModel


    class SRModel(BaseModel):
        def __init__(self, opt):
            super().__init__(opt)
            self.net_g = torch.nn.Conv2d(3, 3, 3, padding=1).to(self.device)
            self.optimizer_g = torch.optim.Adam(self.net_g.parameters(), lr=1e-4, fused=True)

        def feed_data(self, data):
            self.lq = data['lq'].to(self.device, non_blocking=True)
            self.gt = data['gt'].to(self.device, non_blocking=True)

        def optimize_parameters(self, current_iter):
            self.optimizer_g.zero_grad()
            self.output = self.net_g(self.lq)
            l_pix = (self.output - self.gt).abs().mean()
            l_pix.backward()
            self.optimizer_g.step()
            self.log_dict = self.reduce_loss_dict({'l_pix': l_pix})

        def test(self):
            with torch.no_grad():
                self.output = self.net_g(self.lq)

        def validation(self, dataloader, rank, world_size):
            for idx, val_data in enumerate(dataloader):
                if idx % world_size != rank:
                    continue
                self.feed_data(val_data)
                self.test()
                result = self.output.detach().cpu()
                torch.cuda.empty_cache()
""")

TRAIN = textwrap.dedent("""\
    from basicsr.models import create_model


    class CPUPrefetcher():
        def __init__(self, loader):
            self.ori_loader = loader
            self.loader = iter(loader)

        def next(self):
            try:
                return next(self.loader)
            except StopIteration:
                return None

        def reset(self):
            self.loader = iter(self.ori_loader)


    def main(opt, train_loader, val_loader, total_iters):
        model = create_model(opt)
        prefetcher = CPUPrefetcher(train_loader)
        current_iter = 0
        while current_iter <= total_iters:
            prefetcher.reset()
            train_data = prefetcher.next()
            while train_data is not None:
                current_iter += 1
                model.feed_data(train_data)
                model.optimize_parameters(current_iter)
                if current_iter % 5000 == 0:
                    model.validation(val_loader, 0, 1)
                train_data = prefetcher.next()
""")

ITEM = ("basicsr/models/base_model.py", 18, "GPU101")  # `value.mean().item()` of every loss, every step
CPU = ("basicsr/models/sr_model.py", 33, "GPU104")  # `.cpu()` of every validation output
EMPTY_CACHE = ("basicsr/models/sr_model.py", 34, "GPU110")


def _files(sr_model: str = SR_MODEL, train: str = TRAIN) -> dict:
    return {"basicsr/__init__.py": "", "basicsr/utils/__init__.py": "def scandir(p):\n    return []\n",
            "basicsr/models/__init__.py": MODELS_INIT, "basicsr/models/base_model.py": BASE_MODEL,
            "basicsr/models/sr_model.py": sr_model, "basicsr/train.py": train}


def _lint(root: Path, files: dict, *named: str) -> set:
    write_project(root, files)
    return found(check(root, "--no-cache", *(named or (".",))))


def test_a_prefetcher_loop_over_a_model_picked_by_name_is_a_step_loop(tmp_path: Path):
    assert ITEM in _lint(tmp_path, _files())


def test_the_base_model_linted_alone_finds_the_per_step_caller(tmp_path: Path):
    assert ITEM in _lint(tmp_path, _files(), "basicsr/models/base_model.py")


def test_a_loop_until_none_without_a_prefetcher_or_a_step_is_not_a_step_loop(tmp_path: Path):
    """The same prefetcher loop, its body feeding data but running no training step: `optimize_parameters` has no
    per-step caller, and the loss read inside it is not reported."""
    train = TRAIN.replace("            model.optimize_parameters(current_iter)\n", "")
    assert train != TRAIN
    assert ITEM not in _lint(tmp_path, _files(train=train))


def test_dealing_items_among_processes_is_not_a_periodic_test(tmp_path: Path):
    results = _lint(tmp_path, _files())
    assert {CPU, EMPTY_CACHE} <= results


def test_a_real_period_still_skips_the_rest_of_the_iteration(tmp_path: Path):
    sr_model = SR_MODEL.replace("if idx % world_size != rank:", "if idx % 100 != 0:")
    results = _lint(tmp_path, _files(sr_model=sr_model))
    assert CPU not in results and EMPTY_CACHE not in results
