"""The progress line on stderr while `gpulint verify` runs: phase, program, round r/N, step n/N, elapsed time,
rewritten in place. Shown only when stderr is a terminal; GPULINT_VERIFY_PROGRESS=1 forces it on (tests, CI logs
that want it), =0 off."""

from __future__ import annotations

import os
import sys
import time
from typing import Optional

ENV = "GPULINT_VERIFY_PROGRESS"


def wanted(stream) -> bool:
    forced = os.environ.get(ENV, "")
    if forced in ("0", "1"):
        return forced == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    def __init__(self, stream=None, enabled: Optional[bool] = None, max_steps: int = 0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream) if enabled is None else enabled
        self.max_steps = max_steps
        self.started = time.monotonic()
        self.shown = False
        self.state = ""

    def phase(self, phase: str, program: str = "", round_: int = 0, rounds: int = 0) -> None:
        parts = [phase] + ([program] if program else []) + ([f"round {round_}/{rounds}"] if rounds else [])
        self.state = ", ".join(parts)
        self.draw()

    def step(self, steps: int) -> None:
        self.draw(steps)

    def draw(self, steps: Optional[int] = None) -> None:
        if not self.enabled:
            return
        text = f"gpulint verify: {self.state}"
        if steps == 0:
            text += ", starting"  # importing, building the model, loading data
        elif steps is not None:
            text += f", step {steps}" + (f"/{self.max_steps}" if self.max_steps else "")
        text += f", {time.monotonic() - self.started:.0f} s"
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        """Erase the line, so that what follows starts on a clean one."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False
