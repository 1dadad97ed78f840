"""The message admin: full-text search over every branch; flag, unflag and redact."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.contrib.postgres.search import SearchQuery
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from transcripts import selectors
from transcripts.admin.actions import (
    NoDeleteMixin,
    ReasonActionForm,
    TableActions,
    ViewOnlyMixin,
    changelist_url,
    conversation_url,
    id_link,
    links,
    object_link,
    search_by_id,
)
from transcripts.admin.changelist_rows import RowsChangeList
from transcripts.admin.filters import recent_values
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.ids import is_ulid
from transcripts.models import Message

PREVIEW_LENGTH = 120


class StampedFilter(admin.SimpleListFilter):
    """Whether a moment field is set (flagged, redacted): yes or no."""

    field = ""
    labels = ("", "")

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Model]
    ) -> list[tuple[str, str]]:
        return [("yes", self.labels[0]), ("no", self.labels[1])]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Message]) -> QuerySet[Message]:
        if self.value() in ("yes", "no"):
            return queryset.filter(**{f"{self.field}__isnull": self.value() == "no"})
        return queryset


class FlaggedFilter(StampedFilter):
    title = "flagged"
    parameter_name = "flagged"
    field = "flagged_at"
    labels = ("Flagged", "Not flagged")


class RedactedFilter(StampedFilter):
    title = "redacted"
    parameter_name = "redacted"
    field = "redacted_at"
    labels = ("Redacted", "Not redacted")


class MessageChangeList(RowsChangeList):
    """The message list computes each preview in SQL instead of loading every message's parts."""

    def get_queryset(
        self, request: HttpRequest, exclude_parameters: list[str | None] | None = None
    ) -> QuerySet[Message]:
        queryset: QuerySet[Message] = super().get_queryset(request, exclude_parameters)
        return queryset.defer("parts").annotate(
            preview_text=selectors.message_preview(PREVIEW_LENGTH)
        )


@admin.register(Message)
class MessageAdmin(ViewOnlyMixin, NoDeleteMixin, ProjectScopedAdmin[Message]):
    """Messages: full-text search over every branch; flag, unflag and redact."""

    project_field = "thread__project_id"

    action_form = ReasonActionForm
    list_display = (
        "id",
        "project",
        "thread_link",
        "run_link",
        "role",
        "depth",
        "active",
        "preview",
        "flagged_at",
        "redacted_at",
        "created_at",
    )
    list_filter = (
        ProjectFilter,
        recent_values("role"),
        "active",
        FlaggedFilter,
        RedactedFilter,
        "created_at",
    )
    list_select_related = ("thread", "thread__project")
    list_defer = ("metadata", "thread__metadata", "thread__agents", "thread__project__settings")
    search_fields = ()
    readonly_fields = (
        "id",
        "thread",
        "run",
        "parent",
        "depth",
        "position",
        "role",
        "parts",
        "metadata",
        "created_at",
        "active",
        "flagged_at",
        "flag_reason",
        "redacted_at",
        "related",
    )
    fields = readonly_fields
    actions = TableActions("message")
    list_per_page = 50

    def get_changelist(self, request: HttpRequest, **kwargs: object) -> type[ChangeList]:
        return MessageChangeList

    def get_search_fields(self, request: HttpRequest) -> tuple[str, ...]:
        return ("id",)  # makes the search box appear; the search itself is below

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Message], search_term: str
    ) -> tuple[QuerySet[Message], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if is_ulid(term):
            return search_by_id(queryset, term, "id", "thread__id", "run__id"), False
        query = SearchQuery(term, config="simple", search_type="websearch")
        return queryset.filter(search=query), False

    @admin.display(description="project", ordering="thread__project")
    def project(self, obj: Message) -> str:
        return str(obj.thread.project)

    @admin.display(description="thread")
    def thread_link(self, obj: Message) -> str:
        return object_link(obj.thread)

    @admin.display(description="run")
    def run_link(self, obj: Message) -> str:
        return id_link("run", obj.run_id)

    @admin.display(description="related")
    def related(self, obj: Message) -> str:
        return links(
            (conversation_url(obj.thread_id, obj.id), "in the conversation"),
            (changelist_url("report", message__id__exact=obj.id), "reports"),
            (changelist_url("auditrecord", target_id=obj.id), "audit log"),
        )

    @admin.display(description="content")
    def preview(self, obj: Message) -> str:
        return selectors.ellipsize(getattr(obj, "preview_text", None) or "", PREVIEW_LENGTH)
