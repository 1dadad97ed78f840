"""Moderation: hide, lock, flag, redact and delete, each with its audit record, atomically.

Reports (`reports.py`) and the audit of hidden reads (`audit.py`) are reachable from here too,
so callers keep one name for every moderation service. Each action answers whether it changed
anything: asking for the state a thread or message is already in writes nothing, not even an
audit record. `act_on_report` takes an action on a report's thread or message and resolves the
report in the same transaction.

Redaction replaces a message's or a closed run's content by the marker wherever it is stored,
keeping structure only, as the scrub rules of `transcripts.events` define it (one allow-list
for event data, message metadata, usage and errors): the events the content came from, the
message row (parts, metadata, and so its search vector), the run's usage totals and error, and
a thread title taken from the message. The run's projection snapshot is dropped; commit and
the workers' sweep rebuild it from the scrubbed events.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from transcripts.errors import Conflict, InvalidInput
from transcripts.events import (
    REDACTED_PARTS,
    scrubbed_data,
    scrubbed_error,
    scrubbed_metadata,
    scrubbed_usage,
)
from transcripts.formats.document import derive_title
from transcripts.ledger.audit import (
    API_READ_WINDOW,
    record_audit,
    record_hidden_api_read,
    record_hidden_view,
)
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.lifecycle import lock_run_and_thread
from transcripts.ledger.reasons import clean_reason
from transcripts.ledger.reports import close_report, report_message
from transcripts.ledger.rights import require
from transcripts.models import Event, Message, Report, ReportStatus, Run, RunStatus, Thread
from transcripts.permissions import User, member_access
from transcripts.projector import REDACTION_TEXT

_THREAD_ACTIONS = {
    ("hidden", True): "hide",
    ("hidden", False): "unhide",
    ("locked", True): "lock",
    ("locked", False): "unlock",
}


def _set_thread_flag(user: User, thread: Thread, field: str, value: bool, reason: str) -> bool:
    """Set a thread's hidden or locked flag; whether it changed (unchanged: nothing written)."""
    require(member_access(user, thread_id=thread.id).can_moderate, f"change {field}")
    reason = clean_reason(reason, required=False)
    with transaction.atomic():
        current = Thread.objects.select_for_update().values_list(field, flat=True).get(pk=thread.pk)
        setattr(thread, field, value)
        if current == value:
            return False
        Thread.objects.filter(pk=thread.pk).update(**{field: value})
        action = _THREAD_ACTIONS[(field, value)]
        record_audit(user, action, thread, thread_id=thread.id, reason=reason)
    return True


def hide_thread(*, user: User, thread: Thread, reason: str = "") -> bool:
    """Hide a thread from everyone but its moderators; whether it was visible."""
    return _set_thread_flag(user, thread, "hidden", True, reason)


def unhide_thread(*, user: User, thread: Thread, reason: str = "") -> bool:
    """Make a hidden thread visible again; whether it was hidden."""
    return _set_thread_flag(user, thread, "hidden", False, reason)


def lock_thread(*, user: User, thread: Thread, reason: str = "") -> bool:
    """Refuse new runs and new events on a thread; whether it was unlocked."""
    return _set_thread_flag(user, thread, "locked", True, reason)


def unlock_thread(*, user: User, thread: Thread, reason: str = "") -> bool:
    """Accept new runs and events on a thread again; whether it was locked."""
    return _set_thread_flag(user, thread, "locked", False, reason)


def flag_message(*, user: User, message: Message, reason: str) -> bool:
    """Flag a message for attention, with a reason; whether it was unflagged."""
    require(member_access(user, thread_id=message.thread_id).can_moderate, "flag messages")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        current = Message.objects.select_for_update().values_list("flagged_at", "flag_reason")
        message.flagged_at, message.flag_reason = current.get(pk=message.pk)
        if message.flagged_at is not None:
            return False
        message.flagged_at = timezone.now()
        message.flag_reason = reason
        message.save(update_fields=["flagged_at", "flag_reason"])
        record_audit(user, "flag", message, thread_id=message.thread_id, reason=reason)
    return True


def unflag_message(*, user: User, message: Message, reason: str = "") -> bool:
    """Clear a message's flag; whether it was flagged."""
    require(member_access(user, thread_id=message.thread_id).can_moderate, "unflag messages")
    reason = clean_reason(reason, required=False)
    with transaction.atomic():
        current = Message.objects.select_for_update().values_list("flagged_at", flat=True)
        if current.get(pk=message.pk) is None:
            message.flagged_at, message.flag_reason = None, ""
            return False
        message.flagged_at = None
        message.flag_reason = ""
        message.save(update_fields=["flagged_at", "flag_reason"])
        record_audit(user, "unflag", message, thread_id=message.thread_id, reason=reason)
    return True


def _scrub(events: QuerySet[Event] | list[Event]) -> int:
    """Scrub the events in place; how many there were."""
    scrubbed = list(events)
    for event in scrubbed:
        event.data = scrubbed_data(event.kind, event.data)
    Event.objects.bulk_update(scrubbed, ["data"], batch_size=500)
    return len(scrubbed)


def _events_of(message: Message) -> QuerySet[Event]:
    """The events a message's content came from: its seq range and, for an assistant message,
    the step ends after it that the projector still credits to it (usage, finish reason) up
    to the run's next assistant message."""
    source = Q(seq__gte=message.first_seq, seq__lte=message.last_seq)
    if message.role == "assistant":
        next_start = (
            Message.objects.filter(
                run_id=message.run_id, role="assistant", position__gt=message.position
            )
            .order_by("position")
            .values_list("first_seq", flat=True)
            .first()
        )
        trailing = Q(kind="step-finished", seq__gt=message.last_seq)
        if next_start is not None:
            trailing &= Q(seq__lt=next_start)
        source |= trailing
    return Event.objects.filter(run_id=message.run_id).filter(source).order_by("seq")


