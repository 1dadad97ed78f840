"""Moderation: hide, lock, flag, redact and delete, each with its audit record, atomically.

Reports (`reports.py`) and the audit of hidden reads (`audit.py`) are reachable from here too,
so callers keep one name for every moderation service. Each action answers whether it changed
anything: asking for the state a thread or message is already in writes nothing, not even an
audit record. `ACTIONS` is the table of these actions, one entry each with its target, role,
label, words, audit verb and the function here that performs it. The queue, the admin's
actions on each target's list (`transcripts.admin.actions.TableActions`) and `act_on_report`
(an action on a report's thread or message that resolves the report in the same transaction)
read it: a new action is an entry there and its function.

Redaction replaces a message's or a closed run's content by the marker wherever it is stored,
keeping structure only, as the scrub rules of `transcripts.events` define it (one allow-list
for event data, message metadata, usage and errors): the events the content came from and
those of its run that no message holds (errors, data-* and system.* events), the message row
(parts, metadata, and so its search vector) and the tool messages answering it, the run's
usage totals and error, and a thread title made from the text. The run's projection snapshot
is dropped; commit and the workers' sweep rebuild it from the scrubbed events, and the sweep
vacuums the rewritten tables (`ledger/vacuum.py`).
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
from transcripts.ledger.audit import (
    API_READ_WINDOW,
    record_audit,
    record_hidden_api_read,
    record_hidden_view,
)
from transcripts.ledger.counters import refresh_counters
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.lifecycle import lock_run_and_thread
from transcripts.ledger.moderation_actions import (
    OTHER_WORDS,
    ActionWords,
    Confirmation,
    ModerationAction,
    redaction_preview,
)
from transcripts.ledger.reasons import clean_reason
from transcripts.ledger.reports import close_report, report_message
from transcripts.ledger.rights import require
from transcripts.models import (
    Event,
    Feedback,
    Message,
    Report,
    ReportStatus,
    Run,
    RunStatus,
    Score,
    Thread,
)
from transcripts.permissions import Role, User, member_access
from transcripts.projector import REDACTION_TEXT


def _set_thread_flag(
    user: User, thread: Thread, field: str, value: bool, reason: str, action: str
) -> bool:
    """Set a thread's hidden or locked flag, audited as action; whether it changed
    (unchanged: nothing written)."""
    require(member_access(user, thread_id=thread.id).can_moderate, f"change {field}")
    reason = clean_reason(reason, required=False)
    with transaction.atomic():
        current = Thread.objects.select_for_update().values_list(field, flat=True).get(pk=thread.pk)
        setattr(thread, field, value)
        if current == value:
            return False
        Thread.objects.filter(pk=thread.pk).update(**{field: value})
        record_audit(user, action, thread, thread_id=thread.id, reason=reason)
    return True


def hide_thread(*, user: User, thread: Thread, reason: str = "") -> bool:
    """Hide a thread from everyone but its moderators; whether it was visible."""
    return _set_thread_flag(user, thread, "hidden", True, reason, "hide")


def unhide_thread(*, user: User, thread: Thread, reason: str = "") -> bool:
    """Make a hidden thread visible again; whether it was hidden."""
    return _set_thread_flag(user, thread, "hidden", False, reason, "unhide")


def lock_thread(*, user: User, thread: Thread, reason: str = "") -> bool:
    """Refuse new runs and new events on a thread; whether it was unlocked."""
    return _set_thread_flag(user, thread, "locked", True, reason, "lock")


def unlock_thread(*, user: User, thread: Thread, reason: str = "") -> bool:
    """Accept new runs and events on a thread again; whether it was locked."""
    return _set_thread_flag(user, thread, "locked", False, reason, "unlock")


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
        refresh_counters([message.thread_id])
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
        refresh_counters([message.thread_id])
        record_audit(user, "unflag", message, thread_id=message.thread_id, reason=reason)
    return True


def _scrub(events: QuerySet[Event] | list[Event]) -> int:
    """Scrub the events in place; how many there were."""
    scrubbed = list(events)
    for event in scrubbed:
        event.data = scrubbed_data(event.kind, event.data)
    Event.objects.bulk_update(scrubbed, ["data"], batch_size=500)
    return len(scrubbed)


def _events_of(message: Message) -> Q:
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
    return source


def _outside_messages(messages: list[Message]) -> Q:
    """The events of a run that no message's seq range holds: errors, data-* and system.*
    events, step ends, message ends before, between and after its messages."""
    outside = Q()
    for message in messages:
        outside &= ~Q(seq__gte=message.first_seq, seq__lte=message.last_seq)
    return outside


def _call_ids(message: Message, part_type: str) -> set[str]:
    """The tool call ids of message's parts of part_type (tool-call or tool-result)."""
    return {
        str(part.get("toolCallId"))
        for part in message.parts
        if isinstance(part, dict) and part.get("type") == part_type
    }


