"""Moderation: every action goes through here and writes its audit record atomically."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AnonymousUser, Group, Permission
from django.contrib.auth.models import User as AuthUser
from django.db import transaction
from django.utils import timezone

from transcripts.errors import Conflict, InvalidInput, PermissionDenied
from transcripts.models import (
    AuditRecord,
    Event,
    Message,
    Report,
    ReportStatus,
    Run,
    RunStatus,
    Thread,
)
from transcripts.projector import REDACTION_TEXT as REDACTION_TEXT

if TYPE_CHECKING:
    from transcripts.api.auth import Principal

User = AuthUser | AnonymousUser

REDACTED_PARTS = [{"type": "text", "text": REDACTION_TEXT}]

GROUPS = {
    "Viewers": ["view_thread", "view_run", "view_message", "view_event"],
    "Moderators": [
        "view_thread",
        "view_run",
        "view_message",
        "view_event",
        "view_auditrecord",
        "view_report",
        "change_report",
        "moderate",
    ],
    "Admins": [
        "view_thread",
        "view_run",
        "view_message",
        "view_event",
        "view_auditrecord",
        "view_report",
        "change_report",
        "delete_thread",
        "view_apitoken",
        "add_apitoken",
        "change_apitoken",
        "moderate",
        "redact",
    ],
}


def ensure_groups() -> None:
    """Create the Viewers, Moderators and Admins groups with their permissions."""
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        perms = Permission.objects.filter(
            content_type__app_label="transcripts", codename__in=codenames
        )
        group.permissions.add(*perms)


def can_moderate(user: User) -> bool:
    """Whether user may hide, lock, flag and handle reports."""
    return bool(user.is_authenticated and user.has_perm("transcripts.moderate"))


def can_redact(user: User) -> bool:
    """Whether user may redact messages."""
    return bool(user.is_authenticated and user.has_perm("transcripts.redact"))


def _require(user: User, allowed: bool, action: str) -> None:
    if not allowed:
        raise PermissionDenied(f"you may not {action}", action=action)


def _reason(reason: str, *, required: bool) -> str:
    reason = (reason or "").strip()
    if required and not reason:
        raise InvalidInput("a reason is required", field="reason")
    if len(reason) > 2000:
        raise InvalidInput("the reason is longer than 2000 characters", field="reason")
    return reason


def _audit(
    user: User,
    action: str,
    target: Thread | Message | Report | Run,
    *,
    thread_id: str = "",
    reason: str = "",
    **details: Any,
) -> AuditRecord:
    actor = user if user.is_authenticated else None
    return AuditRecord.objects.create(
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        action=action,
        target_type=type(target).__name__.lower(),
        target_id=str(target.pk),
        thread_id=thread_id,
        reason=reason,
        details=details,
    )


def _set_thread_flag(user: User, thread: Thread, field: str, value: bool, reason: str) -> Thread:
    _require(user, can_moderate(user), f"change {field}")
    reason = _reason(reason, required=False)
    with transaction.atomic():
        current = Thread.objects.select_for_update().values_list(field, flat=True).get(pk=thread.pk)
        setattr(thread, field, value)
        if current != value:
            Thread.objects.filter(pk=thread.pk).update(**{field: value})
            action = {
                ("hidden", True): "hide",
                ("hidden", False): "unhide",
                ("locked", True): "lock",
                ("locked", False): "unlock",
            }[(field, value)]
            _audit(user, action, thread, thread_id=thread.id, reason=reason)
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
    _require(user, can_moderate(user), "flag messages")
    reason = _reason(reason, required=True)
    with transaction.atomic():
        message.flagged_at = timezone.now()
        message.flag_reason = reason
        message.save(update_fields=["flagged_at", "flag_reason"])
        _audit(user, "flag", message, thread_id=message.thread_id, reason=reason)
    return message


def unflag_message(*, user: User, message: Message, reason: str = "") -> Message:
    """Clear a message's flag."""
    _require(user, can_moderate(user), "unflag messages")
    reason = _reason(reason, required=False)
    with transaction.atomic():
        message.flagged_at = None
        message.flag_reason = ""
        message.save(update_fields=["flagged_at", "flag_reason"])
        _audit(user, "unflag", message, thread_id=message.thread_id, reason=reason)
    return message


def _scrubbed(kind: str, data: Any) -> Any:
    """The event data with its content removed; still a valid event of the same kind."""
    if not isinstance(data, dict):
        return {"redacted": True}
    keep = {"redacted": True}
    if kind == "text-delta":
        return {**keep, "delta": ""}
    if kind == "reasoning":
        return {**keep, "text": ""}
    if kind == "tool-call":
        return {
            **keep,
            "toolCallId": data.get("toolCallId"),
            "toolName": data.get("toolName"),
            "input": None,
        }
    if kind == "tool-result":
        return {
            **keep,
            "toolCallId": data.get("toolCallId"),
            "toolName": data.get("toolName"),
            "output": None,
            "isError": bool(data.get("isError", False)),
        }
    if kind == "file":
        return {**keep, "mimeType": data.get("mimeType"), "url": "about:blank"}
    if kind == "message":
        return {**keep, "role": data.get("role"), "parts": REDACTED_PARTS, "id": data.get("id")}
    if kind == "message-start":
        return {**keep, "role": data.get("role"), "messageId": data.get("messageId")}
    if kind == "error":
        return {**keep, "message": REDACTION_TEXT}
    if kind in ("step-started", "step-finished", "message-end"):
        return data
    return keep


