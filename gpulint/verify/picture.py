"""`--report PATH`: the loss curves of both programs overlaid (with the original's noise band when measured) and
their step-time distributions side by side, as a PNG, or as one self-contained HTML file (the figure embedded as
base64, the text report under it). Needs matplotlib, the `report` extra: imported here only, never by the linter.
"""

from __future__ import annotations

import base64
import html
import io
import random
from pathlib import Path

from gpulint.verify.compare import span


def _losses(run, rank: int = 0) -> list[float]:
    return (run.ranks[rank].get("losses") or []) if run is not None and len(run.ranks) > rank else []


def _times(runs, rank: int = 0) -> list[float]:
    out = []
    for run in runs:
        if len(run.ranks) > rank:
            out.extend((run.ranks[rank].get("step_times_ms") or {}).get("ms") or [])
    return out


def figure(verdict):
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    from matplotlib.figure import Figure  # no pyplot: no global state, nothing shown

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_loss, ax_time = fig.subplots(1, 2)
    r = verdict.ranks[0]
    before, after = _losses(verdict.original), _losses(verdict.fixed)
    band = [_losses(run) for run in verdict.noise]
    if band:
        n = min(len(before), *(len(b) for b in band))
        spans = [span([before[i], *(b[i] for b in band)]) for i in range(n)]  # the band the verdict used
        low, high = [lo for lo, _ in spans], [hi for _, hi in spans]
        ax_loss.fill_between(range(1, n + 1), low, high, color="tab:blue", alpha=0.2,
                             label=f"original's noise band ({len(band) + 1} runs)")
    if before or after:
        ax_loss.plot(range(1, len(before) + 1), before, color="tab:blue", label="original")
        ax_loss.plot(range(1, len(after) + 1), after, color="tab:orange", linestyle="--", label="fixed")
        ax_loss.legend()
    else:
        ax_loss.text(0.5, 0.5, "no loss recorded (no backward())", ha="center", va="center",
                     transform=ax_loss.transAxes)
    ax_loss.set_xlabel("backward() call")
    ax_loss.set_ylabel("loss")
    finite = [x for x in before + after if x == x and abs(x) != float("inf")]
    if finite and min(finite) > 0 and max(finite) / min(finite) > 100:
        ax_loss.set_yscale("log")  # a diverging run would flatten the other curve
    ax_loss.set_title(f"loss: {r.numerics_text().split(':')[0]}", fontsize=10)  # the details are in the text

    originals = [pair[0] for pair in verdict.rounds] or [verdict.original]
    fixeds = [pair[1] for pair in verdict.rounds] or [verdict.fixed]
    data = [_times(originals), _times(fixeds)]
    if any(data):
        ax_time.boxplot([d or [float("nan")] for d in data], showfliers=False, widths=0.5)
        jitter = random.Random(0)
        for position, values in enumerate(data, start=1):
            ax_time.scatter([position + jitter.uniform(-0.15, 0.15) for _ in values], values, s=8, alpha=0.5,
                            color=("tab:blue", "tab:orange")[position - 1])
        ax_time.set_xticks([1, 2], ["original", "fixed"])
        ax_time.set_ylabel(f"step time, ms ({r.original.time_source or r.fixed.time_source or ''})")
    if verdict.options.parallel:
        title = "step times (ran in parallel: not comparable)"
    elif r.timing is not None:
        title = f"step time: {r.timing.sentence()}"
    else:
        title = "step times"
    ax_time.set_title(title, fontsize=10)
    return fig


def write_report(verdict, path: Path) -> None:
    fig = figure(verdict)
    if path.suffix.lower() == ".png":
        fig.savefig(path, format="png", dpi=110)
        return
    from gpulint.verify.report import render_full

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    image = base64.b64encode(buffer.getvalue()).decode("ascii")
    title = html.escape(f"gpulint verify: {verdict.original.program.script.name}")
    path.write_text(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + title + "</title>"
        "<style>body{font-family:sans-serif;margin:2em}pre{background:#f6f6f6;padding:1em}</style></head>\n"
        f"<body><h1>{title}</h1>\n<p><b>{html.escape(verdict.summary)}</b></p>\n"
        f"<img alt=\"loss curves and step-time distributions\" src=\"data:image/png;base64,{image}\">\n"
        f"<pre>{html.escape(render_full(verdict))}</pre>\n</body></html>\n", encoding="utf-8")
