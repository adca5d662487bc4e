"""Helpers of another module that copy host data to the GPU on every call, reported at the per-step call (issue 11,
heldout2/heldout7: the diffusion trainers' `schedule_sampler.sample(n, device)` returns
`torch.from_numpy(indices).long().to(device)`, `diffusion.q_sample(x, t)` reaches
`torch.from_numpy(arr).to(device=t.device)[t]` in `_extract_into_tensor`; both pageable copies every step).

- A per-step call of such a helper (directly, through a method calling it, through `super().method(...)`) is a
  GPU112 finding at the call, the copy its related location.
- `self.sampler = sampler or Default()` (a parameter left at None) holds a `Default`.
- A call passing the CPU as the device copies nothing; a helper copying only under an option, or copying a
  tensor it was given (which may already be on the device), or a call outside the step loop stays quiet; calls
  inside the copying module are left to the copy's own finding there.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

SAMPLING = textwrap.dedent("""\
    import numpy as np
    import torch


    class Sampler:
        def sample(self, n, device):
            picked = np.random.randint(0, 1000, size=(n,))
            steps = torch.from_numpy(picked).long()
            return steps.to(device)


    class Uniform(Sampler):
        pass


    class Schedule:
        def __init__(self, table):
            self.table = table

        def gather(self, t):
            return torch.from_numpy(self.table).to(device=t.device)[t].float()

        def noised(self, x, t):
            return self.gather(t) * x


    class Respaced(Schedule):
        def noised(self, x, t):
            return super().noised(x, t)


    def maybe_copy(x, flag):
        if flag:
            return torch.from_numpy(x).cuda()
        return None


    def moved(x, device):
        return x.to(device)
""")

TRAIN = textwrap.dedent("""\
    import torch
    from sampling import Respaced, Uniform, maybe_copy, moved


    class Loop:
        def __init__(self, model, loader, opt, schedule, sampler=None):
            self.model = model
            self.loader = loader
            self.opt = opt
            self.schedule = schedule
            self.sampler = sampler or Uniform()

        def run(self):
            for x in self.loader:
                x = x.cuda(non_blocking=True)
                t = self.sampler.sample(x.shape[0], "cuda")
                noisy = self.schedule.noised(x, t)
                loss = self.model(noisy, t).mean()
                loss.backward()
                self.opt.step()


    def main(model, opt, table):
        model = model.cuda()
        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
        Loop(model, loader, opt, Respaced(table)).run()
        sampler = Uniform()
        for x in loader:
            x = x.cuda(non_blocking=True)
            t = sampler.sample(4, {device})
            extra = maybe_copy(x, False)
            same = moved(x, "cuda")
            model(x, t).mean().backward()
            opt.step()
""")


def _findings(tmp_path, device='"cuda"'):
    root = write_project(tmp_path / "p", {"sampling.py": SAMPLING, "train.py": TRAIN.format(device=device)})
    return found(check(root))


def test_sampler_copying_host_indices_is_reported_at_the_per_step_call(tmp_path):
    findings = _findings(tmp_path)
    assert ("train.py", 30, "GPU112") in findings  # sampler.sample(4, "cuda")
    assert ("train.py", 16, "GPU112") in findings  # self.sampler = sampler or Uniform(): a Uniform


def test_copy_reached_through_a_method_and_super_is_reported(tmp_path):
    assert ("train.py", 17, "GPU112") in _findings(tmp_path)  # Respaced.noised -> super().noised -> gather


def test_message_names_the_copy(tmp_path):
    root = write_project(tmp_path / "p", {"sampling.py": SAMPLING, "train.py": TRAIN.format(device='"cuda"')})
    messages = [d["message"] for d in check(root) if d["code"] == "GPU112" and d["location"]["row"] == 30]
    assert messages and "copies host data to the GPU every step" in messages[0]
    assert "torch.from_numpy(...).to(...)" in messages[0]


def test_cpu_device_optional_copy_and_given_tensors_stay_quiet(tmp_path):
    findings = _findings(tmp_path, device='"cpu"')
    assert ("train.py", 30, "GPU112") not in findings  # copied to the CPU: no host-to-device copy
    assert ("train.py", 31, "GPU112") not in findings  # maybe_copy copies only under a flag
    assert ("train.py", 32, "GPU112") not in findings  # moved(x, ...) moves what it is given


def test_calls_inside_the_copying_module_are_left_to_the_copy(tmp_path):
    assert not any(path == "sampling.py" and code == "GPU112" for path, _, code in _findings(tmp_path))


LOSS = textwrap.dedent("""\
    import numpy as np
    import torch


    class Encoder(torch.nn.Module):
        def __init__(self, device, loss_device):
            super().__init__()
            self.loss_device = loss_device
            self.proj = torch.nn.Linear(4, 4).to(device)

        def loss(self, embeds):
            target = torch.from_numpy(np.arange(embeds.shape[0])).long().to(self.loss_device)
            return torch.nn.functional.cross_entropy(embeds, target)
""")

LOSS_TRAIN = textwrap.dedent("""\
    import torch
    from encoder import Encoder


    def main(opt):
        model = Encoder(torch.device("cuda"), torch.device("cpu"))
        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
        for x in loader:
            x = x.cuda(non_blocking=True)
            loss = model.loss(model.proj(x).cpu())
            loss.backward()
            opt.step()
""")


def test_copy_to_a_device_the_object_was_given_stays_quiet(tmp_path):
    # the loss device is chosen where the object is built (here the CPU): not known to be a GPU copy
    root = write_project(tmp_path / "p", {"encoder.py": LOSS, "train.py": LOSS_TRAIN})
    assert ("train.py", 10, "GPU112") not in found(check(root))


SCHEDULER = textwrap.dedent("""\
    import numpy as np
    import torch


    class Scheduler:
        def set_timesteps(self, n, device=None):
            sigmas = np.linspace(1.0, 0.0, n)
            self.sigmas = torch.from_numpy(sigmas).to(device=device)


    def retrieve(scheduler, n, device=None):
        scheduler.set_timesteps(n, device=device)
        return scheduler.sigmas
""")

SCHEDULER_TRAIN = textwrap.dedent("""\
    import torch
    from scheduler import Scheduler, retrieve


    def main(model, opt):
        model = model.cuda()
        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
        for x in loader:
            x = x.cuda(non_blocking=True)
            sigmas = retrieve(Scheduler(), 10)
            model(x, sigmas).mean().backward()
            opt.step()
""")


def test_device_left_at_a_default_of_none_copies_nothing(tmp_path):
    # `.to(device=None)` keeps the tensor where it is: neither the helper's call nor the loop's is a copy
    root = write_project(tmp_path / "p", {"scheduler.py": SCHEDULER, "train.py": SCHEDULER_TRAIN})
    findings = found(check(root))
    assert not any(code == "GPU112" for _, _, code in findings)
