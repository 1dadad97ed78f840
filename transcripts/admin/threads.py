"""The thread admin: hide, lock and delete (with a reason), linked to runs and messages."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import Count, Exists, IntegerField, Model, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from transcripts import selectors
from transcripts.admin.actions import (
    CONFIRM_TEMPLATE,
    ReasonActionForm,
    TableActions,
    ViewOnlyMixin,
    changelist_url,
    confirmed_reason,
    conversation_url,
    links,
)
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.errors import DomainError
from transcripts.ids import is_ulid
from transcripts.ledger import moderation
from transcripts.models import Message, Report, ReportStatus, Run, Thread
from transcripts.permissions import Role


def _count_of(model: type[Message] | type[Run]) -> Coalesce:
    """How many rows of model belong to the thread (for a column of the list)."""
    rows = model.objects.filter(thread_id=OuterRef("pk")).order_by().values("thread_id")
    counted = Subquery(rows.annotate(n=Count("*")).values("n"), output_field=IntegerField())
    return Coalesce(counted, 0)


class HasFlaggedFilter(admin.SimpleListFilter):
    """Threads with flagged messages, or with open reports."""

    title = "flagged messages"
    parameter_name = "has_flagged"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Model]
    ) -> list[tuple[str, str]]:
        return [("yes", "With flagged messages"), ("reports", "With open reports")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Thread]) -> QuerySet[Thread]:
        if self.value() == "yes":
            flagged = Message.objects.filter(thread_id=OuterRef("pk"), flagged_at__isnull=False)
            return queryset.filter(Exists(flagged))
        if self.value() == "reports":
            reports = Report.objects.filter(thread_id=OuterRef("pk"), status=ReportStatus.OPEN)
            return queryset.filter(Exists(reports))
        return queryset


@admin.register(Thread)
class ThreadAdmin(ViewOnlyMixin, ProjectScopedAdmin[Thread]):
    """Threads: hide, lock and delete (with a reason), linked to their runs and messages."""

    action_form = ReasonActionForm
    list_display = (
        "title",
        "id",
        "project",
        "message_count",
        "run_count",
        "hidden",
        "locked",
        "updated_at",
        "open_link",
    )
    list_filter = (ProjectFilter, "hidden", "locked", HasFlaggedFilter, "updated_at", "created_at")
    list_select_related = ("project",)
    list_defer = ("metadata", "agents", "project__settings")
    search_fields = ("title",)
    readonly_fields = (
        "id",
        "project",
        "title",
        "metadata",
        "agents",
        "parent_thread",
        "head",
        "hidden",
        "locked",
        "created_at",
        "updated_at",
        "related",
    )
    fields = readonly_fields
    actions = TableActions("thread")
    list_per_page = 50

    def get_queryset(self, request: HttpRequest) -> QuerySet[Thread]:
        return (
            super()
            .get_queryset(request)
            # Counted per listed thread (a subquery each), not by joining every message and
            # run of every thread before the page is cut.
            .annotate(_messages=_count_of(Message), _runs=_count_of(Run))
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Thread], search_term: str
    ) -> tuple[QuerySet[Thread], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if is_ulid(term):
            messages_ = Message.objects.filter(pk=term).values("thread_id")
            runs = Run.objects.filter(pk=term).values("thread_id")
            return queryset.filter(Q(id=term) | Q(id__in=messages_) | Q(id__in=runs)), False
        # Titles, and the text of every message on every branch (full-text).
        return selectors.search_threads(queryset, term), False

    def has_delete_permission(self, request: HttpRequest, obj: Thread | None = None) -> bool:
        """Deleting needs the admin role in the thread's project."""
        return self.holds(request, Role.ADMIN, obj)

    def get_actions(
        self, request: HttpRequest
    ) -> dict[str, tuple[Callable[..., str], str, str] | None]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, object] | None = None
    ) -> HttpResponse:
        """Our own confirmation, with a reason, instead of a page listing every event."""
        thread = self.get_object(request, object_id)
        assert thread is not None  # get_object answers 404 for a thread the user can't see
        if not self.has_delete_permission(request, thread):
            raise DjangoPermissionDenied("deleting a thread needs the admin role in its project")
        reason = confirmed_reason(request)
        if request.method == "POST" and request.POST.get("confirmed") == "yes" and reason:
            try:
                moderation.delete_thread(
                    user=request.user,  # type: ignore[arg-type]
                    thread=thread,
                    reason=reason,
                )
            except DomainError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(request, f"Deleted the thread {thread}.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:transcripts_thread_changelist"))
        counts = Thread.objects.filter(pk=thread.pk).aggregate(
            runs=Count("runs", distinct=True), msgs=Count("messages", distinct=True)
        )
        context = {
            **self.admin_site.each_context(request),
            "title": "Delete thread",
            "warning": f"The thread, its {counts['runs']} runs, {counts['msgs']} messages and "
            "their events are deleted for good. The audit record stays.",
            "objects": [(thread, None)],
            "count": 1,
            "reason": reason,
            "missing_reason": request.method == "POST" and not reason,
            "single": True,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, CONFIRM_TEMPLATE, context)

    def delete_model(self, request: HttpRequest, obj: Thread) -> None:
        moderation.delete_thread(
            user=request.user,  # type: ignore[arg-type]
            thread=obj,
            reason="deleted from the admin",
        )

    @admin.display(description="messages", ordering="_messages")
    def message_count(self, obj: Thread) -> int:
        return int(getattr(obj, "_messages", 0))

    @admin.display(description="runs", ordering="_runs")
    def run_count(self, obj: Thread) -> int:
        return int(getattr(obj, "_runs", 0))

    @admin.display(description="")
    def open_link(self, obj: Thread) -> str:
        return format_html('<a href="{}">open</a>', conversation_url(obj.id))

    @admin.display(description="related")
    def related(self, obj: Thread) -> str:
        return links(
            (conversation_url(obj.id), "conversation"),
            (changelist_url("run", thread__id__exact=obj.id), "runs"),
            (changelist_url("message", thread__id__exact=obj.id), "messages"),
            (changelist_url("event", run__thread__id__exact=obj.id), "events"),
            (changelist_url("report", thread__id__exact=obj.id), "reports"),
            (changelist_url("auditrecord", thread_id=obj.id), "audit log"),
        )
