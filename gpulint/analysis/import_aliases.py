"""Names a caller module calls a project function by: its own name, or an alias its top-level imports bind
(`from train.metrics import accuracy_SBM as accuracy`, then `accuracy(scores, labels)` in the epoch loop), or a
top-level name bound once to it (`criterion = MODEL.get_loss`, `project.ModuleInfo.aliases`).

`forward.member_site` looks for the per-step call of a top-level function by the function's name (the project's
identifier index, the names each caller's hot loops call); a file importing it under another name calls it by
that name. `local_names(info, member)`: `member` and the aliases `info`'s top-level `from ... import member as
alias` bind (the caller's own lookup of the alias still decides that it is the function asked about).
"""

from __future__ import annotations


def local_names(info, member: str) -> frozenset:
    aliases = [local for local, (_, attr, _) in info.imports.items() if attr == member and local != member]
    return frozenset((member, *aliases, *bound_aliases(info, member)))


def bound_aliases(info, member: str) -> list:
    """The top-level names of `info` bound once to a dotted name ending in `member` (`criterion =
    MODEL.get_loss`, `ModuleInfo.aliases`), or to one on each branch of an `if` (`ModuleInfo.alias_choices`); the
    caller's lookup of each decides whether it is the function."""
    found = [local for local, dotted in getattr(info, "aliases", {}).items()
             if dotted is not None and dotted.rsplit(".", 1)[-1] == member]
    # `Detector = MODEL.BoxNet` on one branch of a top-level `if`, `= MODEL.VoteNet` on the other
    found.extend(local for local, choices in getattr(info, "alias_choices", {}).items()
                 if choices and any(c.rsplit(".", 1)[-1] == member for c in choices) and local not in found)
    return found
