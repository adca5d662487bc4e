"""Hooks a framework's step calls through `self`, overridden in another module (issue 11, heldout8: a
SpeechBrain recipe's `ASR(sb.core.Brain).compute_objectives`, called by `Brain.fit_batch` every step).

The recipe file has no loop: the base class (another module) keeps the step loop and calls `self.compute_loss`
every iteration, so the subclass's override is per-step code, and its host reads are reported, with the base's
call as the related location. A hook the base calls once (`self.on_fit_start()`) or only every N steps, or a
method the base never calls, stays quiet; so does a class whose base is not a project class.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

CORE = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    class Trainer:
        def __init__(self, model, opt):
            self.model = model.to("cuda")
            self.opt = opt

        def compute_loss(self, batch):
            raise NotImplementedError

        def on_fit_start(self):
            pass

        def on_log(self, step):
            pass

        def step_batch(self, batch):
            loss = self.compute_loss(batch)
            loss.backward()
            self.opt.step()
            return loss

        def fit(self, dataset):
            loader = DataLoader(dataset, batch_size=8, pin_memory=True)
            self.on_fit_start()
            for step, batch in enumerate(loader):
                self.step_batch(batch)
                if step % 100 == 0:
                    self.on_log(step)
""")

RECIPE = textwrap.dedent("""\
    import torch
    import core


    class Recipe({base}):
        def {hook}(self{params}):
            if not hasattr(self, "seen"):
                self.seen = 0
            value = torch.tensor(3.0, device="cuda")
            self.last = value.item()
            return value
""")

READ = ("recipe.py", 10, "GPU101")


def _findings(tmp_path, hook="compute_loss", params=", batch", base="core.Trainer"):
    root = write_project(tmp_path / "p", {"core.py": CORE,
                                          "recipe.py": RECIPE.format(hook=hook, params=params, base=base)})
    return found(check(root))


def test_override_of_a_hook_the_base_calls_every_step_is_per_step(tmp_path):
    assert READ in _findings(tmp_path)


def test_override_through_an_intermediate_base(tmp_path):
    root = write_project(tmp_path / "p", {
        "core.py": CORE,
        "middle.py": "import core\n\n\nclass SpeechTrainer(core.Trainer):\n    pass\n",
        "recipe.py": RECIPE.format(hook="compute_loss", params=", batch", base="SpeechTrainer").replace(
            "import core\n", "from middle import SpeechTrainer\n")})
    assert READ in found(check(root))


def test_hook_called_once_is_not_per_step(tmp_path):
    assert READ not in _findings(tmp_path, hook="on_fit_start", params="")


def test_hook_called_every_hundred_steps_is_not_per_step(tmp_path):
    assert READ not in _findings(tmp_path, hook="on_log", params=", step")


def test_method_the_base_never_calls_is_not_per_step(tmp_path):
    assert READ not in _findings(tmp_path, hook="summarize", params="")


def test_library_base_is_not_followed(tmp_path):
    assert READ not in _findings(tmp_path, base="torch.nn.Module")


SAVER = textwrap.dedent("""\
    def save(path, wav):
        data = wav.cpu().numpy()
        open(path, "wb").write(data.tobytes())
""")


def test_argument_copied_to_the_host_in_the_call_pays_no_sync(tmp_path):
    """`save(path, wav.cpu())`: the helper's `.cpu()` copies nothing more; the call's own `.cpu()` is the read."""
    recipe = textwrap.dedent("""\
        import torch
        import core
        from saver import save


        class Recipe(core.Trainer):
            def compute_loss(self, batch):
                out = self.model(batch.to("cuda"))
                save("a.wav", out.detach().cpu().unsqueeze(0))
                save("b.wav", out.detach())
                return out.mean()
    """)
    root = write_project(tmp_path / "p", {"core.py": CORE, "saver.py": SAVER, "recipe.py": recipe})
    findings = found(check(root))
    assert ("recipe.py", 9, "GPU104") in findings
    assert ("recipe.py", 9, "GPU112") not in findings
    assert ("recipe.py", 10, "GPU112") in findings
