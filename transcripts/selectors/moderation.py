"""Reads for moderators: the reports queue and what waits for them."""

from __future__ import annotations

from django.db.models import Case, Count, QuerySet, When

from transcripts.models import Message, Report, ReportStatus, Thread


def report_queue(status: str = "") -> QuerySet[Report]:
    """Reports for the moderation queue, open ones first, newest first; status narrows."""
    reports = Report.objects.select_related("message", "thread", "reporter", "resolved_by")
    if status:
        reports = reports.filter(status=status)
    is_open = Case(When(status=ReportStatus.OPEN, then=0), default=1)
    return reports.order_by(is_open, "-created_at", "-id")


def report_counts() -> dict[str, int]:
    """Number of reports per status (one grouped query)."""
    rows = Report.objects.order_by().values("status").annotate(n=Count("id"))
    counts = {status: 0 for status in ReportStatus.values}
    counts.update({row["status"]: row["n"] for row in rows})
    return counts


def moderation_counts() -> dict[str, int]:
    """What waits for moderators: open reports, flagged messages and hidden threads."""
    return {
        "open_reports": Report.objects.filter(status=ReportStatus.OPEN).count(),
        "flagged_messages": Message.objects.filter(flagged_at__isnull=False).count(),
        "hidden_threads": Thread.objects.filter(hidden=True).count(),
    }
