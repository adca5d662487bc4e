"""Progress-bar wrappers of an iterable: calls that yield their first argument's items unchanged.

`tqdm(loader)` is the common one, but projects and third-party packages have their own: progressbar2's
`progressbar(test_loader, max_value=len(test_loader))`, rich's `track(loader)`, a project's
`progress_bar(loader, desc=...)`, `tqdm_notebook(loader)`. A `for` loop over any of them still takes one batch of
the loader per iteration, so it is as hot as the loop over the loader itself. Recognised by the called name's last
component (a progress-bar word), wherever the name is imported from.
"""

from __future__ import annotations

from typing import Optional

_WORDS = ("progress", "tqdm", "pbar")
_EXACT = frozenset({"track"})


def is_progress_wrapper(dotted: Optional[str]) -> bool:
    """`progressbar`, `progress_bar`, `ProgressBar`, `tqdm_notebook`, `rich.progress.track` (not `trange`, which
    counts, and not `Bar`, whose items come from a method)."""
    if not dotted:
        return False
    last = dotted.rpartition(".")[2].lower()
    return last in _EXACT or any(word in last for word in _WORDS)
