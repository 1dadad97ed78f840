"""The moderation queue: report rows with a preview of the message, and the status tabs."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.urls import reverse

from transcripts import selectors
from transcripts.models import Report

PREVIEW_CHARS = 280
STATUSES = [
    ("open", "Open"),
    ("resolved", "Resolved"),
    ("dismissed", "Dismissed"),
    ("all", "All"),
]


@dataclass
class ReportRow:
    """A report with the start of its message and a link to the message in its thread."""

    report: Report
    preview: str
    message_url: str


def report_rows(reports: Sequence[Report]) -> list[ReportRow]:
    """Rows for reports, their previews read in one query."""
    previews = selectors.message_previews([r.message_id for r in reports], PREVIEW_CHARS)
    rows = []
    for report in reports:
        url = reverse("conversation", args=[report.thread_id])
        message_url = f"{url}?leaf={report.message_id}#m-{report.message_id}"
        rows.append(ReportRow(report, previews.get(report.message_id, ""), message_url))
    return rows


def queue_tabs(project_ids: Collection[int] | None) -> list[tuple[str, str, int]]:
    """(status, label, number of reports in project_ids, None: all) of each filter."""
    counts = selectors.report_counts(project_ids=project_ids)
    counts["all"] = sum(counts.values())
    return [(key, label, counts.get(key, 0)) for key, label in STATUSES]
