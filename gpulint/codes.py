"""Rule codes as users type them: which are gpulint's, and the closest real code to a typo (`GPU1O1` -> GPU101)."""

from __future__ import annotations

from typing import Optional


def known_codes() -> dict[str, str]:
    """code -> rule name, for every rule."""
    from gpulint.rule import all_rules

    return {code: cls.name for code, cls in all_rules().items()}


def closest(token: str) -> Optional[str]:
    """The valid code nearest to `token` (a mistyped code or a rule's name), or None when nothing is near."""
    codes = known_codes()
    wanted = token.strip()
    by_name = {name: code for code, name in codes.items()}
    if wanted.lower() in by_name:
        return by_name[wanted.lower()]
    upper = wanted.upper().replace("O", "0") if wanted.upper().startswith("GPU") else wanted.upper()
    if upper in codes:
        return upper
    import difflib  # a mistyped code only: not on every run's start-up

    match = difflib.get_close_matches(wanted.upper(), list(codes), n=1, cutoff=0.6)
    if match:
        return match[0]
    match = difflib.get_close_matches(wanted.lower(), list(by_name), n=1, cutoff=0.6)
    return by_name[match[0]] if match else None


def did_you_mean(token: str) -> str:
    """`; did you mean GPU101 (item-in-loop)?`, or nothing when no code is near."""
    code = closest(token)
    return f"; did you mean {code} ({known_codes()[code]})?" if code else ""
