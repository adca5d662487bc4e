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
