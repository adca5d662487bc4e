"""GPU001: a file gpulint cannot parse. A pseudo-rule: the runner reports it, no visitor does."""

from __future__ import annotations

from gpulint.rule import Rule, Family, Severity


class SyntaxErrorRule(Rule):
    """A file that does not parse: nothing in it was checked.

    ## What it does
    Reports a Python file that cannot be parsed, at the line and column where Python's parser stops, with the
    parser's message. No other rule runs on that file, and `--fix` leaves it untouched.

    ## Why it is slow
    It is not slow; it is unchecked. A file gpulint cannot parse may hold every anti-pattern this tool looks
    for, and none of them is reported until the syntax error is fixed.

    ## Example
    ```python
    for batch in loader
        loss = model(batch)
    ```

    ## Fix
    Fix the syntax error (here: the missing `:`). gpulint has no automatic fix for it.

    ## Fix safety
    No fix.

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
