"""The event admin: the event log, read-only and paged."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from transcripts.admin.actions import (
    NoDeleteMixin,
    ViewOnlyMixin,
    admin_url,
    id_link,
    search_by_id,
)
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.events import KINDS
from transcripts.ids import is_ulid
from transcripts.models import Event


class EventKindFilter(admin.SimpleListFilter):
    """The kinds of the vocabulary (a fixed list: no DISTINCT over the whole event log)."""

    title = "kind"
    parameter_name = "kind"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Model]
    ) -> list[tuple[str, str]]:
        return [(kind, kind) for kind in KINDS] + [("data-*", "data-*"), ("system.*", "system.*")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Event]) -> QuerySet[Event]:
        value = self.value()
        if not value:
            return queryset
        if value.endswith("*"):
            return queryset.filter(kind__startswith=value[:-1])
        return queryset.filter(kind=value)


def event_key(event: Event) -> str:
    """The id of an event in admin URLs: its run's id and its seq, as `RUN.SEQ`."""
    return f"{event.run_id}.{event.seq}"


class EventChangeList(ChangeList):
    """The event list, linking each row by its key (run, seq): events have no single id."""

    def url_for_result(self, result: Model) -> str:
        assert isinstance(result, Event)
        return admin_url("event", event_key(result))


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

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        # A thread's events are found through its runs: the log has no thread_id index.
        return lookup == "run__thread__id__exact" or super().lookup_allowed(lookup, value, request)

    def get_changelist(self, request: HttpRequest, **kwargs: object) -> type[ChangeList]:
        return EventChangeList

    def find_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Event | None:
        """The event of a `RUN.SEQ` key among those the user may see; None (a 404) otherwise."""
        run_id, _, seq = object_id.rpartition(".")
        if not is_ulid(run_id) or not seq.isdigit() or len(seq) > 10:
            return None
        found = self.get_queryset(request).filter(run_id=run_id.upper(), seq=int(seq))
        return found.first()

    @admin.display(description="run", ordering="run")
    def run_link(self, obj: Event) -> str:
        return id_link("run", obj.run_id)

    @admin.display(description="thread")
    def thread_link(self, obj: Event) -> str:
        return id_link("thread", obj.thread_id)

    @admin.display(description="data")
    def payload(self, obj: Event) -> str:
        return str(obj.data)[:120]


# Django 5.2's admin.register refuses a model with a composite primary key, for the URLs of
# its rows; EventAdmin names each row by its own key (event_key), so it is registered directly.
admin.site._registry[Event] = EventAdmin(Event, admin.site)
