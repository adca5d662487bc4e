"""Project analysis of the shapes real engines take (DETR, DeiT, ConvNeXt, MAE, DINO): what helpers return, the
class a parameter gets at its call sites, a criterion module's forward, device tensors a helper makes itself,
gradient helpers over a module's parameters, and library calls from the reviewed table.

fixtures/projects/engine: engine.py's `train_one_epoch(model, criterion, loader, optimizer, loss_scaler,
log_writer=None, printer=None)` is called from main.py; the helpers live in utils.py and models.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpulint.analysis.project import ClassSummary, Project

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "engine"
ENGINE = FIXTURE / "engine.py"
EXPECTED = {
    ("engine.py", 10, "GPU112"),  # criterion(outputs, targets): SetCriterion.forward reads num back (.item())
    ("engine.py", 13, "GPU112"),  # metric_logger.update(grad_norm=...): the scaler's __call__ returns a tensor
    ("engine.py", 16, "GPU112"),  # metric_logger.update(**scaled): a comprehension over reduce_dict(...)
    ("engine.py", 18, "GPU112"),  # log_writer.update(...): main.py passes a TensorboardLogger (or None)
    ("engine.py", 19, "GPU112"),  # utils.clip_gradients(model, 3.0): .item() of each parameter's grad norm
    ("engine.py", 20, "GPU112"),  # utils.all_reduce_mean(<float>): torch.tensor(x).cuda() ... .item()
    ("trainer.py", 16, "GPU112"),  # self.logger.update(loss=loss): main.py builds Trainer(model, MetricLogger())
}


def check(root: Path, *args: str):
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache",
                          "--select", "GPU112", *args], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def found(items) -> set:
    return {(Path(d["filename"]).as_posix(), d["location"]["row"], d["code"]) for d in items}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "engine"
    shutil.copytree(FIXTURE, root)
    return root


def test_engine_costs_are_reported_at_the_calls_and_fine_calls_stay_silent(project: Path):
    # Silent: host numbers given to the logger (line 22), a logger that only stores (23), a helper reading sizes
    # (24), clipping every 100 steps (26), and in `evaluate` a criterion without a read and a `printer` whose
    # call sites pass two different classes.
    assert found(check(project, ".")) == EXPECTED


def test_one_engine_file_named_reads_its_callers_and_helpers(project: Path):
    assert found(check(project, "engine.py")) == {f for f in EXPECTED if f[0] == "engine.py"}


def test_messages_name_the_callee_and_the_read(project: Path):
    items = {d["location"]["row"]: d for d in check(project, "engine.py")}
    assert "`SetCriterion.forward` calls `.item()`" in items[10]["message"]
    assert items[10]["related"][0]["filename"] == "models.py"
    assert "`TensorboardLogger.update` calls `.item()`" in items[18]["message"]
    assert "on the parameters of the module it is given" in items[19]["message"]


def test_returns_tensor_params_and_classes():
    project = Project(FIXTURE)
    scaler = project.lookup(ENGINE, "utils.NativeScaler")
    call = project.method(scaler, "__call__")
    assert call.returns_tensor  # bound under `if update_grad:` (an option), `norm = None` otherwise
    reduce = project.lookup(ENGINE, "utils.reduce_dict")
    assert reduce.returns_tensor and reduce.returns_params == {"input_dict"}
    mean = project.lookup(ENGINE, "utils.all_reduce_mean")
    assert not mean.returns_tensor and mean.returns_host_scalar is not None
    assert mean.always_syncs is not None and mean.always_syncs.line == 78
    build = project.lookup(FIXTURE / "main.py", "build")
    assert [c.name if c else None for c in build.returns_classes] == [None, "SetCriterion"]
    assert project.lookup(ENGINE, "utils.count_parameters").sink_params == {}


def test_a_parameter_gets_the_class_every_call_site_passes():
    project = Project(FIXTURE)
    log_writer = project.parameter_class(ENGINE, "train_one_epoch", "log_writer")
    assert isinstance(log_writer, ClassSummary) and log_writer.name == "TensorboardLogger"  # or None
    assert project.parameter_class(ENGINE, "train_one_epoch", "loss_scaler").name == "NativeScaler"
    assert project.parameter_class(ENGINE, "train_one_epoch", "criterion").name == "SetCriterion"
    assert project.parameter_class(ENGINE, "train_one_epoch", "printer").name == "PrintLogger"
    assert project.parameter_class(ENGINE, "evaluate", "printer") is None  # two classes: unknown
    logger = project.parameter_class(FIXTURE / "trainer.py", "Trainer.__init__", "logger")
    assert logger is not None and logger.name == "MetricLogger"  # Trainer(model, utils.MetricLogger())


def test_a_call_site_passing_something_unknown_makes_the_parameter_unknown(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "helpers.py").write_text(textwrap.dedent("""
        class Logger:
            def update(self, **kw):
                for v in kw.values():
                    v.item()
        def run(logger):
            pass
    """))
    (tmp_path / "a.py").write_text("from helpers import Logger, run\nrun(Logger())\n")
    (tmp_path / "b.py").write_text("from helpers import run\nimport other\nrun(other.make())\n")
    project = Project(tmp_path)
    assert project.parameter_class(tmp_path / "helpers.py", "run", "logger") is None
    (tmp_path / "b.py").write_text("from helpers import run, Logger\nlog = Logger()\nrun(logger=log)\n")
    assert Project(tmp_path).parameter_class(tmp_path / "helpers.py", "run", "logger").name == "Logger"


def test_every_call_site_of_a_constructor_counts(tmp_path):
    # `Trainer(logger=...)` at two sites passing two classes: unknown. (The class of the first site's argument
    # used to replace the Trainer class being looked for, so the second site was never compared.)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "trainer.py").write_text(textwrap.dedent("""
        class Trainer:
            def __init__(self, logger):
                self.logger = logger
    """))
    (tmp_path / "loggers.py").write_text("class A:\n    pass\nclass B:\n    pass\n")
    (tmp_path / "a.py").write_text("from trainer import Trainer\nfrom loggers import A\nTrainer(logger=A())\n")
    (tmp_path / "b.py").write_text("from trainer import Trainer\nfrom loggers import B\nTrainer(logger=B())\n")
    assert Project(tmp_path).parameter_class(tmp_path / "trainer.py", "Trainer.__init__", "logger") is None
    (tmp_path / "b.py").write_text("from trainer import Trainer\nfrom loggers import A\nTrainer(logger=A())\n")
    assert Project(tmp_path).parameter_class(tmp_path / "trainer.py", "Trainer.__init__", "logger").name == "A"


def test_module_classes_run_forward():
    project = Project(FIXTURE)
    criterion = project.lookup(FIXTURE / "main.py", "SetCriterion") or project.lookup(
        FIXTURE / "models.py", "SetCriterion")
    assert project.is_module_class(criterion)
    assert project.method(criterion, "forward").always_syncs.what == ".item()"
    assert not project.is_module_class(project.lookup(ENGINE, "utils.NativeScaler"))


def test_library_facts_for_evaluate_and_accelerate():
    from gpulint.analysis.libraries import Effect, fact_for_method

    assert fact_for_method("evaluate.load", "add_batch").effect is Effect.SYNCS_TENSOR_ARGS
    assert fact_for_method("evaluate.load", "add").effect is Effect.SYNCS_TENSOR_ARGS
    assert fact_for_method("evaluate.load", "compute") is None
    assert fact_for_method("accelerate.Accelerator", "check_trigger").effect is Effect.SYNCS
    assert fact_for_method("accelerate.Accelerator", "gather_for_metrics").effect is Effect.RETURNS_TENSOR_ARGS


METRIC_LOOP = """\
import evaluate
import torch
from accelerate import Accelerator

