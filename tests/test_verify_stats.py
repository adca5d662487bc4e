"""The verifier's judgement, without running anything: the step-time interval and its verdict, the noise band, the
exact wording of the numerics verdict, the reads no rule flags, the progress line. No torch needed."""

from __future__ import annotations

import io
import random
from pathlib import Path

from gpulint.verify import stats
from gpulint.verify.compare import Tolerance, compare_rank
from gpulint.verify.progress import ENV, Progress, wanted
from gpulint.verify.unflagged import unflagged

DATA = Path(__file__).parent / "data" / "verify"


def _steps(centre: float, n: int = 20, spread: float = 0.05) -> list[float]:
    """n step times around `centre`, spread deterministically (+-spread relative)."""
    return [centre * (1 + spread * ((i * 7 % n) / n - 0.5) * 2) for i in range(n)]


def test_a_fix_that_halves_the_step_is_faster_with_an_interval_above_one():
    t = stats.timing([_steps(10.0) for _ in range(5)], [_steps(5.0) for _ in range(5)])
    assert t.verdict == stats.FASTER
    assert 1.0 < t.speedup.low <= 2.0 <= t.speedup.high < 2.3
    assert t.original.low <= 10.0 <= t.original.high and t.rounds == 5 and t.steps == (100, 100)
    assert t.sentence().startswith("2.00x, faster (95% CI ")


def test_a_fix_that_slows_the_step_is_slower_with_an_interval_below_one():
    t = stats.timing([_steps(10.0) for _ in range(2)], [_steps(11.5) for _ in range(2)])
    assert t.verdict == stats.SLOWER and t.speedup.high < 1.0
    assert t.sentence().startswith("0.87x, slower (95% CI ")


def test_overlapping_step_times_are_no_measurable_change():
    # The same distribution on both sides, rounds drifting up and down: the interval contains 1.
    t = stats.timing([_steps(10.0 + r, spread=0.3) for r in range(5)],
                     [_steps(10.0 + (r * 3) % 5, spread=0.3) for r in range(5)])
    assert t.verdict == stats.SAME and t.speedup.low < 1.0 < t.speedup.high
    assert t.sentence().startswith("no measurable change (")
    assert t.as_dict()["verdict"] == "no measurable change"


def test_rounds_are_paired_so_a_drift_shared_by_both_programs_does_not_blur_the_speedup():
    # The machine gets 3x slower over the rounds; the fix is 2x in every round.
    slow = [_steps(10.0 * (1 + r / 2)) for r in range(5)]
    fast = [_steps(5.0 * (1 + r / 2)) for r in range(5)]
    t = stats.timing(slow, fast)
    assert (t.original.high - t.original.low) / t.original.value > 0.3  # each program's median is uncertain
    assert 1.8 < t.speedup.low and t.speedup.high < 2.2  # the ratio is not


def test_the_interval_is_reproducible_and_none_without_times():
    args = ([_steps(3.0, spread=0.4)] * 3, [_steps(2.9, spread=0.4)] * 3)
    assert stats.timing(*args).as_dict() == stats.timing(*args).as_dict()
    assert stats.timing([[]], [[1.0]]) is None


def _rank(losses, norms, printed="", steps=None) -> dict:
    return {"rank": 0, "unit": "optimizer", "steps": steps or len(losses), "losses": losses,
            "checksums": [[0, [[n], [n]]] for n in norms], "parameter_names": [["weight"]], "printed": printed,
            "printed_line_steps": [len(losses)] * printed.count("\n")}


