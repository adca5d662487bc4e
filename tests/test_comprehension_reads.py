"""A helper that reads back, in a comprehension, device tensors it built (issue 11, heldout2/heldout7: the
loss-aware timestep sampler's `update_with_local_losses` gathers per-rank sizes into
`[torch.tensor([0], device=t.device) for _ in ranks]` and reads them with `[x.item() for x in sizes]`): the
helper syncs on every call whatever it is given, so its per-step call is GPU112.

A comprehension reading tensors of unknown place (the caller's), or one over host values, stays quiet.
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

HELPERS = textwrap.dedent("""\
    import torch


    class Tracker:
        def gathered(self, ts, ranks):
            sizes = [torch.tensor([0], device=ts.device) for _ in range(ranks)]
            counts = [x.item() for x in sizes]
            return max(counts)

        def host_sizes(self, ts, ranks):
            sizes = [len(ts) for _ in range(ranks)]
            return [float(x) for x in sizes]

        def given(self, values):
            return [v.item() for v in values]
""")

TRAIN = textwrap.dedent("""\
    import torch
    from helpers import Tracker


    def main(model, opt):
        model = model.cuda()
        tracker = Tracker()
        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
        for x in loader:
            x = x.cuda(non_blocking=True)
            loss = model(x).mean()
            loss.backward()
            opt.step()
            tracker.gathered(x, 4)
            tracker.host_sizes(x, 4)
            tracker.given([1.0, 2.0])
""")


def _findings(tmp_path):
    root = write_project(tmp_path / "p", {"helpers.py": HELPERS, "train.py": TRAIN})
    return found(check(root))


def test_comprehension_reading_device_tensors_built_by_the_helper_syncs_at_the_call(tmp_path):
    assert ("train.py", 14, "GPU112") in _findings(tmp_path)


def test_comprehension_over_host_values_or_given_values_stays_quiet(tmp_path):
    findings = _findings(tmp_path)
    assert ("train.py", 15, "GPU112") not in findings
    assert ("train.py", 16, "GPU112") not in findings  # a list of numbers handed in: nothing to wait for
