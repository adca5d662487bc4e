"""GPU108 `nan-check-in-loop`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.rule import GpuRule, Example, Family, FixAvailability, FixSafety, Safety
from gpulint.rules._examples import TRAIN_STEP
from gpulint.fixes import fresh_name
from gpulint.syntax import flat_statements, parse_statement
from gpulint.analysis.host_reads import _FLAG_NAMES, _before, check_kind, nan_check


class NanCheckInLoop(GpuRule):
    """`torch.isnan(x).any()` (or `isinf`, `not isfinite(...).all()`) checked in an `if` every iteration.

    ## What it does
    Flags NaN/Inf guards such as `if torch.isnan(loss).any(): break` that run on every iteration of a
    training loop.

    Also flags the per-tensor form, `if any(not torch.isfinite(p.grad).all() for p in params):` (or
    `if not all(...)`), a loss-scaling overflow check written by hand: Python's `any`/`all` read one device
    boolean per tensor, so it is one sync per parameter every step (reported, no fix: stack the per-tensor
    flags on the device, `torch.stack([torch.isfinite(p.grad).all() for p in params]).all()`, and read that
    one flag, or let `torch.amp.GradScaler` skip the step).

    ## Why it is slow
    The `if` needs the answer on the host, so every step ends with a blocking sync just to learn that nothing
    went wrong.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        if torch.isnan(loss).any():
            raise RuntimeError("loss is NaN")
        ...
        if step % 100 == 0:
            print(step, loss.item())
    ```
    After the fix the flag is accumulated on the device and checked where the loop already syncs:
    ```python
    found_nan = False
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        found_nan |= torch.isnan(loss).any()
        ...
        if step % 100 == 0:
            if found_nan:
                raise RuntimeError("loss is NaN")
            print(step, loss.item())
    ```

    ## Fix
    Initialises a flag before the loop, replaces the check with `flag |= <check>` (no sync), and moves the
    original `if` body to the start of the loop's periodic block (one every process reaches: not
    `if step % N == 0 and rank == 0:`); with no such block, after the loop.

    ## Fix safety
    Unsafe: the reaction happens later. Steps between the NaN and the check still run (and may update weights
    with NaN gradients); a `break` or `raise` fires at the next periodic check, or after the loop; a message
    that prints the current loss shows a later step's value. No fix is offered when the `if` body `continue`s
    (skipping the bad step cannot be delayed), has an `else`, or `break`s with no periodic block to host it.

    ## When it is fine
    Checks under a periodic guard, once per epoch, or outside the loop. With AMP, `GradScaler` already skips
    steps with inf/NaN gradients without a sync.
    """

    code = "GPU108"
    reports_in = ("hot-loop",)  # gpulint/prefilter.py
    name = "nan-check-in-loop"
    message = "NaN/Inf check every iteration blocks the CPU until the GPU catches up; accumulate a device-side " \
              "flag and check it periodically"
    family = Family.HOST_SYNC
    fix_availability = FixAvailability.SOMETIMES
    fix_safety = FixSafety(
        Safety.UNSAFE, "the reaction to a NaN/Inf comes at the next periodic check, not in the step it appeared")
    VALID = [TRAIN_STEP + "if torch.isnan(loss):\n    print('nan')\n",
             # a generator over Python numbers: no tensor read
             TRAIN_STEP + "    if any(math.isnan(v) for v in [1.0, 2.0]):\n        continue\n",
             # every 100 steps: deliberate
             TRAIN_STEP + "    if i % 100 == 0 and any(not torch.isfinite(p.grad).all() for p in model.parameters()):\n"
                          "        print('overflow')\n"]
    INVALID = [
        Example(TRAIN_STEP + "    if torch.isnan(loss):\n        break\n",
                message="NaN/Inf check every iteration blocks the CPU until the GPU c"),
        Example(TRAIN_STEP + "    if any(not torch.isfinite(p.grad).all() for p in model.parameters()):\n"
                             "        continue\n", message="one sync per tensor"),
        Example(TRAIN_STEP + "    if not all(torch.isfinite(p.grad).all() for p in model.parameters()):\n"
                             "        continue\n", message="`all(...)` over a generator"),
    ]

    per_tensor = "NaN/Inf check of each tensor in Python (`{reducer}(...)` over a generator) every iteration: one " \
                 "sync per tensor; stack the flags on the device and read one (`torch.stack([...]).all()`)"

    def visit_If(self, node: cst.If) -> None:
        found = nan_check(self.analysis, node.test)
        if found is None:
            reducer = self._per_tensor(node.test)
            where = self.where(node.test) if reducer else None
            if where:
                self.report(node.test, self.per_tensor.format(reducer=reducer), where=where)
            return
        where = self.where(node.test)
        if where:
            self.report(node.test, fix=self._fix(node, found[0], where), where=where)

    def _per_tensor(self, test: cst.BaseExpression) -> Optional[str]:
        """`any(<nan check> for ...)`, `not all(<finite check> for ...)` and the like: which reducer, else None."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test = test.expression
        if not (type(test) is cst.Call and type(test.func) is cst.Name and test.func.value in ("any", "all")
                and self.analysis.qualified(test.func) in ("any", "all") and len(test.args) == 1
                and isinstance(test.args[0].value, (cst.GeneratorExp, cst.ListComp))):
            return None
        element = test.args[0].value.elt
        negated = cst.UnaryOperation(operator=cst.Not(), expression=element)
        if nan_check(self.analysis, element) is None and nan_check(self.analysis, negated) is None:
            return None
        return test.func.value

    def _fix(self, node: cst.If, flag_expr: cst.BaseExpression, where):
        """Accumulate the check into a device flag; react to it where the loop already syncs."""
        if node.orelse is not None or where.loop is None or not where.every_iteration:
            return None
        body = flat_statements(node.body)
        if any(type(s) is cst.Continue for s in body) or not body:
            return None
        loop = where.loop
        if self.analysis.parent(self.analysis.parent(node)) is not loop:
            return None  # only checks at the top level of the loop's body
        host = self._periodic_block(loop, node)
        ends_loop = any(type(s) is cst.Break for s in body)
        if host is None and ends_loop:
            return None
        check = self.analysis.code(flag_expr)
        flag = fresh_name(self.analysis, _FLAG_NAMES.get(check_kind(check), "found_nonfinite"))
        accumulate = parse_statement(f"{flag} |= {check}\n")
        accumulate = accumulate.with_changes(leading_lines=node.leading_lines)
        reaction = cst.If(test=cst.Name(flag), body=node.body)
        changes = {node: accumulate}
        init = parse_statement(f"{flag} = False\n")
        if host is not None:
            changes[host] = lambda updated: updated.with_changes(
                body=updated.body.with_changes(body=[reaction, *updated.body.body]))
            changes[loop] = lambda updated: cst.FlattenSentinel(_before(init, updated))
            where_text = "at the periodic check"
        else:
            changes[loop] = lambda updated: cst.FlattenSentinel([*_before(init, updated), reaction])
            where_text = "after the loop"
        return self.fix(f"Accumulate `{check}` on the device in `{flag}` and check it {where_text}",
                        changes, safe=False)

    def _every_process_reaches(self, test: cst.BaseExpression) -> bool:
        """A purely periodic test: `step % N == 0`, not `step % N == 0 and rank == 0`.

        The check moves into this block, so every process (every DDP rank) must run it, or a rank would never
        see its own NaN.
        """
        if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
            return self._every_process_reaches(test.left) and self._every_process_reaches(test.right)
        return self.analysis.loops.periodic_test(test) is not None

    def _periodic_block(self, loop, check: cst.If) -> Optional[cst.If]:
        """An `if step % N == 0:` at the top level of the loop body, preferably after the check."""
        candidates = [s for s in loop.body.body if type(s) is cst.If and s is not check
                      and type(s.body) is cst.IndentedBlock and self._every_process_reaches(s.test)]
        statements = list(loop.body.body)
        after = [c for c in candidates if statements.index(c) > statements.index(check)]
        return (after or candidates or [None])[0]
