"""A loop over a module-level list of a few names (`PARTS = [TRAIN, VAL, TEST]`, in this module or in another
module of the project, re-exported or not) runs a handful of times, like a loop over a list written out in the
loop itself: its once-per-split `.cpu()` after a model call is no per-step sync (thirty-fifth landing; the one
new false alarm of the previous landing's regression diff, rtdl's synthetic-data script). A long list, a list the
module changes, or a loader still make the loop per-batch.
"""

from __future__ import annotations

from projects import lint_files

UTIL = """\
    TRAIN = "train"
    VAL = "val"
    TEST = "test"
    PARTS = [TRAIN, VAL, TEST]
"""

INIT = """\
    from .util import *  # noqa
"""

MLP = """\
    import torch.nn as nn


    class MLP(nn.Module):
        def __init__(self, d_in, d_out):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(d_in, 64), nn.ReLU(), nn.Linear(64, d_out))

        def forward(self, x):
            return self.layers(x)
"""

SCRIPT = """\
    import torch
    import lib
    from lib.synthetic_data import MLP

    device = torch.device("cuda")


    def get_data(sizes, n_features):
        generator = MLP(n_features, 1).to(device)
        X, Y = {}, {}
        for part in lib.PARTS:
            X[part] = torch.randn(sizes[part], n_features)
            with torch.no_grad():
                Y[part] = generator(X[part].to(device)).cpu()
        return X, Y


    X, Y = get_data({"train": 100, "val": 10, "test": 10}, 8)
"""


def _files(util: str = UTIL, script: str = SCRIPT) -> dict:
    return {"lib/__init__.py": INIT, "lib/util.py": util, "lib/synthetic_data.py": MLP, "bin/make_data.py": script}


def test_a_loop_over_another_modules_short_split_list_is_no_per_step_loop(tmp_path):
    assert not lint_files(tmp_path, _files(), "GPU102", "GPU104", "GPU112")


def test_a_split_list_imported_by_name_or_defined_in_the_script_is_short_too(tmp_path):
    imported = SCRIPT.replace("import lib\n", "from lib.util import PARTS\n").replace("lib.PARTS", "PARTS")
    assert not lint_files(tmp_path, _files(script=imported), "GPU102", "GPU104", "GPU112")
    own = SCRIPT.replace("import lib\n", "PARTS = ['train', 'val', 'test']\n").replace("lib.PARTS", "PARTS")
    assert not lint_files(tmp_path, _files(script=own), "GPU102", "GPU104", "GPU112")


def test_a_long_list_or_one_the_module_changes_is_still_a_per_item_loop(tmp_path):
    long = UTIL.replace("PARTS = [TRAIN, VAL, TEST]", "PARTS = [" + ", ".join(f"'p{i}'" for i in range(40)) + "]")
    assert ("make_data.py", 14, "GPU104") in lint_files(tmp_path, _files(util=long), "GPU104")
    grown = UTIL + "    PARTS = PARTS * 100\n"
    assert ("make_data.py", 14, "GPU104") in lint_files(tmp_path, _files(util=grown), "GPU104")


def test_a_cached_result_follows_an_edit_of_the_list_in_the_other_module(tmp_path):
    import subprocess
    import sys
    import textwrap

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for name, text in _files().items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))

    def lint() -> str:  # a fresh process each time, as a user's two runs
        result = subprocess.run([sys.executable, "-m", "gpulint", "check", ".", "--select", "GPU104",
                                 "--output-format", "concise"], cwd=tmp_path, capture_output=True, text=True)
        assert result.returncode in (0, 1), result.stderr
        return result.stdout

    assert "GPU104" not in lint()
    assert (tmp_path / ".gpulint_cache").is_dir()
    util = tmp_path / "lib" / "util.py"
    util.write_text(util.read_text().replace("PARTS = [TRAIN, VAL, TEST]", "PARTS = [TRAIN, VAL, TEST] * 1000"))
    assert "make_data.py:14:" in lint()
