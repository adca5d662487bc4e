"""`DataLoader(..., pin_memory=cfg.DATA_LOADER.PIN_MEMORY)` read from a yacs configuration whose declared default
is `True` (recall56; heldout16's SSD: `_C.DATA_LOADER.PIN_MEMORY = True` in `config/defaults.py`, the loader built
by `make_data_loader(cfg)` and handed to `do_train(cfg, model, data_loader, ...)` in another module): the
batches are pinned on a default run, so `images.to(device)` without `non_blocking=True` is GPU202.

Quiet: a default of `False` (left unknown: the setting is the author's switch), a YAML recipe of the project that sets the key, a tree that is not a yacs `CfgNode`.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

DEFAULTS = textwrap.dedent("""\
    from yacs.config import CfgNode as CN

    _C = CN()
    _C.DATA_LOADER = CN()
    _C.DATA_LOADER.NUM_WORKERS = 8
    _C.DATA_LOADER.PIN_MEMORY = True
    cfg = _C
""")

BUILD = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def make_data_loader(cfg, is_train=True):
        dataset = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 2))
        return DataLoader(dataset, batch_size=8, num_workers=cfg.DATA_LOADER.NUM_WORKERS,
                          pin_memory=cfg.DATA_LOADER.PIN_MEMORY)
""")

TRAINER = textwrap.dedent("""\
    def do_train(cfg, model, data_loader, optimizer, device):
        model.train()
        for iteration, (images, targets) in enumerate(data_loader):
            images = images.to(device)
            loss = (model(images) - targets.to(device)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")

TRAIN = textwrap.dedent("""\
    import torch
    from config.defaults import cfg
    from data.build import make_data_loader
    from engine.trainer import do_train

    device = torch.device("cuda")
    model = torch.nn.Linear(8, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    train_loader = make_data_loader(cfg, is_train=True)
    do_train(cfg, model, train_loader, optimizer, device)
""")


def _gpu202(tmp_path, defaults=DEFAULTS, extra=None):
    modules = {"config/__init__.py": "", "config/defaults.py": defaults, "data/__init__.py": "",
               "data/build.py": BUILD, "engine/__init__.py": "", "engine/trainer.py": TRAINER, "train.py": TRAIN}
    root = write_project(tmp_path / "p", modules)
    for name, text in (extra or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return {(path, row) for path, row, code in found(check(root, "--no-cache", "--exit-zero")) if code == "GPU202"}


def test_copy_from_a_loader_pinned_by_the_configs_default_is_reported(tmp_path):
    assert ("engine/trainer.py", 4) in _gpu202(tmp_path)


def test_default_off_stays_quiet(tmp_path):
    off = DEFAULTS.replace("PIN_MEMORY = True", "PIN_MEMORY = False")
    assert off != DEFAULTS
    assert ("engine/trainer.py", 4) not in _gpu202(tmp_path, defaults=off)


def test_yaml_recipe_setting_the_key_stays_quiet(tmp_path):
    recipe = {"configs/small.yaml": "DATA_LOADER:\n  PIN_MEMORY: False\n"}
    assert ("engine/trainer.py", 4) not in _gpu202(tmp_path, extra=recipe)


def test_a_tree_that_is_not_yacs_stays_quiet(tmp_path):
    plain = DEFAULTS.replace("from yacs.config import CfgNode as CN", "from types import SimpleNamespace as CN")
    assert plain != DEFAULTS
    assert ("engine/trainer.py", 4) not in _gpu202(tmp_path, defaults=plain)
