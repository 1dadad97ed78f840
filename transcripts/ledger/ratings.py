"""Ratings: a reader marks the run they prefer among the alternatives, with a note."""

from __future__ import annotations

from django.db import transaction

from transcripts import selectors
from transcripts.errors import Conflict, InvalidInput, PermissionDenied
from transcripts.models import Run, RunRating
from transcripts.permissions import User, member_access

MAX_NOTE = 2000


@transaction.atomic
def rate_run(*, user: User, run: Run, preferred: bool, note: str = "") -> RunRating:
    """Record user's verdict on run (one per run and user); preferring it unmarks its rivals."""
    if not (user.is_authenticated and member_access(user, thread_id=run.thread_id).can_edit):
        raise PermissionDenied("rating runs needs the editor role in the project")
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        raise InvalidInput(f"the note is longer than {MAX_NOTE} characters", field="note")
    if run.is_open:
        raise Conflict("a run still generating cannot be rated yet", status=run.status)
    rating, _ = RunRating.objects.update_or_create(
        run=run,
        user=user,
        defaults={"thread_id": run.thread_id, "preferred": preferred, "note": note},
    )
    if preferred:
        # Preferring one alternative withdraws the user's preference for the others.
        RunRating.objects.filter(
            user=user, preferred=True, run_id__in=selectors.rival_run_ids(run)
        ).update(preferred=False)
    return rating
