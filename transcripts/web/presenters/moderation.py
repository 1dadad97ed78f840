"""Moderation as people read it: report rows with the actions of the table
(`transcripts.ledger.moderation.ACTIONS`) a moderator may take on each, and audit rows."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.urls import reverse

from transcripts import selectors
from transcripts.ledger.moderation import ModerationAction, report_actions, report_target
from transcripts.models import AuditRecord, Report
from transcripts.permissions import Role
from transcripts.selectors.moderation import thread_titles

PREVIEW_CHARS = 280
STATUSES = [
    ("open", "Open"),
    ("resolved", "Resolved"),
    ("dismissed", "Dismissed"),
    ("all", "All"),
]


# --- the queue -----------------------------------------------------------------------------


@dataclass
class ReportRow:
    """A report with the start of its message, a link to it, the reason a moderator's
    action starts from, and the actions offered on its thread and message as they stand."""

    report: Report
    preview: str
    message_url: str
    suggested_reason: str
    actions: list[ModerationAction]


def suggested_reason(report: Report) -> str:
    """The reason an action on report is recorded with unless the moderator changes it."""
    reason = f"Report {report.pk}: {report.get_reason_display()}"
    return f"{reason}: {report.note}"[:2000] if report.note else reason


def report_rows(
    reports: Sequence[Report], *, administered: Collection[int] | None = ()
) -> list[ReportRow]:
    """Rows for reports, their previews read in one query; the user takes the admin's actions
    (redaction) in the projects administered (None: all)."""
    previews = selectors.message_previews([r.message_id for r in reports], PREVIEW_CHARS)
    rows = []
    for report in reports:
        url = reverse("conversation", args=[report.thread_id])
        message_url = f"{url}?leaf={report.message_id}#m-{report.message_id}"
        rows.append(
            ReportRow(
                report,
                previews.get(report.message_id, ""),
                message_url,
                suggested_reason(report),
                offered_actions(
                    report,
                    administers=administered is None or report.thread.project_id in administered,
                ),
            )
        )
    return rows


def offered_actions(report: Report, *, administers: bool) -> list[ModerationAction]:
    """The report actions that make sense on report's thread or message as they stand, those
    needing the admin role only for a user who administers its project."""
    return [
        action
        for action in report_actions()
        if (administers or action.role < Role.ADMIN)
        and action.offered_on(report_target(report, action))
    ]


def queue_tabs(project_ids: Collection[int] | None) -> list[tuple[str, str, int]]:
    """(status, label, number of reports in project_ids, None: all) of each filter."""
    counts = selectors.report_counts(project_ids=project_ids)
    counts["all"] = sum(counts.values())
    return [(key, label, counts.get(key, 0)) for key, label in STATUSES]


# --- the audit log -------------------------------------------------------------------------


@dataclass
class AuditRow:
    """An audit record as the log shows it: what was done, to what, in which thread."""

    record: AuditRecord
    thread_title: str
    thread_url: str
    target_url: str


def audit_rows(records: Sequence[AuditRecord]) -> list[AuditRow]:
    """Rows for records, the titles of their threads read in one query."""
    titles = thread_titles([r.thread_id for r in records if r.thread_id])
    rows = []
    for record in records:
        title = titles.get(record.thread_id)
        exists = title is not None
        if not exists and record.thread_id:
            # A deleted thread: its delete record kept the title.
            title = str(record.details.get("title", "")) if record.action == "delete" else ""
        thread_url = reverse("conversation", args=[record.thread_id]) if exists else ""
        target_url = ""
        if exists and record.target_type == "message":
            target_url = f"{thread_url}?leaf={record.target_id}#m-{record.target_id}"
        elif exists and record.target_type == "run":
            target_url = reverse("run_detail", args=[record.target_id])
        rows.append(AuditRow(record, title or "", thread_url, target_url))
    return rows