def test_numerics_verdict_says_exactly_which_kind_of_match():
    tol = Tolerance()
    original = _rank([1.0, 0.5], [2.0, 2.1], "final 0.50\n")
    assert compare_rank(original, _rank([1.0, 0.5], [2.0, 2.1], "final 0.50\n"), tol).numerics_text() == \
        "identical"
    close = compare_rank(original, _rank([1.0, 0.50001], [2.0, 2.1], "final 0.50\n"), tol)
    assert close.numerics_text() == "match within tolerance (rtol 0.0001, atol 1e-06)"
    moved = _rank([1.0, 0.52], [2.0, 2.12], "final 0.52\n")
    strict = compare_rank(original, moved, tol)
    assert strict.numerics == "differ" and str(strict.first_divergence) == \
        "backward #2: loss is 0.5 in the original, 0.52 in the fixed run"
    # Other seeds of the original move the loss by up to 0.05: a 0.02 change is inside their band.
    noise = [_rank([1.0, 0.45], [2.0, 2.05], "final 0.45\n"), _rank([1.0, 0.53], [2.0, 2.13], "final 0.53\n")]
    banded = compare_rank(original, moved, tol, noise)
    assert banded.numerics == "within_noise_band" and not banded.divergences
    assert banded.numerics_text() == "within the original's noise band (3 runs)"
    far = compare_rank(original, _rank([1.0, 0.7], [2.0, 2.1], "final 0.50\n"), tol, noise)
    assert far.numerics == "outside_noise_band"
    assert far.numerics_text() == (
        "outside the noise band: backward #2 (step 2): loss is 0.7 in the fixed run, 0.15 above the band 0.45..0.55, "
        "3.0x the band's half-width (3 runs of the original)")


def test_the_band_is_centred_on_the_same_seed_run():
    # The same-seed run sits at the edge of the other seeds' values: the band reaches as far on the other side.
    tol = Tolerance(rtol=0, atol=0)
    assert tol.within([1.0, 1.2], 0.85) and not tol.within([1.0, 1.2], 0.75)
    assert tol.within([1.0], 1.0) and not tol.within([1.0], 1.0 + 1e-9)


def test_reads_no_rule_flags_are_listed_with_their_callers():
    script = str(DATA / "naive_train.py")  # line 30: the NaN check GPU108 flags; 36: the periodic log line
    helper = str(DATA / "seeded.py")  # line 14: int() in a helper, called from line 23; flagged by nothing
    rank = {"measured_windows": 10,
            "host_read_sites": [[script, 30, "__bool__", 10], [helper, 14, "__int__", 10], [script, 36, "item", 1]],
            "host_read_callers": [[script, 30, "__bool__", 10, []],
                                  [helper, 14, "__int__", 10, [[helper, 23, "<module>"]]],
                                  [script, 36, "item", 1, []]]}  # once in 10 steps: not a per-step read
    assert unflagged(rank) == [{"file": helper, "line": 14, "method": "__int__", "per_step": 1.0,
                                "callers": [{"file": helper, "line": 23, "function": "<module>"}]}]
    # A read whose caller's line is flagged (the rule reported the call) is not a blind spot.
    rank["host_read_callers"][1][4] = [[script, 30, "<module>"]]
    assert unflagged(rank) == []


