"""Reports: a reader flags a message to the moderators, who resolve or dismiss it."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from transcripts.errors import Conflict, InvalidInput, PermissionDenied
from transcripts.ledger.audit import record_audit
from transcripts.ledger.reasons import clean_reason
from transcripts.ledger.rights import require
from transcripts.models import Message, Report, ReportStatus
from transcripts.permissions import User, member_access


def report_message(*, user: User, message: Message, reason: str, note: str = "") -> Report:
    """A viewer reports a message to the moderators."""
    if not (user.is_authenticated and member_access(user, thread_id=message.thread_id).can_read):
        raise PermissionDenied("log in to report messages")
    if reason not in dict(Report.REASONS):
        raise InvalidInput(
            f"reason must be one of {', '.join(dict(Report.REASONS))}", field="reason"
        )
    note = clean_reason(note, required=False)
    with transaction.atomic():
        report = Report.objects.create(
            message=message,
            thread_id=message.thread_id,
            reporter=user,
            reason=reason,
            note=note,
        )
        record_audit(user, "report", message, thread_id=message.thread_id, reason=reason, note=note)
    return report


def close_report(*, user: User, report: Report, status: str, note: str = "") -> Report:
    """Resolve or dismiss an open report."""
    require(member_access(user, thread_id=report.thread_id).can_moderate, "handle reports")
    if status not in (ReportStatus.RESOLVED, ReportStatus.DISMISSED):
        raise InvalidInput("status must be resolved or dismissed", field="status")
    note = clean_reason(note, required=False)
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
        record_audit(user, action, report, thread_id=report.thread_id, reason=note)
    return report
