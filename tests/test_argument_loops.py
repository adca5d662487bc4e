"""A loop over the enclosing function's own `*args` or `**kwargs` iterates the few values one call passed
(`strategy.prepare((actor, cfg), critic)`), not a stream of batches: it is no step loop of its own, so one-off
setup inside it (`torch.cuda.empty_cache()`, an optimizer built per model) is not reported as per-step
(analysis/loops.py `_over_own_arguments`; an RLHF strategy's `prepare` got GPU110). A helper with such a loop that a
training loop calls every step still runs every step."""

from __future__ import annotations

from tests.projects import check, found, write_project

STRATEGY = '''import gc

import torch


class Strategy:
    def prepare(self, {star}):
        ret = []
        for arg in {loop}:
            if isinstance(arg, tuple):
                model, cfg = arg
                ret.append(self._init_train_model(model, cfg))
            else:
                ret.append(self._init_eval_model(arg))
        return ret

    def _init_train_model(self, model, cfg):
        model = model.cuda()
        gc.collect()
        torch.cuda.empty_cache()
        optim = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], fused=True)
        return model, optim

    def _init_eval_model(self, model):
        return model.cuda().eval()
'''

PER_STEP = '''import torch


def log_values(*tensors):
    out = []
    for t in tensors:
        out.append(t.item())
    return out


def train(model, loader, optimizer):
    model = model.cuda()
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log_values(loss, y.mean())
'''


def _strategy(tmp_path, star: str, loop: str) -> set:
    text = STRATEGY.format(star=star, loop=loop)
    return {code for _, line, code in found(check(write_project(tmp_path / "p", {"strategy.py": text}), "--no-cache"))
            if line in (20, 21)}


def test_setup_in_a_loop_over_the_calls_own_arguments_runs_once(tmp_path):
    assert _strategy(tmp_path / "a", "*args", "args") == set()
    assert _strategy(tmp_path / "k", "**kwargs", "kwargs.values()") == set()


def test_a_loop_over_a_list_parameter_is_judged_by_its_body(tmp_path):
    """Not the own-arguments rule: the loop's body decides. `self._init_train_model(model, cfg)` is a method of the
    class named like a model; it once read as a forward pass (GPU110 here), and its body (a move, an optimizer)
    trains nothing (tests/test_model_named_methods.py). Given a real forward pass, the loop is a step loop."""
    assert "GPU110" not in _strategy(tmp_path / "setup", "args", "args")
    text = STRATEGY.format(star="args", loop="args").replace(
        "                ret.append(self._init_train_model(model, cfg))\n",
        "                ret.append(self._init_train_model(model, cfg))\n"
        "                model(cfg).sum().backward()\n")
    got = {code for _, line, code in found(check(write_project(tmp_path / "p", {"strategy.py": text}), "--no-cache"))
           if line == 21}
    assert "GPU110" in got


def test_a_per_step_helper_looping_over_its_arguments_still_syncs_every_step(tmp_path):
    got = found(check(write_project(tmp_path / "p", {"train.py": PER_STEP}), "--no-cache"))
    assert ("train.py", 7, "GPU101") in got and ("train.py", 19, "GPU112") in got
