"""Project model: root finding, import resolution, and function/class summaries across modules."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from gpulint.analysis.project import ClassSummary, FunctionSummary, Project, find_root

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "helpers"
TRAIN = FIXTURE / "scripts" / "train.py"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_root_is_the_folder_with_project_markers():
    assert find_root(TRAIN) == FIXTURE


def test_root_falls_back_to_the_scripts_folder(tmp_path):
    (tmp_path / "a").mkdir()
    script = tmp_path / "a" / "train.py"
    script.write_text("")
    assert find_root(script) in (tmp_path / "a", *tmp_path.parents)  # no marker below the tmp root


def test_meter_update_reaches_item_through_kwargs_values():
    project = Project(FIXTURE)
    logger = project.lookup(TRAIN, "MetricLogger")  # re-exported by src/trainkit/__init__.py
    assert isinstance(logger, ClassSummary)
    update = project.method(logger, "update")
    sink = update.sink_for_argument(None, "loss", bound_method=True)
    assert sink is not None and sink.what == ".item()"
    assert sink.path.name == "meters.py" and sink.line == 25


def test_meter_fed_host_numbers_has_no_sink():
    project = Project(FIXTURE)
    meter = project.lookup(TRAIN, "AverageMeter")
    update = project.method(meter, "update")
    assert update.sink_for_argument(0, None, bound_method=True) is None


def test_reduce_helper_returns_a_host_scalar_and_syncs_its_argument():
    project = Project(FIXTURE)
    helper = project.lookup(TRAIN, "all_reduce_mean")
    assert isinstance(helper, FunctionSummary)
    assert helper.returns_host_scalar is not None
    assert helper.sink_for_argument(0, None).what == ".item()"


def test_periodic_read_inside_a_helper_is_not_a_sink():
    project = Project(FIXTURE)
    helper = project.lookup(FIXTURE / "src" / "trainkit" / "dist.py", "reduce_every")
    assert helper.sink_params == {}


def test_timer_synchronises_on_enter_and_exit_through_a_gpu_guard():
    project = Project(FIXTURE)
    timer = project.lookup(TRAIN, "Profile")
    for method in ("__enter__", "__exit__"):
        summary = project.method(timer, method)
        assert summary.always_syncs is not None, method
        assert summary.always_syncs.what == "torch.cuda.synchronize()"


def test_loader_factories_say_whether_they_pin():
    project = Project(FIXTURE)
    assert project.lookup(TRAIN, "create_dataloader").returns_loader.pinned is False
    assert project.lookup(TRAIN, "create_pinned_loader").returns_loader.pinned is True


def test_transitive_helpers_and_recursion(tmp_path):
    write(tmp_path, {
        "pyproject.toml": "",
        "pkg/__init__.py": "",
        "pkg/a.py": """
            from . import b
            def log(x):
                return b.deep(x)
            def loop(x):
                return loop(x)
            def ping(x):
                return pong(x)
            def pong(x):
                return ping(x)
        """,
        "pkg/b.py": """
            def deep(t):
                value = t.detach() * 2
                return float(value)
        """,
        "train.py": "import pkg.a as helpers\n",
    })
    project = Project(tmp_path)
    log = project.lookup(tmp_path / "train.py", "helpers.log")
    assert log.sink_for_argument(0, None).what == "float()"
    assert log.returns_host_scalar is not None
    assert project.lookup(tmp_path / "train.py", "helpers.loop").sink_params == {}
    assert project.lookup(tmp_path / "train.py", "helpers.ping").sink_params == {}


def test_unresolvable_imports_are_unknown(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "train.py": "import numpy as np\nfrom missing import thing\n"})
    project = Project(tmp_path)
    assert project.lookup(tmp_path / "train.py", "np.mean") is None
    assert project.lookup(tmp_path / "train.py", "thing") is None
    assert project.lookup(tmp_path / "train.py", "undefined_name") is None


def test_broken_helper_module_is_unknown(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "utils.py": "def f(x:\n", "train.py": "from utils import f\n"})
    assert Project(tmp_path).lookup(tmp_path / "train.py", "f") is None


def test_summary_follows_edits_of_the_helper(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "utils.py": "def f(x):\n    return x.item()\n",
                     "train.py": "from utils import f\n"})
    project = Project(tmp_path)
    assert project.lookup(tmp_path / "train.py", "f").sink_params
    before = project.dependencies_digest([tmp_path / "utils.py"])
    (tmp_path / "utils.py").write_text("def f(x):\n    return x.detach()\n")
    os.utime(tmp_path / "utils.py", ns=(1, 1))  # a different stamp even within the clock's resolution
    assert project.lookup(tmp_path / "train.py", "f").sink_params == {}
    assert project.dependencies_digest([tmp_path / "utils.py"]) != before


def test_library_table_entries_are_complete_and_resolve_aliases():
    from gpulint.analysis.libraries import FACTS, Effect, fact_for_function, fact_for_method

    assert len({f.target for f in FACTS}) == len(FACTS)
    for fact in FACTS:
        assert fact.reason and fact.source, fact.target
    assert fact_for_method("torch.cuda.amp.GradScaler", "get_scale").effect is Effect.SYNCS
    assert fact_for_method("torch.amp.GradScaler", "scale") is None
    assert fact_for_function("torch.distributed.all_reduce").effect is Effect.NO_HOST_SYNC
    assert fact_for_method("accelerate.accelerator.Accelerator", "prepare").effect is Effect.DEVICE_BATCHES
    assert fact_for_function("numpy.mean") is None


def test_hands_back_entries_are_complete_and_name_an_argument_per_wrapped_element():
    from gpulint.analysis.libraries import HANDS_BACK, hands_back

    assert len({e.target for e in HANDS_BACK}) == len(HANDS_BACK)
    for entry in HANDS_BACK:
        assert entry.reason and entry.source, entry.target
        assert all(spec is None or (isinstance(spec[0], int) and spec[1]) for spec in entry.elements)
    assert hands_back("deepspeed.initialize", 0) == (1, "model")
    assert hands_back("deepspeed.initialize", 1) is None  # DeepSpeed's own optimizer wrapper: something new
    assert hands_back("deepspeed.initialize", None) is None
    assert hands_back("deepspeed.init_distributed", 0) is None


def test_math_isnan_of_a_parameter_is_a_host_read(tmp_path):
    """SlowFast's `misc.check_nan_losses(loss)`: `if math.isnan(loss): raise ...` converts the tensor with
    `float()` first, a host read on every call."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "misc.py").write_text("import math\n\n\ndef check_nan_losses(loss):\n    if math.isnan(loss):\n"
                                      "        raise RuntimeError('NaN')\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport misc\n\nmodel = torch.nn.Linear(2, 2).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)\nfor step in range(10):\n"
        "    loss = model(torch.randn(2, 2, device='cuda')).sum()\n    misc.check_nan_losses(loss)\n"
        "    loss.backward()\n    opt.step()\n")
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--output-format", "concise",
                          "--select", "GPU112", "train.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert "train.py:8:5: GPU112 `misc.check_nan_losses(...)` syncs every step: `check_nan_losses` calls " \
           "`math.isnan()`" in out.stdout
