"""The full text format splits each file's source into lines once, however many findings the file has: a warm
run's rendering of a file with many findings no longer re-splits the whole file per finding (the largest single
cost of a warm `gpulint check` on pytorch/examples)."""

from __future__ import annotations

from gpulint.diagnostics import Diagnostic, Position
from gpulint.output import full
from gpulint.output.report import Report


def _finding(row: int, filename: str = "train.py") -> Diagnostic:
    return Diagnostic("GPU101", "item-in-loop", "`.item()` every iteration", location=Position(row, 5),
                      end_location=Position(row, 15), filename=filename)


def test_each_source_is_split_once_and_every_finding_keeps_its_line(monkeypatch):
    calls = []
    real = full.source_lines

    def counting(text):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(full, "source_lines", counting)
    train = "".join(f"    x{i} = loss.item()\n" for i in range(1, 41))
    other = "    y = acc.item()\n"
    report = Report(tuple(_finding(r) for r in (3, 17, 40)) + (_finding(1, "eval.py"),),
                    {("train.py", None): train, ("eval.py", None): other})
    text = full.render(report)
    assert len(calls) == 2
    for row in (3, 17, 40):
        assert f"{row} |     x{row} = loss.item()" in text
    assert "1 |     y = acc.item()" in text
