"""Moderation as people read it: report rows with what a moderator may do on each, the words
for what an action did (queue and admin alike), the text a redaction erases, and audit rows."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from transcripts import selectors
from transcripts.models import AuditRecord, Message, Report
from transcripts.selectors.moderation import thread_titles

PREVIEW_CHARS = 280
# What the redaction confirmation shows of the text it erases: enough to recognise it.
REDACTION_PREVIEW_CHARS = 1500
STATUSES = [
    ("open", "Open"),
    ("resolved", "Resolved"),
    ("dismissed", "Dismissed"),
    ("all", "All"),
]


# --- words ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActionWords:
    """How an action reads once done ("Hid"), and the state it leaves ("hidden")."""

    done: str
    state: str


ACTION_WORDS = {
    "hide": ActionWords("Hid", "hidden"),
    "unhide": ActionWords("Unhid", "visible"),
    "lock": ActionWords("Locked", "locked"),
    "unlock": ActionWords("Unlocked", "unlocked"),
    "flag": ActionWords("Flagged", "flagged"),
    "unflag": ActionWords("Unflagged", "unflagged"),
    "redact": ActionWords("Redacted", "redacted"),
    "delete": ActionWords("Deleted", "deleted"),
    "resolve_report": ActionWords("Resolved", "resolved"),
    "dismiss_report": ActionWords("Dismissed", "dismissed"),
    "revoke_token": ActionWords("Revoked", "revoked"),
    "revoke_share": ActionWords("Revoked", "revoked"),
}


def counted(count: int, noun: str) -> str:
    """ "1 thread", "3 threads"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def done_message(action: str, count: int, noun: str) -> str:
    """ "Hid 1 thread.", "Redacted 3 messages."."""
    return f"{ACTION_WORDS[action].done} {counted(count, noun)}."


def unchanged_message(action: str, count: int, noun: str) -> str:
    """ "1 thread was already hidden: nothing changed." (nothing was written either)."""
    verb = "was" if count == 1 else "were"
    return f"{counted(count, noun)} {verb} already {ACTION_WORDS[action].state}: nothing changed."


def already_message(action: str, noun: str) -> str:
    """ "The thread is already hidden: nothing changed." (one object; nothing was written)."""
    return f"The {noun} is already {ACTION_WORDS[action].state}: nothing changed."


# --- the queue -----------------------------------------------------------------------------


@dataclass
class ReportRow:
    """A report with the start of its message, a link to it, and the reason a moderator's
    action starts from."""

    report: Report
    preview: str
    message_url: str
    suggested_reason: str
    can_redact: bool


def suggested_reason(report: Report) -> str:
    """The reason an action on report is recorded with unless the moderator changes it."""
    reason = f"Report {report.pk}: {report.get_reason_display()}"
    return f"{reason}: {report.note}"[:2000] if report.note else reason


def report_rows(
    reports: Sequence[Report], *, administered: Collection[int] | None = ()
) -> list[ReportRow]:
    """Rows for reports, their previews read in one query; the user redacts in the projects
    administered (None: all)."""
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
                administered is None or report.thread.project_id in administered,
            )
        )
    return rows


def queue_tabs(project_ids: Collection[int] | None) -> list[tuple[str, str, int]]:
    """(status, label, number of reports in project_ids, None: all) of each filter."""
    counts = selectors.report_counts(project_ids=project_ids)
    counts["all"] = sum(counts.values())
    return [(key, label, counts.get(key, 0)) for key, label in STATUSES]


# --- what a redaction erases ---------------------------------------------------------------


@dataclass(frozen=True)
class RedactionPreview:
    """The content a redaction erases, as text, clipped for reading, with its full size."""

    text: str
    size: int
    shown: int
    parts: int

    @property
    def clipped(self) -> bool:
        return self.shown < self.size


def _part_text(part: dict[str, Any]) -> str:
    kind = part.get("type")
    if kind in ("text", "reasoning"):
        text = str(part.get("text", ""))
        return f"(reasoning) {text}" if kind == "reasoning" else text
    if kind == "tool-call":
        return f"(call {part.get('toolName', '')}) {json.dumps(part.get('input'))}"
    if kind == "tool-result":
        return f"(result of {part.get('toolName', '')}) {json.dumps(part.get('output'))}"
    if kind == "file":
        return f"(file {part.get('name') or ''}) {part.get('url', '')}"
    return json.dumps(part)


def redaction_preview(message: Message) -> RedactionPreview:
    """What redacting message erases, every part as text, clipped to a readable length."""
    parts = [p for p in message.parts if isinstance(p, dict)]
    text = "\n\n".join(_part_text(part) for part in parts)
    shown = text[:REDACTION_PREVIEW_CHARS]
    return RedactionPreview(text=shown, size=len(text), shown=len(shown), parts=len(parts))


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