accelerator = Accelerator()
metric = evaluate.load("glue", "mrpc")
model = torch.nn.Linear(2, 2).cuda()
for step, batch in enumerate(loader):
    outputs = model(batch["x"])
    predictions = outputs.argmax(dim=-1)
    predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
    {line}
    if accelerator.check_trigger():
        break
"""


def test_evaluate_metric_fed_device_tensors_syncs_every_step(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "ev.py").write_text(METRIC_LOOP.format(
        line="metric.add_batch(predictions=predictions, references=references)"))
    rows = {d["location"]["row"]: d["message"] for d in check(tmp_path, "ev.py")}
    assert set(rows) == {12, 13}
    assert "EvaluationModule.add_batch" in rows[12] and "Accelerator.check_trigger" in rows[13]


def test_evaluate_metric_fed_host_lists_is_fine(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "ev.py").write_text(METRIC_LOOP.format(
        line="metric.add_batch(predictions=predictions.tolist(), references=references.tolist())"))
    assert {d["location"]["row"] for d in check(tmp_path, "ev.py")} == {13}


HELPERS = """
import torch


def nms(prediction, conf_thres=0.25):
    xc = prediction[..., 4] > conf_thres
    out = []
    for xi, x in enumerate(prediction):
        x = x[xc[xi]]
        out.append(x)
    return out


