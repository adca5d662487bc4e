"""Evidence that a loader hands out host tensors, beyond a sibling element moved in the loop (issue 11, precision;
precision19's sample: wenet's `recognize_onnx_gpu.py` and `vkw_kws_results.py`, utterance keys formatted into the
result file reported by GPU107 as device tensors).

- A sibling read with a bare `.numpy()` (`feats.numpy()`): `Tensor.numpy()` raises on a CUDA tensor, so the batch
  is in host memory and `keys = batch['keys']` is no device value. `.cpu().numpy()` proves nothing (still reported).
- The loop's whole batch unpacked in its body (`key, feat, target = batch`) decides as `for key, feat, target in
  loader` does: `feat.to(device)` moved, `key` never moved, so `key` is a host value; and so is `i` of
  `for index, i in enumerate(key)`, even where two loops of the function bind `i` that way.
"""

from __future__ import annotations

from pathlib import Path

from tests.projects import lint_script

ONNX_LOOP = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(2, 2).cuda()


def main(dataset, session):
    loader = DataLoader(dataset, batch_size=None, num_workers=0)
    with torch.no_grad(), open('out.txt', 'w') as fout:
        for _, batch in enumerate(loader):
            keys = batch['keys']
            feats = batch['feats']
            lengths = batch['feats_lengths']
            feats, lengths = {read}
            out = session.run(None, {{'x': feats, 'l': lengths}})[0]
            hyps = [str(x) for x in out]
            for i, key in enumerate(keys):
                fout.write('{{}} {{}}\\n'.format(key, hyps[i]))
"""

UNPACKED = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(2, 2).cuda()
device = torch.device('cuda')


def main(dataset, fout):
    loader = DataLoader(dataset, batch_size=None, pin_memory=True)
    with torch.no_grad():
        for batch_idx, batch in enumerate(loader):
            key, feat, target = batch
            feat = feat.to(device, non_blocking=True)
            {target}
            hyps = model(feat).argmax(-1).tolist()
            for index, i in enumerate(key):
                fout.write('{{}} {{}}\\n'.format(i, hyps[index]))
            for index, i in enumerate(key):
                fout.write('{{}} {{}}\\n'.format(i, len(hyps)))
"""


def _gpu107(tmp_path: Path, text: str) -> set:
    return {row for row, code in lint_script(tmp_path, text) if code == "GPU107"}


def test_keys_of_a_batch_read_with_bare_numpy_are_host_values(tmp_path: Path):
    assert _gpu107(tmp_path, ONNX_LOOP.format(read="feats.numpy(), lengths.numpy()")) == set()


def test_a_copy_to_the_host_is_no_evidence(tmp_path: Path):
    # `.cpu().numpy()` works on a device tensor too: the loader may hand out device batches, as before
    assert _gpu107(tmp_path, ONNX_LOOP.format(read="feats.cpu().numpy(), lengths.cpu().numpy()")) == {18}


def test_an_unpacked_batch_whose_sibling_is_moved_leaves_keys_on_the_host(tmp_path: Path):
    assert _gpu107(tmp_path, UNPACKED.format(target="target = target.to(device, non_blocking=True)")) == set()


def test_an_unpacked_key_moved_too_is_still_reported(tmp_path: Path):
    moved = UNPACKED.format(target="key = key.to(device, non_blocking=True)")
    assert _gpu107(tmp_path, moved) == {17, 19}
