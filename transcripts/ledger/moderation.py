"""Moderation: hide, lock, flag, redact and delete, each with its audit record, atomically.

Reports (`reports.py`) and the audit of hidden reads (`audit.py`) are reachable from here too,
so callers keep one name for every moderation service.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from transcripts.errors import Conflict
from transcripts.events import REDACTED_PARTS, scrubbed_data
from transcripts.ledger.audit import (
    API_READ_WINDOW,
    record_audit,
    record_hidden_api_read,
    record_hidden_view,
)
from transcripts.ledger.checks import clean_reason, require
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.reports import close_report, report_message
from transcripts.models import Event, Message, Run, RunStatus, Thread
from transcripts.permissions import User, member_access
from transcripts.projector import REDACTION_TEXT

_THREAD_ACTIONS = {
    ("hidden", True): "hide",
    ("hidden", False): "unhide",
    ("locked", True): "lock",
    ("locked", False): "unlock",
}


def _set_thread_flag(user: User, thread: Thread, field: str, value: bool, reason: str) -> Thread:
    require(member_access(user, thread_id=thread.id).can_moderate, f"change {field}")
    reason = clean_reason(reason, required=False)
    with transaction.atomic():
        current = Thread.objects.select_for_update().values_list(field, flat=True).get(pk=thread.pk)
        setattr(thread, field, value)
        if current != value:
            Thread.objects.filter(pk=thread.pk).update(**{field: value})
            action = _THREAD_ACTIONS[(field, value)]
            record_audit(user, action, thread, thread_id=thread.id, reason=reason)
    return thread


def hide_thread(*, user: User, thread: Thread, reason: str = "") -> Thread:
    """Hide a thread from everyone but staff."""
    return _set_thread_flag(user, thread, "hidden", True, reason)


def unhide_thread(*, user: User, thread: Thread, reason: str = "") -> Thread:
    """Make a hidden thread visible again."""
    return _set_thread_flag(user, thread, "hidden", False, reason)


def lock_thread(*, user: User, thread: Thread, reason: str = "") -> Thread:
    """Refuse new runs and new events on a thread."""
    return _set_thread_flag(user, thread, "locked", True, reason)


def unlock_thread(*, user: User, thread: Thread, reason: str = "") -> Thread:
    """Accept new runs and events on a thread again."""
    return _set_thread_flag(user, thread, "locked", False, reason)


def flag_message(*, user: User, message: Message, reason: str) -> Message:
    """Flag a message for attention, with a reason."""
    require(member_access(user, thread_id=message.thread_id).can_moderate, "flag messages")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        message.flagged_at = timezone.now()
        message.flag_reason = reason
        message.save(update_fields=["flagged_at", "flag_reason"])
        record_audit(user, "flag", message, thread_id=message.thread_id, reason=reason)
    return message


def unflag_message(*, user: User, message: Message, reason: str = "") -> Message:
    """Clear a message's flag."""
    require(member_access(user, thread_id=message.thread_id).can_moderate, "unflag messages")
    reason = clean_reason(reason, required=False)
    with transaction.atomic():
        message.flagged_at = None
        message.flag_reason = ""
        message.save(update_fields=["flagged_at", "flag_reason"])
        record_audit(user, "unflag", message, thread_id=message.thread_id, reason=reason)
    return message


def redact_message(*, user: User, message: Message, reason: str) -> Message:
    """Replace a message's content, and the events it came from, by a redaction marker.

    Irreversible: the content cannot come back through replay, compare, export or search.
    """
    require(member_access(user, thread_id=message.thread_id).can_administer, "redact messages")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        message = Message.objects.select_for_update().get(pk=message.pk)
        if message.redacted_at is not None:
            raise Conflict("the message is already redacted", messageId=message.id)
        events = Event.objects.select_for_update().filter(
            run_id=message.run_id, seq__gte=message.first_seq, seq__lte=message.last_seq
        )
        scrubbed = list(events)
        for event in scrubbed:
            event.data = scrubbed_data(event.kind, event.data)
        Event.objects.bulk_update(scrubbed, ["data"], batch_size=500)
        metadata = {
            key: value
            for key, value in message.metadata.items()
            if key not in ("annotations", "errors", "extra")
        }
        metadata["redacted"] = True
        message.parts = REDACTED_PARTS
        message.metadata = metadata
        message.redacted_at = timezone.now()
        message.save(update_fields=["parts", "metadata", "redacted_at"])
        # The stored projection state holds the old text too.
        Run.objects.filter(pk=message.run_id).update(snapshot=None, snapshot_seq=0)
        record_audit(
            user,
            "redact",
            message,
            thread_id=message.thread_id,
            reason=reason,
            scrubbedEvents=len(scrubbed),
            runId=message.run_id,
        )
    return message


def redact_run(*, user: User, run: Run, reason: str) -> Run:
    """Scrub every event of a failed or cancelled run, whose content no message holds.

    Such runs are shown from their events (run timeline, compare); a committed run's
    content lives in messages, which are redacted one by one.
    """
    require(member_access(user, thread_id=run.thread_id).can_administer, "redact runs")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
            raise Conflict(
                f"a {run.status} run is not redacted as a whole: redact its messages instead"
                if run.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED)
                else f"a {run.status} run is still open: stop it first",
                status=run.status,
            )
        events = [
            event
            for event in Event.objects.select_for_update().filter(run_id=run.pk)
            if not (isinstance(event.data, dict) and event.data.get("redacted") is True)
        ]
        for event in events:
            event.data = scrubbed_data(event.kind, event.data)
        Event.objects.bulk_update(events, ["data"], batch_size=500)
        if isinstance(run.error, dict):
            run.error = {**run.error, "message": REDACTION_TEXT}
        run.snapshot = None
        run.snapshot_seq = 0
        run.save(update_fields=["error", "snapshot", "snapshot_seq"])
        record_audit(
            user, "redact", run, thread_id=run.thread_id, reason=reason, scrubbedEvents=len(events)
        )
    return run


def delete_thread(*, user: User, thread: Thread, reason: str) -> None:
    """Delete a thread and everything in it; the audit record stays."""
    require(member_access(user, thread_id=thread.id).can_administer, "delete threads")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        record_audit(user, "delete", thread, thread_id=thread.id, reason=reason, title=thread.title)
        delete_threads([thread.id])


__all__ = [
    "API_READ_WINDOW",
    "REDACTION_TEXT",
    "User",
    "close_report",
    "delete_thread",
    "flag_message",
    "hide_thread",
    "lock_thread",
    "record_hidden_api_read",
    "record_hidden_view",
    "redact_message",
    "redact_run",
    "report_message",
    "unflag_message",
    "unhide_thread",
    "unlock_thread",
]
