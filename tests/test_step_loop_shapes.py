"""Two shapes of real step loops (litgpt's `fit`, NVIDIA's BERT pre-training):

- a validation pass called every N steps from the step loop (`if step % eval.interval == 0: validate(...)`)
  does not make the step loop an epoch loop: what runs every step in it is still per-step;
- a block of the step loop that ends the run (`if step >= max_steps: save(); return`, or `break`) runs once, not
  every step; the same block in a helper called every step is still per-step there.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found

FIT = """\
import torch


def validate(model, val_loader):
    losses = []
    for batch in val_loader:
        losses.append(model(batch).sum())
    return torch.stack(losses).mean()


def fit(model, optimizer, train_iterator, val_loader, max_steps):
    model = model.cuda()
    step = 0
    total = 0
    while step < max_steps:
        step += 1
        batch = next(train_iterator)
        loss = model(batch["x"].cuda(non_blocking=True)).sum()
        loss.backward()
        optimizer.step()
        total += loss.item()
        if step % 100 == 0:
            print(validate(model, val_loader))
{ending}
"""


def _lint(root: Path, ending: str) -> set:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    (root / "train.py").write_text(textwrap.dedent(FIT.format(ending=ending)))
    return {(line, code) for _, line, code in found(check(root, "--no-cache", "train.py"))}


def test_a_periodic_validation_call_keeps_the_step_loop_hot(tmp_path):
    got = _lint(tmp_path, "")
    assert (21, "GPU302") in got  # `total += loss.item()` every step


def test_a_block_that_ends_the_run_runs_once(tmp_path):
    ending = ("        if loss.item() < 0.01:\n            torch.cuda.synchronize()\n            return step\n"
              "        if step == 1000:\n            print(loss.item())\n            break\n"
              "        if total > 10:\n            print(loss.item())\n")
    got = _lint(tmp_path, ending)
    assert (24, "GPU101") in got  # the test itself runs every step
    assert (25, "GPU109") not in got  # the block returns: once
    assert (28, "GPU101") not in got  # the block breaks out of the step loop: once
    assert (31, "GPU101") in got  # an ordinary block: every step


def test_a_returning_block_in_a_per_step_helper_is_still_per_step(tmp_path):
    text = textwrap.dedent(FIT.format(ending="        first_small(loss.view(1))\n")) + textwrap.dedent("""\


        def first_small(values):
            for v in values:
                if v < 0.01:
                    print(v.item())
                    return v
        """)
    root = tmp_path
    (root / "pyproject.toml").write_text("")
    (root / "train.py").write_text(text)
    got = {(line, code) for _, line, code in found(check(root, "--no-cache", "train.py"))}
    assert (31, "GPU101") in got and (24, "GPU112") in got


GUARDS = """\
import torch


class Trainer:
    def fit(self, model, loader, optimizer, eval_iters):
        model = model.cuda()
        for i, x in enumerate(loader):
            loss = model(x.cuda(non_blocking=True)).sum()
            loss.backward()
            optimizer.step()
            if i in eval_iters:
                print(loss.item())
            if self.control.should_evaluate:
                print(loss.item())
            if self.control.should_log:
                print(loss.item())
            if loss.item() > 1e3:
                print("diverging")
"""


def test_chosen_iterations_and_framework_flags_are_periodic(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(GUARDS)
    got = {(line, code) for _, line, code in found(check(tmp_path, "--no-cache", "train.py"))}
    assert not {line for line, _ in got} & {12, 14, 16}
    assert (17, "GPU101") in got  # the test itself reads the loss every step


TF_TEST = """\
import unittest

from transformers import is_tf_available

if is_tf_available():
    import tensorflow as tf


class TFModelTest(unittest.TestCase):
    def test_outputs(self):
        for model_class in self.all_model_classes:
            model = model_class(self.config)
            outputs = model(self.inputs, device="gpu")
            for token_id in outputs[0].numpy().tolist():
                self.assertGreaterEqual(token_id, 0)

    def test_pt_tf_equivalence(self):
        import torch

        pt_model = torch.nn.Linear(2, 2)
        for x in self.batches:
            print(torch.from_numpy(x.numpy()).to(torch.long))
"""


def test_a_tensorflow_module_is_not_pytorch_gpu_code(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "test_modeling_tf.py").write_text(TF_TEST)
    assert found(check(tmp_path, "--no-cache", "test_modeling_tf.py")) == set()


NANOGPT = """\
import torch

dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
model = torch.nn.Linear(8, 8).cuda()
optimizer = torch.optim.AdamW(model.parameters())
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == {enabled}))


def estimate_loss():
    out = []
    for _ in range(10):
        out.append(model(torch.randn(4, 8, device='cuda')).sum())
    return out


iter_num = 0
while True:
    if iter_num % 100 == 0:
        print(estimate_loss())
    loss = model(torch.randn(4, 8, device='cuda')).sum()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    iter_num += 1
"""


def test_a_scaler_enabled_only_for_float16_is_off_where_bfloat16_is_picked(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(NANOGPT.format(enabled="'float16'"))
    got = {(line, code) for _, line, code in found(check(tmp_path, "--no-cache", "train.py"))}
    assert (22, "GPU112") not in got
    (tmp_path / "train.py").write_text(NANOGPT.format(enabled="'bfloat16'"))  # enabled on the GPU path
    got = {(line, code) for _, line, code in found(check(tmp_path, "--no-cache", "train.py"))}
    assert (22, "GPU112") in got


def test_a_returning_block_inside_nested_step_loops_runs_once(tmp_path):
    text = textwrap.dedent("""\
        import torch


        def train(model, loader, optimizer, max_steps):
            model = model.cuda()
            step = 0
            while True:
                for batch in loader:
                    loss = model(batch.cuda(non_blocking=True)).sum()
                    loss.backward()
                    optimizer.step()
                    step += 1
                    if step >= max_steps:
                        torch.cuda.synchronize()
                        return step
        """)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(text)
    got = {(line, code) for _, line, code in found(check(tmp_path, "--no-cache", "train.py"))}
    assert (14, "GPU109") not in got

