"""The program shapes of benchmarks/programs/shapes/ (and their hand-optimised twins) run on CPU torch and print
the lines benchmarks/shapes_speed.py reads (`STEP_MS`, `FINAL <loss> <checksum>`); shapes_speed.py --summarise
turns raw lines into the table of docs/benchmarks.md."""
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ROOT / "benchmarks" / "programs" / "shapes"
NAMES = sorted(p.stem for p in SHAPES.glob("*.py") if not p.stem.endswith("_hand"))


def test_five_shapes_each_with_a_hand_twin():
    assert len(NAMES) >= 5
    for name in NAMES:
        assert (SHAPES / f"{name}_hand.py").exists(), name


RUN_ALL = """
import contextlib, io, runpy, sys, traceback
for path in sys.argv[1:]:
    sys.argv = [path, "--steps", "3", "--tiny"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
    except BaseException:
        out.write("ERROR " + traceback.format_exc().replace(chr(10), " | "))
    print("=== " + path)
    print(out.getvalue())
"""


@pytest.fixture(scope="module")
def outputs():
    """Every program and twin at --tiny --steps 3, in one CPU process (torch is imported once: the module stays
    fast), stdout of each kept apart."""
    programs = [str(SHAPES / f"{n}{suffix}.py") for n in NAMES for suffix in ("", "_hand")]
    proc = subprocess.run([sys.executable, "-c", RUN_ALL, *programs], capture_output=True, text=True, timeout=300,
                          env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    chunks = {}
    for chunk in proc.stdout.split("=== ")[1:]:
        head, _, body = chunk.partition("\n")
        chunks[Path(head).name] = body
    return chunks


@pytest.mark.parametrize("program", [f"{n}{suffix}.py" for n in NAMES for suffix in ("", "_hand")])
def test_shape_runs_and_prints_final(outputs, program):
    lines = outputs[program].splitlines()
    assert not any(line.startswith("ERROR") for line in lines), outputs[program]
    step_ms = [line for line in lines if line.startswith("STEP_MS ")]
    final = [line for line in lines if line.startswith("FINAL ")]
    assert len(step_ms) == 1 and float(step_ms[0].split()[1]) > 0
    assert len(final) == 1
    loss, checksum = (float(x) for x in final[0].split()[1:])
    assert loss == loss and checksum == checksum  # finite numbers, not NaN


def test_summarise_pairs_interleaved_rounds(tmp_path):
    raw = tmp_path / "raw.txt"
    rows = []
    for r, (a, g, h) in enumerate([(10.0, 8.0, 5.0), (12.0, 9.0, 6.0), (11.0, 8.5, 5.5)], start=1):
        for variant, ms in (("as_written", a), ("gpulint", g), ("hand", h)):
            rows.append(f"RAW round={r} shape=toy variant={variant} step_ms={ms} final=1.0 2.0 t=0s")
    raw.write_text("\n".join(rows) + "\n")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "shapes_speed.py"), "--summarise", str(raw)],
                         capture_output=True, text=True, check=True).stdout
    row = next(line for line in out.splitlines() if line.startswith("| toy (n=3)"))
    assert "11.00 [" in row and "8.50 [" in row and "5.50 [" in row
    assert "1.29x [" in row and "2.00x [" in row  # 11/8.5 and 11/5.5


SPEED = ROOT / "benchmarks" / "shapes_speed.py"
AFFINITY_PROGRAM = """import os, sys
cpus = sorted(os.sched_getaffinity(0))
print("STEP_MS", len(cpus))
print("FINAL", min(cpus), max(cpus))
"""


def _raw(path):
    lines = Path(path).read_text().splitlines()
    return lines[0], [dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
                      for line in lines if line.startswith("RAW ")]


