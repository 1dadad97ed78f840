"""What the model admins share: view-only pages, audited actions, the confirmation page, links.

Change pages only show a record. Every write is an action that calls a service in
`transcripts.ledger` (moderation, projects, tokens), which checks the permission and writes the
audit record in the same transaction. The moderation actions of a list are those of the table
`transcripts.ledger.moderation.ACTIONS` on its model (`TableActions`). Who sees which records
and actions: `scope.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, overload

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME, ActionForm
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import format_html

from transcripts.admin.changelist_rows import url_for
from transcripts.admin.scope import ProjectScopedAdmin
from transcripts.errors import DomainError
from transcripts.ids import is_ulid
from transcripts.ledger.moderation import ACTIONS, action_words
from transcripts.ledger.moderation_actions import (
    ModerationAction,
    RedactionPreview,
    Target,
    done_message,
    unchanged_message,
)
from transcripts.permissions import Role

CONFIRM_TEMPLATE = "admin/transcripts/confirm_action.html"

M = TypeVar("M", bound=Model)


class ReasonActionForm(ActionForm):
    """The action bar with a reason field, recorded in the audit log."""

    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs={"placeholder": "reason (recorded in the audit log)"}),
    )


def action_reason(request: HttpRequest) -> str:
    """The reason typed in the action bar."""
    return str(request.POST.get("reason", "")).strip()


def confirmed_reason(request: HttpRequest) -> str:
    """The reason typed on the confirmation page."""
    return str(request.POST.get("confirmed_reason", "")).strip()


class ViewOnlyMixin:
    """No add or change form, for anyone: records change only through the audited actions."""

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        # A form save writes the whole row outside the ledger (it could put back a `head` a
        # concurrent commit just moved) and leaves no audit record.
        return False


class NoDeleteMixin:
    """Nobody deletes these records by hand (they go with their thread, or stay for good)."""

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


def run_each(
    admin_obj: admin.ModelAdmin[M],
    request: HttpRequest,
    queryset: QuerySet[M],
    act: Callable[[M], bool],
    wording: str,
) -> None:
    """Apply act (whether it changed the object) to each object; say in the words of wording
    (the name of an action of `ledger.moderation.ACTIONS`, or of another audited action:
    `action_words`) how many changed ("Hid 3 threads"), how many already were as asked
    (nothing was written for them), and why others were refused."""
    done, unchanged, refused = 0, 0, []
    for obj in queryset:
        try:
            if act(obj):
                done += 1
            else:
                unchanged += 1
        except DomainError as exc:
            refused.append(f"{obj}: {exc.message}")
    noun = str(admin_obj.model._meta.verbose_name)
    words = action_words(wording)
    if done:
        admin_obj.message_user(request, done_message(words, done, noun), messages.SUCCESS)
    if unchanged:
        admin_obj.message_user(request, unchanged_message(words, unchanged, noun), messages.INFO)
    for line in refused[:10]:
        admin_obj.message_user(request, line, messages.ERROR)


def confirm_then_run(
    admin_obj: admin.ModelAdmin[M],
    request: HttpRequest,
    queryset: QuerySet[M],
    *,
    title: str,
    warning: str,
    action: str,
    act: Callable[[M, str], bool],
    wording: str,
    shows: Callable[[M], RedactionPreview] | None = None,
) -> HttpResponse | None:
    """An irreversible action: a confirmation page that asks for a reason first, and with
    shows, the content each object loses."""
    reason = confirmed_reason(request)
    if request.POST.get("confirmed") == "yes" and reason:
        run_each(admin_obj, request, queryset, lambda obj: act(obj, reason), wording)
        return None
    objects = list(queryset[:200])
    context = {
        **admin_obj.admin_site.each_context(request),
        "title": title,
        "warning": warning,
        "objects": [(obj, shows(obj) if shows else None) for obj in objects],
        "count": queryset.count(),
        "action": action,
        "reason": reason or action_reason(request),
        "missing_reason": request.POST.get("confirmed") == "yes" and not reason,
        "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
        "opts": admin_obj.model._meta,
    }
    return TemplateResponse(request, CONFIRM_TEMPLATE, context)


# An admin action: the model admin, the request, the selected objects; a page, or None to go
# back to the list.
# Any: the admins of every model share these actions (ModelAdmin is invariant in its model).
AdminAction = Callable[[ProjectScopedAdmin[Any], HttpRequest, QuerySet[Any]], HttpResponse | None]


def table_action(entry: ModerationAction) -> AdminAction:
    """The admin action performing entry on each selected object, named `admin_name` (else its
    name), described by `admin_label` (else its label), offered to those with entry's role in
    some project; one that asks first leaves alone the objects of projects where the user lacks
    that role and shows its confirmation page."""
    name = entry.admin_name or entry.name

    def act(
        admin_obj: ProjectScopedAdmin[Any], request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        def perform(obj: Model, reason: str) -> bool:
            return entry.run(user=request.user, target=obj, reason=reason)  # type: ignore[arg-type]

        confirmation = entry.confirmation
        if confirmation is None:
            reason = action_reason(request)
            run_each(admin_obj, request, queryset, lambda obj: perform(obj, reason), entry.name)
            return None
        return confirm_then_run(
            admin_obj,
            request,
            admin_obj.where_allowed(request, queryset, role=entry.role, action=confirmation.needs),
            title=confirmation.title,
            warning=confirmation.warning,
            action=name,
            act=perform,
            wording=entry.name,
            shows=confirmation.shows,
        )

    act.__name__ = name
    permission = "administer" if entry.role >= Role.ADMIN else "moderate"
    return admin.action(description=entry.admin_label or entry.label, permissions=[permission])(act)


class TableActions(Sequence[AdminAction]):
    """A model admin's `actions`: those of the table's entries on target, in the table's order,
    read from the table whenever Django asks (an entry added to it is offered at once)."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def _actions(self) -> list[AdminAction]:
        return [table_action(e) for e in ACTIONS.values() if e.target == self.target]

    @overload
    def __getitem__(self, index: int) -> AdminAction: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[AdminAction]: ...
    def __getitem__(self, index: int | slice) -> AdminAction | Sequence[AdminAction]:
        return self._actions()[index]

    def __iter__(self) -> Iterator[AdminAction]:
        return iter(self._actions())

    def __len__(self) -> int:
        return len(self._actions())


