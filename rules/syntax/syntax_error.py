"""GPU001: a file gpulint cannot parse. A pseudo-rule: the runner reports it, no visitor does."""

from __future__ import annotations

from gpulint.rule import Family, FixAvailability, FixSafety, Rule, Safety, Severity


class SyntaxErrorRule(Rule):
    """A file that does not parse: nothing in it was checked.

    ## What it does
    Reports a Python file that cannot be parsed, at the line and column where Python's parser stops, with the
    parser's message. No other rule runs on that file, and `--fix` leaves it untouched.

    One error is the exception: `x.cuda(async=True)`, PyTorch's spelling before 0.4, which Python 3.7 made a
    syntax error (`async` became a keyword). Training scripts of that era are full of it. Such a file is still
    reported, but it is checked as if the argument were spelt `non_blocking=` (its name since PyTorch 0.4, with the
    same meaning), so its per-step syncs are found too, and the finding carries a safe fix that renames it.

    ## Why it is slow
    It is not slow; it is unchecked. A file gpulint cannot parse may hold every anti-pattern this tool looks
    for, and none of them is reported until the syntax error is fixed.

    ## Example
    ```python
    for batch in loader
        loss = model(batch)
    ```

    ## Fix
    Fix the syntax error (here: the missing `:`). gpulint has no automatic fix for it, except for `async=` as a
    keyword argument, renamed `non_blocking=` (`x.cuda(async=True)` becomes `x.cuda(non_blocking=True)`).

    ## Fix safety
    The rename is safe: PyTorch 0.4 renamed the argument without changing what it does, and the file parses again.

    ## When it is fine
    Files that are not meant to be Python (templates, test data with deliberate errors): exclude them with
    `exclude = [...]` in `[tool.gpulint]`, or turn the code off with `ignore = ["GPU001"]`.
    """

    code = "GPU001"
    name = "syntax-error"
    message = "SyntaxError"
    family = Family.SYNTAX
    severity = Severity.ERROR
    # Reported by the runner for any file, whatever its text: no prefilter can rule it out.
    pseudo = True
    fix_availability = FixAvailability.SOMETIMES  # `async=` keyword arguments only (gpulint/legacy_syntax.py)
    fix_safety = FixSafety(Safety.SAFE, "PyTorch 0.4 renamed `async` to `non_blocking` with the same meaning")
