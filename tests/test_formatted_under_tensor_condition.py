"""GPU107 on a print that only runs on a branch taken by a tensor's value (issue 11, precision): a spectrogram
helper called every step warns when the audio leaves [-1, 1] (`if torch.min(y) < -1.: print("min value is",
torch.min(y))`). The per-step wait is the condition, which GPU106 reports; the print runs only on the rare
out-of-range path, so GPU107 says nothing there. A print outside such a branch, in its `else:`, or under a
condition on a Python number (`if loss.item() > limit:`, already on the host) is still reported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_model_code import check, found

TRAIN = textwrap.dedent("""\
    import torch


    def spectrogram(y):
        if torch.min(y) < -1.0:
            print("audio below -1:", torch.min(y))
        if torch.max(y) > 1.0:
            print("audio above 1:", torch.max(y))
        else:
            print("peak", torch.max(y))
        return torch.stft(y, 512, return_complex=True).abs()


    def train(model, loader, optimizer, limit):
        model = model.cuda()
        for audio, target in loader:
            audio, target = audio.cuda(), target.cuda()
            spec = spectrogram(audio)
            loss = (model(spec) - target).pow(2).mean()
            loss.backward()
            optimizer.step()
            if loss.item() > limit:
                print("large loss", loss)
            print("loss", loss)
""")


def test_a_print_on_a_branch_a_tensor_takes_is_left_to_the_condition(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN)
    keys = found(check(tmp_path, "--no-cache", "--select", "GPU106,GPU107", "train.py"))
    # the conditions wait for the GPU every step
    assert {("train.py", 5, "GPU106"), ("train.py", 7, "GPU106")} <= keys, keys
    # the warnings under them run only on the out-of-range branch
    assert ("train.py", 6, "GPU107") not in keys
    assert ("train.py", 7, "GPU107") not in keys
    # the `else:` runs whenever the audio is in range, and the loop's prints whatever the value
    assert ("train.py", 10, "GPU107") in keys
    assert ("train.py", 23, "GPU107") in keys
    assert ("train.py", 24, "GPU107") in keys
