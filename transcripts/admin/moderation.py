"""Django admin for moderators: threads, runs, messages, events, reports and the audit log.

Every action goes through transcripts.moderation, which checks the permission and writes the
audit record in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from transcripts import selectors
from transcripts.errors import DomainError
from transcripts.events import KINDS
from transcripts.ids import is_ulid
from transcripts.ledger import moderation
from transcripts.models import AuditRecord, Event, Message, Report, ReportStatus, Run, Thread


class ReasonActionForm(ActionForm):
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs={"placeholder": "reason (recorded in the audit log)"}),
    )


def _reason(request: HttpRequest) -> str:
    return str(request.POST.get("reason", "")).strip()


def _run_each(
    admin_obj: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[Any],
    act: Callable[[Any], object],
    verb: str,
) -> None:
    """Apply act to each object; report how many succeeded and why others did not."""
    done, refused = 0, []
    for obj in queryset:
        try:
            act(obj)
            done += 1
        except DomainError as exc:
            refused.append(f"{obj}: {exc.message}")
    if done:
        admin_obj.message_user(request, f"{verb} {done} object(s).", messages.SUCCESS)
    for line in refused[:10]:
        admin_obj.message_user(request, line, messages.ERROR)


def _link(obj: Any, label: str | None = None) -> str:
    if obj is None:
        return "—"
    opts = obj._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, label or str(obj))


def _admin_url(model: str, pk: object) -> str:
    """The admin change page of a transcripts object, from its id alone (no query)."""
    return reverse(f"admin:transcripts_{model}_change", args=[pk])


def _changelist(model: str, **filters: object) -> str:
    """The admin list of a transcripts model, filtered."""
    query = "&".join(f"{key}={value}" for key, value in filters.items())
    return reverse(f"admin:transcripts_{model}_changelist") + (f"?{query}" if query else "")


def _links(*pairs: tuple[str, str]) -> str:
    """Links (url, label) separated by middle dots."""
    html = " · ".join(["{}"] * len(pairs))
    return format_html(html, *(format_html('<a href="{}">{}</a>', u, label) for u, label in pairs))


def _search_by_id(queryset: QuerySet[Any], term: str, *fields: str) -> QuerySet[Any]:
    term = term.strip()
    if not is_ulid(term):
        return queryset.none()
    condition = Q()
    for field in fields:
        condition |= Q(**{field: term})
    return queryset.filter(condition)


class HasFlaggedFilter(admin.SimpleListFilter):
    title = "flagged messages"
    parameter_name = "has_flagged"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "With flagged messages"), ("reports", "With open reports")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            flagged = Message.objects.filter(thread_id=OuterRef("pk"), flagged_at__isnull=False)
            return queryset.filter(Exists(flagged))
        if self.value() == "reports":
            reports = Report.objects.filter(thread_id=OuterRef("pk"), status=ReportStatus.OPEN)
            return queryset.filter(Exists(reports))
        return queryset


class ModerationPermissions:
    """The custom action permissions `moderate` and `redact`, from the moderation service."""

    def has_moderate_permission(self, request: HttpRequest) -> bool:
        return moderation.can_moderate(request.user)  # type: ignore[arg-type]

    def has_redact_permission(self, request: HttpRequest) -> bool:
        return moderation.can_redact(request.user)  # type: ignore[arg-type]


class ReadOnlyMixin:
    """Moderators read runs and events; they never edit them by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Thread)
