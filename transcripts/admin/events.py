"""The event admin: the event log, read-only and paged."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from transcripts.admin.actions import NoDeleteMixin, ViewOnlyMixin, id_link, search_by_id
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.events import KINDS
from transcripts.ids import is_ulid
from transcripts.models import Event


class EventKindFilter(admin.SimpleListFilter):
    """The kinds of the vocabulary (a fixed list: no DISTINCT over the whole event log)."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(kind, kind) for kind in KINDS] + [("data-*", "data-*"), ("system.*", "system.*")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        if value.endswith("*"):
            return queryset.filter(kind__startswith=value[:-1])
        return queryset.filter(kind=value)


@admin.register(Event)
class EventAdmin(ViewOnlyMixin, NoDeleteMixin, ProjectScopedAdmin[Event]):
    """The event log, read-only and paged; filter by run from the run's page."""

    project_field = "thread__project_id"

    list_display = ("run_link", "seq", "kind", "at", "payload", "thread_link")
    show_facets = admin.ShowFacets.NEVER  # counting per filter choice scans the whole log
    list_filter = (ProjectFilter, EventKindFilter, "at")
    list_per_page = 100
    show_full_result_count = False
    readonly_fields = ("thread", "run", "seq", "kind", "data", "at")
    fields = readonly_fields
    search_fields = ("kind",)
    ordering = ("run", "seq")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Event], search_term: str
    ) -> tuple[QuerySet[Event], bool]:
        if is_ulid(search_term.strip()):
            return search_by_id(queryset, search_term, "run__id", "thread__id"), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="run", ordering="run")
    def run_link(self, obj: Event) -> str:
        return id_link("run", obj.run_id)

    @admin.display(description="thread")
    def thread_link(self, obj: Event) -> str:
        return id_link("thread", obj.thread_id)

    @admin.display(description="data")
    def payload(self, obj: Event) -> str:
        return str(obj.data)[:120]
