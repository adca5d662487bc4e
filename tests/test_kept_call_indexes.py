"""Cold-lint work that recall66's questions repeated (issue 11, branch speed14): counted, not timed. Each test
fails on the code before the change; the answers asserted are the ones it gave.

- `helper_sites._called_in` (is helper `f` called in this method, not under a periodic or flag test?) searched the
  method's body again for every helper name and every set of spellings asked; the project's per-step searches
  ask the same methods about many names (recall66 added every hook method of a module subclass). The method's
  calls are now indexed once per function node and each question is a dictionary look-up.
- `trained_modules._references` walked the whole module three times (class bases, `super(...)` arguments, then
  the names), and `_handed_back` walked it once more after its per-function walks; now one walk each, and
  `_handed_back` walks only the statements outside its top-level functions a second time.
"""

from __future__ import annotations

import ast
import textwrap

from gpulint import ast_walk

METHOD = textwrap.dedent('''
    def compute_loss(self, batch, verbose):
        out = self.net(batch)
        if verbose:
            report(out)
        if step % 10 == 0:
            log_it(out)
        else:
            loss = criterion(out, losses.smooth(out))
        try:
            loss = losses.smooth(loss)
        except ValueError:
            fallback(loss)
        return regularizer(loss) + criterion(out, batch)
''')


def _counting_walks(monkeypatch) -> list:
    roots: list = []
    walk = ast_walk.walk

    def counted(node):
        roots.append(node)
        return walk(node)

    monkeypatch.setattr(ast_walk, "walk", counted)
    return roots


def test_a_methods_calls_are_searched_once_for_every_name_asked(monkeypatch) -> None:
    from gpulint.analysis.helper_sites import _called_in

    fn = ast.parse(METHOD).body[0]
    roots = _counting_walks(monkeypatch)
    first = _called_in(fn, "criterion")
    walked = len(roots)
    assert walked > 0
    # the `else:` of a periodic test is the default path; its `criterion(...)` comes before the `return`'s
    assert first is not None and first.lineno == 9
    assert _called_in(fn, "report") is None  # under a flag parameter (`if verbose:`)
    assert _called_in(fn, "log_it") is None  # under a periodic test
    assert _called_in(fn, "fallback").lineno == 13  # an `except` handler
    assert _called_in(fn, "regularizer").lineno == 14
    assert _called_in(fn, frozenset({"regularizer", "losses.smooth"})).lineno == 9  # the first of either spelling
    assert _called_in(fn, frozenset({"smooth", "nothing"})) is None  # `losses.smooth` is not spelt `smooth`
    assert len(roots) == walked  # every later question answered without walking the method again (six walks more before)


MODULE = textwrap.dedent('''
    import torch.nn as nn


    class Net(Base):
        def __init__(self):
            super(Net, self).__init__()
            self.head = Head()


    def build(cfg):
        model = Net(cfg)
        load(model)
        return model


    def train(cfg):
        loss_fn = Loss(cfg)
        run(build(cfg), loss_fn=loss_fn)


    registry = {"net": Other()}
''')


def test_references_and_handed_back_walk_a_module_once(monkeypatch) -> None:
    from gpulint.analysis.trained_modules import _handed_back, _references

    tree = ast.parse(MODULE)
    roots: list = []
    walk = ast_walk.walk  # (the trained-module searches walk with `gpulint.ast_walk`, speed17)

    def counted(node):
        roots.append(node)
        return walk(node)

    monkeypatch.setattr(ast_walk, "walk", counted)
    references = _references(tree)
    assert roots.count(tree) == 1  # three walks of the whole module before
    assert "Base" not in references  # a class statement's base: no instance
    assert references["Net"] == {"Net": True}  # `super(Net, self)` left out, `Net(cfg)` called
    assert references["Head"] == {"Head": True}
    roots.clear()
    handed = _handed_back(tree)
    assert tree not in roots  # the statements outside the top-level functions only (a whole walk more before)
    # `Net` built and returned by `build`, `Loss` bound and passed on; `Other()` and `Head()` are called outside
    # every top-level function, `load` and `run` called in place
    assert handed == {"Net": frozenset({"build"}), "Loss": frozenset()}
