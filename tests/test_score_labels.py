"""benchmarks/score_labels.py: re-scoring the hand labels from checkouts at the recorded commits."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCORER = ROOT / "benchmarks" / "score_labels.py"
HEADER = "repo\tcommit\tpath\tline\tlabel\tcategory\treason\n"

# A stand-in for gpulint: one finding per line marked `# FLAG`, spanning N lines when marked `# FLAG+N`.
FAKE_GPULINT = textwrap.dedent("""\
    import json, re, sys
    from pathlib import Path
    root = Path(sys.argv[-1])
    out = []
    for f in sorted(root.rglob("*.py")):
        for n, text in enumerate(f.read_text().splitlines(), start=1):
            m = re.search(r"# FLAG(?:\\+(\\d+))?", text)
            if m:
                out.append({"code": "GPU101", "message": "m", "filename": str(f), "cell": None, "fix": None,
                            "location": {"row": n, "column": 1},
                            "end_location": {"row": n + int(m.group(1) or 0), "column": 1}})
    print(json.dumps(out))
""")

OLD = textwrap.dedent("""\
    for x in loader:
        a = x.item()  # FLAG
        b = helper(x)
        c = x.cpu()  # FLAG
        d = 1
        e = DataLoader(  # FLAG+2
            ds,
            batch_size=2)
        f = x.tolist()  # FLAG
""")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def setup(tmp_path: Path):
    clone = tmp_path / "checkouts" / "acme+trainer"
    clone.mkdir(parents=True)
    git(clone, "init", "-q")
    git(clone, "config", "user.email", "t@t")
    git(clone, "config", "user.name", "t")
    (clone / "train.py").write_text(OLD)
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "old")
    commit = git(clone, "rev-parse", "HEAD")
    # HEAD moves on: every line shifts by two, so scoring HEAD instead of the recorded commit would miss everything.
    (clone / "train.py").write_text("import os\nimport sys\n" + OLD)
    git(clone, "commit", "-qam", "new")
    rows = [
        ("train.py", 2, "TRUE", "sync"),  # flagged
        ("train.py", 3, "TRUE", "sync-via-helper"),  # missed
        ("train.py", 4, "ACCEPTABLE", "sync"),  # false alarm
        ("train.py", 5, "ACCEPTABLE", "sync"),  # quiet, fine
        ("train.py", 7, "TRUE", "transfer"),  # covered by the 3-line finding that starts on line 6
    ]
    labels = tmp_path / "labels.tsv"
    labels.write_text(HEADER + "".join(f"acme/trainer\t{commit}\t{p}\t{n}\t{lab}\t{cat}\twhy {n}\n"
                                       for p, n, lab, cat in rows))
    fake = tmp_path / "fake_gpulint.py"
    fake.write_text(FAKE_GPULINT)
    return tmp_path, clone, labels, fake


def score(tmp_path: Path, labels: Path, fake: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCORER), "--checkouts", str(tmp_path / "checkouts"),
                           "--labels", str(labels), "--gpulint", f"{sys.executable} {fake}", *extra],
                          capture_output=True, text=True)


def test_scores_at_the_recorded_commit_not_head(setup):
    tmp_path, clone, labels, fake = setup
    out = score(tmp_path, labels, fake, "--json", str(tmp_path / "s.json"), "--show-unlabelled")
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "s.json").read_text())
    overall = data["overall"]
    assert (overall["true"], overall["found"], overall["acceptable"], overall["acceptable_flagged"]) == (3, 2, 2, 1)
    assert overall["via"] == 0  # no finding names a related location
    assert overall["precision"] == pytest.approx(2 / 3)
    assert [(m["path"], m["line"]) for m in data["missed"]] == [("train.py", 3)]
    assert [(f["line"], f["codes"]) for f in data["false_alarms"]] == [(4, ["GPU101"])]
    # the finding on line 9 has no label: listed, not scored
    assert data["unlabelled_in_labelled_files"] == [
        {"repo": "acme/trainer", "path": "train.py", "line": 9, "code": "GPU101"}]
    assert data["categories"]["sync-via-helper"] == {"found": 0, "true": 1}
    assert "acme/trainer train.py:3 [sync-via-helper] why 3" in out.stdout
    # the clone itself is left at its HEAD, and the temporary worktree is gone
    assert (clone / "train.py").read_text().startswith("import os")
    assert git(clone, "worktree", "list").count("\n") == 0


def test_a_miss_named_as_a_related_location_is_counted_apart(setup):
    """A cost reported at the hot call site, naming the labelled sink line as its related location (`via
    train.py:3`): the strict recall stays 2 of 3, and the `via` figure counts that line."""
    tmp_path, _, labels, fake = setup
    fake.write_text(FAKE_GPULINT.replace(
        '"end_location": {"row": n + int(m.group(1) or 0), "column": 1}})',
        '"end_location": {"row": n + int(m.group(1) or 0), "column": 1},\n'
        '                            "related": [{"filename": str(f), "location": {"row": 3, "column": 1}, '
        '"message": "sink"}] if n == 2 else []})'))
    out = score(tmp_path, labels, fake, "--json", str(tmp_path / "s.json"))
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "s.json").read_text())
    assert (data["overall"]["found"], data["overall"]["via"]) == (2, 1)
    assert [(m["path"], m["line"]) for m in data["via"]] == [("train.py", 3)]
    assert "acme/trainer train.py:3 [sync-via-helper] [via] why 3" in out.stdout
    assert "(+via): 3/3" in out.stdout


def test_missing_checkout_is_a_one_line_error(setup):
    tmp_path, clone, labels, fake = setup
    clone.rename(tmp_path / "elsewhere")
    out = score(tmp_path, labels, fake)
    assert out.returncode != 0
    assert "not a git clone" in out.stderr and "Traceback" not in out.stderr


def test_bad_label_value_is_rejected(setup):
    tmp_path, _, labels, fake = setup
    labels.write_text(labels.read_text().replace("\tTRUE\t", "\tMAYBE\t", 1))
    out = score(tmp_path, labels, fake)
    assert out.returncode != 0
    assert "label must be TRUE or ACCEPTABLE" in out.stderr and "Traceback" not in out.stderr


def test_committed_labels_are_well_formed():
    """The committed set: >= 8 repositories, >= 150 labels, one commit per repository, no line labelled twice."""
    sys.path.insert(0, str(SCORER.parent))
    try:
        import score_labels
    finally:
        sys.path.pop(0)
    labels = score_labels.read_labels(score_labels.LABELS)
    assert len(labels) >= 150
    repos = {lb.repo for lb in labels}
    assert len(repos) >= 8
    assert all(len({lb.commit for lb in labels if lb.repo == r}) == 1 for r in repos)
    assert {lb.category for lb in labels} <= {"sync", "sync-via-helper", "transfer", "accumulation", "throughput"}
