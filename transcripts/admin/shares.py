"""The share link admin: a project's links, for its moderators, revoked by an audited action.

Links are created in the conversation or through the API, never here: the secret is shown
once, to whoever creates the link, and only its hash is kept.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html

from transcripts.admin.actions import (
    NoDeleteMixin,
    ViewOnlyMixin,
    conversation_url,
    object_link,
    run_each,
    search_by_id,
)
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.ids import is_ulid
from transcripts.ledger.shares import revoke_share
from transcripts.models import ShareLink
from transcripts.selectors.shares import share_status

SHOWN_FIELDS = (
    "id",
    "project",
    "thread",
    "leaf_link",
    "created_by",
    "created_at",
    "expires_at",
    "revoked_at",
    "revoked_by",
    "status",
)


class StatusFilter(admin.SimpleListFilter):
    """Live links, or those that no longer open anything."""

    title = "status"
    parameter_name = "status"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[ShareLink]
    ) -> list[tuple[str, str]]:
        return [("active", "active"), ("expired", "expired"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ShareLink]) -> QuerySet[ShareLink]:
        now = timezone.now()
        value = self.value()
        if value == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        live = queryset.filter(revoked_at__isnull=True)
        if value == "expired":
            return live.filter(expires_at__lte=now)
        if value == "active":
            return live.exclude(expires_at__lte=now)
        return queryset


@admin.register(ShareLink)
class ShareLinkAdmin(ViewOnlyMixin, NoDeleteMixin, ProjectScopedAdmin[ShareLink]):
    """The links of the projects the user moderates: who made them, until when, revoked."""

    list_display = (
        "created_at",
        "thread_link",
        "leaf_link",
        "created_by",
        "expires_at",
        "status",
        "project",
    )
    list_filter = (ProjectFilter, StatusFilter, "created_at")
    list_select_related = ("project", "thread", "created_by")
    search_fields = ("thread__title",)
    readonly_fields = SHOWN_FIELDS
    fields = SHOWN_FIELDS
    actions = ("revoke",)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[ShareLink], search_term: str
    ) -> tuple[QuerySet[ShareLink], bool]:
        if is_ulid(search_term.strip()):
            return search_by_id(queryset, search_term, "id", "thread__id", "leaf__id"), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="status")
    def status(self, obj: ShareLink) -> str:
        return share_status(obj)

    @admin.display(description="thread")
    def thread_link(self, obj: ShareLink) -> str:
        return object_link(obj.thread)

    @admin.display(description="branch ends at")
    def leaf_link(self, obj: ShareLink) -> str:
        return format_html(
            '<a href="{}">{}</a>', conversation_url(obj.thread_id, obj.leaf_id), obj.leaf_id
        )

    @admin.action(description="Revoke the selected share links", permissions=["moderate"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ShareLink]) -> None:
        """Revoke links (audited): their pages are 404s from now on."""
        run_each(
            self,
            request,
            queryset,
            lambda share: revoke_share(share=share, user=request.user, via="admin"),  # type: ignore[arg-type]
            "revoke_share",
        )
