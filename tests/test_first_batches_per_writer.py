"""A validation loop that logs images of its first few batches, one writer each (`if i < len(output_writers):
output_writers[i].add_image(..., output[0].cpu(), ...)`, FlowNetPytorch's `validate`): the guard holds for as many
batches as there are writers, not for every batch, so the `.cpu()` under it is no per-step sync (a line the
thirty-first held-out set labels ACCEPTABLE, flagged blind). The loop's own length (`i < len(val_loader)`), a batch's
length, or an inner loop's index below the writers' count still leave the sync every batch.
"""

from __future__ import annotations

import textwrap

from gpulint.runner import lint_source

VALIDATE = textwrap.dedent("""\
    import torch


    def validate(val_loader, model, output_writers):
        model.eval()
        with torch.no_grad():
            for i, (input, target) in enumerate(val_loader):
                output = model(input.cuda(non_blocking=True))
                if {guard}:
                    output_writers[i].add_image("flow", output[0].cpu(), 0)
""")


def syncs(guard: str) -> list[int]:
    found = lint_source(VALIDATE.format(guard=guard), "validate.py", frozenset({"GPU104"}))
    return [d.location.row for d in found.diagnostics]


def test_the_first_batches_one_per_writer_are_not_every_batch():
    assert syncs("i < len(output_writers)") == []
    assert syncs("len(output_writers) > i") == []
    assert syncs("not i >= len(output_writers)") == []


def test_the_loops_own_length_or_a_batch_length_is_every_batch():
    assert syncs("i < len(val_loader)") == [10]
    assert syncs("i < len(input)") == [10]


def test_a_length_compared_with_another_loops_index_is_not_the_first_batches():
    """`for j in range(4): if j < len(output_writers):` bounds the inner loop, not the batches: every batch."""
    text = VALIDATE.format(guard="True").replace(
        "            if True:\n                output_writers[i]",
        "            for j in range(4):\n                if j < len(output_writers):\n                    output_writers[j]")
    assert "for j in range(4)" in text
    found = lint_source(text, "validate.py", frozenset({"GPU104"}))
    assert [d.location.row for d in found.diagnostics] == [11]