def _answers_of(message: Message, messages: list[Message]) -> list[Message]:
    """The unredacted tool messages of the run that answer message's tool calls, or no call
    of another message of the run: their content is the outcome of message's or of none."""
    calls = _call_ids(message, "tool-call")
    others = set[str]().union(
        *(_call_ids(other, "tool-call") for other in messages if other.pk != message.pk)
    )
    return [
        other
        for other in messages
        if other.role == "tool"
        and other.pk != message.pk
        and other.redacted_at is None
        and (results := _call_ids(other, "tool-result"))
        and (results & calls or not results & others)
    ]


def _redact_row(message: Message) -> None:
    """Store a message as its scrubbed events project it: the marker and its structure."""
    message.parts = copy.deepcopy(REDACTED_PARTS)
    message.metadata = {**scrubbed_metadata(message.metadata), "redacted": True}
    message.redacted_at = timezone.now()
    message.save(update_fields=["parts", "metadata", "redacted_at"])


def _texts(parts: list[object]) -> list[str]:
    """The texts of a message's parts, whitespace collapsed: each, and all joined."""
    texts = [
        " ".join(part["text"].split())
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    return [*texts, " ".join(texts), "".join(texts)]


def _title_taken_from(title: str, messages: list[Message]) -> bool:
    """Whether title was made from one of messages' text: whitespace collapsed and without a
    final ellipsis, it starts one of their texts, as every path that names a thread after its
    first message makes it (chat, New thread, OpenTelemetry, imports: their first line or
    first words, cut)."""
    words = " ".join(title.split()).removesuffix("\N{HORIZONTAL ELLIPSIS}").rstrip()
    return bool(words) and any(
        text.startswith(words) for message in messages for text in _texts(message.parts)
    )


def redact_message(*, user: User, message: Message, reason: str) -> bool:
    """Replace a message's content, and the events it came from, by a redaction marker;
    whether it held content (an already redacted message is left as it is).

    What its run holds outside any message (errors, data-* and system.* events before,
    between or after the messages, the run's error) is scrubbed with it, and so are the tool
    messages answering its tool calls (or no call of another message); a thread title made
    from the text becomes the marker. Irreversible: the content cannot come back through
    replay, compare, export or search.
    """
    require(member_access(user, thread_id=message.thread_id).can_administer, "redact messages")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        # Thread, run, then messages: the order commit and begin_run lock in.
        run, thread = lock_run_and_thread(message.run_id)
        messages = list(
            Message.objects.select_for_update().filter(run_id=run.pk).order_by("position")
        )
        stored = next(m for m in messages if m.pk == message.pk)
        message.parts, message.metadata = stored.parts, stored.metadata
        message.redacted_at = stored.redacted_at
        if message.redacted_at is not None:
            return False
        redacted = [message, *_answers_of(stored, messages)]
        source = _outside_messages(messages)
        for each in redacted:
            source |= _events_of(each)
        scrubbed = _scrub(
            Event.objects.select_for_update()
            .filter(run_id=run.pk)
            .filter(source)
            .exclude(data__contains={"redacted": True})
            .order_by("seq")
        )
        retitle = _title_taken_from(thread.title, redacted)
        for each in redacted:
            _redact_row(each)
        # The run's usage totals add this message's usage to the others' past telling them
        # apart, so they keep token counts only; the snapshot holds the old content.
        Run.objects.filter(pk=run.pk).update(
            usage=scrubbed_usage(run.usage),
            error=None if run.error is None else scrubbed_error(run.error),
            snapshot=None,
            snapshot_seq=0,
        )
        if retitle:
            Thread.objects.filter(pk=thread.pk).update(title=REDACTION_TEXT)
        erased = _erase_comments(message_ids=[each.pk for each in redacted])
        refresh_counters([thread.id])
        record_audit(
            user,
            "redact",
            message,
            thread_id=message.thread_id,
            reason=reason,
            scrubbedEvents=scrubbed,
            runId=message.run_id,
            toolMessages=[str(each.pk) for each in redacted[1:]],
            erasedComments=erased,
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
        erased = _erase_comments(run_id=run.pk)
        refresh_counters([run.thread_id])
        record_audit(
            user, "redact", run, thread_id=run.thread_id, reason=reason, scrubbedEvents=scrubbed,
            erasedComments=erased,
        )  # fmt: skip
    return run


def _erase_comments(*, message_ids: list[str] | None = None, run_id: str | None = None) -> int:
    """Erase the comments of the scores and feedback on the redacted messages (or of the
    scores on a redacted run): a comment is free text that may quote the content, so it goes
    with it; the scores' values and labels stay. How many comments were erased."""
    if message_ids is not None:
        scores = Score.objects.filter(message_id__in=message_ids)
        feedback = Feedback.objects.filter(message_id__in=message_ids)
        erased = feedback.exclude(comment="").update(comment="")
    else:
        scores, erased = Score.objects.filter(run_id=run_id), 0
    return erased + scores.exclude(comment="").update(comment="")


def delete_thread(*, user: User, thread: Thread, reason: str) -> None:
    """Delete a thread and everything in it; the audit record stays."""
    require(member_access(user, thread_id=thread.id).can_administer, "delete threads")
    reason = clean_reason(reason, required=True)
    with transaction.atomic():
        record_audit(user, "delete", thread, thread_id=thread.id, reason=reason, title=thread.title)
        delete_threads([thread.id])


def _redact_run(*, user: User, run: Run, reason: str) -> bool:
    """redact_run as an action: a redaction always changes something."""
    redact_run(user=user, run=run, reason=reason)
    return True


def _delete_thread(*, user: User, thread: Thread, reason: str) -> bool:
    """delete_thread as an action: a deletion always changes something."""
    delete_thread(user=user, thread=thread, reason=reason)
    return True


def _resolve_report(*, user: User, report: Report, reason: str) -> bool:
    """Resolve a report, the reason as its note (a closed report is refused)."""
    close_report(user=user, report=report, status=ReportStatus.RESOLVED, note=reason)
    return True


def _dismiss_report(*, user: User, report: Report, reason: str) -> bool:
    """Dismiss a report, the reason as its note (a closed report is refused)."""
    close_report(user=user, report=report, status=ReportStatus.DISMISSED, note=reason)
    return True


# Every moderation action, in the order the queue and the admin offer them: adding one is an
# entry here and the ledger function it performs (the admin builds its actions from these).
ACTIONS = {
    action.name: action
    for action in (
        ModerationAction(
            name="hide",
            target="thread",
            role=Role.MODERATOR,
            label="Hide thread",
            done="Hid",
            state="hidden",
            audit="hide",
            perform=hide_thread,
            on_reports=True,
            offered_when=("hidden", False),
            admin_label="Hide the selected threads",
        ),
        ModerationAction(
            name="unhide",
            target="thread",
            role=Role.MODERATOR,
            label="Unhide thread",
            done="Unhid",
            state="visible",
            audit="unhide",
            perform=unhide_thread,
            on_reports=True,
            offered_when=("hidden", True),
            admin_label="Unhide the selected threads",
        ),
        ModerationAction(
            name="lock",
            target="thread",
            role=Role.MODERATOR,
            label="Lock thread",
            done="Locked",
            state="locked",
            audit="lock",
            perform=lock_thread,
            on_reports=True,
            offered_when=("locked", False),
            admin_label="Lock the selected threads (no new runs or events)",
        ),
        ModerationAction(
            name="unlock",
            target="thread",
            role=Role.MODERATOR,
            label="Unlock thread",
            done="Unlocked",
            state="unlocked",
            audit="unlock",
            perform=unlock_thread,
            on_reports=True,
            offered_when=("locked", True),
            admin_label="Unlock the selected threads",
        ),
        ModerationAction(
            name="flag",
            target="message",
            role=Role.MODERATOR,
            label="Flag message",
            done="Flagged",
            state="flagged",
            audit="flag",
            perform=flag_message,
            on_reports=True,
            offered_when=("flagged_at", False),
            admin_label="Flag the selected messages (reason required)",
        ),
        ModerationAction(
            name="unflag",
            target="message",
            role=Role.MODERATOR,
            label="Unflag message",
            done="Unflagged",
            state="unflagged",
            audit="unflag",
            perform=unflag_message,
            on_reports=True,
            offered_when=("flagged_at", True),
            admin_label="Unflag the selected messages",
        ),
        ModerationAction(
            name="redact",
            target="message",
            role=Role.ADMIN,
            label="Redact message",
            done="Redacted",
            state="redacted",
            audit="redact",
            perform=redact_message,
            on_reports=True,
            offered_when=("redacted_at", False),
            confirmation=Confirmation(
                title="Redact messages",
                warning="The content of these messages, shown below, of the events they "
                "were projected from, of what their runs hold outside messages (errors, data "
                "events) and of the tool results answering them is replaced by a redaction "
                "marker; a title made from their text too. This cannot be undone.",
                needs="redaction",
                shows=redaction_preview,
            ),
            admin_label="Redact the selected messages (irreversible, asks for confirmation)",
        ),
        ModerationAction(
            name="redact_run",
            target="run",
            role=Role.ADMIN,
            label="Redact run",
            done="Redacted",
            state="redacted",
            audit="redact",
            perform=_redact_run,
            confirmation=Confirmation(
                title="Redact runs",
                warning="Every event of these failed or cancelled runs is scrubbed and shows a "
                "redaction marker. Committed runs are refused: redact their messages. "
                "This cannot be undone.",
                needs="redaction",
            ),
            admin_name="redact_content",
            admin_label="Redact failed/cancelled runs' content "
            "(irreversible, asks for confirmation)",
        ),
        ModerationAction(
            name="delete",
            target="thread",
            role=Role.ADMIN,
            label="Delete thread",
            done="Deleted",
            state="deleted",
            audit="delete",
            perform=_delete_thread,
            confirmation=Confirmation(
                title="Delete threads",
                warning="The threads, their runs, events and messages are deleted for good. "
                "The audit record stays.",
                needs="deleting",
            ),
            admin_name="delete_with_reason",
            admin_label="Delete the selected threads (asks for confirmation)",
        ),
        ModerationAction(
            name="resolve_report",
            target="report",
            role=Role.MODERATOR,
            label="Resolve",
            done="Resolved",
            state="resolved",
            audit="resolve_report",
            perform=_resolve_report,
            admin_name="resolve",
            admin_label="Resolve the selected reports",
        ),
        ModerationAction(
            name="dismiss_report",
            target="report",
            role=Role.MODERATOR,
            label="Dismiss",
            done="Dismissed",
            state="dismissed",
            audit="dismiss_report",
            perform=_dismiss_report,
            admin_name="dismiss",
            admin_label="Dismiss the selected reports",
        ),
    )
}


def action_words(name: str) -> ActionWords:
    """The words of the action called name: a moderation action's, or another audited admin
    action's (revoking a token or a share link)."""
    action = ACTIONS.get(name)
    return action.words if action is not None else OTHER_WORDS[name]


def report_actions() -> list[ModerationAction]:
    """The actions a moderator may take from a report, on its thread or its message."""
    return [action for action in ACTIONS.values() if action.on_reports]


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
    offered = {entry.name: entry for entry in report_actions()}
    if action not in offered:
        raise InvalidInput(f"action must be one of {', '.join(offered)}", field="action")
    require(member_access(user, thread_id=report.thread_id).can_moderate, "handle reports")
    with transaction.atomic():
        # Not locked here: close_report locks the report after the action has locked the
        # thread, the order thread deletion takes too; a report closed meanwhile makes
        # close_report refuse, which rolls the action back.
        report = Report.objects.select_related("thread", "message").get(pk=report.pk)
        if resolve and report.status != ReportStatus.OPEN:
            raise Conflict(f"the report is already {report.status}", status=report.status)
        entry = offered[action]
        changed = entry.run(user=user, target=report_target(report, entry), reason=reason)
        if changed and resolve:
            report = close_report(
                user=user, report=report, status=ReportStatus.RESOLVED, note=reason
            )
    return ReportOutcome(action, changed, report)


def report_target(report: Report, action: ModerationAction) -> Thread | Message:
    """What action is done to when taken from report: its thread or its message."""
    return report.thread if action.target == "thread" else report.message


__all__ = [
    "ACTIONS",
    "API_READ_WINDOW",
    "REDACTION_TEXT",
    "ActionWords",
    "Confirmation",
    "ModerationAction",
    "ReportOutcome",
    "User",
    "act_on_report",
    "action_words",
    "close_report",
    "delete_thread",
    "flag_message",
    "hide_thread",
    "lock_thread",
    "record_hidden_api_read",
    "record_hidden_view",
    "redact_message",
    "redact_run",
    "report_actions",
    "report_message",
    "report_target",
    "unflag_message",
    "unhide_thread",
    "unlock_thread",
]
