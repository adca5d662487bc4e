"""A block under a yacs setting the project declares `False` and no recipe turns on (`if cfg.DETECTION.ENABLE:` in
TimeSformer's train and test loops, `_C.DETECTION.ENABLE = False`, no YAML, script or document setting it) never
runs as shipped: its `.item()`/`.cpu()` are not per-step costs (heldout27's precision review: 21 wrong findings).
A YAML recipe nesting `ENABLE: True` under `DETECTION:`, a dotted override in a script, or a script assigning the
setting keeps the block reported; a key of the same name under another section does not."""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

DEFAULTS = textwrap.dedent("""\
    from fvcore.common.config import CfgNode

    _C = CfgNode()
    _C.TRAIN = CfgNode()
    _C.TRAIN.ENABLE = True
    _C.DETECTION = CfgNode()
    _C.DETECTION.ENABLE = False
""")

TRAIN = textwrap.dedent("""\
    import torch


    def train_epoch(loader, model, optimizer, cfg):
        for inputs, labels in loader:
            inputs = inputs.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if cfg.DETECTION.ENABLE:
                loss = loss.item()
                print(loss)
""")

READ = ("train_net.py", 13, "GPU101")


def _lint(root, extra=None):
    files = {"config/defaults.py": DEFAULTS, "train_net.py": TRAIN, **(extra or {})}
    return found(check(write_project(root, files), "--no-cache", "--exit-zero", "--select", "GPU101", "."))


def test_a_block_under_a_setting_declared_off_is_quiet(tmp_path):
    assert READ not in _lint(tmp_path)


def test_an_enable_key_of_another_section_in_a_recipe_keeps_it_quiet(tmp_path):
    recipe = "TRAIN:\n  ENABLE: True\n  BATCH_SIZE: 8\nTEST:\n  ENABLE: False\n"
    assert READ not in _lint(tmp_path, {"configs/k400.yaml": recipe})


def test_a_recipe_turning_the_setting_on_is_reported(tmp_path):
    recipe = "TRAIN:\n  ENABLE: True\nDETECTION:\n  ENABLE: True\n"
    assert READ in _lint(tmp_path, {"configs/ava.yaml": recipe})


def test_a_dotted_override_in_a_script_is_reported(tmp_path):
    script = "python tools/run_net.py --cfg configs/k400.yaml DETECTION.ENABLE True\n"
    assert READ in _lint(tmp_path, {"scripts/ava.sh": script})


def test_a_python_script_setting_it_is_reported(tmp_path):
    run = "from config.defaults import _C\ncfg = _C.clone()\ncfg.DETECTION.ENABLE = True\n"
    assert READ in _lint(tmp_path, {"run_ava.py": run})
