"""Moderators' reasons and readers' notes, as the ledger stores them."""

from __future__ import annotations

from transcripts.errors import InvalidInput

MAX_REASON = 2000


def clean_reason(reason: str, *, required: bool) -> str:
    """A moderator's reason or a note, stripped; InvalidInput when missing or too long."""
    reason = (reason or "").strip()
    if required and not reason:
        raise InvalidInput("a reason is required", field="reason")
    if len(reason) > MAX_REASON:
        raise InvalidInput(f"the reason is longer than {MAX_REASON} characters", field="reason")
    return reason
