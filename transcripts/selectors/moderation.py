"""Reads for moderators: the reports queue, what waits for them, and the audit log's threads."""

from __future__ import annotations

from collections.abc import Collection

from django.db.models import Case, Count, QuerySet, When

from transcripts.models import Message, Report, ReportStatus, Thread


def report_queue(
    status: str = "", *, project_ids: Collection[int] | None = None
) -> QuerySet[Report]:
    """Reports for the moderation queue, open ones first, newest first; status and
    project_ids (None: all) narrow."""
    reports = Report.objects.select_related(
        "message", "thread", "thread__project", "reporter", "resolved_by"
    )
    if project_ids is not None:
        reports = reports.filter(thread__project_id__in=project_ids)
    if status:
        reports = reports.filter(status=status)
    is_open = Case(When(status=ReportStatus.OPEN, then=0), default=1)
    return reports.order_by(is_open, "-created_at", "-id")


def report_page(
    status: str = "", *, project_ids: Collection[int] | None = None, offset: int, limit: int
) -> list[Report]:
    """One page of the moderation queue: limit reports from offset (ask one more than shown
    to know whether another page follows)."""
    return list(report_queue(status, project_ids=project_ids)[offset : offset + limit])


def queued_report(report_id: int) -> Report:
    """One report with what its queue row shows (Report.DoesNotExist when it is gone)."""
    return report_queue().get(pk=report_id)


def report_counts(*, project_ids: Collection[int] | None = None) -> dict[str, int]:
    """Number of reports per status in project_ids (None: all), in one grouped query."""
    reports = Report.objects.all()
    if project_ids is not None:
        reports = reports.filter(thread__project_id__in=project_ids)
    rows = reports.order_by().values("status").annotate(n=Count("id"))
    counts = {status: 0 for status in ReportStatus.values}
    counts.update({row["status"]: row["n"] for row in rows})
    return counts


def moderation_counts(*, project_ids: Collection[int] | None = None) -> dict[str, int]:
    """What waits for moderators in project_ids (None: all): reports, flags, hidden threads."""
    reports = Report.objects.filter(status=ReportStatus.OPEN)
    flagged = Message.objects.filter(flagged_at__isnull=False)
    hidden = Thread.objects.filter(hidden=True)
    if project_ids is not None:
        reports = reports.filter(thread__project_id__in=project_ids)
        flagged = flagged.filter(thread__project_id__in=project_ids)
        hidden = hidden.filter(project_id__in=project_ids)
    return {
        "open_reports": reports.count(),
        "flagged_messages": flagged.count(),
        "hidden_threads": hidden.count(),
    }


def thread_titles(thread_ids: Collection[str]) -> dict[str, str]:
    """The title of each thread that still exists among thread_ids, in one query."""
    rows = Thread.objects.filter(pk__in=set(thread_ids)).values_list("id", "title")
    return {thread_id: title for thread_id, title in rows}
