"""The audit log admin: who did what, when and why; nobody edits or deletes it."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.http import HttpRequest
from django.utils.html import format_html

from transcripts.admin.actions import (
    NoDeleteMixin,
    ViewOnlyMixin,
    admin_url,
    changelist_url,
    conversation_url,
)
from transcripts.admin.changelist_rows import RowsChangeList
from transcripts.admin.filters import recent_values
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.models import AuditRecord
from transcripts.selectors import ellipsize
from transcripts.selectors.moderation import thread_titles

# How much of a reason the list shows: a few lines at 1366 pixels.
REASON_PREVIEW = 160
# How much of an id the list shows: enough to tell records apart at a glance.
SHORT_ID = 10
# Targets with an admin page of their own.
LINKED_TARGETS = ("thread", "run", "message", "report")


def short_id(target_id: str) -> str:
    """The start of a long id (a ULID), with an ellipsis; short ids whole."""
    return (
        target_id
        if len(target_id) <= SHORT_ID + 2
        else f"{target_id[:SHORT_ID]}\N{HORIZONTAL ELLIPSIS}"
    )


class AuditChangeList(RowsChangeList):
    """The audit list reads the titles of the page's threads in one query (thread_id is no
    foreign key: records outlive their threads)."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        titles = thread_titles([r.thread_id for r in self.result_list if r.thread_id])
        for record in self.result_list:
            record.thread_title = titles.get(record.thread_id)


@admin.register(AuditRecord)
class AuditRecordAdmin(ViewOnlyMixin, NoDeleteMixin, ProjectScopedAdmin[AuditRecord]):
    """Who did what, when and why, in the projects the user moderates. Nobody edits it."""

    list_display = (
        "created_at",
        "actor_name",
        "action",
        "target_link",
        "thread_link",
        "reason_preview",
        "project",
    )
    list_filter = (
        ProjectFilter,
        recent_values("action"),
        recent_values("target_type", "target type"),
        "created_at",
    )
    list_select_related = ("project",)  # a nullable foreign key: not joined by default
    search_fields = ("actor_name", "target_id", "thread_id", "reason")
    readonly_fields = (
        "created_at",
        "actor",
        "actor_name",
        "action",
        "target_type",
        "target_id",
        "thread_id",
        "thread_link",
        "project",
        "reason",
        "details",
    )
    fields = readonly_fields
    list_per_page = 100

    def get_changelist(self, request: HttpRequest, **kwargs: object) -> type[ChangeList]:
        return AuditChangeList

    def get_list_display(self, request: HttpRequest) -> tuple[str, ...]:
        """Without the project column for a moderator of one project: the reasons need room."""
        ids = self.project_ids(request)
        if ids is not None and len(ids) <= 1:
            return tuple(column for column in self.list_display if column != "project")
        return tuple(str(column) for column in self.list_display)

    @admin.display(description="target", ordering="target_id")
    def target_link(self, obj: AuditRecord) -> str:
        # Built from the stored id alone: the target may have been deleted since.
        # Ids are shortened in the list (in full in the link's title and on the record's page).
        if obj.target_type in LINKED_TARGETS:
            return format_html(
                '{} <a href="{}" title="{}">{}</a>',
                obj.target_type,
                admin_url(obj.target_type, obj.target_id),
                obj.target_id,
                short_id(obj.target_id),
            )
        return format_html(
            '{} <span title="{}">{}</span>',
            obj.target_type,
            obj.target_id,
            short_id(obj.target_id),
        )

    @admin.display(description="reason", ordering="reason")
    def reason_preview(self, obj: AuditRecord) -> str:
        """The reason, cut to a few lines in the list (in full on the record's page)."""
        if not obj.reason:
            return "—"
        return format_html(
            '<span title="{}">{}</span>', obj.reason, ellipsize(obj.reason, REASON_PREVIEW)
        )

    @admin.display(description="thread", ordering="thread_id")
    def thread_link(self, obj: AuditRecord) -> str:
        """The thread's title, linked to the conversation, and the thread's own audit trail."""
        if not obj.thread_id:
            return "—"
        trail = changelist_url("auditrecord", thread_id=obj.thread_id)
        if hasattr(obj, "thread_title"):
            title = obj.thread_title
        else:  # the change page: one record
            title = thread_titles([obj.thread_id]).get(obj.thread_id)
        if title is None:
            # Deleted since: its delete record kept the title.
            kept = obj.details.get("title", "") if obj.action == "delete" else ""
            return format_html(
                '{} (deleted) · <a href="{}">its audit log</a>', kept or obj.thread_id, trail
            )
        return format_html(
            '<a href="{}">{}</a> · <a href="{}">its audit log</a>',
            conversation_url(obj.thread_id),
            title or "Untitled thread",
            trail,
        )
