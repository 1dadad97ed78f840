"""Reads of judge mode and of two experiments compared (issue 29): a pair with the end of
the conversation up to its fork point, and rows whose messages carry their runs (the cards
show a message's model from its run), so that rendering them queries nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from transcripts.models import ExperimentItem, Message
from transcripts.selectors.experiment_results import PairedRow, ResultRow, attach_runs, rows_of
from transcripts.selectors.paths import path_ids_to

# How many messages of the conversation judge mode shows above the two answers.
CONTEXT_MESSAGES = 3


@dataclass
class JudgePair:
    """One pair as judge mode shows it: its row, the last messages up to the fork point (the
    fork point included) and how many came before them."""

    row: ResultRow
    context: list[Message] = field(default_factory=list)
    earlier: int = 0


def _context(item: ExperimentItem) -> tuple[list[Message], int]:
    """The last CONTEXT_MESSAGES messages down to the item's fork point, and how many are
    above them."""
    if not item.fork_from_id:
        return [], 0
    ids = path_ids_to(item.fork_from_id)
    shown = ids[-CONTEXT_MESSAGES:]
    found = {m.id: m for m in Message.objects.filter(pk__in=shown)}
    return [found[i] for i in shown if i in found], len(ids) - len(shown)


def judge_pair(item: ExperimentItem) -> JudgePair | None:
    """The item as judge mode shows it (None when its thread is gone)."""
    rows = rows_of([item])
    if not rows:
        return None
    context, earlier = _context(item)
    attach_runs(rows, context)
    return JudgePair(rows[0], context, earlier)


def compared_rows(rows: Sequence[PairedRow]) -> list[PairedRow]:
    """rows with every message's run attached."""
    attach_runs([r for row in rows for r in (row.first, row.second) if r is not None])
    return list(rows)
