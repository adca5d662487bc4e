"""A name rebound through its own method calls many times over is resolved once per call (issue 13, never hang):
mmsegmentation's checkpoint converters rename keys with `new_k = new_k.replace(...)` a dozen times in the branches
of one loop. Each binding's class was looked for through the binding before it, from every later binding again
(`ProjectCalls.passed_through` asking `callee`, which asks `instance_classes` of the receiver anew), so the look-ups
doubled with every rebinding: one 82-line file of poolformer ran for more than ten minutes. The number of look-ups
now grows with the number of rebindings, not with its power of two.
"""

from __future__ import annotations

from pathlib import Path

from gpulint.analysis import calls as calls_module
from gpulint.rule import all_rules
from gpulint.runner import lint_source


def _converter(renames: int) -> str:
    """A checkpoint converter of the mmsegmentation shape: a loop over the state dict renaming each key through
    `renames` rebindings in the branches of one `if` chain, run from `main()` under `__main__`."""
    lines = ["import argparse", "import torch", "from mmengine.runner import CheckpointLoader", "", "", "def convert(ckpt):", "    new_ckpt = {}",
             "    for k, v in ckpt.items():", "        if k.startswith('head'):", "            continue",
             "        elif k.startswith('block'):", "            stage = int(k.split('.')[0].replace('block', ''))",
             "            new_k = k.replace(f'block{stage}', f'layers.{stage - 1}')", "            new_v = v",
             "            if 'attn.q.' in new_k:", "                new_k = new_k.replace('q.', 'in_proj_')",
             "                new_v = torch.cat([v, ckpt[k.replace('q.', 'kv.')]], dim=0)",
             "            elif 'mlp.' in new_k:", "                text = f'{new_k}-'"]
    for i in range(renames):
        lines.append(f"                new_k = new_k.replace('fc{i}.', '{i}.')")
        if i == 0:
            lines += ["                if 'fc1.weight' in new_k:", "                    new_v = v.reshape((*v.shape, 1, 1))"]
    lines += ["                text += f'{new_k} {v.shape}-{new_v.shape}'",
              "        else:", "            new_k = k", "            new_v = v",
              "        new_ckpt[new_k] = new_v", "    return new_ckpt", "", "",
              "def main():", "    parser = argparse.ArgumentParser()", "    parser.add_argument('src')",
              "    parser.add_argument('dst')", "    args = parser.parse_args()",
              "    checkpoint = CheckpointLoader.load_checkpoint(args.src, map_location='cpu')",
              "    if 'state_dict' in checkpoint:", "        state_dict = checkpoint['state_dict']",
              "    else:", "        state_dict = checkpoint", "    torch.save(convert(state_dict), args.dst)", "", "",
              "if __name__ == '__main__':", "    main()", ""]
    return "\n".join(lines)


def _look_ups(tmp_path: Path, monkeypatch, renames: int) -> int:
    counted = []
    real = calls_module.ProjectCalls.callee

    def callee(self, call, own_module=False):
        counted.append(1)
        return real(self, call, own_module)

    monkeypatch.setattr(calls_module.ProjectCalls, "callee", callee)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    path = tmp_path / f"convert_{renames}.py"
    path.write_text(_converter(renames))
    lint_source(path.read_text(), str(path), frozenset(all_rules()), path=path)
    return len(counted)


def test_look_ups_grow_with_the_rebindings_not_exponentially(tmp_path: Path, monkeypatch):
    few = _look_ups(tmp_path, monkeypatch, 4)
    assert few <= 100, few  # a handful per call of the file (it was 13,020 with four rebindings)
    more = _look_ups(tmp_path, monkeypatch, 8)
    assert more <= 4 * few, (few, more)  # twice the rebindings: about twice the look-ups (eight did not finish)