class ThreadAdmin(ModerationPermissions, admin.ModelAdmin[Thread]):
    """Threads: hide, lock and delete (with a reason), linked to their runs and messages."""

    action_form = ReasonActionForm
    list_display = (
        "title",
        "id",
        "message_count",
        "run_count",
        "hidden",
        "locked",
        "updated_at",
        "open_link",
    )
    list_filter = ("hidden", "locked", HasFlaggedFilter, "updated_at", "created_at")
    search_fields = ("title",)
    readonly_fields = (
        "id",
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
    actions = ("hide", "unhide", "lock", "unlock", "delete_with_reason")
    list_per_page = 50

    def get_queryset(self, request: HttpRequest) -> QuerySet[Thread]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _messages=Count("messages", distinct=True), _runs=Count("runs", distinct=True)
            )
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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Thread | None = None) -> bool:
        return moderation.can_moderate(request.user)  # type: ignore[arg-type]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Our own confirmation, with a reason, instead of a page listing every event."""
        thread = self.get_object(request, object_id) if is_ulid(object_id) else None
        if thread is None:
            return super().delete_view(request, object_id, extra_context)
        if not self.has_delete_permission(request, thread):
            raise DjangoPermissionDenied
        reason = str(request.POST.get("confirmed_reason", "")).strip()
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
                self.message_user(request, f"Deleted {thread}.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:transcripts_thread_changelist"))
        counts = Thread.objects.filter(pk=thread.pk).aggregate(
            runs=Count("runs", distinct=True), msgs=Count("messages", distinct=True)
        )
        context = {
            **self.admin_site.each_context(request),
            "title": "Delete thread",
            "warning": f"The thread, its {counts['runs']} runs, {counts['msgs']} messages and "
            "their events are deleted for good. The audit record stays.",
            "objects": [thread],
            "count": 1,
            "reason": reason,
            "missing_reason": request.method == "POST" and not reason,
            "single": True,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/transcripts/confirm_action.html", context)

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
        return format_html('<a href="/t/{}/">open</a>', obj.id)

    @admin.display(description="related")
    def related(self, obj: Thread) -> str:
        return _links(
            (reverse("conversation", args=[obj.id]), "conversation"),
            (_changelist("run", thread__id__exact=obj.id), "runs"),
            (_changelist("message", thread__id__exact=obj.id), "messages"),
            (_changelist("event", thread__id__exact=obj.id), "events"),
            (_changelist("report", thread__id__exact=obj.id), "reports"),
            (_changelist("auditrecord", thread_id=obj.id), "audit log"),
        )

    def _toggle(self, request: HttpRequest, queryset: QuerySet[Thread], name: str) -> None:
        act = getattr(moderation, f"{name}_thread")
        _run_each(
            self,
            request,
            queryset,
            lambda t: act(user=request.user, thread=t, reason=_reason(request)),
            f"{name.capitalize()}d" if name.endswith("e") else f"{name.capitalize()}ed",
        )

    @admin.action(description="Hide the selected threads", permissions=["moderate"])
    def hide(self, request: HttpRequest, queryset: QuerySet[Thread]) -> None:
        self._toggle(request, queryset, "hide")

    @admin.action(description="Unhide the selected threads", permissions=["moderate"])
    def unhide(self, request: HttpRequest, queryset: QuerySet[Thread]) -> None:
        self._toggle(request, queryset, "unhide")

    @admin.action(
        description="Lock the selected threads (no new runs or events)", permissions=["moderate"]
    )
    def lock(self, request: HttpRequest, queryset: QuerySet[Thread]) -> None:
        self._toggle(request, queryset, "lock")

    @admin.action(description="Unlock the selected threads", permissions=["moderate"])
    def unlock(self, request: HttpRequest, queryset: QuerySet[Thread]) -> None:
        self._toggle(request, queryset, "unlock")

    @admin.action(
        description="Delete the selected threads (asks for confirmation)", permissions=["delete"]
    )
    def delete_with_reason(
        self, request: HttpRequest, queryset: QuerySet[Thread]
    ) -> HttpResponse | None:
        return _confirm(
            self,
            request,
            queryset,
            title="Delete threads",
            warning="The threads, their runs, events and messages are deleted for good. "
            "The audit record stays.",
            action="delete_with_reason",
            act=lambda t, reason: moderation.delete_thread(
                user=request.user,  # type: ignore[arg-type]
                thread=t,
                reason=reason,
            ),
            verb="Deleted",
        )


def _confirm(
    admin_obj: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[Any],
    *,
    title: str,
    warning: str,
    action: str,
    act: Callable[[Any, str], object],
    verb: str,
) -> HttpResponse | None:
    """An irreversible action: a confirmation page that asks for a reason first."""
    reason = str(request.POST.get("confirmed_reason", "")).strip()
    if request.POST.get("confirmed") == "yes" and reason:
        _run_each(admin_obj, request, queryset, lambda obj: act(obj, reason), verb)
        return None
    context = {
        **admin_obj.admin_site.each_context(request),
        "title": title,
        "warning": warning,
        "objects": list(queryset[:200]),
        "count": queryset.count(),
        "action": action,
        "reason": reason or _reason(request),
        "missing_reason": request.POST.get("confirmed") == "yes" and not reason,
        "selected": request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME),
        "opts": admin_obj.model._meta,
    }
    return TemplateResponse(request, "admin/transcripts/confirm_action.html", context)