def test_progress_is_drawn_in_place_on_a_terminal_and_not_elsewhere(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv(ENV, raising=False)
    assert wanted(Terminal()) and not wanted(io.StringIO())
    monkeypatch.setenv(ENV, "1")
    assert wanted(io.StringIO())
    monkeypatch.setenv(ENV, "0")
    assert not wanted(Terminal())

    monkeypatch.delenv(ENV)
    shown = Terminal()
    progress = Progress(shown, max_steps=30)
    progress.phase("measuring", "original", 2, 5)
    progress.step(0)
    progress.step(7)
    progress.done()
    text = shown.getvalue()
    assert "\rgpulint verify: measuring, original, round 2/5, starting, 0 s\x1b[K" in text
    assert "\rgpulint verify: measuring, original, round 2/5, step 7/30, 0 s\x1b[K" in text
    assert text.endswith("\r\x1b[K")  # erased before the report is printed
    quiet = io.StringIO()
    progress = Progress(quiet)
    progress.phase("measuring", "original", 1, 5)
    progress.step(3)
    progress.done()
    assert quiet.getvalue() == ""


def _run(losses, norms_per_step, printed="") -> dict:
    """A rank whose optimizer holds len(norms_per_step[0]) parameter tensors."""
    return {"rank": 0, "unit": "optimizer", "steps": len(losses), "losses": losses,
            "checksums": [[0, [list(n), list(n)]] for n in norms_per_step],
            "parameter_names": [[f"p{i}" for i in range(len(norms_per_step[0]))]], "printed": printed,
            "printed_line_steps": [len(losses)] * printed.count("\n")}


def test_a_fix_that_changes_the_parameter_set_is_named_and_compared_as_another_seed():
    # GPU406's bias=False: the fixed optimizer holds 2 tensors where the original's holds 3.
    tol = Tolerance()
    original = _run([2.0, 1.0, 0.5, 0.4, 0.3], [[3.0, 1.0, 0.1]] * 5)
    noise = [_run([2.1, 1.1, 0.55, 0.42, 0.31], [[3.1, 1.0, 0.1]] * 5),
             _run([1.9, 0.9, 0.45, 0.38, 0.29], [[2.9, 1.1, 0.1]] * 5)]
    fixed = _run([2.0, 1.05, 0.52, 0.41, 0.3], [[3.05, 1.05]] * 5)
    strict = compare_rank(original, fixed, tol)
    assert str(strict.first_divergence) == ("step 1: the fixed program's optimizer holds 2 parameter tensors, the "
                                            "original's 3: the fix changed the parameter set")
    banded = compare_rank(original, fixed, tol, noise)
    assert banded.numerics == "within_noise_band" and banded.another_seed == 7
    assert banded.numerics_text().endswith("inside the original runs' prediction band; the fix changed the "
                                           "parameter set")
    broken = compare_rank(original, _run([20.0, 10.5, 5.2, 4.1, 3.0], [[3.05, 1.05]] * 5), tol, noise)
    assert broken.numerics == "outside_noise_band"
    assert str(broken.first_divergence).startswith("mean loss over backward #1-#1 (window 1 of 5): 20 in the fixed "
                                                   "run, outside the original runs' prediction band")


def test_prediction_band_uses_students_t():
    assert abs(stats.t_quantile(0.95, 2) - 4.303) < 1e-3 and abs(stats.t_quantile(0.99, 10) - 3.169) < 1e-3
    low, high = stats.prediction_band([1.0, 2.0, 3.0], 0.95)  # mean 2, sd 1, n 3
    assert abs((high - 2.0) - 4.303 * (4 / 3) ** 0.5) < 1e-3 and abs((2.0 - low) - (high - 2.0)) < 1e-9


def test_the_warm_up_is_cut_where_the_step_times_settle():
    # 15 slow first steps (a fused optimizer's first calls, autotuning), then a settled series with a spike.
    noise = random.Random(0)
    settled = [16.0 + noise.gauss(0, 0.5) for _ in range(100)]
    settled[60] = 90.0  # one slow step late in the run (a log line that syncs) is no warm-up
    cut = stats.settled([30.0] * 15 + settled)
    assert 15 <= cut <= 20
    assert stats.settled(settled) == 0  # nothing to cut in a settled series
    assert stats.settled([30.0, 16.0, 16.0]) == 0  # too short to tell


def test_timing_rounds_run_without_the_profiler_and_the_deterministic_settings(monkeypatch):
    # Round 1 counts the syncs (profiler) and compares outputs (deterministic kernels, deterministic cuBLAS
    # workspace); rounds 2-N, which time the steps, run neither: a profiler once started slows later launches.
    from gpulint.verify import cli
    from gpulint.verify.launch import Options, Program, Run, environment

    seen = []

    def fake_launch(program, options, watch=None):
        seen.append((program.label, options.profile_steps, options.deterministic))
        return Run(program, ranks=[{"rank": 0, "status": "ok", "fixed_modules": {"m": 1}}], returncode=0)

    monkeypatch.setattr(cli, "launch", fake_launch)
    programs = [Program(label, Path("x.py"), [], None, Path(".")) for label in ("original", "fixed")]
    rounds, failed, _ = cli._run_rounds(programs, Options(rounds=3, profile_steps=8), Progress(enabled=False))
    assert failed is None and len(rounds) == 3
    assert seen[:2] == [("original", 8, True), ("fixed", 8, True)]
    assert {(profile, deterministic) for _, profile, deterministic in seen[2:]} == {(0, False)}
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert environment(Options(deterministic=True))["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert "CUBLAS_WORKSPACE_CONFIG" not in environment(Options(deterministic=False))


def test_step_times_of_a_run_leave_out_its_slow_start():
    from gpulint.verify import cli
    from gpulint.verify.launch import Program, Run

    noise = random.Random(1)
    times = [40.0] * 10 + [16.0 + noise.gauss(0, 0.5) for _ in range(60)]
    run = Run(Program("fixed", Path("x.py"), [], None, Path(".")), ranks=[{"step_times_ms": {"ms": times}}])
    assert cli._step_times(run, 0) == times[10:]