def test_tiny_run_pinned_to_one_cpu_reports_that_set(tmp_path):
    """--cpus pins the programs: a --tiny run of a real shape, pinned to one CPU, says so in the raw header."""
    import os

    cpu = max(os.sched_getaffinity(0))
    folder = tmp_path / "shapes"
    for variant, suffix in (("as_written", ""), ("gpulint", ""), ("hand", "_hand")):
        (folder / variant).mkdir(parents=True)
        (folder / variant / "mlp_tensordataset.py").write_text((SHAPES / f"mlp_tensordataset{suffix}.py").read_text())
    raw = tmp_path / "raw.txt"
    proc = subprocess.run([sys.executable, str(SPEED), "--run", str(folder), "--rounds", "1", "--steps", "3", "--tiny",
                           "--cpus", str(cpu), "--raw", str(raw)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    header, rows = _raw(raw)
    assert f"cpus={cpu} (given)" in header and "order=fixed" in header
    assert [r["variant"] for r in rows] == ["as_written", "gpulint", "hand"]
    assert all(r["step_ms"] != "None" for r in rows)


def test_cpus_pin_every_child_process(tmp_path):
    """The affinity is set in the child before exec: each program sees exactly the CPU set given, not the parent's."""
    import os

    cpu = min(os.sched_getaffinity(0))
    for variant in ("as_written", "gpulint", "hand"):
        (tmp_path / variant).mkdir()
        (tmp_path / variant / "toy.py").write_text(AFFINITY_PROGRAM)
    raw = tmp_path / "raw.txt"
    subprocess.run([sys.executable, str(SPEED), "--run", str(tmp_path), "--rounds", "2", "--steps", "3", "--cpus",
                    str(cpu), "--raw", str(raw)], capture_output=True, text=True, check=True, timeout=120)
    _, rows = _raw(raw)
    assert len(rows) == 6
    assert all(r["step_ms"] == "1.0" and r["final"] == str(cpu) for r in rows)  # one CPU, the one given
    unpinned = tmp_path / "unpinned.txt"
    subprocess.run([sys.executable, str(SPEED), "--run", str(tmp_path), "--rounds", "1", "--steps", "3", "--raw",
                    str(unpinned)], capture_output=True, text=True, check=True, timeout=120)
    header, rows = _raw(unpinned)
    assert "cpus=all (not pinned)" in header
    assert all(float(r["step_ms"]) == len(os.sched_getaffinity(0)) for r in rows)


def test_cpus_outside_the_allowed_set_is_a_one_line_error(tmp_path):
    for variant in ("as_written", "gpulint", "hand"):
        (tmp_path / variant).mkdir()
        (tmp_path / variant / "toy.py").write_text(AFFINITY_PROGRAM)
    proc = subprocess.run([sys.executable, str(SPEED), "--run", str(tmp_path), "--rounds", "1", "--cpus", "100000"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("error: --cpus 100000:") and len(proc.stderr.strip().splitlines()) == 1


def _order(tmp_path, seed, name):
    for shape in ("s1", "s2", "s3"):
        for variant in ("as_written", "gpulint", "hand"):
            (tmp_path / variant).mkdir(exist_ok=True)
            (tmp_path / variant / f"{shape}.py").write_text(AFFINITY_PROGRAM)
    raw = tmp_path / name
    subprocess.run([sys.executable, str(SPEED), "--run", str(tmp_path), "--rounds", "4", "--steps", "3", "--order",
                    "shuffle", "--seed", str(seed), "--raw", str(raw)], capture_output=True, text=True, check=True,
                   timeout=300)
    header, rows = _raw(raw)
    assert f"order=shuffle seed={seed}" in header
    return [[(r["shape"], r["variant"]) for r in rows if r["round"] == str(k)] for k in range(1, 5)]


def test_shuffle_runs_every_variant_once_per_round_reproducibly(tmp_path):
    rounds = _order(tmp_path, 7, "a.txt")
    every = sorted((s, v) for s in ("s1", "s2", "s3") for v in ("as_written", "gpulint", "hand"))
    for pairs in rounds:
        assert sorted(pairs) == every  # each variant of each shape once per round
        shapes = [s for s, _ in pairs]
        assert shapes == sorted(shapes, key=shapes.index)  # a shape's variants run next to each other
    assert len({tuple(p) for p in rounds}) > 1  # the order changes from round to round
    firsts = {pairs[k][1] for pairs in rounds for k in (0, 3, 6)}
    assert len(firsts) > 1  # as_written is not always the first after another shape
    assert _order(tmp_path, 7, "b.txt") == rounds  # same seed, same order
    assert _order(tmp_path, 8, "c.txt") != rounds


def test_tf32_bimodal_takes_the_same_cpus():
    """tf32_bimodal.py resolves --cpus as shapes_speed.py does and says which set its children get."""
    import os

    script = str(ROOT / "benchmarks" / "tf32_bimodal.py")
    cpu = min(os.sched_getaffinity(0))
    out = subprocess.run([sys.executable, script, "--processes", "0", "--cpus", str(cpu)], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert out.strip() == f"# tf32_bimodal: 0 processes, cpus={cpu} (given)"
    bad = subprocess.run([sys.executable, script, "--processes", "0", "--cpus", "100000"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode != 0 and bad.stderr.strip().startswith("error: --cpus 100000:")
    assert "Traceback" not in bad.stderr