def crop(x, size):
    h = int(x.shape[0])
    return x[:, : min(h, size)]


def to_backend(im, onnx=False):
    device = im.device
    if "mps" in device.type:
        im = im.cpu()
    if onnx:
        return im.cpu().numpy()
    else:
        return im.float().numpy()
"""


def test_mask_indexing_in_a_helper_is_a_read_and_shapes_are_not(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "helpers.py").write_text(HELPERS)
    project = Project(tmp_path)
    nms = project.lookup(tmp_path / "helpers.py", "nms")
    assert nms.sink_for_argument(0, None).what == "boolean-mask indexing"
    assert nms.sink_for_argument(0, None).line == 9  # x = x[xc[xi]]
    assert project.lookup(tmp_path / "helpers.py", "crop").sink_params == {}  # int() of a shape


def test_branches_not_taken_on_a_cuda_run_are_not_the_calls(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "helpers.py").write_text(HELPERS)
    backend = Project(tmp_path).lookup(tmp_path / "helpers.py", "to_backend")
    # `if "mps" in ...` is another backend; `if onnx:` and its `else` are options we cannot see
    assert backend.sink_params == {}


def test_an_accelerator_built_by_a_project_factory_prepares_the_loader(tmp_path):
    """kohya-ss/sd-scripts: `accelerator = train_util.prepare_accelerator(args)` returns `Accelerator(...)` built
    in library/train_util.py; the loader it prepares yields device batches, so pinning advice does not apply."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "__init__.py").write_text("")
    (tmp_path / "library" / "train_util.py").write_text(textwrap.dedent("""\
        from accelerate import Accelerator


        def prepare_accelerator(args):
            accelerator = Accelerator(gradient_accumulation_steps=args.steps)
            return accelerator


        def make_other(args):
            return object()
        """))
    script = textwrap.dedent("""\
        import torch
        from library import train_util

        accelerator = train_util.{factory}(None)
        model = torch.nn.Linear(8, 2).cuda()
        optimizer = torch.optim.AdamW(model.parameters(), fused=True)
        loader = torch.utils.data.DataLoader(torch.randn(64, 8), batch_size=8)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for x in loader:
            loss = model(x.to("cuda")).sum()
            accelerator.backward(loss)
            optimizer.step()
        """)
    (tmp_path / "train.py").write_text(script.format(factory="prepare_accelerator"))
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache",
                          "--select", "GPU201,GPU202", "train.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert json.loads(out.stdout) == []
    # an unknown object's `prepare` is not Accelerate's: the unpinned loader and its copies are reported
    (tmp_path / "train.py").write_text(script.format(factory="make_other"))
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache",
                          "--select", "GPU201,GPU202", "train.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert {d["code"] for d in json.loads(out.stdout)} == {"GPU201", "GPU202"}


def test_a_closure_a_project_factory_returns_is_the_function_called_each_step(tmp_path):
    """BigGAN-PyTorch: `train = train_fns.GAN_training_function(G, D, ...)` (or, on a dry-run branch, a factory
    returning a no-op) then `metrics = train(x, y)` every step; the closure reads its losses with `.item()`."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "train_fns.py").write_text(textwrap.dedent("""\
        def dummy_training_function():
            def train(x, y):
                return {}
            return train


        def gan_training_function(G, D, config):
            def train(x, y):
                G.optim.zero_grad()
                loss = D(G(x)).mean()
                loss.backward()
                G.optim.step()
                return {'loss': float(loss.item())}
            return train


        def quiet_training_function(G, D):
            def train(x, y):
                loss = D(G(x)).mean()
                loss.backward()
                return {'loss': loss.detach()}
            return train
        """))
    script = textwrap.dedent("""\
        import torch
        import train_fns

        G = torch.nn.Linear(8, 8).cuda()
        D = torch.nn.Linear(8, 1).cuda()
        loader = torch.utils.data.DataLoader(torch.randn(64, 8), batch_size=8, pin_memory=True)
        if config == 'GAN':
            train = train_fns.{factory}
        else:
            train = train_fns.dummy_training_function()
        for x in loader:
            x = x.to('cuda', non_blocking=True)
            metrics = train(x, None)
        """)
    for factory, expected in (("gan_training_function(G, D, {})", [("train.py", 13, "GPU112")]),
                              ("quiet_training_function(G, D)", [])):
        (tmp_path / "train.py").write_text(script.format(factory=factory))
        assert sorted(found(check(tmp_path, "train.py"))) == expected
