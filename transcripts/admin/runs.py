"""The run admin: read-only runs, and redaction of failed or cancelled runs' content."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from transcripts.admin.actions import (
    NoDeleteMixin,
    TableActions,
    ViewOnlyMixin,
    changelist_url,
    links,
    object_link,
    search_by_id,
)
from transcripts.admin.changelist_rows import url_for
from transcripts.admin.filters import recent_values
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.models import Run


@admin.register(Run)
class RunAdmin(ViewOnlyMixin, NoDeleteMixin, ProjectScopedAdmin[Run]):
    """Runs, read-only: status, fork point, generator and timings."""

    project_field = "thread__project_id"

    list_display = (
        "id",
        "project",
        "thread_link",
        "status",
        "generator",
        "model",
        "last_seq",
        "created_at",
        "timeline",
    )
    list_filter = (
        ProjectFilter,
        "status",
        "origin",
        recent_values("generator"),
        recent_values("model"),
        "created_at",
    )
    list_select_related = ("thread", "thread__project")
    list_defer = (
        "error",
        "usage",
        "parameters",
        "metadata",
        "thread__metadata",
        "thread__agents",
        "thread__project__settings",
    )
    search_fields = ("thread__title",)
    readonly_fields = (
        "id",
        "thread",
        "fork_from",
        "status",
        "origin",
        "superseded_by",
        "last_seq",
        "error",
        "usage",
        "generator",
        "model",
        "parameters",
        "metadata",
        "created_at",
        "started_at",
        "first_event_at",
        "finished_at",
        "lease_owner",
        "lease_expires_at",
        "related",
    )
    fields = readonly_fields
    raw_id_fields = ("thread", "fork_from", "superseded_by")
    list_per_page = 50
    actions = TableActions("run")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        # The projection snapshot can be large and no page here shows it.
        return super().get_queryset(request).defer("snapshot")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Run], search_term: str
    ) -> tuple[QuerySet[Run], bool]:
        results, distinct = super().get_search_results(request, queryset, search_term)
        return results | search_by_id(queryset, search_term, "id", "thread__id"), distinct

    @admin.display(description="project", ordering="thread__project")
    def project(self, obj: Run) -> str:
        return str(obj.thread.project)

    @admin.display(description="thread")
    def thread_link(self, obj: Run) -> str:
        return object_link(obj.thread)

    @admin.display(description="")
    def timeline(self, obj: Run) -> str:
        return links(
            (url_for("run_detail", obj.id), "timeline"),
            (changelist_url("event", run__id__exact=obj.id), "events"),
        )

    @admin.display(description="related")
    def related(self, obj: Run) -> str:
        fork = obj.fork_from_id or "root"
        return links(
            (url_for("run_detail", obj.id), "timeline"),
            (url_for("compare", obj.thread_id, fork), "compare at its fork point"),
            (changelist_url("message", run__id__exact=obj.id), "messages"),
            (changelist_url("event", run__id__exact=obj.id), "events"),
            (changelist_url("auditrecord", thread_id=obj.thread_id), "its thread's audit log"),
        )