@admin.register(Run)
class RunAdmin(ModerationPermissions, ReadOnlyMixin, admin.ModelAdmin[Run]):
    """Runs, read-only: status, fork point, generator and timings."""

    list_display = (
        "id",
        "thread_link",
        "status",
        "generator",
        "model",
        "last_seq",
        "created_at",
        "timeline",
    )
    list_filter = ("status", "generator", "model", "created_at")
    list_select_related = ("thread",)
    search_fields = ("thread__title",)
    readonly_fields = (
        "id",
        "thread",
        "fork_from",
        "status",
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
    actions = ("redact_content",)

    @admin.action(
        description="Redact failed/cancelled runs' content (irreversible, asks for confirmation)",
        permissions=["redact"],
    )
    def redact_content(self, request: HttpRequest, queryset: QuerySet[Run]) -> HttpResponse | None:
        return _confirm(
            self,
            request,
            queryset,
            title="Redact runs",
            warning="Every event of these failed or cancelled runs is scrubbed and shows a "
            "redaction marker. Committed runs are refused: redact their messages. "
            "This cannot be undone.",
            action="redact_content",
            act=lambda r, reason: moderation.redact_run(
                user=request.user,  # type: ignore[arg-type]
                run=r,
                reason=reason,
            ),
            verb="Redacted",
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        # The projection snapshot can be large and no page here shows it.
        return super().get_queryset(request).defer("snapshot")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Run], search_term: str
    ) -> tuple[QuerySet[Run], bool]:
        results, distinct = super().get_search_results(request, queryset, search_term)
        return results | _search_by_id(queryset, search_term, "id", "thread__id"), distinct

    @admin.display(description="thread")
    def thread_link(self, obj: Run) -> str:
        return _link(obj.thread)

    @admin.display(description="")
    def timeline(self, obj: Run) -> str:
        return _links(
            (reverse("run_detail", args=[obj.id]), "timeline"),
            (_changelist("event", run__id__exact=obj.id), "events"),
        )

    @admin.display(description="related")
    def related(self, obj: Run) -> str:
        fork = obj.fork_from_id or "root"
        return _links(
            (reverse("run_detail", args=[obj.id]), "timeline"),
            (reverse("compare", args=[obj.thread_id, fork]), "compare at its fork point"),
            (_changelist("message", run__id__exact=obj.id), "messages"),
            (_changelist("event", run__id__exact=obj.id), "events"),
            (_changelist("auditrecord", thread_id=obj.thread_id), "its thread's audit log"),
        )


class FlaggedFilter(admin.SimpleListFilter):
    title = "flagged"
    parameter_name = "flagged"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Flagged"), ("no", "Not flagged")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in ("yes", "no"):
            return queryset.filter(flagged_at__isnull=self.value() == "no")
        return queryset


class RedactedFilter(FlaggedFilter):
    title = "redacted"
    parameter_name = "redacted"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Redacted"), ("no", "Not redacted")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in ("yes", "no"):
            return queryset.filter(redacted_at__isnull=self.value() == "no")
        return queryset


