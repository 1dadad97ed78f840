"""The report admin: the moderation queue, resolved or dismissed with a note."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from transcripts.admin.actions import (
    NoDeleteMixin,
    ReasonActionForm,
    TableActions,
    ViewOnlyMixin,
    conversation_url,
    object_link,
    search_by_id,
)
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.ids import is_ulid
from transcripts.models import Report


@admin.register(Report)
class ReportAdmin(ViewOnlyMixin, NoDeleteMixin, ProjectScopedAdmin[Report]):
    """The moderation queue: reports from viewers, resolved or dismissed with a note."""

    project_field = "thread__project_id"

    action_form = ReasonActionForm
    list_display = (
        "created_at",
        "status",
        "reason",
        "reporter",
        "message_link",
        "thread_link",
        "note",
        "project",
    )
    list_filter = (ProjectFilter, "status", "reason", "created_at")
    list_select_related = ("reporter", "thread", "thread__project")
    list_defer = ("thread__metadata", "thread__agents", "thread__project__settings")
    search_fields = ("note",)
    readonly_fields = (
        "message",
        "thread",
        "reporter",
        "reason",
        "note",
        "status",
        "resolved_by",
        "resolved_at",
        "resolution_note",
        "created_at",
    )
    fields = readonly_fields
    actions = TableActions("report")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Report], search_term: str
    ) -> tuple[QuerySet[Report], bool]:
        if is_ulid(search_term.strip()):
            return search_by_id(queryset, search_term, "message__id", "thread__id"), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="project", ordering="thread__project")
    def project(self, obj: Report) -> str:
        return str(obj.thread.project)

    @admin.display(description="thread")
    def thread_link(self, obj: Report) -> str:
        return object_link(obj.thread)

    @admin.display(description="message")
    def message_link(self, obj: Report) -> str:
        return format_html(
            '<a href="{}">{}</a>', conversation_url(obj.thread_id, obj.message_id), obj.message_id
        )
