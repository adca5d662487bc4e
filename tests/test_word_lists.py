"""`words.split()` with no argument is `str.split` (`Tensor.split` needs a size), so a list of words handed to a
project helper is no tensor, whatever the name held before it was decoded (`output_words = output[j].max(1)[1]`
then `output_words = idx_to_word(output_words, vocab)`): the helper's host reads (a BLEU score's `math.log`)
are not a sync at that call (heldout20's transformer `train.py:99`). The tensor handed to the same helper still
reports."""

from __future__ import annotations

from tests.projects import lint_files

BLEU = '''
import math


def get_bleu(hypotheses, reference):
    return math.log(float(hypotheses[0]) + 2)


def idx_to_word(x, vocab):
    return " ".join(vocab[i] for i in x)
'''

TRAIN = '''
import torch

from bleu import get_bleu, idx_to_word

model = torch.nn.Linear(4, 4).cuda()
vocab = ["a", "b", "c", "d"]
for step in range(10):
    output = model(torch.randn(2, 4, device="cuda"))
    loss = output.mean()
    loss.backward()
    output_words = output[0].max(dim=0)[1]
    output_words = idx_to_word(output_words.tolist(), vocab)
    score = get_bleu(hypotheses=output_words.split(), reference="1 2".split())
    tensor_score = get_bleu(hypotheses=output, reference="1 2".split())
'''


def test_words_split_from_a_string_are_no_tensor(tmp_path):
    found = {row for name, row, code in lint_files(tmp_path, {"bleu.py": BLEU, "train.py": TRAIN}, "GPU112")
             if name == "train.py"}
    rows = {needle: next(i for i, line in enumerate(TRAIN.splitlines(), 1) if needle in line)
            for needle in ("score = get_bleu", "tensor_score = get_bleu")}
    assert rows["score = get_bleu"] not in found
    assert rows["tensor_score = get_bleu"] in found