@admin.register(Message)
class MessageAdmin(ModerationPermissions, admin.ModelAdmin[Message]):
    """Messages: full-text search over every branch; flag, unflag and redact."""

    action_form = ReasonActionForm
    list_display = (
        "id",
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
    list_filter = ("role", "active", FlaggedFilter, RedactedFilter, "created_at")
    list_select_related = ("thread",)
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
    actions = ("flag", "unflag", "redact")
    list_per_page = 50

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Message | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Message | None = None) -> bool:
        return moderation.can_moderate(request.user)  # type: ignore[arg-type]

    def get_search_fields(self, request: HttpRequest) -> tuple[str, ...]:
        return ("id",)  # makes the search box appear; the search itself is below

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Message], search_term: str
    ) -> tuple[QuerySet[Message], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if is_ulid(term):
            return _search_by_id(queryset, term, "id", "thread__id", "run__id"), False
        query = SearchQuery(term, config="simple", search_type="websearch")
        return queryset.filter(search=query), False

    @admin.display(description="thread")
    def thread_link(self, obj: Message) -> str:
        return _link(obj.thread)

    @admin.display(description="run")
    def run_link(self, obj: Message) -> str:
        return format_html('<a href="{}">{}</a>', _admin_url("run", obj.run_id), obj.run_id)

    @admin.display(description="related")
    def related(self, obj: Message) -> str:
        url = reverse("conversation", args=[obj.thread_id])
        return _links(
            (f"{url}?leaf={obj.id}#m-{obj.id}", "in the conversation"),
            (_changelist("report", message__id__exact=obj.id), "reports"),
            (_changelist("auditrecord", target_id=obj.id), "audit log"),
        )

    @admin.display(description="content")
    def preview(self, obj: Message) -> str:
        texts = [str(p.get("text", "")) for p in obj.parts if isinstance(p, dict)]
        text = " ".join(t for t in texts if t) or ", ".join(
            str(p.get("type")) for p in obj.parts if isinstance(p, dict)
        )
        return text[:120]

    @admin.action(
        description="Flag the selected messages (reason required)", permissions=["moderate"]
    )
    def flag(self, request: HttpRequest, queryset: QuerySet[Message]) -> None:
        _run_each(
            self,
            request,
            queryset,
            lambda m: moderation.flag_message(
                user=request.user, message=m, reason=_reason(request)
            ),
            "Flagged",
        )

    @admin.action(description="Unflag the selected messages", permissions=["moderate"])
    def unflag(self, request: HttpRequest, queryset: QuerySet[Message]) -> None:
        _run_each(
            self,
            request,
            queryset,
            lambda m: moderation.unflag_message(
                user=request.user, message=m, reason=_reason(request)
            ),
            "Unflagged",
        )

    @admin.action(
        description="Redact the selected messages (irreversible, asks for confirmation)",
        permissions=["redact"],
    )
    def redact(self, request: HttpRequest, queryset: QuerySet[Message]) -> HttpResponse | None:
        return _confirm(
            self,
            request,
            queryset,
            title="Redact messages",
            warning="The content of these messages, and of the events they were projected "
            "from, is replaced by a redaction marker. This cannot be undone.",
            action="redact",
            act=lambda m, reason: moderation.redact_message(
                user=request.user,  # type: ignore[arg-type]
                message=m,
                reason=reason,
            ),
            verb="Redacted",
        )


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
class EventAdmin(ReadOnlyMixin, admin.ModelAdmin[Event]):
    """The event log, read-only and paged; filter by run from the run's page."""

    list_display = ("run_link", "seq", "kind", "at", "payload", "thread_link")
    show_facets = admin.ShowFacets.NEVER  # counting per filter choice scans the whole log
    list_filter = (EventKindFilter, "at")
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
            return _search_by_id(queryset, search_term, "run__id", "thread__id"), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="run", ordering="run")
    def run_link(self, obj: Event) -> str:
        return format_html('<a href="{}">{}</a>', _admin_url("run", obj.run_id), obj.run_id)

    @admin.display(description="thread")
    def thread_link(self, obj: Event) -> str:
        return format_html(
            '<a href="{}">{}</a>', _admin_url("thread", obj.thread_id), obj.thread_id
        )

    @admin.display(description="data")
    def payload(self, obj: Event) -> str:
        return str(obj.data)[:120]


