"""The audit log admin: who did what, when and why; nobody edits or deletes it."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html

from transcripts.admin.actions import NoDeleteMixin, ViewOnlyMixin, changelist_url, id_link
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.models import AuditRecord

# Targets with an admin page of their own.
LINKED_TARGETS = ("thread", "run", "message", "report")


@admin.register(AuditRecord)
class AuditRecordAdmin(ViewOnlyMixin, NoDeleteMixin, ProjectScopedAdmin[AuditRecord]):
    """Who did what, when and why, in the projects the user moderates. Nobody edits it."""

    list_display = (
        "created_at",
        "actor_name",
        "action",
        "target_link",
        "thread_link",
        "project",
        "reason",
    )
    list_filter = (ProjectFilter, "action", "target_type", "created_at")
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
        "project",
        "reason",
        "details",
    )
    fields = readonly_fields
    list_per_page = 100

    @admin.display(description="target", ordering="target_id")
    def target_link(self, obj: AuditRecord) -> str:
        # Built from the stored id alone: the target may have been deleted since.
        if obj.target_type in LINKED_TARGETS:
            return format_html("{} {}", obj.target_type, id_link(obj.target_type, obj.target_id))
        return f"{obj.target_type} {obj.target_id}"

    @admin.display(description="thread", ordering="thread_id")
    def thread_link(self, obj: AuditRecord) -> str:
        if not obj.thread_id:
            return "—"
        return format_html(
            '<a href="{}">{}</a>',
            changelist_url("auditrecord", thread_id=obj.thread_id),
            obj.thread_id,
        )