def _title_taken_from(thread: Thread, message: Message) -> bool:
    """Whether the thread's title is the message's first line, as imports name a thread."""
    return bool(thread.title) and thread.title == derive_title(
        [{"role": "user", "parts": message.parts}]
    )


def redact_message(*, user: User, message: Message, reason: str) -> bool:
    """Replace a message's content, and the events it came from, by a redaction marker;
    whether it held content (an already redacted message is left as it is).

    Irreversible: the content cannot come back through replay, compare, export or search.
    """
    require(member_access(user, thread_id=message.thread_id).can_administer, "redact messages")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        # Thread, run, then message: the order commit and begin_run lock in.
        run, thread = lock_run_and_thread(message.run_id)
        stored = Message.objects.select_for_update().get(pk=message.pk)
        message.parts, message.metadata = stored.parts, stored.metadata
        message.redacted_at = stored.redacted_at
        if message.redacted_at is not None:
            return False
        scrubbed = _scrub(_events_of(message).select_for_update())
        retitle = _title_taken_from(thread, message)
        message.parts = copy.deepcopy(REDACTED_PARTS)
        message.metadata = {**scrubbed_metadata(message.metadata), "redacted": True}
        message.redacted_at = timezone.now()
        message.save(update_fields=["parts", "metadata", "redacted_at"])
        # The run's usage totals add this message's usage to the others' past telling them
        # apart, so they keep token counts only; the snapshot holds the old content.
        Run.objects.filter(pk=run.pk).update(
            usage=scrubbed_usage(run.usage), snapshot=None, snapshot_seq=0
        )
        if retitle:
            Thread.objects.filter(pk=thread.pk).update(title=REDACTION_TEXT)
        record_audit(
            user,
            "redact",
            message,
            thread_id=message.thread_id,
            reason=reason,
            scrubbedEvents=scrubbed,
            runId=message.run_id,
        )
    return True


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
        scrubbed = _scrub(
            [
                event
                for event in Event.objects.select_for_update().filter(run_id=run.pk)
                if not (isinstance(event.data, dict) and event.data.get("redacted") is True)
            ]
        )
        if run.error is not None:
            run.error = scrubbed_error(run.error)
        run.usage = scrubbed_usage(run.usage)
        run.snapshot = None
        run.snapshot_seq = 0
        run.save(update_fields=["error", "usage", "snapshot", "snapshot_seq"])
        record_audit(
            user, "redact", run, thread_id=run.thread_id, reason=reason, scrubbedEvents=scrubbed
        )
    return run


def delete_thread(*, user: User, thread: Thread, reason: str) -> None:
    """Delete a thread and everything in it; the audit record stays."""
    require(member_access(user, thread_id=thread.id).can_administer, "delete threads")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        record_audit(user, "delete", thread, thread_id=thread.id, reason=reason, title=thread.title)
        delete_threads([thread.id])


# What a moderator may do from a report, and the service that does each.
REPORT_ACTIONS = ("hide", "unhide", "lock", "unlock", "flag", "unflag", "redact")


@dataclass(frozen=True)
class ReportOutcome:
    """What act_on_report did: whether the action changed anything, and the report after it."""

    action: str
    changed: bool
    report: Report


def act_on_report(
    *, user: User, report: Report, action: str, reason: str, resolve: bool = True
) -> ReportOutcome:
    """Take action on the report's thread or message and, with resolve, resolve the report
    with the reason as its note, all in one transaction with their audit records.

    An action that changes nothing (hiding a hidden thread) writes nothing: the report stays
    as it is, so the moderator sees it still waits.
    """
    if action not in REPORT_ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(REPORT_ACTIONS)}", field="action")
    require(member_access(user, thread_id=report.thread_id).can_moderate, "handle reports")
    with transaction.atomic():
        # Not locked here: close_report locks the report after the action has locked the
        # thread, the order thread deletion takes too; a report closed meanwhile makes
        # close_report refuse, which rolls the action back.
        report = Report.objects.select_related("thread", "message").get(pk=report.pk)
        if resolve and report.status != ReportStatus.OPEN:
            raise Conflict(f"the report is already {report.status}", status=report.status)
        thread, message = report.thread, report.message
        if action == "hide":
            changed = hide_thread(user=user, thread=thread, reason=reason)
        elif action == "unhide":
            changed = unhide_thread(user=user, thread=thread, reason=reason)
        elif action == "lock":
            changed = lock_thread(user=user, thread=thread, reason=reason)
        elif action == "unlock":
            changed = unlock_thread(user=user, thread=thread, reason=reason)
        elif action == "flag":
            changed = flag_message(user=user, message=message, reason=reason)
        elif action == "unflag":
            changed = unflag_message(user=user, message=message, reason=reason)
        else:
            changed = redact_message(user=user, message=message, reason=reason)
        if changed and resolve:
            report = close_report(
                user=user, report=report, status=ReportStatus.RESOLVED, note=reason
            )
    return ReportOutcome(action, changed, report)


__all__ = [
    "API_READ_WINDOW",
    "REDACTION_TEXT",
    "REPORT_ACTIONS",
    "ReportOutcome",
    "User",
    "act_on_report",
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