@admin.register(AuditRecord)
class AuditRecordAdmin(ReadOnlyMixin, admin.ModelAdmin[AuditRecord]):
    """Who did what, when and why. Nobody edits or deletes it."""

    list_display = ("created_at", "actor_name", "action", "target_link", "thread_link", "reason")
    list_filter = ("action", "target_type", "created_at")
    search_fields = ("actor_name", "target_id", "thread_id", "reason")
    readonly_fields = (
        "created_at",
        "actor",
        "actor_name",
        "action",
        "target_type",
        "target_id",
        "thread_id",
        "reason",
        "details",
    )
    fields = readonly_fields
    list_per_page = 100

    @admin.display(description="target", ordering="target_id")
    def target_link(self, obj: AuditRecord) -> str:
        # Built from the stored id alone: the target may have been deleted since.
        if obj.target_type in ("thread", "run", "message", "report"):
            return format_html(
                '{} <a href="{}">{}</a>',
                obj.target_type,
                _admin_url(obj.target_type, obj.target_id),
                obj.target_id,
            )
        return f"{obj.target_type} {obj.target_id}"

    @admin.display(description="thread", ordering="thread_id")
    def thread_link(self, obj: AuditRecord) -> str:
        if not obj.thread_id:
            return "—"
        return format_html(
            '<a href="{}">{}</a>',
            _changelist("auditrecord", thread_id=obj.thread_id),
            obj.thread_id,
        )


@admin.register(Report)
class ReportAdmin(ModerationPermissions, admin.ModelAdmin[Report]):
    """The moderation queue: reports from viewers, resolved or dismissed with a note."""

    action_form = ReasonActionForm
    list_display = (
        "created_at",
        "status",
        "reason",
        "reporter",
        "message_link",
        "thread_link",
        "note",
    )
    list_filter = ("status", "reason", "created_at")
    list_select_related = ("reporter", "thread")
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
    actions = ("resolve", "dismiss")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Report | None = None) -> bool:
        return False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Report], search_term: str
    ) -> tuple[QuerySet[Report], bool]:
        if is_ulid(search_term.strip()):
            return _search_by_id(queryset, search_term, "message__id", "thread__id"), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="thread")
    def thread_link(self, obj: Report) -> str:
        return _link(obj.thread)

    @admin.display(description="message")
    def message_link(self, obj: Report) -> str:
        return format_html(
            '<a href="/t/{}/?leaf={}#m-{}">{}</a>',
            obj.thread_id,
            obj.message_id,
            obj.message_id,
            obj.message_id,
        )

    def _close(self, request: HttpRequest, queryset: QuerySet[Report], status: str) -> None:
        _run_each(
            self,
            request,
            queryset,
            lambda r: moderation.close_report(
                user=request.user, report=r, status=status, note=_reason(request)
            ),
            "Resolved" if status == ReportStatus.RESOLVED else "Dismissed",
        )

    @admin.action(description="Resolve the selected reports", permissions=["moderate"])
    def resolve(self, request: HttpRequest, queryset: QuerySet[Report]) -> None:
        self._close(request, queryset, ReportStatus.RESOLVED)

    @admin.action(description="Dismiss the selected reports", permissions=["moderate"])
    def dismiss(self, request: HttpRequest, queryset: QuerySet[Report]) -> None:
        self._close(request, queryset, ReportStatus.DISMISSED)


_original_index = admin.site.index


def _index_with_counts(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
    """The admin index, with the moderation queue's counts on top."""
    counts = {
        "open_reports": Report.objects.filter(status=ReportStatus.OPEN).count(),
        "flagged_messages": Message.objects.filter(flagged_at__isnull=False).count(),
        "hidden_threads": Thread.objects.filter(hidden=True).count(),
    }
    return _original_index(request, extra_context={**counts, **(extra_context or {})})


admin.site.index = _index_with_counts  # type: ignore[method-assign]
admin.site.index_template = "admin/transcripts_index.html"
admin.site.site_header = "Transcripts administration"
admin.site.site_title = "Transcripts admin"
