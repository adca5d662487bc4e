"""A parameter no call of its function passes (analysis/unset_options.py `never_passed`): lucidrains' sampling
loop tests `if exists(eos_token):` with `eos_token=None`, and the training script calls
`model.generate(inp[None, ...], GENERATE_LENGTH)`: the device read under that test never runs (heldout27b's
PaLM-pytorch `autoregressive_wrapper.py:70`, labelled ACCEPTABLE). A call passing the token, by keyword or by
position, or handing the function on where the calls cannot be seen, keeps it reported."""

from __future__ import annotations

from projects import lint_files

WRAPPER = """\
    import torch
    import torch.nn.functional as F
    from torch import nn


    def exists(val):
        return val is not None


    class AutoregressiveWrapper(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        @torch.no_grad()
        def generate(self, start_tokens, seq_len, eos_token=None, temperature=1.0):
            b, t, device = *start_tokens.shape, start_tokens.device
            out = start_tokens
            for _ in range(seq_len):
                logits = self.net(out)[:, -1, :]
                sample = torch.multinomial(F.softmax(logits / temperature, dim=-1), 1)
                out = torch.cat((out, sample), dim=-1)
                if TEST:
                    is_eos_token = out == eos_token
                    if is_eos_token.any(dim=-1).all():
                        break
            return out
"""

TRAIN = """\
    import torch
    from wrapper import AutoregressiveWrapper

    model = AutoregressiveWrapper(torch.nn.Linear(8, 8)).cuda()
    inp = torch.zeros(1, 8, dtype=torch.long).cuda()
    sample = model.generate(CALL)
    print(sample)
"""

READ = ("wrapper.py", 25, "GPU106")


def _lint(tmp_path, test="exists(eos_token)", call="inp, 256"):
    files = {"wrapper.py": WRAPPER.replace("TEST", test), "train.py": TRAIN.replace("CALL", call)}
    return lint_files(tmp_path, files, "GPU106")


def test_a_block_under_a_token_no_call_passes_is_quiet(tmp_path):
    assert READ not in _lint(tmp_path)


def test_the_same_block_tested_with_is_not_none_is_quiet(tmp_path):
    assert READ not in _lint(tmp_path, test="eos_token is not None")


def test_a_call_passing_the_token_by_keyword_is_reported(tmp_path):
    assert READ in _lint(tmp_path, call="inp, 256, eos_token=0")


def test_a_call_passing_the_token_by_position_is_reported(tmp_path):
    assert READ in _lint(tmp_path, call="inp, 256, 0")


def test_a_call_with_unpacked_keywords_is_reported(tmp_path):
    assert READ in _lint(tmp_path, call="inp, 256, **opts")