def admin_url(model: str, pk: object) -> str:
    """The admin change page of a transcripts object, from its id alone (no query)."""
    return url_for(f"admin:transcripts_{model}_change", pk)


def changelist_url(model: str, **filters: object) -> str:
    """The admin list of a transcripts model, filtered."""
    query = "&".join(f"{key}={value}" for key, value in filters.items())
    return url_for(f"admin:transcripts_{model}_changelist") + (f"?{query}" if query else "")


def conversation_url(thread_id: str, message_id: str | None = None) -> str:
    """The thread in the browser; with a message, the branch through it, scrolled to it."""
    url = url_for("conversation", thread_id)
    return f"{url}?leaf={message_id}#m-{message_id}" if message_id else url


def object_link(obj: Model | None) -> str:
    """A link to the object's admin page, labelled with the object."""
    if obj is None:
        return "—"
    opts = obj._meta
    url = url_for(f"admin:{opts.app_label}_{opts.model_name}_change", obj.pk)
    return format_html('<a href="{}">{}</a>', url, str(obj))


def id_link(model: str, pk: object) -> str:
    """A link to a transcripts object's admin page, labelled with its id (no query)."""
    return format_html('<a href="{}">{}</a>', admin_url(model, pk), pk)


def links(*pairs: tuple[str, str]) -> str:
    """Links (url, label) separated by middle dots."""
    html = " · ".join(["{}"] * len(pairs))
    return format_html(html, *(format_html('<a href="{}">{}</a>', u, label) for u, label in pairs))


def search_by_id(queryset: QuerySet[M], term: str, *fields: str) -> QuerySet[M]:
    """The rows whose given id fields equal term; none when term is not an id."""
    term = term.strip()
    if not is_ulid(term):
        return queryset.none()
    condition = Q()
    for field in fields:
        condition |= Q(**{field: term})
    return queryset.filter(condition)