def redact_message(*, user: User, message: Message, reason: str) -> Message:
    """Replace a message's content, and the events it came from, by a redaction marker.

    Irreversible: the content cannot come back through replay, compare, export or search.
    """
    _require(user, can_redact(user), "redact messages")
    reason = _reason(reason, required=True)
    with transaction.atomic():
        message = Message.objects.select_for_update().get(pk=message.pk)
        if message.redacted_at is not None:
            raise Conflict("the message is already redacted", messageId=message.id)
        events = Event.objects.select_for_update().filter(
            run_id=message.run_id, seq__gte=message.first_seq, seq__lte=message.last_seq
        )
        scrubbed = list(events)
        for event in scrubbed:
            event.data = _scrubbed(event.kind, event.data)
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
        _audit(
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
    _require(user, can_redact(user), "redact runs")
    reason = _reason(reason, required=True)
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
            event.data = _scrubbed(event.kind, event.data)
        Event.objects.bulk_update(events, ["data"], batch_size=500)
        if isinstance(run.error, dict):
            run.error = {**run.error, "message": REDACTION_TEXT}
        run.snapshot = None
        run.snapshot_seq = 0
        run.save(update_fields=["error", "snapshot", "snapshot_seq"])
        _audit(
            user, "redact", run, thread_id=run.thread_id, reason=reason, scrubbedEvents=len(events)
        )
    return run


def delete_thread(*, user: User, thread: Thread, reason: str) -> None:
    """Delete a thread and everything in it; the audit record stays."""
    _require(user, can_redact(user) or user.has_perm("transcripts.delete_thread"), "delete threads")
    reason = _reason(reason, required=True)
    with transaction.atomic():
        _audit(user, "delete", thread, thread_id=thread.id, reason=reason, title=thread.title)
        thread.delete()


def report_message(*, user: User, message: Message, reason: str, note: str = "") -> Report:
    """A viewer reports a message to the moderators."""
    if not user.is_authenticated:
        raise PermissionDenied("log in to report messages")
    if reason not in dict(Report.REASONS):
        raise InvalidInput(
            f"reason must be one of {', '.join(dict(Report.REASONS))}", field="reason"
        )
    note = _reason(note, required=False)
    with transaction.atomic():
        report = Report.objects.create(
            message=message,
            thread_id=message.thread_id,
            reporter=user,
            reason=reason,
            note=note,
        )
        _audit(user, "report", message, thread_id=message.thread_id, reason=reason, note=note)
    return report


def close_report(*, user: User, report: Report, status: str, note: str = "") -> Report:
    """Resolve or dismiss an open report."""
    _require(user, can_moderate(user), "handle reports")
    if status not in (ReportStatus.RESOLVED, ReportStatus.DISMISSED):
        raise InvalidInput("status must be resolved or dismissed", field="status")
    note = _reason(note, required=False)
    with transaction.atomic():
        report = Report.objects.select_for_update().get(pk=report.pk)
        if report.status != ReportStatus.OPEN:
            raise Conflict(f"the report is already {report.status}", status=report.status)
        report.status = status
        report.resolved_by = user if user.is_authenticated else None
        report.resolved_at = timezone.now()
        report.resolution_note = note
        report.save(update_fields=["status", "resolved_by", "resolved_at", "resolution_note"])
        action = "resolve_report" if status == ReportStatus.RESOLVED else "dismiss_report"
        _audit(user, action, report, thread_id=report.thread_id, reason=note)
    return report


def record_hidden_view(*, user: User, thread: Thread) -> None:
    """Staff reading a hidden thread is itself recorded."""
    if thread.hidden:
        _audit(user, "view_hidden", thread, thread_id=thread.id)


# An API client pages, polls and reconnects: one record per caller and thread in this window.
API_READ_WINDOW = timedelta(minutes=10)


def record_hidden_api_read(*, principal: Principal, thread_id: str, path: str) -> None:
    """Staff reading a hidden thread through the API (a token or a session) is recorded."""
    since = timezone.now() - API_READ_WINDOW
    caller = {"via": "api", "caller": principal.name, "tokenId": principal.token_id}
    recent = AuditRecord.objects.filter(
        action="view_hidden",
        target_type="thread",
        target_id=thread_id,
        created_at__gte=since,
        details__contains=caller,
    )
    if recent.exists():
        return
    actor = None
    if principal.token_id is not None:
        actor = AuthUser.objects.filter(apitoken__pk=principal.token_id).first()
    else:
        actor = AuthUser.objects.filter(username=principal.name).first()
    AuditRecord.objects.create(
        actor=actor,
        actor_name=actor.get_username() if actor is not None else principal.name,
        action="view_hidden",
        target_type="thread",
        target_id=thread_id,
        thread_id=thread_id,
        details={**caller, "path": path[:500]},
    )
