from __future__ import annotations

from gpulint.output.common import display_location, fix_marker


def render(diagnostics, sources, summary) -> str:
    lines = [f"{display_location(d)}: {d.code} {fix_marker(d)}{d.message}" for d in diagnostics]
    if summary:
        lines.append(summary)
    return "\n".join(lines) + ("\n" if lines else "")
